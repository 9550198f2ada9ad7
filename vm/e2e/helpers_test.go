package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
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

// itemsFile is the requests of the requests.json of the package at pkg
// (relative to the checkout), which must hold exactly the requests ids,
// each giving its encoded items (clips, images) of the uint8 input named
// input, each a tensor whose data is a base64 string. GENAIC_UPDATE=1
// writes the file from ids and items first.
func itemsFile(t *testing.T, pkg, input string, ids []string, items [][][]byte) []vm.Request {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), filepath.FromSlash(pkg))
	path := filepath.Join(dir, "requests.json")
	if os.Getenv("GENAIC_UPDATE") == "1" {
		if err := writeItemsFile(path, input, ids, items); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	reqs, err := jsonio.ReadRequests(file, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(ids) {
		t.Fatalf("%s holds %d requests, want %d (GENAIC_UPDATE=1 rewrites it)", path, len(reqs), len(ids))
	}
	for i, r := range reqs {
		got := r.Items[input]
		same := r.Err == nil && r.ID == ids[i] && len(got) == len(items[i])
		for k := 0; same && k < len(got); k++ {
			same = bytes.Equal(got[k].Tensor.Data.([]uint8), items[i][k])
		}
		if !same {
			t.Fatalf("%s: request %d is not %s with its %d items of %s (GENAIC_UPDATE=1 rewrites it): %v", path, i, ids[i], len(items[i]), input, r.Err)
		}
	}
	return reqs
}

// writeItemsFile writes a requests document of requests ids, each giving
// its encoded items of input as uint8 tensors whose data is a base64
// string.
func writeItemsFile(path, input string, ids []string, items [][][]byte) error {
	type tensor struct {
		DType string  `json:"dtype"`
		Shape []int64 `json:"shape"`
		Data  []byte  `json:"data"`
	}
	type itemsOf struct {
		Items []tensor `json:"items"`
	}
	type request struct {
		ID     string             `json:"id"`
		Inputs map[string]itemsOf `json:"inputs"`
	}
	var doc struct {
		Requests []request `json:"requests"`
	}
	for i, id := range ids {
		var ts []tensor
		for _, b := range items[i] {
			ts = append(ts, tensor{"uint8", []int64{int64(len(b))}, b})
		}
		doc.Requests = append(doc.Requests, request{id, map[string]itemsOf{input: {ts}}})
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// checkItemOutputs checks responses of requests of items: each succeeded
// and delivers as many items of output as want gives for its request,
// each within tol of want's.
func checkItemOutputs(t *testing.T, res []vm.Response, output string, want [][]*backend.Tensor, tol float64) {
	t.Helper()
	for i, resp := range res {
		if resp.Err != nil {
			t.Fatalf("%s: %v", resp.ID, resp.Err)
		}
		got := resp.Items[output]
		if len(got) != len(want[i]) {
			t.Fatalf("%s: %d items of %s, want %d", resp.ID, len(got), output, len(want[i]))
		}
		for k, w := range want[i] {
			if d := fixtures.Diff(got[k].Tensor, w, tol); d != "" {
				t.Errorf("%s: item %d of %s: %s", resp.ID, k, output, d)
			}
		}
	}
}
