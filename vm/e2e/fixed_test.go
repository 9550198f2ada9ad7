package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/vm"
)

// Graphs exported with an extent fixed, as many are (a batch of 1, a
// sequence length of 128): the fixture's package with its model's
// dimension sym fixed to n, opened on ONNX Runtime.

// fixedEngine writes fixture f's package into a temporary folder with its
// model's dimension sym fixed to n and opens it grouped.
func fixedEngine(t *testing.T, f fixtures.Fixture, sym string, n int64) *vm.Engine {
	t.Helper()
	e, err := openFixed(t, f, sym, n, false)
	if err != nil {
		t.Fatalf("open: %v: %s", err, fixtures.FixSetup)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openFixed is fixedEngine returning the check's refusal (as an error
// listing the diagnostics) or Open's error. With late set, the package's
// document is checked and planned alone, before its model is there (a
// warning then, and the plan records no digest of the model), and the
// model is written only before Open: what the runtime itself does with
// the graph, whatever the compiler would have said of it.
func openFixed(t *testing.T, f fixtures.Fixture, sym string, n int64, late bool) (*vm.Engine, error) {
	t.Helper()
	dir := t.TempDir()
	m := testmodels.Lookup(f.Name).Fixing(sym, n)
	meta, err := os.ReadFile(filepath.Join(testenv.Root(t), f.Path, "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("inference_metadata.yaml", meta)
	if !late {
		write(m.Artifact, m.Bytes())
	}
	d, err := passes.CheckPath(filepath.Join(dir, "inference_metadata.yaml"), passes.Options{Check: true})
	if err != nil {
		t.Fatalf("check %s: %v", dir, err)
	}
	if !d.Valid() {
		return nil, fmt.Errorf("check: %v", d.Diags())
	}
	pf, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	if late {
		write(m.Artifact, m.Bytes())
	}
	return engine.Open(pf, dir, engine.Options{Options: vm.Options{MaxDelay: groupDelay},
		Config: engine.Config{IntraOpThreads: 1, InterOpThreads: 1}})
}

// TestFixedRequestAxisRunsAlone: a graph exported with its request axis
// fixed to 1 (the time-major encoder's batch) cannot take a group. Its
// component runs one request per invocation from the start, the decline
// counted with the reason (the graph, the input and the axis), and never
// fails a group to run its requests again alone; results equal the
// dynamic graph's. Fixed at another extent, it cannot run a request at
// all: the check refuses the package (model/shape), and an engine given
// such a graph anyway (a plan compiled without the model) refuses to open.
func TestFixedRequestAxisRunsAlone(t *testing.T) {
	f := fixtures.Lookup("time_major")
	fixed := fixedEngine(t, f, "batch", 1)
	// Requests of one step count, which the dynamic graph would group.
	var reqs []vm.Request
	for _, r := range f.Requests(3, 48) {
		if r.Inputs["frames"].Shape[0] == 2 {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) < 4 {
		t.Fatalf("only %d requests of 2 steps", len(reqs))
	}
	got := fixed.RunAll(context.Background(), reqs)
	compareResponses(t, f, reqs, got, runAll(context.Background(), vmEngine.solo(t, f), reqs))
	cs := fixed.Stats().Components["encoder"]
	if cs.MaxGroupRequests != 1 || cs.Regrouped != 0 || cs.Invocations != int64(len(reqs)) {
		t.Errorf("%d requests: %d invocations, largest group %d, %d regrouped; want one invocation each, none regrouped",
			len(reqs), cs.Invocations, cs.MaxGroupRequests, cs.Regrouped)
	}
	found := false
	for why := range cs.Declines {
		found = found || strings.Contains(why, "fixes axis 1 of input `frames`")
	}
	if !found {
		t.Errorf("declines %v do not say that the graph fixes the request axis", cs.Declines)
	}
	// Fixed at 3 rows, the graph can run no request (each brings one row
	// there): the check refuses it, and the engine does not open, saying so.
	if _, err := openFixed(t, f, "batch", 3, false); err == nil || !strings.Contains(err.Error(), "model/shape") || !strings.Contains(err.Error(), "fixes that axis at 3") {
		t.Errorf("checking a graph fixing the request axis at 3: %v, want model/shape", err)
	}
	if e, err := openFixed(t, f, "batch", 3, true); err == nil || !strings.Contains(err.Error(), "fixes axis 1 of input `frames` (the requests' rows) at 3, but a request brings 1") {
		if e != nil {
			e.Close()
		}
		t.Errorf("opening a graph fixing the request axis at 3: %v", err)
	}
}

// TestFixedPaddedAxis: a text encoder exported with its sequence length
// fixed (positions, 40) groups as the dynamic one does, every group (and a
// request alone) padded to 40 positions, its budgets counted at 40, and
// every result equal to the dynamic graph's; a segment longer than 40
// fails its request alone with run/input naming the fixed extent.
func TestFixedPaddedAxis(t *testing.T) {
	f := fixtures.Lookup("text_padded")
	const positions = 40
	fixed := fixedEngine(t, f, "positions", positions)
	reqs := readDocument(t, "text_padded", "requests_long.json")
	long := reqs[0]
	long.ID = "too-long"
	long.Inputs = map[string]*backend.Tensor{}
	for name, x := range reqs[0].Inputs {
		long.Inputs[name] = x
	}
	ids := long.Inputs["token_ids"]
	wide := make([]int64, ids.Shape[0]*(positions+1))
	long.Inputs["token_ids"] = &backend.Tensor{DType: "int64", Shape: []int64{ids.Shape[0], positions + 1}, Data: wide}
	all := append(append([]vm.Request(nil), reqs...), long)
	got := fixed.RunAll(context.Background(), all)
	want := runAll(context.Background(), vmEngine.solo(t, f), reqs)
	compareResponses(t, f, reqs, got[:len(reqs)], want)
	if re := vm.AsRunError(got[len(reqs)].Err); re == nil || re.Rule != "run/input" || !strings.Contains(re.Message, "fixes that axis at 40") {
		t.Errorf("a request of 41 positions: %v, want run/input naming the fixed extent", got[len(reqs)].Err)
	}
	cs := fixed.Stats().Components[f.Component]
	checkBudgets(t, cs)
	if cs.MaxGroupRequests < 2 || cs.Regrouped != 0 {
		t.Errorf("largest group %d, %d regrouped: want groups, none failed", cs.MaxGroupRequests, cs.Regrouped)
	}
	for _, p := range cs.BudgetPeaks {
		if strings.Contains(strings.Join(p.Dimensions, ","), "positions") && p.Peak%positions != 0 {
			t.Errorf("budget %v peaked at %d, not a multiple of the fixed %d positions", p.Dimensions, p.Peak, positions)
		}
	}
}

// TestFixedPackedAxisRefused: a token-packed encoder exported with its
// token count fixed (its example's 37 tokens) could run only the groups
// whose tokens add up to 37: the check refuses it (model/shape), naming
// the packed input, while the token owners fixed alike (a companion,
// recomputed per group) are not reported again.
func TestFixedPackedAxisRefused(t *testing.T) {
	e, err := openFixed(t, fixtures.Lookup("text_packed"), "tokens", 37, false)
	if e != nil {
		e.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "model/shape") || !strings.Contains(err.Error(), "input port `token_ids` of component `text_encoder` concatenates the units of a group's items on axis 0 (token_packed), but its graph (text_encoder.onnx) fixes that axis at 37") {
		t.Fatalf("checking a packed encoder with its tokens fixed at 37: %v, want model/shape on token_ids", err)
	}
	if strings.Contains(err.Error(), "`token_owner`") {
		t.Errorf("the owners companion was reported too: %v", err)
	}
}

// TestWrongFixedExtent: an extent the graph fixes and the contract leaves
// symbolic, sent wrong, is the caller's mistake: the request fails at
// admission with run/input naming the port, the axis and the graph's
// extent, no invocation runs for it, and the requests beside it are
// answered. image_padded's graph fixes the features of its patches at 8
// (a grouped component); the solo scorer is checked in front of its one
// call, with its graph's rows fixed at 1.
func TestWrongFixedExtent(t *testing.T) {
	wrong := func(t *testing.T, r vm.Response, port string, axis, fixed int) {
		t.Helper()
		var re *backend.RunError
		if !errors.As(r.Err, &re) || re.Rule != backend.RunInput || !strings.Contains(re.Message, "`"+port+"`") ||
			!strings.Contains(re.Message, fmt.Sprintf("axis %d", axis)) || !strings.Contains(re.Message, fmt.Sprintf("fixes that axis at %d", fixed)) {
			t.Errorf("%s: %v; want run/input naming `%s`, axis %d and %d", r.ID, r.Err, port, axis, fixed)
		}
	}
	f := fixtures.Lookup("image_padded")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		r := e.start(t, f, genrt.WithMaxDelay(groupDelay))
		rng := rand.New(rand.NewPCG(4, 4))
		reqs := []vm.Request{fixtures.ImagePadded(rng, "a", 2), fixtures.ImagePadded(rng, "bad", 2), fixtures.ImagePadded(rng, "b", 1)}
		bad := reqs[1]
		bad.Inputs = maps.Clone(bad.Inputs)
		px := bad.Inputs["pixel_patches"]
		shape := []int64{px.Shape[0], px.Shape[1], 5}
		bad.Inputs["pixel_patches"] = fixtures.F32(shape, make([]float32, backend.Elements(shape)))
		got := runAll(context.Background(), r, []vm.Request{reqs[0], bad, reqs[2]})
		mustSucceed(t, []vm.Response{got[0], got[2]})
		wrong(t, got[1], "pixel_patches", 2, 8)
		if s := r.Stats().Components["encoder"]; s.Requests != 2 || s.Regrouped != 0 {
			t.Errorf("the encoder answered %d requests (%d groups regrouped); want the 2 good ones", s.Requests, s.Regrouped)
		}
	})

	solo := fixtures.Lookup("solo")
	fixed := fixedEngine(t, solo, "batch", 1)
	one, three := fixtures.Solo(rand.New(rand.NewPCG(2, 2)), "one", 1), fixtures.Solo(rand.New(rand.NewPCG(3, 3)), "three", 3)
	got := fixed.RunAll(context.Background(), []vm.Request{one, three})
	mustSucceed(t, got[:1])
	wrong(t, got[1], "features", 0, 1)
	if n := fixed.Stats().Components["scorer"].Invocations; n != 1 {
		t.Errorf("%d scorer invocations; want the good request's one", n)
	}
}
