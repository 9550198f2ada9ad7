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
