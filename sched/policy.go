// Package sched decides which of a component's waiting items run together
// (DESIGN.md §6 Group formation) and when: the next group is
// policy(queue, now). It knows items only by what admission computed of
// them once (Entry): their compatibility key, their part of every budget,
// their padded parts and when they were queued; it never sees a tensor,
// and it imports nothing of the runtime. The runtime (package vm) admits
// items and queues them in a component's Scheduler (scheduler.go: the
// queue, this policy, and the execution slots that form and run the
// groups), which hands each group to the runtime's Executor to run; the
// runtime reports each run's time to the cost model (cost.go).
//
// This file is the policy, to be read top to bottom: the entries and the
// queue, in order of priority and then of arrival; Next, which closes a
// group or says how long waiting may still help it grow; how a group is
// formed (the first item, the compatible items, the more urgent first,
// every budget, the items past their delay first, the padding-aware
// choice, the size cap, a burst in order of its extents); when waiting
// can help (the closing decision, bounded by max_delay and by the items'
// deadlines, and a lone caller's); and last the two sums a group is
// measured with: its budgets, the one place a budget is summed and
// checked, and the padding it materializes.
package sched

import (
	"context"
	"math"
	"slices"
	"time"
)

// Entry is one waiting item, as admission computed it once.
type Entry struct {
	Key Key
	// Terms is the item's part of every budget term, in the order of the
	// component's Budgets.
	Terms []int64
	// Pad is the item's padded parts, per padded port in turn (Pads): its
	// rows (extent on axis 0), the product of its axes that are neither 0
	// nor padded (inner), its own element count (PadLead numbers), then
	// its extent on each of the port's padded axes (0 where its rank stops
	// short; at least the extent the graph fixes, where it fixes one).
	// Nil where no input is padded.
	Pad    []int64
	Queued time.Time
	// Priority orders the queue: an item of a lower Priority is taken
	// before every item of a higher one, whenever it came; items of one
	// Priority are taken in the order they came. 0 is the default.
	Priority int
	// Ctx is the context of the item's request (nil: never cancelled): an
	// item whose request is cancelled while it waits leaves the queue
	// (Scheduler), and its deadline bounds how long its group waits for
	// more items.
	Ctx context.Context
	// Owner is the caller's own record of the item, handed back with its
	// group; the policy never reads it.
	Owner any
	// waits says the item's caller waits for room in a full queue (a
	// lockstep batch's): a more urgent arrival never displaces it.
	waits bool
}

// Key says which items may share an invocation: those of equal Name and
// Dims, unless one is Alone.
type Key struct {
	// Name is what the caller says one invocation cannot mix: what the
	// component's session keys, and the values of inputs every item of a
	// group must bring equal.
	Name string
	// Dims are the item's extents of the component's uniform dimensions.
	Dims []int64
	// Alone says the item joins no other item's group (an input holds
	// NaN or an infinity, which a model that mixes positions would carry
	// into its neighbours' results).
	Alone bool
}

// compatible reports whether e may join a group whose first item is head.
func compatible(head, e *Entry) bool {
	if head.Key.Alone || e.Key.Alone {
		return head == e
	}
	return head.Key.Name == e.Key.Name && slices.Equal(head.Key.Dims, e.Key.Dims)
}

// Outlook is what the caller knows, when a group may form, of the items
// still to come.
type Outlook struct {
	// Closed: nothing more will be queued; every waiting item runs now.
	Closed bool
	// Promised: a batch run in lockstep is still queuing items; once they
	// are all in, none of its requests will bring another.
	Promised bool
	// Coming: a request the caller knows of (announced, or running and not
	// waiting here) may still bring an item.
	Coming bool
	// OpenEnded: requests come from callers that never announce them (a
	// server's), so that when the next comes is a guess (Arrivals).
	OpenEnded bool
	// Share, where groups run on several slots, is the most items a group
	// holds: one slot's fair share of the items it is formed from, so that
	// the other slots have theirs to run side by side (0: no bound but
	// the budgets and the cost model's cap). A group that holds its share
	// is full: it closes without waiting for the items still coming.
	Share int
}

