package vm

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// TestLoneCallerRunsInline: a caller that sends its requests one after
// another runs them on its own goroutine once the engine has seen it is
// alone (its first requests found nothing else waiting), and gets what a
// solo engine gives.
func TestLoneCallerRunsInline(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: 5 * time.Millisecond})
	defer e.Close()
	solo := imageEngine(t, Options{Solo: true})
	defer solo.Close()
	rng := rand.New(rand.NewSource(3))
	const n = 20
	for i := range n {
		req := imageRequest(rng, fmt.Sprint("r", i), 1+rng.Intn(3))
		got, want := e.Run(context.Background(), req), solo.Run(context.Background(), req)
		if got.Err != nil || want.Err != nil {
			t.Fatalf("%s: err %v, solo err %v", req.ID, got.Err, want.Err)
		}
		if !sameResult(got.Outputs.Get("embeddings"), want.Outputs.Get("embeddings")) {
			t.Errorf("%s: %v differs from solo %v", req.ID, got.Outputs.Get("embeddings"), want.Outputs.Get("embeddings"))
		}
	}
	if st := e.Stats().Components["encoder"]; st.Inline < n-5 || st.Requests != n {
		t.Errorf("a lone caller's %d requests: %d ran inline of %d (want all but the first few)", n, st.Inline, st.Requests)
	}
}

// TestInlineRunsKeepTheWorkerBound: lone callers' inline runs and the
// runners' groups together never invoke the component more often at once
// than Workers allows, whether callers come alone or in a crowd.
func TestInlineRunsKeepTheWorkerBound(t *testing.T) {
	for _, workers := range []int{1, 2} {
		var now, most atomic.Int64
		counting := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			defer now.Add(-1)
			time.Sleep(200 * time.Microsecond)
			return maskedMean(ctx, in)
		}
		e := engineWith(t, counting, Options{MaxDelay: time.Millisecond, Workers: workers}, nil)
		rng := rand.New(rand.NewSource(5))
		req := func(i int) Request { return imageRequest(rng, fmt.Sprint("r", i), 1) }
		var reqs []Request
		for i := range 200 {
			reqs = append(reqs, req(i))
		}
		for _, r := range reqs[:20] { // alone: inline
			if resp := e.Run(context.Background(), r); resp.Err != nil {
				t.Fatal(resp.Err)
			}
		}
		// Then alone and in a crowd at once.
		var wg sync.WaitGroup
		for c := range 12 {
			wg.Go(func() {
				for i := 20 + c; i < len(reqs); i += 12 {
					if resp := e.Run(context.Background(), reqs[i]); resp.Err != nil {
						t.Error(resp.Err)
					}
					if c == 0 {
						time.Sleep(100 * time.Microsecond)
					}
				}
			})
		}
		wg.Wait()
		st := e.Stats().Components["encoder"]
		e.Close()
		if most.Load() > int64(workers) {
			t.Errorf("workers %d: %d invocations at once", workers, most.Load())
		}
		if st.Inline == 0 || st.Requests != int64(len(reqs)) {
			t.Errorf("workers %d: %d inline of %d requests; want some inline, all run", workers, st.Inline, st.Requests)
		}
	}
}

// TestCloseWaitsForInlineRun: Close returns only once a lone caller's
// inline invocation has returned, as it waits for the runners': the
// session is never closed under a running call.
func TestCloseWaitsForInlineRun(t *testing.T) {
	var running atomic.Bool
	entered := make(chan struct{}, 1)
	slow := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		running.Store(true)
		defer running.Store(false)
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(30 * time.Millisecond)
		return maskedMean(ctx, in)
	}
	e := engineWith(t, slow, Options{MaxDelay: time.Millisecond}, nil)
	rng := rand.New(rand.NewSource(9))
	for i := range 4 { // the engine learns it has a lone caller
		if r := e.Run(context.Background(), imageRequest(rng, fmt.Sprint("w", i), 1)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	<-entered
	done := make(chan Response, 1)
	go func() { done <- e.Run(context.Background(), imageRequest(rng, "last", 1)) }()
	<-entered
	if st := e.Stats().Components["encoder"]; st.Inline == 0 {
		t.Fatalf("the lone caller's request did not run inline: %+v", st)
	}
	e.Close()
	if running.Load() {
		t.Error("Close returned while an inline invocation was still running")
	}
	if r := <-done; r.Err != nil {
		t.Errorf("the inline request that Close waited for failed: %v", r.Err)
	}
}
