package vm

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
)

// A free runner decides when a group closes. A group closes when a runner is
// free and waiting cannot make it better:
//
//   - it is full: no budget, nor the scheduler's cap, has room for more;
//   - no item can still arrive: every request the engine knows of is
//     already waiting here (RunAll and generated executors announce and
//     count their requests, and a batch run in lockstep promises the items
//     it is admitting, so the last group of a burst never waits out the
//     delay);
//   - its oldest item has waited max_delay, the upper bound of every wait;
//   - the next arrival, judged from the measured arrival rate, would come
//     after that bound, or is overdue (the stream paused or ended).
//
// While every runner is busy nothing is formed: arrivals queue up and the
// next group forms from all of them when a runner frees up.

// runner runs groups: when it is free it forms the next group itself
// (under the grouper's lock, so runners never take one item twice), runs
// it, and looks again; with nothing worth running yet it waits for an
// arrival, a timer, or the end of a promise. Forming on the runner that
// will run the group saves a goroutine handoff per group. Where the next
// group already waits, the runner hands its callers' answers to the
// responder (responder.go) instead of yielding to them.
func (g *grouper) runner(a *arena) {
	defer g.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := false
	for {
		now := time.Now()
		batch, wait, ok := g.next(now, idle, a.batch)
		idle = batch == nil
		switch {
		case !ok:
			return
		case batch != nil:
			// Read before the answers: an answered item of a lockstep batch
			// is its batch's again, to reuse.
			callers := slices.ContainsFunc(batch, isCaller)
			if handedOff := g.runTaken(a, batch, now, true); callers && !handedOff {
				// The callers just answered are runnable, most of them on
				// this processor, behind this runner: let them run (and
				// send their next requests) before the next group forms.
				runtime.Gosched()
			}
		case wait > 0:
			timer.Reset(wait)
			select {
			case <-g.wake:
			case <-timer.C:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		default:
			<-g.wake
		}
	}
}

// runTaken runs a group next or take handed out (a worker slot counted in
// running), gives the slot back and keeps batch's storage in a for the
// next group. It reports whether the callers' answers went to the
// responder (only where mayHandOff: a runner's group).
func (g *grouper) runTaken(a *arena, batch []*pending, now time.Time, mayHandOff bool) (handedOff bool) {
	n := len(batch)
	handedOff = g.run(a, batch, now, mayHandOff, func() {
		g.mu.Lock()
		g.inFlight -= n
		g.running--
		g.mu.Unlock()
	})
	clear(batch)
	a.batch = batch[:0]
	return handedOff
}

// next forms the group a free runner runs now (in into's storage), or
// says how long to wait before looking again (0: until something
// changes), counting the runner idle meanwhile. ok is false once the
// grouper is closed and every item has been handed out.
func (g *grouper) next(now time.Time, wasIdle bool, into []*pending) (batch []*pending, wait time.Duration, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if wasIdle {
		g.idle--
	}
	batch, wait, ok = g.take(now, into)
	if batch != nil {
		g.running++
		g.runnerGroups++
	}
	if batch == nil && ok {
		g.idle++
	} else if batch != nil && len(g.queue) > 0 && g.idle > 0 {
		g.poke() // another runner may take what is left
	}
	return batch, wait, ok
}

// handsOff reports whether the runner of batch, invoked, hands its
// callers' answers to the responder: batch has callers (a lockstep
// batch's items are answered without a wake), the queue already holds the
// next group (the callers' next requests cannot make it fuller, so the
// runner need not yield to them), and another processor can answer them.
func (g *grouper) handsOff(batch []*pending) bool {
	if !slices.ContainsFunc(batch, isCaller) || runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holdsGroup()
}

// holdsGroup reports, under the lock, whether the queue holds a full
// group: items compatible with its oldest, in queue order, until a budget
// or the scheduler's cap binds.
func (g *grouper) holdsGroup() bool {
	if len(g.queue) == 0 {
		return false
	}
	limit := g.sched.limit()
	if g.solo {
		limit = 1
	}
	s := &g.held
	if s.vals == nil {
		*s = newBudgetSum(g.spec)
	}
	s.clear()
	head, n := g.queue[0].it, 0
	for i := 0; i < len(g.queue) && i <= lookahead; i++ {
		it := g.queue[i].it
		if !g.spec.compatible(head, it) {
			continue
		}
		if !s.fits(it) {
			return true
		}
		s.add(it)
		if n++; s.spent() || limit > 0 && n >= limit {
			return true
		}
	}
	return false
}

// isCaller reports whether p is a caller's item (Run, Invoke), answered on
// its channel, rather than a lockstep batch's.
func isCaller(p *pending) bool { return p.batch == nil }

// take is next under the lock.
func (g *grouper) take(now time.Time, into []*pending) (batch []*pending, wait time.Duration, ok bool) {
	g.answerCancelled()
	if len(g.queue) == 0 {
		if g.closed {
			g.poke() // let the other runners see it too
		}
		return nil, 0, !g.closed
	}
	if g.running+g.inline >= g.workers {
		return nil, 0, true // a lone caller's inline run holds the last slot; its end pokes
	}
	// While a batch admits, a group closes once the queue holds a full
	// one (two, where padding-aware choice needs candidates): more of the
	// batch is on its way, but it cannot make this group fuller.
	promised := g.promised > 0 && !g.closed
	if promised && !g.fillable() {
		return nil, promisedWait, true
	}
	if !g.sorted {
		g.sortBurst()
	}
	f := g.form(now)
	if !g.closed && !promised {
		if wait = g.worthWaiting(f, now); wait > 0 {
			return nil, wait, true
		}
	}
	batch = f.take(into)
	g.inFlight += len(batch)
	return batch, 0, true
}

// fillable reports whether the queue already holds enough for a full
// group, taken oldest first: one group's worth, or two where inputs are
// padded, so that a padding-aware choice has candidates to choose from. It
// is a cheap test that spares forming a group (which ranks the candidates)
// on every arrival of a batch: the scan resumes where it stopped, so a
// burst is scanned once, not once per arrival, until items leave the
// queue (fillStale).
func (g *grouper) fillable() bool {
	s := &g.fill
	if s.vals == nil {
		*s = newBudgetSum(g.spec)
		g.fillStale = true
	}
	if g.fillStale {
		g.fillStale, g.fillScan, g.fillFull = false, 0, false
		g.fillNeed = 1
		if len(g.spec.pads) > 0 {
			g.fillNeed = 2
		}
		s.clear()
	}
	if g.fillFull || len(g.queue) == 0 {
		return g.fillFull
	}
	head := g.queue[0].it
	for ; g.fillScan < len(g.queue) && g.fillScan <= lookahead; g.fillScan++ {
		it := g.queue[g.fillScan].it
		if !g.spec.compatible(head, it) {
			continue
		}
		if !s.fits(it) {
			if g.fillNeed--; g.fillNeed == 0 {
				g.fillFull = true
				return true
			}
			s.clear()
		}
		s.add(it)
		if s.spent() {
			if g.fillNeed--; g.fillNeed == 0 {
				g.fillScan++
				g.fillFull = true
				return true
			}
			s.clear()
		}
	}
	return false
}

// answerCancelled removes the queued items whose request was cancelled.
func (g *grouper) answerCancelled() {
	// A burst's items share their batch (and its context): it is asked
	// once, and known by its pointer, cheaper to compare than contexts.
	// The queue is only rewritten when an item leaves it.
	var ctx context.Context
	var batch *sync.WaitGroup
	var err error
	cancelled := func(p *pending) bool {
		if p.batch != nil && p.batch == batch {
			return err != nil
		}
		if p.ctx != ctx {
			ctx, err = p.ctx, p.ctx.Err()
		}
		batch = p.batch
		return err != nil
	}
	first := slices.IndexFunc(g.queue, cancelled)
	if first < 0 {
		return
	}
	kept := g.queue[:first]
	for _, p := range g.queue[first:] {
		if cancelled(p) {
			p.answer(share{err: backend.ContextError(err)})
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) < len(g.queue) {
		g.fillStale = true
	}
	clear(g.queue[len(kept):])
	g.queue = kept
}

// worthWaiting returns how long the group f may still wait for arrivals,
// or 0 when it should close now.
func (g *grouper) worthWaiting(f *formation, now time.Time) time.Duration {
	if g.solo || f.full() {
		return 0
	}
	if g.promised > 0 {
		return promisedWait // the next arrival, or the end of the promise, wakes a runner
	}
	if g.maxDelay <= 0 {
		return 0
	}
	left := g.maxDelay - now.Sub(f.head().queued)
	switch {
	case left <= 0:
		return 0
	case g.coming():
		return left
	case !g.e.openEnded.Load():
		return 0 // every request the engine knows of is here
	}
	// An open stream: wait for the next item only when items usually
	// arrive while others wait (a lone caller's next request comes after
	// its answer, never during the wait) and it is expected before a run of
	// this group would end; otherwise run now, and the runner is free again
	// by the time it comes.
	due, known := g.arrivals.due(now)
	run, measured := g.sched.expectedRun()
	switch {
	case !known:
		return left // a new stream: its first items wait for each other
	case g.arrivals.overlap < 0.5:
		return 0
	case !measured:
		return left
	case due < 0 || due > run:
		return 0
	}
	// A timer cannot wait much less than a millisecond; a shorter wait
	// would cost that millisecond to save a run that the next group holds
	// anyway: the runner is busy by the time the item comes.
	if wait := min(due+run/4, left); wait >= minTimedWait {
		return wait
	}
	return 0
}

// minTimedWait is the shortest wait on an expected arrival worth a timer.
const minTimedWait = time.Millisecond

// promisedWait bounds a wait for promised items; they come within
// microseconds, and each one wakes a free runner.
const promisedWait = 100 * time.Millisecond

// coming reports whether a request the engine knows of may still bring an
// item: one RunAll has announced and not started, or one being run that is
// not already waiting at this component.
func (g *grouper) coming() bool {
	e := g.e
	return e.announced.Load() > 0 || e.active.Load() > int64(len(g.queue)+g.inFlight)
}

// arrivals estimates when the next item of an open-ended stream arrives:
// from the last gap (a burst goes on at its own pace) and from an
// exponentially weighted mean of the gaps (the steady rate), whichever
// expects it sooner, so that neither a quiet spell before a burst nor one
// stray gap in a steady stream closes groups early.
type arrivals struct {
	last    time.Time
	lastGap time.Duration
	mean    float64 // mean gap, in nanoseconds
	seen    int
	// overlap is the weighted share of arrivals that found other items
	// of the component waiting or running.
	overlap float64
}

// arrived records an arrival at t; busy says whether other items were
// waiting or running then.
func (a *arrivals) arrived(t time.Time, busy bool) {
	x := 0.0
	if busy {
		x = 1
	}
	if a.seen == 0 {
		a.overlap = 1 // a new stream may be a burst until it shows otherwise
	}
	a.overlap = 0.8*a.overlap + 0.2*x
	if a.seen > 0 {
		a.lastGap = t.Sub(a.last)
		if a.seen == 1 {
			a.mean = float64(a.lastGap)
		} else {
			a.mean = 0.75*a.mean + 0.25*float64(a.lastGap)
		}
	}
	a.last = t
	a.seen++
}

// arrivedAgain records k more arrivals at the time of the last, each
// finding items waiting: what k calls of arrived at that time would.
func (a *arrivals) arrivedAgain(k int) {
	if k == 0 {
		return
	}
	decay := math.Pow(0.8, float64(k))
	a.overlap = decay*a.overlap + (1 - decay)
	a.mean *= math.Pow(0.75, float64(k)) // 0 after one arrival, and gaps of 0 keep it so
	a.lastGap = 0
	a.seen += k
}

// due returns how long until the next arrival is expected, when at least
// two arrivals have been seen; it is negative once the arrival is overdue
// by more than a gap (the stream has paused or ended, as it does after the
// last request of a burst).
func (a *arrivals) due(now time.Time) (time.Duration, bool) {
	if a.seen < 2 {
		return 0, false
	}
	gap := min(a.lastGap, time.Duration(a.mean))
	due := gap - now.Sub(a.last)
	if due < -gap {
		return -1, true
	}
	return max(due, 0), true
}
