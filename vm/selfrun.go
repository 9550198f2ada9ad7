package vm

import (
	"slices"
	"sync"
	"time"

	"github.com/genaic/genaic/sched"
)

// A lockstep batch runs its own groups where handing them to a runner does
// not pay.
//
// With one worker slot the handoff pays only through overlap: the runner
// runs the first groups while the batch admits the rest. A grouper keeps,
// over the batches that found it idle, an exponentially weighted share of
// those whose runner started a group before their admission ended
// (overlap); below one half, such a batch wakes no runner and runs its
// groups itself, on the slot the runner would take. Every exploreEvery-th
// one wakes the runner anyway, so that the share follows the machine; an
// explorer pays a thread's wake, so the interval doubles (selfRunExplore
// up to selfRunExploreMax) with each one whose runner started late and
// falls back as soon as one started in time.
//
// With several slots the runners also run invocations side by side, which
// pays where invocations are long against a thread's wake and loses where
// they are short, so the grouper times both ways per item (sideBySide) and
// a batch runs its own groups only where that was clearly faster
// (sideMargin). Both ways keep being sampled, in runs of sideRun batches,
// one run of the way not taken every sideExplore choices. A sample that
// times a cold start is not kept (a new engine's first sideWarmup
// batches, the first batch of a run, whose runners were parked while the
// other way ran): it would make its way look slower than it runs.

const (
	selfRunExplore    = 16
	selfRunExploreMax = 256
	overlapDecay      = 0.8
	sideWarmup        = 2
	sideMinBatches    = 4
	sideSamples       = 4
	sideRun           = 3
	// sideExplore is how many choices pass between two runs of the way
	// not taken: a run costs what that way loses for sideRun batches, so
	// it is rare.
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
