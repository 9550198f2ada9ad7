package vm

import "time"

// A lone caller runs its own item. When nothing waits at a component, a
// worker slot is free and the stream shows a lone caller (its requests
// find no other item waiting or running, so a runner would close a group
// of this one item at once), the request invokes the component on its own
// goroutine instead of waking a runner and waiting to be woken in turn:
// two goroutine handoffs per request, each a thread wake where another
// processor is idle, are what a lone caller's request costs otherwise.
// The inline run holds one of the component's worker slots, so no more
// groups run at once than Workers allows; a runner that finds every slot
// taken waits, and the inline run's end wakes it for what queued meanwhile.

// tryInline returns an arena for p's inline run, its slot taken, or nil
// when p must queue.
func (g *grouper) tryInline(p *pending) *arena {
	g.mu.Lock()
	defer g.mu.Unlock()
	// This request is running and not yet counted here: one arriving.
	if g.closed || g.pol.Len() > 0 || g.running+g.inline >= g.workers || !g.pol.Lone(g.outlook(1)) {
		return nil
	}
	g.pol.Arrivals.Arrived(p.e.Queued, g.inFlight > 0)
	g.inline++
	g.inFlight++
	g.wg.Add(1) // close waits for inline runs as for runners
	return g.spareArena()
}

// spareArena returns, under the lock, an arena for a group run off the
// runners (inline, or by its batch): a spare one, or a new one. The run
// puts it back in spares.
func (g *grouper) spareArena() *arena {
	if n := len(g.spares); n > 0 {
		a := g.spares[n-1]
		g.spares = g.spares[:n-1]
		return a
	}
	return newArena(len(g.spec.gp.Inputs))
}

// runInline runs p alone on the caller's goroutine in a, answering it,
// and gives the slot back.
func (g *grouper) runInline(a *arena, group []*pending) {
	defer g.wg.Done()
	g.stats.ranInline()
	g.run(a, group, time.Now(), func() {
		g.mu.Lock()
		g.inline--
		g.inFlight--
		g.spares = append(g.spares, a)
		g.unlockWaking()
	})
}
