package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/genaic/genaic/internal/fixtures"
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