// Policy is a component's queue and the decisions taken on it. It is not
// safe for concurrent use: the caller serializes every call under one lock
// (the Cost it holds has its own).
type Policy struct {
	budgets  *Budgets
	pads     Pads
	solo     bool // every group holds exactly one item
	maxDelay time.Duration
	// Cost is the component's cost model; the caller reports every run.
	Cost *Cost
	// Arrivals is the component's arrival stream; the caller records every
	// arrival (Push does not, since a caller may queue several items as
	// one arrival, or run an item without queuing it).
	Arrivals Arrivals

	queue []*Entry // waiting items, by Priority, then oldest first
	// sorted says the queue holds one burst in order of its items' padded
	// extents (sortBurst), until the next arrival: groups take them in
	// queue order.
	sorted bool
	f      formation // reused for every group formed
	held   holdScan
}

// New returns the policy of a component with budgets b and padded ports
// pads, whose groups hold one item each where solo, and whose items wait
// at most maxDelay for a group to fill.
func New(b *Budgets, pads Pads, solo bool, maxDelay time.Duration) *Policy {
	p := &Policy{budgets: b, pads: pads, solo: solo, maxDelay: maxDelay, Cost: &Cost{}}
	p.f = formation{budgets: b.Sum(), pad: newPadSum(pads)}
	p.held.sum, p.held.stale = b.Sum(), true
	return p
}

// Len is how many items wait.
func (p *Policy) Len() int { return len(p.queue) }

// Queue returns the waiting items in the order groups take them (by
// Priority, then oldest first), for the caller to read; it is valid until
// the queue next changes.
func (p *Policy) Queue() []*Entry { return p.queue }

// Push queues an item after every item of its Priority or a lower one:
// at the end, unless a less urgent item waits.
func (p *Policy) Push(e *Entry) {
	p.sorted = false
	n := len(p.queue)
	if n == 0 || p.queue[n-1].Priority <= e.Priority {
		p.queue = append(p.queue, e)
		return
	}
	at, _ := slices.BinarySearchFunc(p.queue, e.Priority, func(q *Entry, level int) int {
		if q.Priority <= level {
			return -1 // e goes after q
		}
		return 1
	})
	p.queue = slices.Insert(p.queue, at, e)
	p.held.stale = true // Holds's scan only follows items joining at the end
}

// Drop removes the waiting items drop reports true for (called once per
// item, in queue order), keeping the others' order, and returns how many
// it removed.
func (p *Policy) Drop(drop func(*Entry) bool) int {
	first := slices.IndexFunc(p.queue, drop)
	if first < 0 {
		return 0
	}
	kept := p.queue[:first]
	for _, e := range p.queue[first+1:] {
		if !drop(e) {
			kept = append(kept, e)
		}
	}
	n := len(p.queue) - len(kept)
	p.setQueue(kept)
	return n
}

// Displace takes out of the queue the n newest of its least urgent items
// that are less urgent than level and whose callers do not wait for room
// (Entry.waits), and returns them, where it holds n such; otherwise it
// takes nothing and returns nil. The queue is in order of priority: they
// are at its end.
func (p *Policy) Displace(n int, level int) []*Entry {
	if n <= 0 {
		return nil
	}
	var out []*Entry
	for i := len(p.queue) - 1; i >= 0 && len(out) < n; i-- {
		e := p.queue[i]
		if e.Priority <= level {
			return nil
		}
		if !e.waits {
			out = append(out, e)
		}
	}
	if len(out) < n {
		return nil
	}
	// out holds the queue's last displaceable items, newest first.
	next := len(out) - 1
	p.Drop(func(e *Entry) bool {
		if next >= 0 && e == out[next] {
			next--
			return true
		}
		return false
	})
	return out
}

