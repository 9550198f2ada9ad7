package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// TestLockstepFailsEachRequestAlone: in a batch run in lockstep, a request
// refused at admission, one missing an input and one the backend refuses
// fail alone with their own rules; every other request equals solo.
func TestLockstepFailsEachRequestAlone(t *testing.T) {
	picky := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		for _, v := range in["pixel_patches"].Float32s() {
			if v < 0 {
				return nil, &backend.RunError{Rule: "run/input", Message: "a negative pixel"}
			}
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, picky, Options{MaxDelay: time.Millisecond}, nil)
	defer e.Close()
	if !e.lockstep {
		t.Fatal("the image workflow is straight-line, yet RunAll does not run it in lockstep")
	}
	solo := imageEngine(t, Options{Solo: true})
	rng := rand.New(rand.NewSource(41))
	var reqs []Request
	for i := range 12 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3)))
	}
	reqs[2].Inputs["image_offsets"].Int64s()[1] = 99 // refused at admission
	delete(reqs[5].Inputs, "patch_lengths")          // refused at the start
	reqs[8].Inputs["pixel_patches"].Float32s()[0] = -1
	want := solo.RunAll(context.Background(), reqs)
	got := e.RunAll(context.Background(), reqs)
	for i, r := range got {
		var re *backend.RunError
		switch i {
		case 2, 5, 8:
			wantRule := map[int]string{2: "run/offsets", 5: "run/input", 8: "run/input"}[i]
			if !errors.As(r.Err, &re) || re.Rule != wantRule {
				t.Errorf("request %d: %v, want %s", i, r.Err, wantRule)
			}
		default:
			if r.Err != nil {
				t.Errorf("request %d failed with its batch: %v", i, r.Err)
			} else if !sameResult(r.Outputs["embeddings"], want[i].Outputs["embeddings"]) {
				t.Errorf("request %d differs from solo", i)
			}
		}
	}
}

// TestLockstepCancelled: a batch whose context is cancelled while its
// groups wait answers every request: with its share where its group ran
// before, with the context's error where its group would have run after
// (a group holds 16 images and takes 30ms, the deadline is 40ms, and 48
// requests need three groups). The engine stays usable.
func TestLockstepCancelled(t *testing.T) {
	e := engineWith(t, slowEncoder(30*time.Millisecond), Options{MaxDelay: time.Millisecond, Queue: 64}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(42))
	var reqs []Request
	for i := range 48 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	cancelled := 0
	for _, r := range e.RunAll(ctx, reqs) {
		switch {
		case errors.Is(r.Err, context.DeadlineExceeded):
			cancelled++
		case r.Err != nil:
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
	if cancelled == 0 || cancelled == len(reqs) {
		t.Errorf("%d of %d requests cancelled; the third group should have been, not the first", cancelled, len(reqs))
	}
	for _, r := range e.RunAll(context.Background(), reqs[:3]) {
		if r.Err != nil {
			t.Errorf("after a cancelled batch: %s: %v", r.ID, r.Err)
		}
	}
}
