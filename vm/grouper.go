package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/sched"
)

// grouper runs one grouped component (§6 Group formation): it admits the
// requests' items and queues them in the component's scheduler
// (sched.Scheduler), which forms the groups on its execution slots, as
// continuous batching does, and hands each to the grouper to run
// (sched.Executor: assemble, invoke, split, answer) on the slot's own
// input buffers (arena.go), reused from group to group.
type grouper struct {
	spec   *componentSpec
	sess   backend.Session
	call   *sessionCall     // how groups are handed to sess
	rec    backend.Recycler // takes groups' outputs back (lease.go); nil: none
	solo   bool             // every invocation carries exactly one item
	stats  *counter
	copies *Copies
	lones  sync.Pool // of *lone
	// s queues the items, forms the groups and holds the execution slots
	// that run them (package sched).
	s *sched.Scheduler

	admissions sync.Pool // of *admission, for batches run in lockstep
	rooms      sync.Pool // of *splitRoom, for the groups whose leases ended
}

type pending struct {
	// e is what the policy knows of the item (its request's context
	// too); its Owner is the entry.
	e  sched.Entry
	it *item
	// first is the entry of the first chunk of the request p is a later
	// chunk of (a request split across invocations, splitreq.go); nil
	// for a request's first or only item. It tells a group's requests
	// apart (oneRequest).
	first *pending
	// finished, for a chunk, is told its place in its request (part) once
	// its share is on done, so that the request waits on its chunks in
	// the order they finish (splitreq.go); nil otherwise.
	finished chan<- int
	part     int
	// An item is answered on done, or, for one of a batch run in lockstep,
	// into res with batch.Done.
	done  chan share
	batch *sync.WaitGroup
	res   share
	// leads says a lone caller's entry may take its group's answers to
	// the group's other callers (answerGroup); lead is whether it does:
	// the slot that ran the group sets it leading before the answer goes
	// out, a caller that stops waiting sets it gone, whichever is first.
	leads bool
	lead  atomic.Int32
}

// The states of pending.lead.
const (
	waiting int32 = iota
	leading
	gone
)

// hold makes p the entry of item it of spec, queued at t: what admission
// computed of the item, for the policy (its request's context already
// set).
func (p *pending) hold(spec *componentSpec, it *item, t time.Time) {
	// Field by field: a literal naming p would be built aside and copied.
	p.it = it
	p.e.Key = entryKey(it)
	p.e.Terms, p.e.Pad = spec.terms(it), spec.padParts(it)
	p.e.Queued, p.e.Priority, p.e.Owner = t, PriorityOf(p.e.Ctx), p
}

// answer hands an item its share.
func (p *pending) answer(s share) {
	if p.batch != nil {
		p.res = s
		p.batch.Done()
		return
	}
	// Read before the send: a lone caller's entry goes back to its pool
	// once the share is received.
	finished, part := p.finished, p.part
	p.done <- s
	if finished != nil {
		finished <- part
	}
}

type share struct {
	outs  outputs
	err   error
	lease *lease // of the group outputs outs views (lease.go); nil: none
	// fan holds the answers to the other callers of the group, for the
	// caller that receives this share to give (answerGroup); nil: none.
	fan *fan
}

// fan is the answers a group's leading caller gives to its other callers.
type fan struct{ answers []answer }

type answer struct {
	p *pending
	s share
}

var fans = sync.Pool{New: func() any { return new(fan) }}

// received is s, received by p's caller, once the answers it carries to
// the other callers of its group are given.
func (p *pending) received(s share) share {
	if f := s.fan; f != nil {
		for i := range f.answers {
			f.answers[i].p.answer(f.answers[i].s)
			f.answers[i] = answer{}
		}
		f.answers = f.answers[:0]
		fans.Put(f)
		s.fan = nil
	}
	return s
}

// ErrClosed is what a request submitted to an engine that was closed
// fails with: a run/closed RunError that wraps it, so errors.Is(err,
// ErrClosed) holds.
var ErrClosed = errors.New("the engine is closed: the request was not run")

