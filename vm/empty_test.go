package vm

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestEmptyRequestAnsweredFromSoloShape: a request of zero images gets the
// output shape it gets alone, whatever it is grouped beside, and is not
// counted in group sizes.
func TestEmptyRequestAnsweredFromSoloShape(t *testing.T) {
	rng := rand.New(rand.NewSource(31))
	alone := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	want := alone.Run(context.Background(), imageRequest(rng, "z", 0))
	if want.Err != nil {
		t.Fatal(want.Err)
	}
	for _, opts := range []Options{{MaxDelay: 20 * time.Millisecond}, {MaxDelay: 20 * time.Millisecond, Solo: true}} {
		e := imageEngine(t, opts)
		res := e.RunAll(context.Background(), []Request{imageRequest(rng, "a", 2), imageRequest(rng, "z", 0), imageRequest(rng, "b", 1)})
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		got, exp := res[1].Outputs["embeddings"], want.Outputs["embeddings"]
		if !slices.Equal(got.Shape, exp.Shape) {
			t.Errorf("solo=%v: an empty request beside others got %v, alone %v", opts.Solo, got, exp)
		}
		st := e.Stats().Components["encoder"]
		if st.Requests != 2 {
			t.Errorf("solo=%v: groups counted %d requests, want 2 (the empty one is not in a group): %+v", opts.Solo, st.Requests, st)
		}
	}
}
