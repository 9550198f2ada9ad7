package vm

import (
	"slices"
	"sync"
	"time"

	"github.com/genaic/genaic/sched"
)

// A lockstep batch runs its own groups where waking a runner does not pay.
//
// A batch that arrives at an idle component promises the runner its items
// and wakes it once a full group waits, so that the first groups run while
// the rest are admitted. That overlap is the reason to hand the groups to
// another goroutine; where the woken runner starts only after the
// admission has ended (a thread's wake takes longer than the admission, as
// on small virtual machines, where it costs 50 to 200 µs), there is none,
// and the handoff costs a thread's wake each way, a processor spinning up
// beside the invocations, and the batch's own goroutine idle meanwhile. So
// each grouper measures, over the batches that found it idle, how often a
// runner started a group before the batch's admission ended (overlap, an
// exponentially weighted share); below one half, a batch that finds the
// component idle with one worker slot wakes no runner and, once admitted,
// forms and runs the groups itself, on the slot the runner would take.
// Now and then a batch that would run its own groups wakes the runner
// instead (explores), so that the share keeps being measured and a machine
// whose wakes become cheap goes back. An explorer pays a thread's wake
// (on the small machines, about what admitting a burst costs again), so
// exploring backs off: the interval between explorers starts at
// selfRunExplore batches, doubles with each measured batch whose runner
// started late, up to selfRunExploreMax, and falls back to selfRunExplore
// as soon as one started in time.
//
// With more than one worker slot the handoff buys more than that overlap:
// invocations run side by side, which pays where an invocation is long
// against a thread's wake and loses where it is short (on 2 cores, two
// runners ran long text at 1.42 to 1.49 x one runner's throughput and the
// 64-image workload, whose invocations take 20 µs, at 0.63 to 0.70 x).
// So such a grouper measures both ways (sideBySide): the time per item of
// the batches that found it idle and handed their groups to the runners,
// and of those that ran their own (the median of each way's last
// sideSamples), and a batch runs its own groups where that was clearly
// the faster (sideMargin). The first sideWarmup such batches are not
// measured (a new engine's first batches are slow whichever way they
// take, and the way not taken keeps its samples long), the next ones take
// each way in turn, in runs of sideRun batches, until both have
// sideMinBatches, and after that every sideExplore-th choice starts a
// run of the other way, so that both figures follow the machine. The first
// batch of a run is not measured: the runners it wakes were parked while
// the other way ran, and a way taken for a while finds them awake (timed
// cold, the runners' batches looked half again slower than they are, and
// short text's two runners fell behind one). (A batch running groups
// beside its runners, on a slot none holds, was measured too: two
// runners' throughput did not change.)

const (
	selfRunExplore    = 16
	selfRunExploreMax = 256
	overlapDecay      = 0.8
	sideWarmup        = 2
	sideMinBatches    = 4
	sideSamples       = 4
	sideRun           = 3
	// sideExplore is how many choices pass between two runs of the way
	// not taken: a run costs what that way loses for sideRun batches
	// (long text's own groups took half again the runners' time).
	sideExplore = 64
	// sideMargin is how much faster running their own groups must have
	// been for batches to stop handing them to the runners, which the
	// operator asked for with the worker slots: the runners' times vary
	// with the machine's wakes, and a way taken on a small difference
	// comes and goes with that noise.
	sideMargin = 0.8
)

// sideBySide is what a grouper with several worker slots measured of the
// lockstep batches that found it idle: their time per item when they
// handed their groups to the runners and when they ran their own.
type sideBySide struct {
	runners, own batchCost
	ended        int // batches measured or passed over (the first sideWarmup)
	chosen       int // batches that chose since both were measured
	// A way is tried in runs of sideRun batches, of which the first is
	// not measured: it finds the runners parked (or the batch's own
	// processor cold) after the other way, which the way taken for a
	// while does not.
	lastOwn bool // the way of the last batch that ended
	run     int  // batches of the run under way still to come
	runOwn  bool // the run's way
}

// batchCost holds the time per item (ns) of the last sideSamples batches
// that took one way. The ways are compared by their medians: the way not
// taken is measured in a run once in sideExplore choices, so one slow
// batch of it (a thread's wake that took long) must not keep it out for
// long, as it would in an average that its rare samples move slowly.
type batchCost struct {
	last [sideSamples]float64
	seen int
}

func (c *batchCost) add(x float64) {
	c.last[c.seen%sideSamples] = x
	c.seen++
}

