package e2e

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

const tolerance = fixtures.Tolerance

// packedFixtures are the fixtures whose component packs items on axis 0
// and whose results internal/testmodels computes in plain Go.
func packedFixtures() []fixtures.Fixture {
	var out []fixtures.Fixture
	for _, f := range fixtures.All {
		if f.In != "" && f.HasReference() {
			out = append(out, f)
		}
	}
	return out
}

// compareResponses checks every grouped response against the solo one and
// against the reference, and returns how many float outputs were
// bit-identical grouped and solo (for the log). A fixture without a
// reference (other than a Media fixture, whose every request is good) may
// fail a request, grouped and solo alike, with one message.
func compareResponses(t *testing.T, fx fixtures.Fixture, reqs []vm.Request, got, want []vm.Response) (same, total int) {
	t.Helper()
	for i, req := range reqs {
		g, w := got[i], want[i]
		if g.Err != nil || w.Err != nil {
			if fx.HasReference() || fx.Media || g.Err == nil || w.Err == nil || g.Err.Error() != w.Err.Error() {
				t.Errorf("%s: grouped error %v, solo error %v", req.ID, g.Err, w.Err)
			}
			continue
		}
		if !slices.Equal(fixtures.Names(g.Outputs.Map()), fixtures.Names(w.Outputs.Map())) {
			t.Errorf("%s: grouped outputs %v, solo outputs %v", req.ID, fixtures.Names(g.Outputs.Map()), fixtures.Names(w.Outputs.Map()))
		}
		var ref map[string]*backend.Tensor
		if fx.HasReference() {
			ref = fx.Reference(t, req)
		}
		for name, out := range g.Outputs.All() {
			if d := fixtures.Diff(out, w.Outputs.Get(name), tolerance); d != "" {
				t.Errorf("%s: output %s grouped differs from solo: %s", req.ID, name, d)
			}
			if out.DType == "float32" {
				total++
				if fixtures.Identical(out, w.Outputs.Get(name)) {
					same++
				}
			}
			if ref == nil {
				continue
			}
			want := ref[name]
			if want == nil {
				want = req.Inputs[name] // a companion the workflow echoes
			}
			if d := fixtures.Diff(out, want, tolerance); d != "" {
				t.Errorf("%s: output %s differs from the reference: %s", req.ID, name, d)
			}
		}
	}
	return same, total
}

// mustSucceed fails the test for any failed response.
func mustSucceed(t *testing.T, res []vm.Response) {
	t.Helper()
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
}

// checkBudgets fails the test when a group exceeded a budget.
func checkBudgets(t *testing.T, s vm.ComponentStats) {
	t.Helper()
	for _, p := range s.BudgetPeaks {
		if p.Peak > p.MaxTotal {
			t.Errorf("budget %v: a group reached %d, above max_total %d", p.Dimensions, p.Peak, p.MaxTotal)
		}
	}
}

// wantRule checks that err is a *backend.RunError of rule whose message
// names mention.
func wantRule(t *testing.T, err error, rule, mention string) {
	t.Helper()
	var re *backend.RunError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *backend.RunError %s", err, rule)
	}
	if re.Rule != rule || !strings.Contains(re.Message, "`"+mention+"`") {
		t.Errorf("got %s: %s\nwant rule %s naming `%s`", re.Rule, re.Message, rule, mention)
	}
}