// closedError is the run/closed error of a request the engine refused.
func closedError() error {
	return &backend.RunError{Rule: backend.RunClosed, Message: ErrClosed.Error(), Err: ErrClosed}
}

// QueueFullError is why a request fails when a component's queue holds
// its limit of waiting items: the request fails at once, with a
// run/queue-full RunError that wraps it (errors.As finds either), instead
// of waiting unboundedly; or, Displaced, why a request waiting in a full
// queue failed when a more urgent one took its place.
type QueueFullError struct {
	Component string
	Limit     int
	Displaced bool
}

func (e *QueueFullError) Error() string {
	if e.Displaced {
		return fmt.Sprintf("component `%s`'s queue held its limit of %d items and a more urgent request took this one's place; retry later or raise the limit", e.Component, e.Limit)
	}
	return fmt.Sprintf("component `%s` already has %d items waiting (the queue limit); retry later or raise the limit", e.Component, e.Limit)
}

func newGrouper(e *Engine, spec *componentSpec, sess backend.Session, r backend.Readiness, stats *counter, copies *Copies) *grouper {
	o := e.opts
	g := &grouper{spec: spec, sess: sess, call: newSessionCall(spec, sess), solo: o.Solo, stats: stats, copies: copies}
	if !r.Ready {
		g.solo = true
		stats.decline(fmt.Sprintf("%s/%s: %s", r.Provider, r.OpClass, r.Reason))
	}
	if rec, ok := sess.(backend.Recycler); ok && g.call.ports != nil {
		g.rec = rec
	}
	pol := sched.New(spec.budgets, spec.padLayout, g.solo, o.MaxDelay)
	g.s = sched.NewScheduler(pol, o.Queue, o.Workers, g, sched.Hints{Announced: &e.announced, Active: &e.active, OpenEnded: &e.openEnded})
	return g
}

// NewSlot is a slot's storage: its arena (sched.Executor).
func (g *grouper) NewSlot() any { return newArena(len(g.spec.gp.Inputs)) }

// Run runs a group the scheduler formed, on a slot's arena
// (sched.Executor).
func (g *grouper) Run(slot any, group []*sched.Entry, formed time.Time, by sched.Way, release sched.Release) bool {
	a := slot.(*arena)
	batch := a.batch[:0]
	for _, e := range group {
		batch = append(batch, e.Owner.(*pending))
	}
	// Read before the answers: an answered item of a lockstep batch is
	// its batch's again, to reuse.
	callers := slices.ContainsFunc(batch, isCaller)
	switch by {
	case sched.Inline:
		g.stats.ranInline()
	case sched.ByBatch:
		g.stats.ranOwn()
	}
	g.run(a, batch, formed, release)
	clear(batch)
	a.batch = batch[:0]
	return callers
}

// Drop answers an item that left the queue without running
// (sched.Executor): its request was cancelled while it waited, or a more
// urgent request displaced it from the full queue (run/queue-full).
func (g *grouper) Drop(e *sched.Entry, err error) {
	var qe *sched.QueueError
	if errors.As(err, &qe) && qe.Displaced {
		g.stats.displace()
	}
	e.Owner.(*pending).answer(share{err: g.queueError(err)})
}

// isCaller reports whether p is a caller's item (Run, Invoke), answered on
// its channel, rather than a lockstep batch's.
func isCaller(p *pending) bool { return p.batch == nil }

// lone is what a request run alone (Run, a generated executor's Invoke)
// holds at a grouped component while it waits: its item, with room for
// its chains, and the pending entry it is queued and answered with. A
// grouper pools them, so that such a request allocates none of it. One
// goes back to the pool only once nothing of the grouper can reach it
// any more: its share was received, or it was never queued. A request
// that stops waiting (cancelled) leaves its entry to the runner that will
// answer it into its channel, and then to the collector.
type lone struct {
	slab *itemSlab
	p    pending
	es   [1]*sched.Entry // the group of one an inline run takes
}

func (g *grouper) getLone() *lone {
	if l, _ := g.lones.Get().(*lone); l != nil {
		return l
	}
	return &lone{slab: g.spec.newItemSlab(1), p: pending{done: make(chan share, 1)}}
}