// KeptForPadding counts the times an item was kept out of a group because
// the padding it would add costs more than its own invocation.
func (p *Policy) KeptForPadding() int64 { return p.f.kept }

// PromisedWait bounds a wait for promised items: they come within
// microseconds, and each one is reason to look again.
const PromisedWait = 100 * time.Millisecond

// Next is the policy: at now, with a free runner and at least one item
// waiting, it either takes the next group from the queue (appended to
// into[:0], in group order) or returns how long waiting may still help
// that group grow (0: until the queue or the outlook changes).
//
// While a lockstep batch is queuing its items, a group closes once the
// queue holds a full one (two, where padding-aware choice needs
// candidates): more of the batch is on its way, but it cannot make this
// group fuller. Otherwise the group is formed, and closes unless waiting
// can still help it (worthWaiting).
func (p *Policy) Next(now time.Time, o Outlook, into []*Entry) (group []*Entry, wait time.Duration) {
	promised := o.Promised && !o.Closed
	if promised && !p.Filled() {
		return nil, PromisedWait
	}
	if !p.sorted {
		p.sortBurst()
	}
	f := p.form(now, o.Share)
	if !o.Closed && !promised {
		if wait = p.worthWaiting(f, now, o); wait > 0 {
			return nil, wait
		}
	}
	return p.take(into), 0
}

// Filled reports whether the queue holds enough for a group to close while
// a batch is still queuing its items: one full group, or two where inputs
// are padded, so that a padding-aware choice has candidates to choose
// from.
func (p *Policy) Filled() bool {
	if p.pads.none() {
		return p.Holds(1)
	}
	return p.Holds(2)
}

// lookahead bounds how many waiting items one group formation considers, so
// that forming stays cheap however long the queue is.
const lookahead = 256

// formation is a group being chosen from the queue: its first waiting
// item (the oldest of the most urgent), then the compatible items that
// fit every budget, the cost model's cap, and (where inputs are padded)
// pay for the padding they add.
type formation struct {
	q       []*Entry
	chosen  []int // queue indices, in group order
	budgets Sum
	pad     padSum
	closing bool // a compatible item was kept out: the group cannot usefully grow
	cap     int
	// payable is the most padding an item may add (Cost.Payable), read
	// once per group where inputs are padded.
	payable float64
	kept    int64 // items kept out so far for the padding they add
	// rest holds the candidates within their delay; ranked is
	// padAware's ranking of them.
	rest   []int
	late   []int // and those past it
	ranked []rankedItem
	burst  []uint64 // sortBurst's keys
	was    []*Entry // and the queue as it was
}

// form chooses the next group from the queue (which holds at least one
// item) without taking it: at most share items (Outlook.Share; 0: any).
func (p *Policy) form(now time.Time, share int) *formation {
	f := &p.f
	limit := p.Cost.Limit()
	if share > 0 && (limit == 0 || share < limit) {
		limit = share
	}
	f.reset(p.queue, limit)
	head := p.queue[0]
	f.budgets.Add(head.Terms)
	f.pad.add(head.Pad)
	if p.solo {
		f.closing = true
		return f
	}
	padded := !p.pads.none()
	f.payable = math.Inf(1)
	if padded {
		f.payable = p.Cost.Payable()
	}
	// Items past their delay bound go before the others; among
	// themselves, where inputs are padded, by the padding they add, and
	// only where it pays, as the others. The oldest item heads every
	// group, so none waits on while younger ones pass it: one kept out
	// for its padding heads a group of its own once it is the oldest.
	// Under a load that keeps every waiting item past its bound, taking
	// them oldest first whatever they pad would choose none by padding
	// at all (a served text encoder's groups padded 0.31 where a sorted
	// burst's were 0.13).
	overdue := now.Add(-p.maxDelay) // an item queued at or before it is overdue
	if p.sorted {
		f.inQueue(head, overdue)
		return f
	}
	// The queue is in order of priority, and so is the scan: the items of
	// one priority are chosen (the overdue, then the others) before any
	// item of the next, which joins only a group that no budget closed on
	// a more urgent item.
	level, rest, late := head.Priority, f.rest, f.late
	for i := 1; i < len(p.queue) && i <= lookahead && !f.full(); i++ {
		e := p.queue[i]
		if !compatible(head, e) {
			continue
		}
		if e.Priority != level {
			if f.choose(late, rest, padded); f.full() {
				break
			}
			level, rest, late = e.Priority, rest[:0], late[:0]
		}
		switch {
		case e.Queued.After(overdue):
			rest = append(rest, i)
		case padded:
			late = append(late, i)
		default:
			// Unpadded, queue order is the choice: taken as the scan
			// finds them, a group they fill ends the scan.
			f.consider(i, false)
		}
	}
	if !f.full() {
		f.choose(late, rest, padded)
	}
	f.rest, f.late = rest[:0], late[:0]
	return f
}

