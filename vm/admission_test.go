package vm

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// TestRunBatchStop: closing Stop once the first request finished starts
// no request after it, while every request already started finishes with
// its result, equal to solo; each request is told of exactly once. Both
// ways RunBatch runs requests are tried: in lockstep windows and on a
// pool of goroutines.
func TestRunBatchStop(t *testing.T) {
	for _, lockstep := range []bool{true, false} {
		t.Run(fmt.Sprintf("lockstep=%v", lockstep), func(t *testing.T) {
			e := engineWith(t, slowEncoder(2*time.Millisecond), Options{MaxDelay: time.Millisecond, Queue: 4}, nil)
			defer e.Close()
			e.lockstep = lockstep
			solo := imageEngine(t, Options{Solo: true})
			defer solo.Close()
			rng := rand.New(rand.NewSource(7))
			var reqs []Request
			for i := range 60 {
				reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(2)))
			}
			want := solo.RunAll(context.Background(), reqs)
			stop := make(chan struct{})
			var once sync.Once
			var mu sync.Mutex
			told := make([]int, len(reqs))
			got := e.RunBatch(context.Background(), reqs, BatchOptions{Limit: 4, Stop: stop, Finished: func(i int, r Response) {
				mu.Lock()
				told[i]++
				mu.Unlock()
				once.Do(func() { close(stop) })
			}})
			finished, refused := 0, 0
			for i, r := range got {
				if told[i] != 1 {
					t.Errorf("request %d was told of %d times", i, told[i])
				}
				switch {
				case NotStarted(r.Err):
					if ruleOf(r.Err) != backend.RunCancelled {
						t.Errorf("request %d not started: %v, want %s", i, r.Err, backend.RunCancelled)
					}
					refused++
				case r.Err != nil:
					t.Errorf("request %d started but did not finish: %v", i, r.Err)
				case !sameResult(r.Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")):
					t.Errorf("request %d differs from solo", i)
				default:
					finished++
				}
			}
			if finished == 0 || refused == 0 {
				t.Errorf("%d finished, %d not started; want some of each", finished, refused)
			}
			// The engine is not left waiting for the requests never started.
			for _, r := range e.RunAllLimit(context.Background(), reqs[:5], 2) {
				if r.Err != nil {
					t.Errorf("after a stopped batch: %s: %v", r.ID, r.Err)
				}
			}
		})
	}
}

// TestMalformedTensorsAreRefused: a Go caller's request tensor that does
// not hold what it declares (data of another type, fewer elements than its
// shape, a negative extent, an empty axis beside one of 2^40) fails that
// request with run/input, through RunAll and Run alike, and its neighbours
// run as if it had not come.
func TestMalformedTensorsAreRefused(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: time.Millisecond})
	defer e.Close()
	rng := rand.New(rand.NewSource(17))
	for name, spoil := range map[string]func(x *backend.Tensor){
		"data of another type": func(x *backend.Tensor) { x.Data = make([]int64, x.Len()) },
		"data cut short":       func(x *backend.Tensor) { x.Data = x.Float32s()[:x.Len()-1] },
		"a negative extent":    func(x *backend.Tensor) { x.Shape[1] = -x.Shape[1] },
		"an empty axis beside a vast one": func(x *backend.Tensor) {
			x.Shape = []int64{0, 1 << 40, x.Shape[2]}
			x.Data = []float32{}
		},
	} {
		good := imageRequest(rng, "good", 2)
		bad := imageRequest(rng, "bad", 2)
		spoil(bad.Inputs["pixel_patches"])
		want := e.Run(context.Background(), good)
		for _, res := range [][]Response{
			e.RunAll(context.Background(), []Request{good, bad}),
			{e.Run(context.Background(), good), e.Run(context.Background(), bad)},
		} {
			if ruleOf(res[1].Err) != backend.RunInput {
				t.Errorf("%s: %v, want %s", name, res[1].Err, backend.RunInput)
			}
			if res[0].Err != nil || !sameResult(res[0].Outputs.Get("embeddings"), want.Outputs.Get("embeddings")) {
				t.Errorf("%s: the good request got %v, %v", name, res[0].Err, res[0].Outputs)
			}
		}
	}
}