// putLone pools l, emptied; an entry whose channel still holds an answer
// (none should) is left to the collector.
func (g *grouper) putLone(l *lone) {
	if len(l.p.done) > 0 {
		return
	}
	l.slab.clear()
	l.p = pending{done: l.p.done}
	l.es[0] = nil
	g.lones.Put(l)
}

// runAlone admits one request's arguments of the component (by input
// position) and runs its item, returning its share of the outputs and
// the lease of the group outputs it views (nil: none to let go of).
func (g *grouper) runAlone(ctx context.Context, args []*backend.Tensor, env values) (outputs, *lease, error) {
	l := g.getLone()
	it, err := g.spec.admitInto(l.slab.item(0), args, env)
	if gate := gateOf(ctx); gate != nil {
		if err == nil {
			err = g.spec.refusal(it)
		}
		if err != nil {
			gate.refused(err)
		} else {
			err = gate.admitted(ctx)
		}
	}
	if err != nil {
		g.putLone(l)
		return nil, nil, err
	}
	if it.isolated {
		g.stats.isolate()
	}
	s, reuse := g.submit(ctx, it, l)
	if reuse {
		g.putLone(l)
	}
	return s.outs, s.lease, s.err
}

// submit runs an item: alone when it fits every budget (queued with l's
// entry), else split into chunks across invocations; an item no split can
// fit is refused at once. reuse reports whether l may be pooled again.
func (g *grouper) submit(ctx context.Context, it *item, l *lone) (s share, reuse bool) {
	if it.empty() {
		outs, err := g.answerEmpty(it)
		return share{outs: outs, err: err}, false
	}
	if g.spec.overBudget(it) < 0 {
		return g.submitOne(ctx, it, l)
	}
	chunks, err := g.spec.chunk(it)
	if err != nil {
		return share{err: err}, true
	}
	merged, lease, err := g.submitChunks(ctx, chunks)
	if err != nil {
		return share{err: err}, false
	}
	return share{outs: g.spec.outSlice(merged), lease: lease}, false
}

// answerEmpty answers an item of zero units (a request with no image, no
// line) as it would be answered alone, without the queue: its outputs
// never depend on the items it could have been grouped with, it is counted
// in no group, and no backend runs for it.
func (g *grouper) answerEmpty(it *item) (outputs, error) {
	if g.s.Closed() {
		return nil, closedError()
	}
	grp, err := g.spec.assemble([]*item{it}, &Copies{}, nil)
	if err != nil {
		return nil, err
	}
	hint, _ := g.sess.(backend.ShapeHinter)
	shares, err := g.spec.split(grp, g.spec.emptyOutputs(grp, hint), nil)
	if err != nil {
		return nil, err
	}
	return shares.of(0), nil
}

// submitOne queues an item that fits, with l's entry, and waits for its
// share; reuse reports whether l may be pooled again.
func (g *grouper) submitOne(ctx context.Context, it *item, l *lone) (s share, reuse bool) {
	p := &l.p
	p.e.Ctx, p.leads = ctx, true
	p.hold(g.spec, it, time.Now())
	slot, err := g.s.Submit(ctx, waitsForRoom(ctx), &p.e)
	switch {
	case err != nil:
		return share{err: g.queueError(err)}, true
	case slot != nil:
		l.es[0] = &p.e
		g.s.RunInline(slot, l.es[:])
	}
	return p.waitShare()
}

// waitShare blocks until the item's share is ready or its request is
// cancelled, reporting whether the share was received (false: the
// request was cancelled first, and a runner may still answer it).
func (p *pending) waitShare() (share, bool) {
	cancelled := p.e.Ctx.Done()
	if cancelled == nil { // a context that is never cancelled
		return p.received(<-p.done), true
	}
	select {
	case s := <-p.done:
		return p.received(s), true
	case <-cancelled:
		if !p.lead.CompareAndSwap(waiting, gone) {
			// A slot made p its group's leader just now: the share, and
			// the other callers' answers with it, are on their way.
			return p.received(<-p.done), true
		}
		return share{err: backend.ContextError(p.e.Ctx.Err())}, false
	}
}

