package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestEnginesAgree is the differential test of DESIGN §7, in process: for
// every fixture, random requests and requests every engine must refuse (an
// input left out, an unknown name, a wrong dtype, each offsets vector
// corrupted) run on the VM and on the generated executor. Solo, the two
// answer bit for bit alike, and refuse with the same rule and message.
// Grouped, which requests meet depends on timing: results agree within
// the tolerance, and refusals have the same rule (a failure found in a
// group may name the group).
func TestEnginesAgree(t *testing.T) {
	modes := []struct {
		name  string
		opt   genrt.Option
		exact bool
	}{
		{"solo", genrt.WithSolo(), true},
		{"grouped", genrt.WithMaxDelay(groupDelay), false},
	}
	for i, f := range engines[1].among(fixtures.All) {
		t.Run(f.Name, func(t *testing.T) {
			reqs := append(f.Requests(uint64(i+1), 16), f.Refusals(rand.New(rand.NewPCG(uint64(i+1), 7)))...)
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					want := runAll(context.Background(), engines[0].start(t, f, m.opt), reqs)
					got := runAll(context.Background(), engines[1].start(t, f, m.opt), reqs)
					failed := 0
					for k := range reqs {
						sameResponse(t, got[k], want[k], m.exact)
						if want[k].Err != nil {
							failed++
						}
					}
					t.Logf("%d requests (%d refused alike) answered as the VM answers them", len(reqs), failed)
				})
			}
		})
	}
}

// sameResponse compares the generated executor's response with the VM's:
// failed alike, or the same outputs; bit for bit and word for word when
// exact.
func sameResponse(t *testing.T, got, want vm.Response, exact bool) {
	t.Helper()
	switch {
	case got.ID != want.ID:
		t.Errorf("response %q, the VM's is %q", got.ID, want.ID)
	case (got.Err == nil) != (want.Err == nil):
		t.Errorf("%s: error %v, the VM's is %v", want.ID, got.Err, want.Err)
	case want.Err != nil:
		if rule(got.Err) != rule(want.Err) || exact && got.Err.Error() != want.Err.Error() {
			t.Errorf("%s: error %v, the VM's is %v", want.ID, got.Err, want.Err)
		}
		if g, w := where(got.Err), where(want.Err); exact && g != w {
			t.Errorf("%s: error located at %s, the VM's at %s", want.ID, g, w)
		}
	case !slices.Equal(fixtures.Names(got.Outputs.Map()), fixtures.Names(want.Outputs.Map())):
		t.Errorf("%s: outputs %v, the VM's are %v", want.ID, fixtures.Names(got.Outputs.Map()), fixtures.Names(want.Outputs.Map()))
	default:
		for name, w := range want.Outputs.All() {
			if exact && !fixtures.Identical(got.Outputs.Get(name), w) {
				t.Errorf("%s: output %s is %v, the VM's is %v, bit for bit", want.ID, name, got.Outputs.Get(name).Data, w.Data)
			} else if d := fixtures.Diff(got.Outputs.Get(name), w, tolerance); d != "" {
				t.Errorf("%s: output %s: %s", want.ID, name, d)
			}
		}
	}
}

// where is the source location of a run-time error, "" when it has none.
func where(err error) string {
	var re *backend.RunError
	if errors.As(err, &re) && re.At != nil {
		return fmt.Sprintf("%d:%d %s", re.At.Line, re.At.Col, re.At.Path)
	}
	return ""
}

// rule is the rule of a run-time error, "" for another error.
func rule(err error) string {
	var re *backend.RunError
	if errors.As(err, &re) {
		return re.Rule
	}
	return ""
}
