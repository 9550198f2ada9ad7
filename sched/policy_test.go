package sched

import (
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// features is the inner extent of the test's images: each patch holds
// this many elements.
const features = 8

// imagePolicy is the policy of an image encoder like the image_padded
// fixture's: images padded on their patch axis, at most 16 images and
// 4096 image-patches a group, items waiting at most maxDelay.
func imagePolicy(maxDelay time.Duration) *Policy {
	b := &Budgets{}
	b.Add(16, false)
	b.Add(4096, false, true)
	return New(b, NewPads(1), false, maxDelay)
}

// image is the entry of one image of patches patches queued at t: its
// budget terms (one image; one image of patches patches) and its padded
// parts (one row, features inner, its own elements, its patches).
func image(patches int64, t time.Time) *Entry {
	e := &Entry{Terms: []int64{1, 1, patches}, Pad: []int64{1, features, patches * features, patches}, Queued: t}
	e.Owner = e
	return e
}

// paddingCostly has the cost model measure a run time mostly per element:
// 1 µs a call and 100 ns an element, so that padding costs more than a
// call saves.
func paddingCostly(p *Policy) *Policy {
	for _, elements := range []int64{100, 400, 1600, 3200, 800, 200, 6400, 50, 1000, 2500} {
		p.Cost.Observe(1, elements, elements, time.Duration(1000+100*elements))
	}
	return p
}

func patchesOf(es []*Entry) []int64 {
	var x []int64
	for _, e := range es {
		x = append(x, e.Terms[2])
	}
	return x
}

// TestRankOrdersByWasteThenAge: ranked candidates sort by the padding
// they add, then oldest first, and keep their queue positions; a waste
// too large for the rank's bits still ranks after every smaller one.
func TestRankOrdersByWasteThenAge(t *testing.T) {
	type cand struct {
		waste int64
		at    int
	}
	cands := []cand{{7, 3}, {0, 9}, {7, 1}, {1 << 62, 0}, {2, lookahead}, {0, 4}, {1 << 40, 2}}
	var ranked []rankedItem
	for _, c := range cands {
		ranked = append(ranked, rank(c.waste, c.at))
	}
	slices.Sort(ranked)
	var got []int
	for _, r := range ranked {
		got = append(got, r.at())
	}
	if want := []int{4, 9, lookahead, 1, 3, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("candidates ranked at %v, want %v", got, want)
	}
}

// TestPadSumMatchesRectangles: the padding sums of a group growing item by
// item equal the padded rectangles counted afresh (rows added, each padded
// axis at its largest, the other axes as they are), for ports padded on one
// axis or two, and for items whose rank stops short of a padded axis.
func TestPadSumMatchesRectangles(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	axes := [][]int{{1}, {1, 3}}
	pads := NewPads(len(axes[0]), len(axes[1]))
	rect := func(shapes [][][]int64, k int) int64 {
		var rows, inner int64
		ext := make([]int64, len(axes[k]))
		for _, sh := range shapes {
			s := sh[k]
			rows += s[0]
			inner = 1
			for a := 1; a < len(s); a++ {
				if j := slices.Index(axes[k], a); j >= 0 {
					ext[j] = max(ext[j], s[a])
				} else {
					inner *= s[a]
				}
			}
		}
		n := rows * inner
		for _, e := range ext {
			n *= e
		}
		return n
	}
	// parts writes an item's shapes as Entry.Pad lays them out.
	parts := func(shapes [][]int64) []int64 {
		var v []int64
		for k, s := range shapes {
			inner, own := int64(1), s[0]
			for a := 1; a < len(s); a++ {
				own *= s[a]
				if !slices.Contains(axes[k], a) {
					inner *= s[a]
				}
			}
			v = append(v, s[0], inner, own)
			for _, a := range axes[k] {
				var e int64
				if a < len(s) {
					e = s[a]
				}
				v = append(v, e)
			}
		}
		return v
	}
	for trial := range 200 {
		s := newPadSum(pads)
		var in [][][]int64
		for range 1 + rng.Intn(6) {
			x := []int64{1 + rng.Int63n(3), 1 + rng.Int63n(9), 4}
			y := []int64{1 + rng.Int63n(3), 1 + rng.Int63n(5), 2, 1 + rng.Int63n(4)}
			if rng.Intn(4) == 0 {
				y = y[:2] // short of the second padded axis
			}
			shapes := [][]int64{x, y}
			var before, after, own int64
			for k := range axes {
				before += rect(in, k)
				after += rect(append(in, shapes), k)
			}
			v := parts(shapes)
			own = v[2] + v[pads.off[1]+2]
			if got, want := s.addedWaste(v), after-before-own; got != want {
				t.Fatalf("trial %d, item %d: added waste %d, want %d", trial, len(in), got, want)
			}
			s.add(v)
			in = append(in, shapes)
		}
	}
}

// TestBudgetsCheckOnce: an item alone exceeds a budget (Over) exactly when
// a group of it alone does (Sum.Over) and when it does not fit an empty
// group (Sum.Fits); a group's sum takes the largest of a padded term and
// adds the others.
func TestBudgetsCheckOnce(t *testing.T) {
	p := imagePolicy(0)
	b := p.budgets
	s := b.Sum()
	for _, patches := range []int64{1, 64, 4096, 4097, 10000} {
		e := image(patches, time.Time{})
		s.Clear()
		fits := s.Fits(e.Terms)
		s.Add(e.Terms)
		over := b.Over(e.Terms)
		if over != s.Over() || fits != (over < 0) || (over >= 0) != (patches > 4096) {
			t.Errorf("an image of %d patches: Over %d, a group of it Over %d, Fits %v", patches, over, s.Over(), fits)
		}
	}
	s.Clear()
	for _, patches := range []int64{3, 9, 5} {
		s.Add(image(patches, time.Time{}).Terms)
	}
	if s.Total(0) != 3 || s.Total(1) != 3*9 {
		t.Errorf("three images of at most 9 patches: totals %d and %d, want 3 and 27", s.Total(0), s.Total(1))
	}
}

// TestCompatibleByKey: only items of equal key names and uniform extents
// share a group, and an item alone shares none; the group takes the
// compatible items in queue order.
func TestCompatibleByKey(t *testing.T) {
	p := imagePolicy(0)
	now := time.Now()
	keyed := func(name string, dims []int64, alone bool) *Entry {
		e := image(4, now)
		e.Key = Key{Name: name, Dims: dims, Alone: alone}
		return e
	}
	head := keyed("a", []int64{8}, false)
	queue := []*Entry{head, keyed("b", []int64{8}, false), keyed("a", []int64{9}, false), keyed("a", []int64{8}, true),
		keyed("a", []int64{8}, false), keyed("a", nil, false), keyed("a", []int64{8}, false)}
	for _, e := range queue {
		p.Push(e)
	}
	group, wait := p.Next(now, Outlook{}, nil)
	if wait != 0 || len(group) != 3 || group[0] != head || group[1] != queue[4] || group[2] != queue[6] {
		t.Fatalf("group %v (wait %v), want the head and the two items keyed alike", group, wait)
	}
	p = imagePolicy(0)
	alone := keyed("a", []int64{8}, true)
	p.Push(alone)
	p.Push(keyed("a", []int64{8}, false))
	if group, _ := p.Next(now, Outlook{}, nil); len(group) != 1 || group[0] != alone {
		t.Errorf("an item alone was grouped: %d items", len(group))
	}
}

// TestFormationIsPaddingAware: among waiting items, a group takes those
// whose padded extents are like its oldest item's, leaving the others for
// a group of their own; once every item has waited past its delay bound
// (a saturated server's queue), still: the items kept out head the next
// group, the oldest of them first.
func TestFormationIsPaddingAware(t *testing.T) {
	p := paddingCostly(imagePolicy(time.Second))
	now := time.Now()
	for i, patches := range []int64{2, 60, 2, 60, 2, 60, 2, 60} {
		p.Push(image(patches, now.Add(time.Duration(i)*time.Microsecond)))
	}
	extents := func(at time.Time) []int64 {
		queue := slices.Clone(p.Queue())
		var out []int64
		for _, i := range p.form(at, 0).chosen {
			out = append(out, queue[i].Terms[2])
		}
		return out
	}
	if got := extents(now.Add(time.Millisecond)); !slices.Equal(got, []int64{2, 2, 2, 2}) {
		t.Errorf("the group took extents %v, want the four items of 2 patches; the items of 60 belong together", got)
	}
	if p.KeptForPadding() == 0 {
		t.Error("no item was counted as kept out for its padding")
	}
	late := now.Add(2 * time.Second)
	if got := extents(late); !slices.Equal(got, []int64{2, 2, 2, 2}) {
		t.Errorf("past their delay bound, the group took extents %v, want the four items of 2 patches", got)
	}
	p.take(nil)
	if got := extents(late); !slices.Equal(got, []int64{60, 60, 60, 60}) {
		t.Errorf("the next group took extents %v, want the four items of 60 the first kept out", got)
	}
}

// TestPromisedGroupClosesOnceTheQueueHoldsOne: while a lockstep batch is
// still admitting, a group closes as soon as the queue holds a full
// group's worth, even when the group it forms is not full (here padding
// keeps the larger items out of the first one), so that groups run beside
// the rest of the admission instead of after it. With less queued, it
// waits for the batch.
func TestPromisedGroupClosesOnceTheQueueHoldsOne(t *testing.T) {
	p := paddingCostly(imagePolicy(time.Second))
	now := time.Now()
	head := image(2, now)
	p.Push(head)
	promised := Outlook{Promised: true}
	if group, wait := p.Next(now, promised, nil); group != nil || wait != PromisedWait {
		t.Fatalf("one queued item of a batch still admitting ran as a group of %d (wait %v)", len(group), wait)
	}
	for range 400 {
		p.Push(image(60, now))
	}
	group, wait := p.Next(now, promised, nil)
	if group == nil {
		t.Fatalf("with %d items queued, the runner waits %v for more of the batch", p.Len(), wait)
	}
	if len(group) != 1 || group[0] != head {
		t.Errorf("took %d items; want the oldest alone (padding keeps the others out)", len(group))
	}
	if p.Len() != 400 {
		t.Errorf("%d items left, want 400", p.Len())
	}
}

// TestComingGroupClosesWithItsShare: while requests are coming, a group
// waits for them (up to max_delay), unless the slots share the items:
// then it closes once it holds its share, and holds no more.
func TestComingGroupClosesWithItsShare(t *testing.T) {
	p := imagePolicy(time.Hour)
	now := time.Now()
	for range 3 {
		p.Push(image(4, now))
	}
	for _, o := range []Outlook{{Coming: true}, {Coming: true, Share: 4}} {
		if group, wait := p.Next(now, o, nil); group != nil || wait <= 0 {
			t.Errorf("%+v, 3 queued: a group of %d formed (wait %v); want it to wait", o, len(group), wait)
		}
	}
	p.Push(image(4, now))
	if group, _ := p.Next(now, Outlook{Coming: true}, nil); group != nil {
		t.Errorf("one slot free, items coming: a group of %d formed; want it to wait for them", len(group))
	}
	if group, _ := p.Next(now, Outlook{Coming: true, Share: 4}, nil); len(group) != 4 {
		t.Errorf("a share of 4 queued: a group of %d formed, want 4", len(group))
	}
	for range 6 {
		p.Push(image(4, now))
	}
	if group, _ := p.Next(now, Outlook{Share: 4}, nil); len(group) != 4 || p.Len() != 2 {
		t.Errorf("6 queued, a share of 4: a group of %d formed, %d left; want 4, 2 left", len(group), p.Len())
	}
}

// TestHoldsCountsFullGroups: Holds counts the full groups the queue holds
// in queue order, as items join it and after items leave it: a group is
// full where the next item does not fit a budget, where a budget is
// spent, or at the cap (one item, when solo).
func TestHoldsCountsFullGroups(t *testing.T) {
	p := imagePolicy(0)
	now := time.Now()
	push := func(n int, patches int64) {
		for range n {
			p.Push(image(patches, now))
		}
	}
	push(15, 1)
	if p.Holds(1) {
		t.Fatal("15 small images hold a full group of 16")
	}
	push(1, 1)
	if !p.Holds(1) || p.Holds(2) {
		t.Fatalf("16 small images: Holds(1) %v, Holds(2) %v; want one full group", p.Holds(1), p.Holds(2))
	}
	push(1, 1000) // with 4 of 1000 patches, the budget of 4096 binds
	push(3, 1000)
	push(1, 1000)
	if !p.Holds(2) || p.Holds(3) {
		t.Fatalf("16 small images and 5 of 1000 patches: Holds(2) %v, Holds(3) %v; want two full groups", p.Holds(2), p.Holds(3))
	}
	group, _ := p.Next(now, Outlook{Closed: true}, nil)
	if len(group) != 16 || !p.Holds(1) || p.Holds(2) {
		t.Fatalf("after a group of %d left: Holds(1) %v, Holds(2) %v; want one (4 of the 5 large images)", len(group), p.Holds(1), p.Holds(2))
	}
	solo := New(p.budgets, NewPads(1), true, 0)
	solo.Push(image(1, now))
	if !solo.Holds(1) || solo.Holds(2) {
		t.Error("a solo queue of one item does not hold exactly one full group")
	}
}

// TestSortBurstOrdersOneArrivalByExtent: a queue whose items were all
// queued at one time is put in order of their padded extents, ties in
// queue order, and taken in that order; a queue holding two arrivals is
// left as it is.
func TestSortBurstOrdersOneArrivalByExtent(t *testing.T) {
	p := paddingCostly(imagePolicy(time.Second))
	now := time.Now()
	extents := []int64{6, 2, 9, 2, 6, 1}
	burst := func(at func(i int) time.Time) []*Entry {
		var q []*Entry
		for i, x := range extents {
			q = append(q, image(x, at(i)))
		}
		return q
	}
	q := burst(func(int) time.Time { return now })
	for _, e := range q {
		p.Push(e)
	}
	p.sortBurst()
	if got, want := patchesOf(p.Queue()), []int64{1, 2, 2, 6, 6, 9}; !p.sorted || !slices.Equal(got, want) {
		t.Fatalf("a burst sorted to extents %v (sorted %v), want %v", got, p.sorted, want)
	}
	if p.queue[1] != q[1] || p.queue[2] != q[3] || p.queue[3] != q[0] {
		t.Error("items of equal extents changed their order")
	}
	// The padding a 6 would add to the 1 and 2s costs more than the call
	// it saves (paddingCostly): the group stops at the 2s.
	if f := p.form(now, 0); !slices.Equal(f.chosen, []int{0, 1, 2}) {
		t.Errorf("a sorted burst formed %v, want the items of 1 and 2 patches, in queue order", f.chosen)
	}
	p.Drop(func(*Entry) bool { return true })
	for _, e := range burst(func(i int) time.Time { return now.Add(time.Duration(i/3) * time.Millisecond) }) {
		p.Push(e)
	}
	before := slices.Clone(p.Queue())
	p.sortBurst()
	if p.sorted || !slices.Equal(p.Queue(), before) {
		t.Errorf("two arrivals were sorted as one burst: %v", patchesOf(p.Queue()))
	}
	// A burst longer than forming looks ahead is sorted whole, stably.
	rng := rand.New(rand.NewSource(5))
	long := make([]*Entry, 3*lookahead)
	for i := range long {
		long[i] = image(1+rng.Int63n(9), now)
	}
	p.Drop(func(*Entry) bool { return true })
	for _, e := range long {
		p.Push(e)
	}
	p.sortBurst()
	pos := map[*Entry]int{}
	for i, e := range long {
		pos[e] = i
	}
	for i := 1; i < p.Len(); i++ {
		a, b := p.queue[i-1], p.queue[i]
		ea, eb := a.Terms[2], b.Terms[2]
		if ea > eb || ea == eb && pos[a] > pos[b] {
			t.Fatalf("a burst of %d: position %d holds extent %d (queued %d) before %d (queued %d)", len(long), i, ea, pos[a], eb, pos[b])
		}
	}
}

// TestArrivedAgainIsRepeatedArrivals: a burst's items after its first are
// recorded at once, as that many arrivals at the first's time would be,
// from a new stream and from one with a history.
func TestArrivedAgainIsRepeatedArrivals(t *testing.T) {
	start := time.Unix(0, 0)
	for _, history := range []int{0, 1, 3} {
		for _, k := range []int{0, 1, 5} {
			var one, many Arrivals
			for i := range history {
				at := start.Add(time.Duration(i) * time.Millisecond)
				one.Arrived(at, i%2 == 0)
				many.Arrived(at, i%2 == 0)
			}
			at := start.Add(time.Duration(history) * time.Millisecond)
			one.Arrived(at, false)
			many.Arrived(at, false)
			for range k {
				one.Arrived(at, true)
			}
			many.ArrivedAgain(k)
			if one.seen != many.seen || one.lastGap != many.lastGap || !one.last.Equal(many.last) ||
				math.Abs(one.mean-many.mean) > 1e-6*max(1, one.mean) || math.Abs(one.overlap-many.overlap) > 1e-12 {
				t.Errorf("history %d, %d more: %+v, want %+v", history, k, many, one)
			}
		}
	}
}
