package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync/atomic"
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
			} else if !sameResult(r.Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
				t.Errorf("request %d differs from solo", i)
			}
		}
	}
}

// TestLockstepCancelled: a batch whose context is cancelled while its
// groups wait answers every request: with its share where its group ran
// before, with the context's error where its group would have run after
// (a group holds 16 images, 48 requests need three groups, one runner
// runs them in turn, and the batch is cancelled as the second begins).
// The engine stays usable.
func TestLockstepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int32
	cancelling := func(c context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		if calls.Add(1) == 2 {
			cancel()
		}
		return maskedMean(c, in)
	}
	e := engineWith(t, cancelling, Options{MaxDelay: time.Millisecond, Queue: 64}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(42))
	var reqs []Request
	for i := range 48 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1))
	}
	cancelled := 0
	for _, r := range e.RunAll(ctx, reqs) {
		switch {
		case errors.Is(r.Err, context.Canceled):
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

// TestLockstepBatchesKeepTheirResults: batches run in lockstep from several
// goroutines at once, some cancelled part way, on two runners, reuse the
// groupers' admissions and the runners' buffers, vectors and headers from
// batch to batch and group to group. The backend hands back its input
// buffer as the output, as an identity graph does, so every result is a
// view of a group's assembled input: each must still hold, once all the
// batches have run, what it held when it was answered (run it with -race).
func TestLockstepBatchesKeepTheirResults(t *testing.T) {
	echo := func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["pixel_patches"]
		n := x.Shape[0]
		if n%3 == 0 {
			time.Sleep(200 * time.Microsecond)
		}
		return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{n, 4}, Data: x.Float32s()[:n*4]}}, nil
	}
	// The queue holds the four batches at once (at most 4×23 items): a
	// slow machine must not turn the test into one of the queue's limit.
	e := engineWith(t, echo, Options{MaxDelay: time.Millisecond, Workers: 2, Queue: 128}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(43))
	pool := make([]Request, 40)
	for i := range pool {
		pool[i] = imageRequest(rng, fmt.Sprint(i), rng.Intn(4)) // some bring no image
	}
	type answer struct {
		r    Response
		held []float32
	}
	var all [4][]answer
	done := make(chan struct{})
	for w := range all {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewSource(int64(100 + w)))
			for range 25 {
				reqs := make([]Request, 4+rng.Intn(20))
				for i := range reqs {
					reqs[i] = pool[rng.Intn(len(pool))]
				}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.Intn(4) == 0 {
					time.AfterFunc(time.Duration(rng.Intn(400))*time.Microsecond, cancel)
				}
				for _, r := range e.RunAll(ctx, reqs) {
					a := answer{r: r}
					if r.Err == nil {
						a.held = slices.Clone(r.Outputs.Get("embeddings").Float32s())
					}
					all[w] = append(all[w], a)
				}
				cancel()
			}
		}()
	}
	for range all {
		<-done
	}
	succeeded := 0
	for w := range all {
		for _, a := range all[w] {
			switch r := a.r; {
			case errors.Is(r.Err, context.Canceled):
			case r.Err != nil:
				t.Errorf("request %s: %v", r.ID, r.Err)
			case !slices.Equal(r.Outputs.Get("embeddings").Float32s(), a.held):
				t.Errorf("request %s: its result changed from %v to %v as later batches ran", r.ID, a.held, r.Outputs.Get("embeddings").Float32s())
			default:
				succeeded++
			}
		}
	}
	if succeeded < 100 {
		t.Errorf("only %d requests succeeded; the test checks too little", succeeded)
	}
}
