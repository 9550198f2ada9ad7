package steps

import (
	"errors"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestMissingListsWhatTheRequestGives: a missing input's error lists the
// inputs given, sorted, and names a likely misspelling; without them it
// says only what is missing.
func TestMissingListsWhatTheRequestGives(t *testing.T) {
	for _, c := range []struct {
		have []string
		want string
	}{
		{nil, "the request has no value for workflow input `pixel_patches`"},
		{[]string{"patch_lengths", "pixel_patchs"}, "the request has no value for workflow input `pixel_patches` (it gives `patch_lengths`, `pixel_patchs`); did you misspell it as `pixel_patchs`?"},
		{[]string{"zeta", "alpha"}, "the request has no value for workflow input `pixel_patches` (it gives `alpha`, `zeta`)"},
	} {
		var re *backend.RunError
		if err := Missing("pixel_patches", c.have...); !errors.As(err, &re) || re.Rule != "run/input" || re.Message != c.want {
			t.Errorf("Missing(%v) = %v, want run/input %q", c.have, err, c.want)
		}
	}
}
