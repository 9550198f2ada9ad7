package diag

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"softmax_11.tmp_0", "x", "pixel_patches", "patch_lengths", "x"}
	if got, want := Closest("pixel_patchs", names, 2), []string{"pixel_patches", "patch_lengths"}; !slices.Equal(got, want) {
		t.Errorf("Closest = %v, want %v", got, want)
	}
	if got := Closest("output", []string{"softmax_11.tmp_0"}, 3); !slices.Equal(got, []string{"softmax_11.tmp_0"}) {
		t.Errorf("a far name is still offered when it is the only one: %v", got)
	}
	if got := Closest("a", nil, 3); got != nil {
		t.Errorf("no candidates: %v", got)
	}
	if got := Closest("y", names, 9); len(got) != 4 {
		t.Errorf("duplicates are offered once: %v", got)
	}
	if EditDistance("kitten", "sitting") != 3 || EditDistance("", "abc") != 3 {
		t.Errorf("EditDistance is not Levenshtein's")
	}
}
