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
		got, exp := res[1].Outputs.Get("embeddings"), want.Outputs.Get("embeddings")
		if !slices.Equal(got.Shape, exp.Shape) {
			t.Errorf("solo=%v: an empty request beside others got %v, alone %v", opts.Solo, got, exp)
		}
		st := e.Stats().Components["encoder"]
		if st.Requests != 2 {
			t.Errorf("solo=%v: groups counted %d requests, want 2 (the empty one is not in a group): %+v", opts.Solo, st.Requests, st)
		}
	}
}

// TestSoloGroupDoesNotCopy: a group of one request passes its inputs
// through (packed, padded, companions): no copy is made, and results equal
// the grouped ones.
func TestSoloGroupDoesNotCopy(t *testing.T) {
	rng := rand.New(rand.NewSource(32))
	var reqs []Request
	for i := range 6 {
		reqs = append(reqs, imageRequest(rng, string(rune('a'+i)), 1+i%3))
	}
	solo := imageEngine(t, Options{Solo: true})
	grouped := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	a, b := solo.RunAll(context.Background(), reqs), grouped.RunAll(context.Background(), reqs)
	for i := range reqs {
		if a[i].Err != nil || b[i].Err != nil {
			t.Fatal(a[i].Err, b[i].Err)
		}
		if !sameResult(a[i].Outputs.Get("embeddings"), b[i].Outputs.Get("embeddings")) {
			t.Errorf("%s: solo %v, grouped %v", reqs[i].ID, a[i].Outputs.Get("embeddings"), b[i].Outputs.Get("embeddings"))
		}
	}
	if c := solo.Copies("encoder"); c.Bytes() != 0 || c.Count() != 0 {
		t.Errorf("solo runs copied %d bytes in %d copies: %v", c.Bytes(), c.Count(), c.ByReason())
	}
	one := imageEngine(t, Options{MaxDelay: time.Millisecond})
	if r := one.Run(context.Background(), reqs[2]); r.Err != nil {
		t.Fatal(r.Err)
	}
	if c := one.Copies("encoder"); c.Bytes() != 0 {
		t.Errorf("a request grouped alone copied %v", c.ByReason())
	}
}
