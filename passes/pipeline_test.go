package passes

import (
	"slices"
	"testing"
)

// TestPipelineOrder proves that every pass a pass requires runs earlier.
func TestPipelineOrder(t *testing.T) {
	for i, p := range Pipeline {
		if p.Name == "" || p.Doc == "" || p.Run == nil {
			t.Errorf("pass %d is missing a name, doc or Run", i)
		}
		for _, r := range p.Requires {
			j := slices.Index(Pipeline, r)
			if j < 0 || j >= i {
				t.Errorf("pass %s requires %s, which runs at %d, not before %d", p.Name, r.Name, j, i)
			}
		}
		if Lookup(p.Name) != p {
			t.Errorf("pass name %s is not unique", p.Name)
		}
	}
	seenPlan := false
	for _, p := range Pipeline {
		if p.Kind == Plan {
			seenPlan = true
		} else if seenPlan {
			t.Errorf("check pass %s runs after a plan pass", p.Name)
		}
	}
}
