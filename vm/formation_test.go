package vm

import (
	"slices"
	"testing"
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
