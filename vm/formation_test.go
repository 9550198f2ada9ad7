package vm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

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
// axis or two, and for items whose rank stops short of a padded axis; the
// parts cached in an item give the same sums when it is read again.
func TestPadSumMatchesRectangles(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	ports := []padPort{{name: "x", at: 0, axes: []int{1}}, {name: "y", at: 1, axes: []int{1, 3}}}
	rect := func(items []*item, k int) int64 {
		p := ports[k]
		var rows, inner int64
		ext := make([]int64, len(p.axes))
		for _, it := range items {
			sh := it.ports[p.at].t.Shape
			rows += sh[0]
			inner = 1
			for a := 1; a < len(sh); a++ {
				if j := slices.Index(p.axes, a); j >= 0 {
					ext[j] = max(ext[j], sh[a])
				} else {
					inner *= sh[a]
				}
			}
		}
		n := rows * inner
		for _, e := range ext {
			n *= e
		}
		return n
	}
	for trial := range 200 {
		s := newPadSum(ports)
		var in []*item
		for range 1 + rng.Intn(6) {
			it := newItem(2)
			x := []int64{1 + rng.Int63n(3), 1 + rng.Int63n(9), 4}
			y := []int64{1 + rng.Int63n(3), 1 + rng.Int63n(5), 2, 1 + rng.Int63n(4)}
			if rng.Intn(4) == 0 {
				y = y[:2] // short of the second padded axis
			}
			it.ports[0].t = &backend.Tensor{DType: "float32", Shape: x, Data: make([]float32, backend.Elements(x))}
			it.ports[1].t = &backend.Tensor{DType: "float32", Shape: y, Data: make([]float32, backend.Elements(y))}
			var before, after, own int64
			for k := range ports {
				before += rect(in, k)
				after += rect(append(in, it), k)
				own += it.ports[ports[k].at].t.Len()
			}
			for range 2 { // computed, then read from the item's cache
				if got, want := s.addedWaste(it), after-before-own; got != want {
					t.Fatalf("trial %d, item %d: added waste %d, want %d", trial, len(in), got, want)
				}
			}
			s.add(it)
			in = append(in, it)
		}
	}
}

// TestSortBurstOrdersOneArrivalByExtent: a queue whose items were all
// queued at one time is put in order of their padded extents, ties in
// queue order, and taken in that order; a queue holding two arrivals is
// left as it is.
func TestSortBurstOrdersOneArrivalByExtent(t *testing.T) {
	g := paddingCostlyGrouper(t)
	now := time.Now()
	extents := []int64{6, 2, 9, 2, 6, 1}
	burst := func(at func(i int) time.Time) []*pending {
		var q []*pending
		for i, x := range extents {
			q = append(q, paddedItem(t, g, x, at(i)))
		}
		return q
	}
	extentsOf := func(q []*pending) []int64 {
		var x []int64
		for _, p := range q {
			x = append(x, p.it.ports[0].t.Shape[1])
		}
		return x
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	q := burst(func(int) time.Time { return now })
	g.queue = slices.Clone(q)
	g.sortBurst()
	if got, want := extentsOf(g.queue), []int64{1, 2, 2, 6, 6, 9}; !g.sorted || !slices.Equal(got, want) {
		t.Fatalf("a burst sorted to extents %v (sorted %v), want %v", got, g.sorted, want)
	}
	if g.queue[1] != q[1] || g.queue[2] != q[3] || g.queue[3] != q[0] {
		t.Error("items of equal extents changed their order")
	}
	// The padding a 6 would add to the 1 and 2s costs more than the call
	// it saves (paddingCostlyGrouper): the group stops at the 2s.
	if f := g.form(now); !slices.Equal(f.chosen, []int{0, 1, 2}) {
		t.Errorf("a sorted burst formed %v, want the items of 1 and 2 patches, in queue order", f.chosen)
	}
	g.sorted = false
	g.queue = burst(func(i int) time.Time { return now.Add(time.Duration(i/3) * time.Millisecond) })
	before := slices.Clone(g.queue)
	g.sortBurst()
	if g.sorted || !slices.Equal(g.queue, before) {
		t.Errorf("two arrivals were sorted as one burst: %v", extentsOf(g.queue))
	}
	// A burst longer than forming looks ahead is sorted whole, stably.
	rng := rand.New(rand.NewSource(5))
	long := make([]*pending, 3*lookahead)
	for i := range long {
		long[i] = paddedItem(t, g, 1+rng.Int63n(9), now)
	}
	g.queue = slices.Clone(long)
	g.sortBurst()
	pos := map[*pending]int{}
	for i, p := range long {
		pos[p] = i
	}
	for i := 1; i < len(g.queue); i++ {
		a, b := g.queue[i-1], g.queue[i]
		ea, eb := a.it.ports[0].t.Shape[1], b.it.ports[0].t.Shape[1]
		if ea > eb || ea == eb && pos[a] > pos[b] {
			t.Fatalf("a burst of %d: position %d holds extent %d (queued %d) before %d (queued %d)", len(long), i, ea, pos[a], eb, pos[b])
		}
	}
}

// TestSortedBurstGroupsLikeExtents: a lockstep batch that runs its own
// groups sorts its burst, so that its groups hold images of like extents.
// After one image of 5 patches come images of 4 and 6 patches in turn:
// ranked against the oldest image, a 4 and a 6 add the same padding, and
// the group of 16 images (the budget) would take both kinds; sorted, the
// 4s fill one group, the 5 and the 6s the next. Every result still equals
// its solo run.
func TestSortedBurstGroupsLikeExtents(t *testing.T) {
	for _, self := range []bool{true, false} {
		t.Run(fmt.Sprintf("self=%v", self), func(t *testing.T) { testSortedBurst(t, self) })
	}
}

// testSortedBurst is TestSortedBurstGroupsLikeExtents with the batch
// running its own groups (self) or its runner running them while the
// batch admits.
func testSortedBurst(t *testing.T, self bool) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Hour}, nil)
	defer e.Close()
	solo := imageEngine(t, Options{Solo: true})
	if self {
		g := e.groupers["encoder"]
		g.mu.Lock()
		g.overlap = 0 // a woken runner starts too late: batches run their own groups
		g.mu.Unlock()
	}
	reqs := []Request{paddedRequest("first", 5)}
	for i := range 32 {
		reqs = append(reqs, paddedRequest(fmt.Sprint(i), 4+2*int64(i%2)))
	}
	checkEmbeddingsAsSolo(t, reqs, e.RunAll(context.Background(), reqs), solo.RunAll(context.Background(), reqs))
	s := e.Stats().Components["encoder"]
	if own := s.OwnGroups > 0; own != self {
		t.Fatalf("the batch ran %d groups of its own, want them all or none (self %v)", s.OwnGroups, self)
	}
	// Sorted, only the image of 5 patches is padded (by one patch);
	// ranked, eight images of 4 patches are padded by two in each group.
	if s.PaddingOverhead > 0.01 {
		t.Errorf("padding overhead %.3f over groups %v: the burst's groups mix extents", s.PaddingOverhead, s.GroupSizes)
	}
}