// enqueue queues ps, one request's items, in the scheduler
// (sched.Scheduler.Enqueue: where wait, a request that finds the queue
// full waits for room), and returns the error the request fails with
// where they cannot join it.
func (g *grouper) enqueue(ctx context.Context, wait bool, ps ...*pending) error {
	var err error
	if len(ps) == 1 {
		err = g.s.Enqueue(ctx, wait, &ps[0].e)
	} else {
		es := make([]*sched.Entry, len(ps))
		for i, p := range ps {
			es[i] = &p.e
		}
		err = g.s.Enqueue(ctx, wait, es...)
	}
	return g.queueError(err)
}

// queueError is the run/* error of a request whose items the scheduler
// did not queue: the engine was closed (run/closed), the queue is full
// (run/queue-full: a server's caller may retry later), the items are
// more than the queue can hold at once (run/budget: neither waiting nor
// retrying would help), or the request's context ended while it waited
// for room.
func (g *grouper) queueError(err error) error {
	if err == nil {
		return nil
	}
	var qe *sched.QueueError
	switch {
	case !errors.As(err, &qe):
		return backend.ContextError(err)
	case qe.Refusal == sched.Closed:
		return closedError()
	case qe.Refusal == sched.TooMany:
		return runErr(backend.RunBudget, "the request's items at component `%s` split into %d groups, more than its queue holds at once (%d); raise the queue limit (--queue) or send the items in smaller requests", g.spec.comp.Name, qe.Items, qe.Limit)
	}
	qf := &QueueFullError{Component: g.spec.comp.Name, Limit: qe.Limit, Displaced: qe.Displaced}
	return &backend.RunError{Rule: backend.RunQueueFull, Message: qf.Error(), Err: qf}
}

// waitsKey marks the context of a batch's requests (Engine.admit): they
// wait for room in a full queue.
type waitsKey struct{}

// waitsForRoom reports whether ctx is a batch request's.
func waitsForRoom(ctx context.Context) bool { return ctx.Value(waitsKey{}) != nil }

// enqueueOwn queues the items a batch that runs its own groups has
// admitted (subs, in request order) at once (sched.Scheduler.EnqueueBurst),
// ending the batch's promise of live requests; a request refused gets its
// error in its submission.
func (g *grouper) enqueueOwn(subs []submission, live int, wg *sync.WaitGroup) {
	var one [1]*sched.Entry
	var es []*sched.Entry
	items := func(i int) []*sched.Entry {
		sub := &subs[i]
		switch {
		case sub.err != nil || len(sub.ps) == 0:
			return nil
		case len(sub.ps) == 1:
			one[0] = &sub.ps[0].e
			return one[:]
		}
		es = es[:0]
		for _, p := range sub.ps {
			es = append(es, &p.e)
		}
		return es
	}
	refused := func(i int, err error) { subs[i].err = g.queueError(err) }
	// The wait group is counted up before the scheduler's lock is let go:
	// no group of these items runs before.
	queued := 0
	for i := range subs {
		if subs[i].err == nil {
			queued += len(subs[i].ps)
		}
	}
	wg.Add(queued)
	if n := g.s.EnqueueBurst(len(subs), items, refused, live); n < queued {
		wg.Add(n - queued)
	}
}

// close stops accepting items and waits until every queued item has been
// run and answered.
func (g *grouper) close() { g.s.Close() }