// choose adds the candidates of one priority where the padding they add
// pays: those past their delay bound (late), then those within it
// (rest); each in queue order, or, where inputs are padded, by the
// padding they add.
func (f *formation) choose(late, rest []int, padded bool) {
	for _, cands := range [2][]int{late, rest} {
		if f.full() {
			return
		}
		if padded {
			f.padAware(cands)
			continue
		}
		for _, i := range cands {
			f.consider(i, false)
		}
	}
}

// padAware adds the candidates in order of the padding each would add to
// the group of its first item (the oldest among equals), while room is
// left, so that a padded rectangle holds items of like extents. Ranking
// once against the head, rather than again after every join, keeps
// forming a group linear in the candidates and their sort. A candidate
// that does not fit a budget is passed over, not a reason to stop: a
// smaller one may still fit.
func (f *formation) padAware(cands []int) {
	ranked := f.ranked[:0]
	for _, i := range cands {
		ranked = append(ranked, rank(f.pad.addedWaste(f.q[i].Pad), i))
	}
	f.ranked = ranked
	slices.Sort(ranked)
	overBudget := false
	for _, r := range ranked {
		if f.full() {
			break
		}
		f.consider(r.at(), false)
		overBudget = overBudget || f.closing
		f.closing = false
	}
	f.closing = f.closing || overBudget
}

// inQueue adds the items of a burst sorted by extent (sortBurst) that are
// compatible with head in queue order, as they come, passing over those
// that do not fit a budget as padAware does, until the group is full.
// The burst's items were queued together: all are overdue, or none is.
func (f *formation) inQueue(head *Entry, overdue time.Time) {
	overBudget := false
	for i := 1; i < len(f.q) && i <= lookahead && !f.full(); i++ {
		e := f.q[i]
		if !compatible(head, e) {
			continue
		}
		f.consider(i, !e.Queued.After(overdue))
		overBudget = overBudget || f.closing
		f.closing = false
	}
	f.closing = f.closing || overBudget
}

// consider adds queue item i when it fits every budget and the cap, and
// (unless it is overdue) when the padding it adds costs less than the
// invocation it saves.
func (f *formation) consider(i int, overdue bool) {
	if f.full() {
		return
	}
	e := f.q[i]
	if !f.budgets.Fits(e.Terms) {
		f.closing = true
		return
	}
	if !overdue && !paysWithin(f.pad.addedWaste(e.Pad), f.payable) {
		f.kept++
		return
	}
	f.chosen = append(f.chosen, i)
	f.budgets.Add(e.Terms)
	f.pad.add(e.Pad)
}

// paysWithin reports whether adding waste padding elements stays within
// payable (Cost.Payable): the padding costs less than the invocation the
// item saves.
func paysWithin(waste int64, payable float64) bool {
	return waste <= 0 || float64(waste) <= payable
}

