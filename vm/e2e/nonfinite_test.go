package e2e

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestNonFiniteInputRunsAlone: a request whose floating-point input holds
// NaN or an infinity runs in a group of its own, so that the request it
// came with keeps its solo result. The video encoder pools frames into
// clips with a matrix product over every frame of the invocation, where
// 0 × NaN is NaN: grouped together (as before, and as FuzzRunRequests
// found), the bad request's NaN spoiled the good one's result.
func TestNonFiniteInputRunsAlone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		fx := fixtures.Lookup("video_frames")
		grouped, solo := e.grouped(t, fx, nil), e.solo(t, fx)
		rng := rand.New(rand.NewPCG(41, 3))
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
			reqs := []vm.Request{fx.Gen(rng, "good", 2), fx.Gen(rng, "bad", 2)}
			reqs[1].Inputs[fx.In].Float32s()[0] = bad
			before := grouped.Stats().Components[fx.Component].GroupSizes[1]
			isolated := grouped.Stats().Components[fx.Component].Isolated
			got := runAll(context.Background(), grouped, reqs)
			want := runAll(context.Background(), solo, reqs)
			for i, r := range got {
				if r.Err != nil || want[i].Err != nil {
					t.Fatalf("%s: grouped error %v, solo error %v", r.ID, r.Err, want[i].Err)
				}
			}
			compareResponses(t, fx, reqs[:1], got[:1], want[:1])
			if n := grouped.Stats().Components[fx.Component].GroupSizes[1] - before; n != 2 {
				t.Errorf("a request with %v: %d groups of one, want each request alone", bad, n)
			}
			if n := grouped.Stats().Components[fx.Component].Isolated - isolated; n != 1 {
				t.Errorf("a request with %v: %d requests counted isolated, want 1", bad, n)
			}
		}
	})
}
