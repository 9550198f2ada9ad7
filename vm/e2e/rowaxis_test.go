package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/vm"
)

// TestRowsOnAnInnerAxisGroup: the time-major encoder takes its requests
// on axis 1 of steps × requests × width. Its requests group, on both
// engines and on ONNX Runtime: each invocation holds on axis 1 exactly the
// frames of requests of its steps (every request's once), several
// requests share an invocation, and every result equals solo's and the Go
// reference (states back on axis 1, pooled on axis 0).
func TestRowsOnAnInnerAxisGroup(t *testing.T) {
	f := fixtures.Lookup("time_major")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		reqs := f.Requests(7, 32)
		rec := newRecorder(t, f)
		g, s := e.grouped(t, f, rec), e.solo(t, f)
		got := runAll(context.Background(), g, reqs)
		compareResponses(t, f, reqs, got, runAll(context.Background(), s, reqs))
		// A request's frames as text, step after step.
		waiting := map[string]int{}
		for _, r := range reqs {
			waiting[fmt.Sprint(r.Inputs["frames"].Float32s())]++
		}
		most := int64(0)
		for _, c := range rec.invocations() {
			x := c.inputs["frames"]
			steps, batch, width := x.Shape[0], x.Shape[1], x.Shape[2]
			most = max(most, batch)
			data := x.Float32s()
			for r := range batch {
				var own []float32
				for s := range steps {
					at := (s*batch + r) * width
					own = append(own, data[at:at+width]...)
				}
				key := fmt.Sprint(own)
				if waiting[key] == 0 {
					t.Fatalf("row %d of an invocation of %v holds frames no request sent, or sent fewer times: %v", r, x.Shape, own)
				}
				waiting[key]--
			}
		}
		for key, n := range waiting {
			if n > 0 {
				t.Errorf("frames %s were never invoked", key)
			}
		}
		if most < 2 {
			t.Errorf("no invocation held more than one request (largest %d)", most)
		}
		t.Logf("%d requests in %d invocations, at most %d in one", len(reqs), len(rec.invocations()), most)
	})
}

// TestFixedRequestAxisRunsAlone: a graph exported with its request axis
// fixed to 1 (the time-major encoder's batch) cannot take a group. Its
// component runs one request per invocation from the start, the decline
// counted with the reason (the graph, the input and the axis), and never
// fails a group to run its requests again alone; results equal the
// dynamic graph's.
func TestFixedRequestAxisRunsAlone(t *testing.T) {
	f := fixtures.Lookup("time_major")
	dir := t.TempDir()
	m := testmodels.Lookup("time_major").Fixing("batch", 1)
	meta, err := os.ReadFile(filepath.Join(testenv.Root(t), f.Path, "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{m.Artifact: m.Bytes(), "inference_metadata.yaml": meta} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := passes.CheckPath(dir, passes.Options{Check: true})
	if err != nil || !d.Valid() {
		t.Fatalf("check %s: %v %v", dir, err, d.Diags())
	}
	pf, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := engine.Open(pf, dir, engine.Options{Options: vm.Options{MaxDelay: groupDelay},
		Config: engine.Config{IntraOpThreads: 1, InterOpThreads: 1}})
	if err != nil {
		t.Fatalf("open: %v: %s", err, fixtures.FixSetup)
	}
	defer fixed.Close()
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
}
