package vm

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/sched"
)

// A free runner runs the next group the component's policy closes
// (sched.Policy.Next); while every runner is busy nothing is formed:
// arrivals queue up and the next group forms from all of them when a
// runner frees up.

// runner runs groups: when it is free it forms the next group itself
// (under the grouper's lock, so runners never take one item twice), runs
// it, and looks again; with nothing worth running yet it waits for an
// arrival, a timer, or the end of a promise. Forming on the runner that
// will run the group saves a goroutine handoff per group. After a group
// of callers, it yields to the callers it answered (their next requests
// may join the next group) unless the next group already waits.
func (g *grouper) runner(a *arena) {
	defer g.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := false
	for {
		now := time.Now()
		batch, wait, ok := g.next(now, idle, a)
		idle = batch == nil
		switch {
		case !ok:
			return
		case batch != nil:
			// Read before the answers: an answered item of a lockstep batch
			// is its batch's again, to reuse.
			callers := slices.ContainsFunc(batch, isCaller)
			if g.runTaken(a, batch, now); callers && !g.nextWaits() {
				// The group's leader, readied on this processor behind
				// this runner, answers the other callers: let them run
				// (and send their next requests) before the next group
				// forms.
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
// next group.
func (g *grouper) runTaken(a *arena, batch []*pending, now time.Time) {
	n := len(batch)
	g.run(a, batch, now, func() {
		g.mu.Lock()
		g.inFlight -= n
		g.running--
		g.mu.Unlock()
	})
	clear(batch)
	a.batch = batch[:0]
}

// next forms the group a free runner runs now (in a's storage), or
// says how long to wait before looking again (0: until something
// changes), counting the runner idle meanwhile. ok is false once the
// grouper is closed and every item has been handed out.
func (g *grouper) next(now time.Time, wasIdle bool, a *arena) (batch []*pending, wait time.Duration, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if wasIdle {
		g.idle--
	}
	batch, wait, ok = g.take(now, a)
	if batch != nil {
		g.running++
	}
	if batch == nil && ok {
		g.idle++
	} else if batch != nil && g.pol.Len() > 0 && g.idle > 0 {
		g.poke() // another runner may take what is left
	}
	return batch, wait, ok
}

// nextWaits reports whether the next group already waits and another
// processor can run the callers just answered: their next requests cannot
// make it fuller, so the runner goes on to it rather than yielding.
func (g *grouper) nextWaits() bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pol.Holds(1)
}

// isCaller reports whether p is a caller's item (Run, Invoke), answered on
// its channel, rather than a lockstep batch's.
func isCaller(p *pending) bool { return p.batch == nil }

// take is next under the lock: the group the policy closes now, taken
// into a's storage, or how long to wait.
func (g *grouper) take(now time.Time, a *arena) (batch []*pending, wait time.Duration, ok bool) {
	g.answerCancelled()
	if g.pol.Len() == 0 {
		if g.closed {
			g.poke() // let the other runners see it too
		}
		return nil, 0, !g.closed
	}
	if g.running+g.inline >= g.workers {
		return nil, 0, true // a lone caller's inline run holds the last slot; its end pokes
	}
	group, wait := g.pol.Next(now, g.outlook(0), a.ents)
	if group == nil {
		return nil, wait, true
	}
	g.freed()
	batch = a.batch[:0]
	for _, e := range group {
		batch = append(batch, e.Owner.(*pending))
	}
	clear(group)
	a.ents = group[:0]
	g.inFlight += len(batch)
	return batch, 0, true
}

// outlook is, under the lock, what the grouper knows of the items still to
// come. A request may still bring an item when RunAll has announced one
// and not started it, or when more requests are being run than items wait
// or run here; arriving counts those that are running and arriving here
// now, not yet counted.
func (g *grouper) outlook(arriving int) sched.Outlook {
	e := g.e
	// Nothing is coming to a group while nothing can join the queue.
	blocked := g.blocked()
	return sched.Outlook{
		Closed:    g.closed,
		Promised:  g.promised > 0 && !blocked,
		Coming:    !blocked && (e.announced.Load() > 0 || e.active.Load() > int64(g.pol.Len()+g.inFlight+arriving)),
		OpenEnded: e.openEnded.Load(),
	}
}

// answerCancelled removes the queued items whose request was cancelled.
func (g *grouper) answerCancelled() {
	// A burst's items share their batch (and its context): it is asked
	// once, and known by its pointer, cheaper to compare than contexts.
	var ctx context.Context
	var batch *sync.WaitGroup
	var err error
	cancelled := func(e *sched.Entry) bool {
		p := e.Owner.(*pending)
		if p.batch == nil || p.batch != batch {
			if p.ctx != ctx {
				ctx, err = p.ctx, p.ctx.Err()
			}
			batch = p.batch
		}
		return err != nil
	}
	// The queue is scanned here, where the test inlines, and rewritten
	// only when an item leaves it.
	if !slices.ContainsFunc(g.pol.Queue(), cancelled) {
		return
	}
	g.pol.Drop(func(e *sched.Entry) bool {
		if !cancelled(e) {
			return false
		}
		e.Owner.(*pending).answer(share{err: backend.ContextError(err)})
		return true
	})
	g.freed()
}
