package vm

import (
	"math"
	"slices"
	"time"

	"github.com/genaic/genaic/backend"
)

// lookahead bounds how many waiting items one group formation considers, so
// that forming stays cheap however long the queue is.
const lookahead = 256

// formation is a group being chosen from the queue: the oldest waiting
// item, then the compatible items that fit every budget, the scheduler's
// cap, and (where inputs are padded) pay for the padding they add.
type formation struct {
	g       *grouper
	chosen  []int // queue indices, in group order
	budgets budgetSum
	pad     padSum
	closing bool // a compatible item was kept out: the group cannot usefully grow
	cap     int
	// payable is the most padding an item may add (scheduler.payable),
	// read once per group where inputs are padded.
	payable float64
	// rest holds the candidates within their delay; ranked is
	// padAware's ranking of them.
	rest   []int
	ranked []rankedItem
	burst  []uint64   // sortBurst's keys
	was    []*pending // and the queue as it was
}

// form chooses the next group from the queue (which holds at least one
// item) without taking it. A free runner forms a group on every arrival while
// a runner waits, so one formation is reused.
func (g *grouper) form(now time.Time) *formation {
	f := g.formation()
	f.reset(g.sched.limit())
	head := g.queue[0].it
	f.budgets.add(head)
	f.pad.add(head)
	if g.solo {
		f.closing = true
		return f
	}
	// Items past their delay bound go first, oldest first, whatever they
	// cost in padding: no item waits longer than max_delay because
	// padding-aware choices passed it by. They are added as the scan
	// finds them, and a group they fill ends the scan: nothing after
	// them could join it.
	overdue := now.Add(-g.maxDelay) // an item queued at or before it is overdue
	if g.sorted {
		f.payable = g.sched.payable()
		f.inQueue(head, overdue)
		return f
	}
	rest := f.rest
	for i := 1; i < len(g.queue) && i <= lookahead; i++ {
		p := g.queue[i]
		if !g.spec.compatible(head, p.it) {
			continue
		}
		if p.queued.After(overdue) {
			rest = append(rest, i)
			continue
		}
		if f.consider(i, true); f.full() {
			break
		}
	}
	f.rest = rest
	if f.full() {
		return f
	}
	if len(f.g.spec.pads) == 0 {
		f.payable = math.Inf(1)
		for _, i := range rest {
			f.consider(i, false)
		}
		return f
	}
	f.payable = g.sched.payable()
	f.padAware(rest)
	return f
}

// formation returns the grouper's formation, made on first use.
func (g *grouper) formation() *formation {
	if g.forming == nil {
		g.forming = &formation{g: g, budgets: newBudgetSum(g.spec), pad: newPadSum(g.spec.pads)}
	}
	return g.forming
}