// perItem is the median of the last batches' times per item (0: none yet).
func (c *batchCost) perItem() float64 {
	n := min(c.seen, sideSamples)
	if n == 0 {
		return 0
	}
	v := c.last
	s := v[:n]
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// chooseOwn reports whether the next batch runs its own groups: the faster
// way once both are measured, a run of the other every sideExplore
// choices.
func (s *sideBySide) chooseOwn() bool {
	if s.run > 0 {
		s.run--
		return s.runOwn
	}
	if s.runners.seen < sideMinBatches || s.own.seen < sideMinBatches {
		return s.startRun(s.own.seen < s.runners.seen) // each way in turn
	}
	s.chosen++
	own := s.own.perItem() < sideMargin*s.runners.perItem()
	if s.chosen%sideExplore == 0 {
		return s.startRun(!own)
	}
	return own
}

// startRun begins a run of sideRun batches that take one way.
func (s *sideBySide) startRun(own bool) bool {
	s.run, s.runOwn = sideRun-1, own
	return own
}

// batchEnded records a batch's time per item (ns) the way it took,
// unless it is one of a new engine's first batches, or the first of its
// way after the other.
func (s *sideBySide) batchEnded(own bool, perItem float64) {
	s.ended++
	first := own != s.lastOwn
	s.lastOwn = own
	if s.ended <= sideWarmup || first {
		return
	}
	c := &s.runners
	if own {
		c = &s.own
	}
	c.add(perItem)
}

// batchEnded records, with several worker slots, how long a batch that
// found the component idle took per item, from the start of its admission
// to its last share, the way it took (own: it ran its own groups).
func (g *grouper) batchEnded(own bool, items int, d time.Duration) {
	if g.workers == 1 || items == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.side.batchEnded(own, float64(d.Nanoseconds())/float64(items))
}

// startBatch is called as a lockstep batch starts admitting at g. self
// reports whether the batch runs its own groups; otherwise idleAt is the
// count of runner groups so far when the component was idle (the batch
// measures the overlap; see admitted), or -1 when it was busy.
func (g *grouper) startBatch() (self bool, idleAt int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.pol.Len() > 0 || g.running+g.inline > 0 {
		return false, -1
	}
	switch {
	case g.workers > 1:
		if g.side.chooseOwn() {
			g.selfRun++
			g.wg.Add(1)
			return true, -1
		}
	case g.overlap < 0.5:
		if g.untilExplore--; g.untilExplore > 0 {
			g.selfRun++
			g.wg.Add(1) // close waits for the batch's groups as for the runners'
			return true, -1
		}
		g.untilExplore = g.exploreEvery
	}
	return false, g.runnerGroups
}

// runnersQuiet reports, under the lock, whether arrivals leave the runner
// asleep: a batch is running its own groups.
func (g *grouper) runnersQuiet() bool { return g.selfRun > 0 }

// admitted records, at the end of a batch's admission, whether a runner
// started a group since the batch found the component idle.
func (g *grouper) admitted(idleAt int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	started := 0.0
	if g.runnerGroups > idleAt {
		started = 1
		g.exploreEvery = selfRunExplore
	} else {
		g.exploreEvery = min(2*g.exploreEvery, selfRunExploreMax)
	}
	g.untilExplore = g.exploreEvery
	g.overlap = overlapDecay*g.overlap + (1-overlapDecay)*started
}

// runOwn runs groups from the queue on the batch's goroutine while a
// worker slot is free and a group is ready to close, then leaves what is
// left to the runners.
func (g *grouper) runOwn() {
	defer g.wg.Done()
	g.mu.Lock()
	a := g.spareArena()
	// The batch hands its queue back to the runners at the end, and after
	// a backend's panic too (the arena it was assembling is dropped), so
	// that a caller that recovers finds the engine serving (runTaken gives
	// the group's slot back).
	locked, finished := true, false
	defer func() {
		if !locked {
			g.mu.Lock()
		}
		g.selfRun--
		if finished {
			g.spares = append(g.spares, a)
		}
		g.unlockWaking()
	}()
	for {
		// take forms nothing while every worker slot is taken, or while
		// the group should still wait (a request of another caller may
		// join it): the runners see to it then.
		now := time.Now()
		batch, _, _ := g.take(now, a)
		if batch == nil {
			break
		}
		g.running++
		g.mu.Unlock()
		locked = false
		g.stats.ranOwn()
		g.runTaken(a, batch, now)
		g.mu.Lock()
		locked = true
	}
	finished = true
}

// abandon forgets, under the lock, a lockstep batch that a panic unwinds
// (batch.invoke): the items it still promised, its claim to run its own
// groups (self: granted by startBatch, not yet taken up by runOwn), and
// its items still queued, which no one waits for any more.
func (g *grouper) abandon(wg *sync.WaitGroup, promised int, self bool) {
	g.mu.Lock()
	g.promised -= promised
	g.pol.Drop(func(e *sched.Entry) bool { return e.Owner.(*pending).batch == wg })
	g.freed()
	if self {
		g.selfRun--
		g.wg.Done()
	}
	g.unlockWaking()
}