// bounds are what the chosen items' waits are bounded by: when the oldest
// of them was queued, and the earliest deadline of their requests (zero
// where none has one). Items of one request share its context, which is
// asked once per run of them.
func (f *formation) bounds() (oldest, deadline time.Time) {
	var ctx context.Context
	for k, i := range f.chosen {
		e := f.q[i]
		if k == 0 || e.Queued.Before(oldest) {
			oldest = e.Queued
		}
		if e.Ctx == nil || e.Ctx == ctx {
			continue
		}
		ctx = e.Ctx
		if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
	}
	return oldest, deadline
}

// reset empties the formation for the next group from queue q, keeping its
// storage.
func (f *formation) reset(q []*Entry, cap int) {
	f.q = q
	f.chosen = append(f.chosen[:0], 0)
	f.rest = f.rest[:0]
	f.closing, f.cap = false, cap
	f.budgets.Clear()
	f.pad.clear()
}

// full reports whether the group cannot grow: a budget is spent, an item
// was kept out by one, or the cap is reached.
func (f *formation) full() bool {
	return f.closing || f.budgets.Spent() || f.cap > 0 && len(f.chosen) >= f.cap
}

// take removes the group formed last from the queue, keeping the order of
// the others, and returns it, appended to into[:0].
func (p *Policy) take(into []*Entry) []*Entry {
	f := &p.f
	group := into[:0]
	for _, i := range f.chosen {
		group = append(group, p.queue[i])
		p.queue[i] = nil
	}
	kept := p.queue[:0]
	for _, e := range p.queue {
		if e != nil {
			kept = append(kept, e)
		}
	}
	f.q = nil
	p.setQueue(kept)
	return group
}

// setQueue replaces the queue by kept, a prefix of its storage, after items
// left it.
func (p *Policy) setQueue(kept []*Entry) {
	clear(p.queue[len(kept):])
	p.queue = kept
	p.held.stale = true
}

// sortBurst orders a queue of padded items that holds one burst (every
// item queued at one time, as a lockstep batch queues its own, all of
// them or the part queued so far) by the items' padded extents, smallest
// first, ties in queue order, so that groups taken in queue order
// (inQueue) hold items of like extents. A burst's items are answered
// together, at the end of their batch, so their order delays none of
// them. Sorting once usually pads less than ranking the candidates against
// each group's oldest item (an item between two extents ranks the items
// on either side of it alike, and its group takes both), spares that
// ranking for every group, and, since small items come early, lets groups
// fill a budget exactly (the 64-image workload: 8 invocations instead of
// 9; RATIONALE, "A burst is grouped in order of its extents").
func (p *Policy) sortBurst() {
	q := p.queue
	if p.pads.none() || p.solo || len(q) < 3 || len(q) > maxBurst {
		return
	}
	for _, e := range q[1:] {
		if !e.Queued.Equal(q[0].Queued) || e.Priority != q[0].Priority {
			return
		}
	}
	f := &p.f
	keys := f.burst[:0]
	for i, e := range q {
		keys = append(keys, uint64(min(max(p.pads.area(e.Pad), 0), maxArea))<<burstAtBits|uint64(i))
	}
	slices.Sort(keys)
	f.burst = keys
	was := append(f.was[:0], q...)
	for i, k := range keys {
		q[i] = was[k&(maxBurst-1)]
	}
	clear(was)
	f.was = was[:0]
	p.sorted = true
	p.held.stale = true
}

// A burst is sorted on one integer per item: its area above its queue
// position's burstAtBits bits, so that equal areas keep queue order (an
// area beyond maxArea, or one that overflowed, sorts with maxArea).
const (
	burstAtBits = 20
	maxBurst    = 1 << burstAtBits // the longest queue sortBurst sorts
	maxArea     = 1<<(64-burstAtBits) - 1
)