// run assembles, checks, invokes and splits one group, formed at now,
// then answers each item. Everything that fails here fails the whole
// group's requests. The group's claim ends with its invocation (or here,
// when there is none): release gives its worker slot back before the
// answers, so that a caller's next request never finds the group still
// counted in flight.
func (g *grouper) run(a *arena, batch []*pending, now time.Time, giveBack sched.Release) {
	// A backend that panics unwinds through here: the slot is given back
	// all the same, once, so that a caller that recovers (or a Close
	// deferred above the panic) finds the engine serving rather than
	// waiting for the slot forever.
	released := false
	release := func() {
		if !released {
			released = true
			giveBack.Done()
		}
	}
	defer release()
	batch = g.dropCancelled(batch)
	if len(batch) == 0 {
		release()
		return
	}
	g.stats.waited(now, batch)
	shares, rows, err := g.invoke(a, batch, now)
	if err != nil && !oneRequest(batch) {
		// The backend failed a group of several requests (§6: an error
		// fails the request that owns the bad item, never its neighbours).
		// Where it laid the failure at some requests' own items, those
		// hear their errors and the others run again as one group, as
		// long as it does so; otherwise each item runs alone, so that
		// only the request whose item fails hears about it. A group of
		// one request's items is not run again: its failure is that
		// request's error, once.
		g.stats.regroup()
		for rows != nil {
			batch = g.failRows(batch, rows)
			if len(batch) == 0 {
				return
			}
			shares, rows, err = g.invoke(a, batch, time.Now())
			if err == nil || oneRequest(batch) {
				release()
				answerGroup(batch, shares, err)
				return
			}
		}
		for _, p := range batch {
			one, _, err := g.invoke(a, []*pending{p}, time.Now())
			if err != nil {
				p.answer(share{err: err})
			} else {
				p.answer(share{outs: one.of(0), lease: one.lease})
			}
		}
		release()
		return
	}
	release()
	answerGroup(batch, shares, err)
}

// failRows answers the items of batch that rows lays the group's failure
// at, each with its row's error as a group of its own would have met it,
// and returns the others, in order. A row is an item of the group: each
// item is one row of the outermost level of a packed input.
func (g *grouper) failRows(batch []*pending, rows backend.RowErrors) []*pending {
	failed := make([]error, len(batch))
	for _, r := range rows {
		failed[r.Row] = backendError(g.spec.comp.Name, 1, r.Err)
	}
	rest := batch[:0:0]
	for i, p := range batch {
		if failed[i] != nil {
			p.answer(share{err: failed[i]})
		} else {
			rest = append(rest, p)
		}
	}
	return rest
}

// answerGroup answers the items of a group: a lockstep batch's at once
// (they wake no goroutine but their batch's, once), the callers' through
// the first of them still waiting that may lead, which gives the others
// their answers (share.fan) as soon as it wakes. A group so costs the
// slot that ran it one caller's wake, whatever its size, and the other
// wakes are spent on the leader's goroutine while the slot runs the next
// group.
func answerGroup(batch []*pending, shares shareSlab, err error) {
	var f *fan
	lead := -1
	for i, p := range batch {
		s := share{err: err}
		if err == nil {
			s.outs, s.lease = shares.of(i), shares.lease
		}
		switch {
		case lead < 0 && p.leads && p.lead.CompareAndSwap(waiting, leading):
			lead, f = i, fans.Get().(*fan)
			f.answers = append(f.answers, answer{p, s})
		case lead >= 0 && isCaller(p):
			f.answers = append(f.answers, answer{p, s})
		default:
			p.answer(s)
		}
	}
	if f == nil {
		return
	}
	first := f.answers[0]
	if len(f.answers) > 1 {
		first.s.fan = f
		copy(f.answers, f.answers[1:])
		f.answers = f.answers[:len(f.answers)-1]
	} else {
		f.answers = f.answers[:0]
		fans.Put(f)
	}
	first.p.answer(first.s)
}

// oneRequest reports whether every item of a group belongs to one request.
func oneRequest(batch []*pending) bool {
	for _, p := range batch[1:] {
		if p.request() != batch[0].request() {
			return false
		}
	}
	return true
}

// request is the entry that stands for p's request: its first chunk's.
func (p *pending) request() *pending {
	if p.first != nil {
		return p.first
	}
	return p
}

