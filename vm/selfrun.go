package vm

import (
	"sync"
	"time"

	"github.com/genaic/genaic/sched"
)

// A lockstep batch runs its own groups where handing them to a runner does
// not pay. A batch that finds the component idle runs them on its own
// goroutine, after its admission, instead of waking a runner:
//
//   - with one worker slot, always: the runner would run the same groups
//     one after another, and overlaps the batch only with its admission,
//     which costs less than the thread it wakes;
//   - with several, where a group is expected (sched.Cost.ExpectedRun) to
//     run shorter than selfRunBelow: handing such groups to other threads
//     costs more than running them side by side gains. Longer groups go
//     to the runners, which run them side by side.
//
// A busy component's batch always hands its groups over: a runner is
// running, and its queue is the runners'.

// selfRunBelow is the expected run below which a group costs less run by
// its batch than handed to another slot's thread: about the time it takes
// to wake a parked thread and hand it a group's items.
const selfRunBelow = 50 * time.Microsecond

// startBatch is called as a lockstep batch starts admitting at g; it
// reports whether the batch runs its own groups, and counts it so.
func (g *grouper) startBatch() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.pol.Len() > 0 || g.running+g.inline > 0 || !g.batchesRunOwn() {
		return false
	}
	g.selfRun++
	g.wg.Add(1) // close waits for the batch's groups as for the runners'
	return true
}

// batchesRunOwn reports, under the lock, whether a batch that finds g
// idle runs its own groups.
func (g *grouper) batchesRunOwn() bool {
	switch {
	case g.selfRunBelow <= 0:
		return false
	case g.workers == 1:
		return true
	}
	run, measured := g.pol.Cost.ExpectedRun()
	return measured && run < g.selfRunBelow
}

// runnersQuiet reports, under the lock, whether arrivals leave the runner
// asleep: a batch is running its own groups.
func (g *grouper) runnersQuiet() bool { return g.selfRun > 0 }

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