// rankedItem is a candidate ranked by the padding it adds, then by its
// queue position, as one integer: the waste above the position's bits.
// Queue positions are unique, so ties go to the older item, and sorting
// integers costs a fraction of sorting pairs with a comparison function.
type rankedItem uint64

// rankAtBits holds any queue position formation considers.
const rankAtBits = 9

var _ [1<<rankAtBits - 1 - lookahead]struct{} // lookahead < 1<<rankAtBits

// rank ranks a candidate. A waste beyond what the bits above a position
// hold ranks last (it holds more padding than memory can).
func rank(waste int64, at int) rankedItem {
	const most = 1<<(64-rankAtBits) - 1
	return rankedItem(uint64(min(max(waste, 0), most))<<rankAtBits | uint64(at))
}

func (r rankedItem) at() int { return int(r & (1<<rankAtBits - 1)) }

// A group closes when a runner is free and waiting cannot make it better:
//
//   - it is full: no budget, nor the cap, nor its share of the items
//     (Outlook.Share) has room for more;
//   - no item can still arrive: every request the caller knows of is
//     already waiting here (and a batch run in lockstep promises the items
//     it is queuing, so the last group of a burst never waits out the
//     delay);
//   - its oldest item has waited max_delay, the upper bound of every wait
//     (a less urgent item in it may be older than the first);
//   - waiting longer could end its run past the deadline of one of its
//     items' requests (Cost.RunBound before it);
//   - the next arrival, judged from the measured arrival rate, would come
//     after a run of the group would end, or is overdue (the stream paused
//     or ended).

