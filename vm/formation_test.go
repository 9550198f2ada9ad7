package vm

import (
	"math/rand"
	"slices"
	"testing"

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