// dropCancelled answers the items whose request was cancelled before their
// group was invoked and returns the others: a cancelled request costs its
// group nothing.
func (g *grouper) dropCancelled(batch []*pending) []*pending {
	if !slices.ContainsFunc(batch, func(p *pending) bool { return p.e.Ctx.Err() != nil }) {
		return batch
	}
	kept := batch[:0:0]
	for _, p := range batch {
		if err := p.e.Ctx.Err(); err != nil {
			p.answer(share{err: backend.ContextError(err)})
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(batch) {
		return batch
	}
	return kept
}

// invoke runs one group, started at start.
func (g *grouper) invoke(a *arena, batch []*pending, start time.Time) (shareSlab, backend.RowErrors, error) {
	defer a.forget()
	items := a.itemsOf(batch)
	grp, err := g.spec.assemble(items, g.copies, a)
	if err != nil {
		return shareSlab{}, nil, err
	}
	peaks, over := a.footprints(g.spec, items)
	if over >= 0 {
		b := g.spec.gp.Budgets[over]
		return shareSlab{}, nil, runErr("run/budget", "a group of component `%s` has footprint %d on budget %v, above %d", g.spec.comp.Name, peaks[over], b.Dimensions, b.MaxTotal)
	}
	var outs outputs
	var l *lease
	if grp.empty() {
		hint, _ := g.sess.(backend.ShapeHinter)
		outs = g.spec.emptyOutputs(grp, hint)
	} else {
		outs, err = g.call.run(g.spec, a, grp)
		if err != nil {
			g.stats.fail()
			return shareSlab{}, g.spec.rowsOf(err, len(items)), backendError(g.spec.comp.Name, len(items), err)
		}
		a.release(outs)
		d := time.Since(start)
		g.s.Cost().Observe(len(items), grp.elems, grp.realElems, d)
		g.stats.invoked(len(items), grp, peaks, d)
		l = newLease(g.rec, g.stats, outs, len(items), &g.rooms)
	}
	shares, err := g.spec.split(grp, outs, l)
	return shares, nil, err
}

// rowsOf returns the rows a backend's failure err of a group of n items
// lays at (backend.RowErrors), where each of those is one of the items:
// the component has a packed input, whose outermost level has one row an
// item, and every row named is one of the n, each once. nil otherwise.
func (s *componentSpec) rowsOf(err error, n int) backend.RowErrors {
	var rows backend.RowErrors
	if !errors.As(err, &rows) || len(rows) == 0 || !slices.ContainsFunc(s.gp.Inputs, func(p plan.Port) bool { return len(p.Levels) > 0 }) {
		return nil
	}
	seen := make([]bool, n)
	for _, r := range rows {
		if r.Row < 0 || r.Row >= n || seen[r.Row] || r.Err == nil {
			return nil
		}
		seen[r.Row] = true
	}
	return rows
}

// backendError names the component and the group size of a backend
// failure, keeping the rule of a backend that reported a run/* error (a
// preprocessing adapter refusing a corrupt image is run/input).
func backendError(component string, requests int, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return backend.ContextError(err)
	}
	var re *backend.RunError
	if errors.As(err, &re) {
		return runErr(re.Rule, "component `%s` (a group of %d request(s)): %s", component, requests, re.Message)
	}
	return runErr(backend.RunBackend, "component `%s` failed on a group of %d request(s): %v", component, requests, err)
}

// AsRunError returns the RunError a request's failure reports: the one err
// holds, or, for an error from outside the catalogue, run/cancelled,
// run/deadline, run/closed or run/queue-full where err stands for one of
// those, and run/backend otherwise. nil comes back as nil.
func AsRunError(err error) *backend.RunError {
	if err == nil {
		return nil
	}
	var re *backend.RunError
	if errors.As(err, &re) {
		return re
	}
	var qf *QueueFullError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		errors.As(backend.ContextError(err), &re)
		return re
	case errors.Is(err, ErrClosed):
		return &backend.RunError{Rule: backend.RunClosed, Message: err.Error(), Err: err}
	case errors.As(err, &qf):
		return &backend.RunError{Rule: backend.RunQueueFull, Message: err.Error(), Err: err}
	}
	return &backend.RunError{Rule: backend.RunBackend, Message: err.Error(), Err: err}
}

// failure is the error a response carries: err when it holds a RunError,
// else the RunError AsRunError makes of it (wrapping err).
func failure(err error) error {
	var re *backend.RunError
	if err == nil || errors.As(err, &re) {
		return err
	}
	return AsRunError(err)
}