// worthWaiting returns how long the group f may still wait for arrivals,
// or 0 when it should close now.
func (p *Policy) worthWaiting(f *formation, now time.Time, o Outlook) time.Duration {
	if p.solo || f.full() || p.maxDelay <= 0 {
		return 0
	}
	oldest, deadline := f.bounds()
	left := p.maxDelay - now.Sub(oldest)
	if !deadline.IsZero() {
		run, _ := p.Cost.RunBound()
		left = min(left, deadline.Sub(now)-run)
	}
	switch {
	case left <= 0:
		return 0
	case o.Coming:
		return left
	case !o.OpenEnded:
		return 0 // every request the caller knows of is here
	}
	// An open stream: wait for the next item only when items usually
	// arrive while others wait (a lone caller's next request comes after
	// its answer, never during the wait) and it is expected before a run of
	// this group would end; otherwise run now, and the runner is free again
	// by the time it comes.
	due, known := p.Arrivals.due(now)
	run, measured := p.Cost.ExpectedRun()
	switch {
	case !known:
		return left // a new stream: its first items wait for each other
	case p.Arrivals.apart():
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

// Lone reports whether a group of one item arriving now, with nothing
// waiting, would close at once (as worthWaiting decides), so that its
// caller may run it itself: every group holds one item or none waits; or
// no request the caller knows of may still bring an item (o.Coming
// counting the arriving item's own request as here) and either the
// callers are not an open stream or the stream's items arrive alone.
func (p *Policy) Lone(o Outlook) bool {
	switch {
	case p.solo:
		return true
	case o.Promised:
		return false
	case p.maxDelay <= 0:
		return true
	case o.Coming:
		return false
	}
	return !o.OpenEnded || p.Arrivals.apart()
}

// holdScan is Holds's scan of the queue: its sums, how far it got, how
// many items the group it is filling holds and how many full groups it
// found, its cap, and whether items left the queue or changed places
// since (so that it starts over). Items joining the queue only extend it.
type holdScan struct {
	sum          Sum
	at, n, found int
	cap          int
	stale        bool
}

// Holds reports whether the queue already holds n full groups, taken
// compatible with the first item, in queue order, each closed where a
// budget or the cap binds. It is a cheap test that spares forming a group
// (which ranks the candidates): the scan resumes where it stopped, so a
// burst is scanned once, not once per arrival, until items leave the
// queue.
func (p *Policy) Holds(n int) bool {
	h := &p.held
	if h.stale {
		h.stale, h.at, h.n, h.found = false, 0, 0, 0
		h.cap = p.Cost.Cap()
		if p.solo {
			h.cap = 1
		}
		h.sum.Clear()
	}
	if h.found >= n || len(p.queue) == 0 {
		return h.found >= n
	}
	head := p.queue[0]
	closed := func() bool {
		h.found++
		h.n = 0
		h.sum.Clear()
		return h.found >= n
	}
	for ; h.at < len(p.queue) && h.at <= lookahead; h.at++ {
		e := p.queue[h.at]
		if !compatible(head, e) {
			continue
		}
		if !h.sum.Fits(e.Terms) && closed() {
			return true
		}
		h.sum.Add(e.Terms)
		if h.n++; (h.sum.Spent() || h.cap > 0 && h.n >= h.cap) && closed() {
			h.at++
			return true
		}
	}
	return false
}

// Budgets are a component's budgets (§3.5): each a product of terms that
// a group must keep within its max_total. A group's term is the sum of
// its items' parts, or, for a padded or pinned axis, the largest of them.
type Budgets struct {
	largest []bool // per term, in order: the group's term is its items' largest
	spans   []budgetSpan
}

// budgetSpan is one budget: its terms [lo, hi) and its max_total.
type budgetSpan struct {
	lo, hi int
	limit  int64
}

// Add appends a budget of max_total limit whose terms follow the terms of
// the budgets before it, one per entry of largest.
func (b *Budgets) Add(limit int64, largest ...bool) {
	lo := len(b.largest)
	b.largest = append(b.largest, largest...)
	b.spans = append(b.spans, budgetSpan{lo: lo, hi: len(b.largest), limit: limit})
}

// Len is how many budgets there are.
func (b *Budgets) Len() int { return len(b.spans) }

// within is the budget check: footprint total keeps within budget i.
func (b *Budgets) within(i int, total int64) bool { return total <= b.spans[i].limit }

// Footprint is an item's footprint on budget i, alone.
func (b *Budgets) Footprint(i int, terms []int64) int64 {
	s := b.spans[i]
	return product(terms[s.lo:s.hi])
}

// Over returns the first budget an item of terms exceeds alone, or -1.
func (b *Budgets) Over(terms []int64) int {
	for i := range b.spans {
		if !b.within(i, b.Footprint(i, terms)) {
			return i
		}
	}
	return -1
}

// product multiplies vs (1 for none).
func product(vs []int64) int64 {
	total := int64(1)
	for _, v := range vs {
		total *= v
	}
	return total
}

// Sum is the footprint of a group on every budget, kept term by term as
// items join, so that trying one more item costs one pass over the terms,
// not over the group.
type Sum struct {
	b    *Budgets
	vals []int64 // per term of every budget
}

// Sum returns an empty sum over the budgets.
func (b *Budgets) Sum() Sum { return Sum{b: b, vals: make([]int64, len(b.largest))} }

// Clear empties the sum.
func (s *Sum) Clear() { clear(s.vals) }

// with returns term k with an item's part v added.
func (s *Sum) with(k int, v int64) int64 {
	if s.b.largest[k] {
		return max(s.vals[k], v)
	}
	return s.vals[k] + v
}

// Fits reports whether an item of terms keeps the group within every
// budget.
func (s *Sum) Fits(terms []int64) bool {
	for i, b := range s.b.spans {
		total := int64(1)
		for k := b.lo; k < b.hi; k++ {
			total *= s.with(k, terms[k])
		}
		if !s.b.within(i, total) {
			return false
		}
	}
	return true
}

// Add adds an item of terms to the group.
func (s *Sum) Add(terms []int64) {
	for k, v := range terms {
		s.vals[k] = s.with(k, v)
	}
}

// Total is the group's footprint on budget i.
func (s *Sum) Total(i int) int64 {
	b := s.b.spans[i]
	return product(s.vals[b.lo:b.hi])
}

// Over returns the first budget the group exceeds, or -1.
func (s *Sum) Over() int {
	for i := range s.b.spans {
		if !s.b.within(i, s.Total(i)) {
			return i
		}
	}
	return -1
}

// Spent reports whether some budget is exactly spent: no item can join.
func (s *Sum) Spent() bool {
	for i, b := range s.b.spans {
		if s.Total(i) >= b.limit {
			return true
		}
	}
	return false
}

// PadLead is how many parts of a padded port every entry has before its
// extents on the padded axes: rows, inner and own (Entry.Pad).
const PadLead = 3

// Pads is where each padded port's parts lie in an entry's Pad.
type Pads struct {
	off []int // per port k: its parts are Pad[off[k]:off[k+1]]
}

// NewPads returns the layout of ports padded on axes[k] axes each.
func NewPads(axes ...int) Pads {
	if len(axes) == 0 {
		return Pads{}
	}
	p := Pads{off: make([]int, len(axes)+1)}
	for k, n := range axes {
		p.off[k+1] = p.off[k] + PadLead + n
	}
	return p
}

func (p Pads) none() bool { return len(p.off) == 0 }

// ports is how many padded ports there are.
func (p Pads) ports() int { return max(len(p.off)-1, 0) }

// port is port k's parts of an entry's Pad.
func (p Pads) port(v []int64, k int) []int64 { return v[p.off[k]:p.off[k+1]] }

// area is the product of an entry's extents on the padded axes of every
// padded port (1 for an axis its rank stops short of): what sortBurst
// orders a burst by.
func (p Pads) area(v []int64) int64 {
	a := int64(1)
	for k := range p.ports() {
		for _, e := range p.port(v, k)[PadLead:] {
			a *= max(e, 1)
		}
	}
	return a
}

// padSum counts the elements a candidate group's padded ports would
// materialize, so that the padding one more item adds is known before it
// joins.
type padSum struct {
	pads Pads
	rows []int64   // per port: the group's extent on axis 0
	ext  [][]int64 // per port: the group's extent on each padded axis
	now  []int64   // per port: the elements the group materializes as is
}

func newPadSum(pads Pads) padSum {
	n := pads.ports()
	s := padSum{pads: pads, rows: make([]int64, n), ext: make([][]int64, n), now: make([]int64, n)}
	for k := range n {
		s.ext[k] = make([]int64, pads.off[k+1]-pads.off[k]-PadLead)
	}
	return s
}

// clear empties the sums for the next group.
func (s *padSum) clear() {
	clear(s.rows)
	clear(s.now)
	for _, e := range s.ext {
		clear(e)
	}
}

// elements is the padded element count of port k with an item of parts v
// (the port's) added.
func (s *padSum) elements(k int, v []int64) int64 {
	n := s.rows[k] + v[0]
	for j, e := range v[PadLead:] {
		n *= max(s.ext[k][j], e)
	}
	return n * v[1]
}

// addedWaste is how many padding elements adding an entry of parts v
// would materialize, beyond its own: its own padding to the group's
// extents and the extra padding of every item already in when it raises
// an extent.
func (s *padSum) addedWaste(v []int64) int64 {
	var w int64
	for k := range s.rows {
		pv := s.pads.port(v, k)
		w += s.elements(k, pv) - s.now[k] - pv[2]
	}
	return w
}

func (s *padSum) add(v []int64) {
	for k := range s.rows {
		pv := s.pads.port(v, k)
		s.now[k] = s.elements(k, pv)
		s.rows[k] += pv[0]
		for j, e := range pv[PadLead:] {
			s.ext[k][j] = max(s.ext[k][j], e)
		}
	}
}