// padAware adds the candidates in order of the padding each would add to
// the group of its oldest item (the oldest among equals), while room is
// left, so that a padded rectangle holds items of like extents. Ranking
// once against the head, rather than again after every join, keeps
// forming a group linear in the candidates and their sort. A candidate
// that does not fit a budget is passed over, not a reason to stop: a
// smaller one may still fit.
func (f *formation) padAware(cands []int) {
	ranked := f.ranked[:0]
	for _, i := range cands {
		ranked = append(ranked, rank(f.pad.addedWaste(f.g.queue[i].it), i))
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
func (f *formation) inQueue(head *item, overdue time.Time) {
	g := f.g
	overBudget := false
	for i := 1; i < len(g.queue) && i <= lookahead && !f.full(); i++ {
		p := g.queue[i]
		if !g.spec.compatible(head, p.it) {
			continue
		}
		f.consider(i, !p.queued.After(overdue))
		overBudget = overBudget || f.closing
		f.closing = false
	}
	f.closing = f.closing || overBudget
}

// sortBurst orders, under the lock, a queue of padded items that holds one
// burst (every item queued at one time, as a lockstep batch queues its
// own, all of them or the part admitted so far) by the items' padded
// extents, smallest first, ties in queue order, so that groups taken in
// queue order (inQueue) hold items of like extents. A burst's items are
// answered together, at the end of their batch, so their order delays
// none of them. Sorting once usually pads less than ranking the
// candidates against each group's oldest item (an item between two
// extents ranks the items on either side of it alike, and its group takes
// both), spares that ranking for every group, and, since small items come
// early, lets groups fill a budget exactly (the 64-image workload: 8
// invocations instead of 9; RATIONALE, "A burst is grouped in order of
// its extents").
func (g *grouper) sortBurst() {
	q := g.queue
	if len(g.spec.pads) == 0 || g.solo || len(q) < 3 || len(q) > maxBurst {
		return
	}
	for _, p := range q[1:] {
		if !p.queued.Equal(q[0].queued) {
			return
		}
	}
	f := g.formation()
	keys := f.burst[:0]
	for i, p := range q {
		keys = append(keys, uint64(min(max(f.pad.area(p.it), 0), maxArea))<<burstAtBits|uint64(i))
	}
	slices.Sort(keys)
	f.burst = keys
	was := append(f.was[:0], q...)
	for i, k := range keys {
		q[i] = was[k&(maxBurst-1)]
	}
	clear(was)
	f.was = was[:0]
	g.sorted = true
	g.fillStale = true
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

// consider adds queue item i when it fits every budget and the cap, and
// (unless it is overdue) when the padding it adds costs less than the
// invocation it saves.
func (f *formation) consider(i int, overdue bool) {
	if f.full() {
		return
	}
	it := f.g.queue[i].it
	if !f.budgets.fits(it) {
		f.closing = true
		return
	}
	if !overdue && !f.pays(it) {
		f.g.stats.keptForPadding()
		return
	}
	f.chosen = append(f.chosen, i)
	f.budgets.add(it)
	f.pad.add(it)
}

// pays reports whether the padding it would add costs less than the
// invocation it saves.
func (f *formation) pays(it *item) bool { return paysWithin(f.pad.addedWaste(it), f.payable) }

func (f *formation) head() *pending { return f.g.queue[f.chosen[0]] }

// reset empties the formation for the next group, keeping its storage.
func (f *formation) reset(cap int) {
	f.chosen = append(f.chosen[:0], 0)
	f.rest = f.rest[:0]
	f.closing, f.cap = false, cap
	f.budgets.clear()
	f.pad.clear()
}

// full reports whether the group cannot grow: a budget is spent, an item
// was kept out by one, or the scheduler's cap is reached.
func (f *formation) full() bool {
	return f.closing || f.budgets.spent() || f.cap > 0 && len(f.chosen) >= f.cap
}

// take removes the chosen items from the queue, keeping the order of the
// others, and returns them, appended to into[:0].
func (f *formation) take(into []*pending) []*pending {
	q := f.g.queue
	batch := into[:0]
	for _, i := range f.chosen {
		batch = append(batch, q[i])
		q[i] = nil
	}
	kept := q[:0]
	for _, p := range q {
		if p != nil {
			kept = append(kept, p)
		}
	}
	clear(q[len(kept):])
	f.g.queue = kept
	f.g.fillStale = true
	return batch
}

// budgetSum is the footprint of a candidate group on every budget (§3.5),
// kept term by term as items join, so that trying one more item costs one
// pass over the terms, not over the group.
type budgetSum struct {
	spec *componentSpec
	vals []int64 // per term of every budget, in termInfo's order
}

func newBudgetSum(spec *componentSpec) budgetSum {
	return budgetSum{spec: spec, vals: make([]int64, len(spec.termInfo))}
}

// clear empties the sum.
func (s *budgetSum) clear() { clear(s.vals) }

// with returns term k with an item's part v added.
func (s *budgetSum) with(k int, v int64) int64 {
	if s.spec.termInfo[k].kind == termPadded {
		return max(s.vals[k], v)
	}
	return s.vals[k] + v
}

func (s *budgetSum) fits(it *item) bool {
	ts := s.spec.terms(it)
	for _, b := range s.spec.budgets {
		total := int64(1)
		for k := b.lo; k < b.hi; k++ {
			total *= s.with(k, ts[k])
		}
		if total > b.limit {
			return false
		}
	}
	return true
}

func (s *budgetSum) add(it *item) {
	for k, v := range s.spec.terms(it) {
		s.vals[k] = s.with(k, v)
	}
}

// total is the footprint on budget i.
func (s *budgetSum) total(i int) int64 {
	b := s.spec.budgets[i]
	return product(s.vals[b.lo:b.hi])
}

// spent reports whether some budget is exactly spent: no item can join.
func (s *budgetSum) spent() bool {
	for i, b := range s.spec.budgets {
		if s.total(i) >= b.limit {
			return true
		}
	}
	return false
}

// of is one item's part of the budget term: its packed extent, its units
// of a level, its rows, or its extent on a padded or pinned axis.
func (t *termInfo) of(it *item) int64 {
	if t.kind == termRows {
		return max(t.factor, 1) // one request: one row, or factor rows when expanded
	}
	if t.port < 0 {
		return 0
	}
	switch p := it.ports[t.port].t; t.kind {
	case termPacked:
		if p != nil {
			return p.Shape[0]
		}
	case termUnits:
		if offs := it.ports[t.port].levels; t.level-1 < len(offs) && t.level >= 1 {
			return int64(len(offs[t.level-1]) - 1)
		}
	case termPadded:
		if p != nil && t.axis < p.Rank() {
			return max(p.Shape[t.axis], t.fixed)
		}
	}
	return 0
}

// padPort is a payload input port with padded axes.
type padPort struct {
	name  string
	at    int // its position in the GroupPlan's inputs
	axes  []int
	fixed []int64 // per padded axis: the extent the graph fixes, or 0
}

// padSum counts the elements a candidate group's padded ports would
// materialize, so that the padding one more item adds is known before it
// joins.
type padSum struct {
	ports []padPort
	off   []int     // per port: where its parts start in an item's (parts)
	rows  []int64   // per port: the group's extent on axis 0
	ext   [][]int64 // per port: the group's extent on each padded axis
	now   []int64   // per port: the elements the group materializes as is
}

func newPadSum(ports []padPort) padSum {
	s := padSum{ports: ports, off: make([]int, len(ports)+1), rows: make([]int64, len(ports)),
		ext: make([][]int64, len(ports)), now: make([]int64, len(ports))}
	for k, p := range ports {
		s.ext[k] = make([]int64, len(p.axes))
		s.off[k+1] = s.off[k] + padFixed + len(p.axes)
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

// padFixed counts the parts of a padded port every item has whatever its
// padded axes: rows, inner and own.
const padFixed = 3

// parts returns the item's part of the sums, per padded port in turn: its
// rows (extent on axis 0), the product of its axes other than 0 and the
// padded ones (inner), its own element count, then its extent on each
// padded axis (0 where its rank stops short). An item never changes once
// admitted, and forming reads these for every candidate of every group
// that might take it, so they are computed once, like its budget terms.
func (s *padSum) parts(it *item) []int64 {
	if it.pad == nil {
		v := it.padInline[:0]
		for k, p := range s.ports {
			t := it.ports[p.at].t.Shape
			own := backend.Elements(t)
			if p.fixed != nil {
				// Padded to what the graph fixes alone too: that padding
				// is the item's own, not the group's.
				for j, a := range p.axes {
					if a < len(t) && p.fixed[j] > t[a] && t[a] > 0 {
						own = own / t[a] * p.fixed[j]
					}
				}
			}
			v = append(v, t[0], s.innerOf(k, t), own)
			for j, a := range p.axes {
				var e int64
				if a < len(t) {
					e = t[a]
				}
				if p.fixed != nil {
					e = max(e, p.fixed[j])
				}
				v = append(v, e)
			}
		}
		it.pad = v
	}
	return it.pad
}

// elements is the padded element count of port k with an item of parts v
// (the port's) added.
func (s *padSum) elements(k int, v []int64) int64 {
	n := s.rows[k] + v[0]
	for j, e := range v[padFixed:] {
		n *= max(s.ext[k][j], e)
	}
	return n * v[1]
}

// innerOf is the product of a shape's axes other than 0 and the padded ones.
func (s *padSum) innerOf(k int, shape []int64) int64 {
	inner := int64(1)
	for a := 1; a < len(shape); a++ {
		if !slices.Contains(s.ports[k].axes, a) {
			inner *= shape[a]
		}
	}
	return inner
}

// addedWaste is how many padding elements adding it would materialize,
// beyond its own: its own padding to the group's extents and the extra
// padding of every item already in when it raises an extent.
func (s *padSum) addedWaste(it *item) int64 {
	v := s.parts(it)
	var w int64
	for k := range s.ports {
		pv := v[s.off[k]:s.off[k+1]]
		w += s.elements(k, pv) - s.now[k] - pv[2]
	}
	return w
}

// area is the product of an item's extents on the padded axes of every
// padded port (1 for an axis its rank stops short of): what sortBurst
// orders a burst by.
func (s *padSum) area(it *item) int64 {
	v := s.parts(it)
	a := int64(1)
	for k := range s.ports {
		for _, e := range v[s.off[k]+padFixed : s.off[k+1]] {
			a *= max(e, 1)
		}
	}
	return a
}

func (s *padSum) add(it *item) {
	v := s.parts(it)
	for k := range s.ports {
		pv := v[s.off[k]:s.off[k+1]]
		s.now[k] = s.elements(k, pv)
		s.rows[k] += pv[0]
		for j, e := range pv[padFixed:] {
			s.ext[k][j] = max(s.ext[k][j], e)
		}
	}
}
