package vm

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/sched"
)

// Batch admission. When a workflow is straight-line (invokes and emits,
// in sequences, no branch or loop), RunAll runs a window of requests in
// lockstep on one goroutine: at each invoke it admits every request's item,
// enqueues them all at once under one lock, and waits for the shares
// together; at each emit it emits for each request. No goroutine is started
// or parked per request, and the groupers see a burst as one arrival, so
// its groups are formed from all of it. Each request still fails alone.

// straightLine reports whether b holds only invokes and emits (in
// sequences), which every request runs in the same order.
func straightLine(b *ir.Block) bool {
	if b == nil {
		return true
	}
	for _, s := range b.Steps {
		switch s.Op {
		case ir.OpInvoke, ir.OpEmit:
		case ir.OpSequence:
			if !straightLine(s.Body) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// batch is a window of requests run in lockstep.
type batch struct {
	e    *Engine
	ctx  context.Context
	runs []*run
	errs []error // per request; a failed request takes no further step
	// admit's: the step's arguments by input position, and where each
	// argument comes from and goes (the step's site).
	args []*backend.Tensor
	site site
	recs *records // what its responses are answered in
}

// runBatch runs reqs in lockstep and writes their responses into out.
func (e *Engine) runBatch(ctx context.Context, reqs []Request, out []Response) {
	b := e.getBatch(ctx, len(reqs))
	for i, req := range reqs {
		if req.Err != nil {
			b.errs[i] = Unreadable(req.Err)
		} else {
			b.errs[i] = b.runs[i].start(req)
		}
	}
	b.block(e.m.Body)
	w := b.recs
	// The records go back once the responses are all released only if
	// every answered request can release (holds a lease); a window none of
	// whose requests was answered gives them back at once.
	handed, back := 0, true
	for i, r := range b.runs {
		switch {
		case b.errs[i] != nil:
		case len(r.leases) > 0:
			handed++
		default:
			back = false
		}
	}
	if !back {
		w = nil
	}
	for i, req := range reqs {
		if b.errs[i] != nil {
			out[i] = Response{ID: req.ID, Err: failure(b.errs[i])}
			continue
		}
		var h *held
		if len(b.runs[i].leases) > 0 {
			h = b.recs.record(i)
			h.recs = w
		}
		out[i] = e.response(req.ID, b.runs[i], h)
	}
	switch {
	case w != nil && handed > 0:
		w.live.Store(int64(handed))
	case w != nil:
		w.empty()
		e.records.Put(w)
	}
	e.putBatch(b)
}

// getBatch returns a batch of n runs for ctx, recycled with its runs:
// a lockstep window takes its per-request state in one piece.
func (e *Engine) getBatch(ctx context.Context, n int) *batch {
	b, _ := e.batches.Get().(*batch)
	if b == nil {
		b = &batch{e: e}
	}
	for len(b.runs) < n {
		b.runs = append(b.runs, e.newRun())
	}
	b.ctx, b.runs, b.errs = ctx, b.runs[:n], slices.Grow(b.errs[:0], n)[:n]
	// The window's outputs are one slice, each run's a part: its response's.
	k := len(e.outNames.list)
	b.recs = e.getRecords(n, k)
	outs := b.recs.outs
	for i, r := range b.runs {
		r.ctx, r.outputs = ctx, outs[i*k:(i+1)*k:(i+1)*k]
	}
	return b
}

// getRecords returns the records of a window of n requests answering k
// outputs each, used again where a window's responses were all released.
func (e *Engine) getRecords(n, k int) *records {
	w, _ := e.records.Get().(*records)
	if w == nil {
		w = &records{pool: &e.records}
	}
	w.outs = slices.Grow(w.outs[:0], n*k)[:n*k] // emptied when given back
	w.n = n
	return w
}

// record is the held record of the window's request i, the records made
// on first use (a window whose requests hold no lease makes none).
func (w *records) record(i int) *held {
	if len(w.held) < w.n {
		// Not grown in place: a response of an earlier use may still
		// name a record of the old ones (its release finds it used).
		w.held = make([]held, w.n)
	}
	return &w.held[i]
}

// putBatch recycles a batch whose responses have been taken.
func (e *Engine) putBatch(b *batch) {
	for _, r := range b.runs {
		r.reset()
	}
	clear(b.errs)
	clear(b.args)
	b.ctx, b.site, b.recs = nil, site{}, nil
	e.batches.Put(b)
}

func (b *batch) block(bl *ir.Block) {
	if bl == nil {
		return
	}
	for _, s := range bl.Steps {
		switch s.Op {
		case ir.OpSequence:
			b.block(s.Body)
		case ir.OpEmit:
			b.emit(s)
		case ir.OpInvoke:
			b.invoke(s)
		}
	}
}

// emit runs an emit step for every request still alive. The usual emit, a
// plain replace of a value of rank 1 or more, binds the output to the
// value itself: its slot and the output's position are found once for
// the window, not per request (run.emitAt does the rest).
func (b *batch) emit(s *ir.Step) {
	at := b.e.outNames.index(s.Output.Name)
	k, ok := b.e.slots.use(s.Value)
	plain := ok && at >= 0 && s.When == nil && s.ValidLength == nil && s.Axis == nil && s.Mode == "replace"
	for i, r := range b.runs {
		if b.errs[i] != nil {
			continue
		}
		if plain {
			if t := r.vals[k]; t != nil && t.Rank() > 0 {
				r.outputs[at] = t
				continue
			}
		}
		b.errs[i] = r.emitAt(s, at)
	}
}

// each runs f for every request still alive, recording its failure. A
// cancelled batch stops admitting (see admit), but a request whose share
// arrived keeps it: the batch waited for its neighbours, not for it.
func (b *batch) each(f func(i int, r *run) error) {
	for i, r := range b.runs {
		if b.errs[i] == nil {
			b.errs[i] = f(i, r)
		}
	}
}

// invoke runs one invoke step for every request still alive: through the
// component's grouper, every item enqueued at once, or alone for an
// ungrouped component.
func (b *batch) invoke(s *ir.Step) {
	st, ok := b.e.sites[s]
	if !ok {
		b.concurrently(func(r *run) error { return r.invoke(s) })
		return
	}
	g := st.g
	sc := g.getAdmission(len(b.runs))
	subs := sc.subs
	var wg sync.WaitGroup
	// promised counts what the batch has promised the grouper and not yet
	// queued or withdrawn; self says it may run its own groups and has
	// not started to. A panic that unwinds through here (a backend's, in
	// a group the batch runs) leaves the grouper as if the batch had never
	// come: its promise and its claim withdrawn, its waiting items taken
	// out of the queue, and its admission not reused (items of it may be
	// in a runner's group still), so that a caller that recovers finds
	// the engine serving.
	promised, self, finished := 0, false, false
	defer func() {
		if finished {
			g.putAdmission(sc)
		} else {
			g.s.Abandon(promised, self, func(e *sched.Entry) bool { return e.Owner.(*pending).batch == &wg })
		}
	}()
	// Each request's items are enqueued as soon as they are admitted, so
	// that the first full group runs while the rest are admitted; the
	// grouper is promised the others, so that it forms no partial group
	// meanwhile. A batch that runs its own groups (sched.Scheduler) runs none
	// during its admission: it queues its items at the end, at once.
	live := 0
	for i := range b.runs {
		if b.errs[i] == nil {
			live++
		}
	}
	self = g.s.StartBatch()
	g.s.Promise(live)
	promised = live
	done := 0
	// An item that fits whole (the usual case) is queued from the
	// admission's slabs. The whole burst is one arrival: its items are
	// queued at one time.
	now := time.Now()
	b.args = slices.Grow(b.args[:0], len(g.spec.gp.Inputs))[:len(g.spec.gp.Inputs)]
	clear(b.args)
	b.site = st
	b.each(func(i int, r *run) error {
		sub, err := b.admit(g, s, r, &wg, now, sc.items.item(i), &sc.pending[i], sc.ptrs[i:i+1:i+1])
		subs[i] = sub
		if self {
			return err // queued at the end, all at once
		}
		if err == nil && len(sub.ps) > 0 {
			wg.Add(len(sub.ps))
			if err := g.enqueue(b.ctx, true, sub.ps...); err != nil {
				subs[i].err = err
				wg.Add(-len(sub.ps))
			}
		}
		g.s.Promise(-1)
		promised--
		done++
		return err
	})
	switch {
	case self:
		g.enqueueOwn(subs[:len(b.runs)], live, &wg)
		promised, self = 0, false // RunOwn sees to its claim
		g.s.RunOwn()
	default:
		g.s.Promise(done - live) // requests cancelled before their admission
		promised = 0
	}
	wg.Wait()
	b.each(func(i int, r *run) error {
		outs, l, err := subs[i].result(g)
		if err != nil {
			return backend.Located(err, b.e.m.Location(s.Loc))
		}
		r.hold(l)
		return r.results(s, st, outs)
	})
	finished = true
}

// submission is one request's items at a grouped invoke: one, or the
// chunks of an item split across invocations.
type submission struct {
	ps  []*pending
	err error
	// outs answers an item of zero units at once (grouper.answerEmpty).
	outs outputs
}

// admit builds a request's pending items for g into it, unless the batch
// was cancelled. An item that fits whole is pending in one and listed in
// slot (a slice of one).
func (b *batch) admit(g *grouper, s *ir.Step, r *run, wg *sync.WaitGroup, now time.Time, into *item, one *pending, slot []*pending) (submission, error) {
	if err := b.ctx.Err(); err != nil {
		return submission{}, backend.ContextError(err)
	}
	// The arguments only live through admission (the item keeps the
	// tensors), so one slice serves the whole step: every request lays
	// out the same positions (the site's), over the last request's.
	args := b.args
	if err := r.layArgs(s, b.site, args); err != nil {
		return submission{}, err
	}
	it, err := g.spec.admitInto(into, args, r)
	if err != nil {
		return submission{}, backend.Located(err, b.e.m.Location(s.Loc))
	}
	if it.isolated {
		g.stats.isolate()
	}
	if it.empty() {
		outs, err := g.answerEmpty(it)
		return submission{outs: outs, err: err}, nil
	}
	if g.spec.overBudget(it) < 0 {
		*one = pending{e: sched.Entry{Ctx: b.ctx}, batch: wg}
		one.hold(g.spec, it, now)
		slot[0] = one
		return submission{ps: slot}, nil
	}
	chunks, err := g.spec.chunk(it)
	if err != nil {
		return submission{}, backend.Located(err, b.e.m.Location(s.Loc))
	}
	sub := submission{ps: make([]*pending, len(chunks))}
	for k, c := range chunks {
		sub.ps[k] = &pending{e: sched.Entry{Ctx: b.ctx}, batch: wg}
		sub.ps[k].hold(g.spec, c, now)
		if k > 0 {
			sub.ps[k].first = sub.ps[0]
		}
	}
	return sub, nil
}

// admission is what one lockstep invoke step needs per request at a
// grouped component: the submissions, the pending items and the items
// themselves. A grouper keeps admissions from batch to batch: every item
// is answered before the batch reads its shares, so once it has bound
// them nothing refers to the admission any more, and a burst allocates
// (and the collector scans) none of it again.
type admission struct {
	subs    []submission
	pending []pending
	ptrs    []*pending
	items   *itemSlab
}

// getAdmission returns an admission for n requests, empty.
func (g *grouper) getAdmission(n int) *admission {
	if sc, _ := g.admissions.Get().(*admission); sc != nil && len(sc.subs) >= n {
		return sc
	}
	return &admission{subs: make([]submission, n), pending: make([]pending, n), ptrs: make([]*pending, n), items: g.spec.newItemSlab(n)}
}

// putAdmission empties sc, so that it keeps no request's tensors, and
// keeps it for the next batch.
func (g *grouper) putAdmission(sc *admission) {
	clear(sc.subs)
	clear(sc.pending)
	clear(sc.ptrs)
	sc.items.clear()
	g.admissions.Put(sc)
}

// result is a submission's outputs, with the lease of the group outputs
// they view: its one share, or its chunks' merged.
func (sub *submission) result(g *grouper) (outputs, *lease, error) {
	if sub.err != nil {
		return nil, nil, sub.err
	}
	switch len(sub.ps) {
	case 0:
		return sub.outs, nil, nil
	case 1:
		res := &sub.ps[0].res
		return res.outs, res.lease, res.err
	}
	shares := make([]map[string]*backend.Tensor, len(sub.ps))
	leases := make([]*lease, len(sub.ps))
	for k, p := range sub.ps {
		if p.res.err != nil {
			return nil, nil, p.res.err
		}
		shares[k], leases[k] = g.spec.outMap(p.res.outs), p.res.lease
	}
	merged, err := g.spec.merge(shares, g.copies)
	if err != nil {
		return nil, nil, err
	}
	return g.spec.outSlice(merged), g.spec.mergedLease(leases), nil
}

// results binds an invoke's outputs to the values its step defines, each
// read at its position among the component's outputs (the site's).
func (r *run) results(s *ir.Step, st site, outs outputs) error {
	for j, res := range s.Results {
		k := st.results[j]
		if k < 0 || k >= len(outs) {
			return st.g.spec.noOutput(res.Port)
		}
		r.setValue(res.Value, outs[k])
	}
	return nil
}

// concurrently runs f for every live request at once, for a component
// that does not group: its session may serve several calls in parallel.
func (b *batch) concurrently(f func(r *run) error) {
	var wg sync.WaitGroup
	for i, r := range b.runs {
		if b.errs[i] != nil {
			continue
		}
		wg.Add(1)
		b.e.goroutines.run(func() {
			defer wg.Done()
			b.errs[i] = f(r)
		})
	}
	wg.Wait()
}
