package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// slowEncoder is maskedMean that takes a while, so that requests pile up.
func slowEncoder(d time.Duration) backend.Func {
	return func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		time.Sleep(d)
		return maskedMean(ctx, in)
	}
}

func engineWith(t testing.TB, f backend.Func, opts Options, notReady map[string]string) *Engine {
	t.Helper()
	path := filepath.Join("..", "testdata", "packages", "image_padded")
	b := &backend.Bindings{}
	b.Register("encoder", f)
	for name, why := range notReady {
		if opts.Declines == nil {
			opts.Declines = backend.Declines{}
		}
		opts.Declines[backend.ReadinessKey{Component: name}] = why
	}
	bes := map[ir.ImplKind]backend.Backend{ir.ImplONNX: b}
	e, err := Open(compilePlan(t, path), path, bes, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCancellationAffectsNoOneElse: requests cancelled while they wait are
// answered with their context's error; every other request equals solo.
func TestCancellationAffectsNoOneElse(t *testing.T) {
	before := runtime.NumGoroutine()
	e := engineWith(t, slowEncoder(20*time.Millisecond), Options{MaxDelay: 2 * time.Millisecond}, nil)
	solo := imageEngine(t, Options{Solo: true})
	rng := rand.New(rand.NewSource(11))
	var reqs []Request
	for i := range 40 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3)))
	}
	want := solo.RunAll(context.Background(), reqs)
	got := make([]Response, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		ctx, cancel := context.WithCancel(context.Background())
		if i%3 == 0 {
			time.AfterFunc(time.Duration(rng.Intn(30))*time.Millisecond, cancel)
		} else {
			defer cancel()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = e.Run(ctx, reqs[i])
		}()
	}
	wg.Wait()
	cancelled := 0
	for i := range reqs {
		switch {
		case got[i].Err != nil && i%3 == 0 && errors.Is(got[i].Err, context.Canceled):
			cancelled++
		case got[i].Err != nil:
			t.Errorf("%s failed: %v", reqs[i].ID, got[i].Err)
		case !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")):
			t.Errorf("%s differs from solo", reqs[i].ID)
		}
	}
	t.Logf("%d of %d cancellable requests were cancelled before their share arrived", cancelled, (len(reqs)+2)/3)
	for _, x := range []*Engine{e, solo} {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitForGoroutines(t, before)
}

// waitForGoroutines fails if goroutines started by the test outlive it.
// Goroutines that are ending may still be counted for a moment; the bound
// only guards against waiting for ones that never end.
func waitForGoroutines(t *testing.T, limit int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > limit {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines remain after Close (at most %d expected):\n%s", runtime.NumGoroutine(), limit, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseFailsWaitersAndLeaksNothing: Close drains what is queued, later
// submissions fail with ErrClosed, and no goroutine survives.
func TestCloseFailsWaitersAndLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	e := engineWith(t, slowEncoder(5*time.Millisecond), Options{MaxDelay: time.Millisecond}, nil)
	rng := rand.New(rand.NewSource(12))
	res := e.RunAll(context.Background(), []Request{imageRequest(rng, "a", 2), imageRequest(rng, "b", 1)})
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if r := e.Run(context.Background(), imageRequest(rng, "late", 1)); !errors.Is(r.Err, ErrClosed) {
		t.Errorf("a request after Close: %v", r.Err)
	}
	waitForGoroutines(t, before)
}

// TestQueueLimitFailsFast: beyond the queue limit a request fails at once
// with a clear error instead of blocking; RunAll, which knows its
// requests, sends no more at once than the queue holds and answers all.
func TestQueueLimitFailsFast(t *testing.T) {
	e := engineWith(t, slowEncoder(50*time.Millisecond), Options{MaxDelay: 0, Queue: 2}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(13))
	var reqs []Request
	for i := range 12 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1))
	}
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Errorf("RunAll with a queue of 2: %s: %v", r.ID, r.Err)
		}
	}

	held, _, proceed := heldEncoder()
	busy := engineWith(t, held, Options{MaxDelay: 0, Queue: 2}, nil)
	defer busy.Close()
	first, rest := runHeld(t, busy, reqs, proceed)
	for i, r := range append([]Response{first}, rest...) {
		var qf *QueueFullError
		switch {
		case errors.As(r.Err, &qf):
			if qf.Limit != 2 || qf.Component != "encoder" {
				t.Errorf("queue error %+v", qf)
			}
		case i == 0:
			t.Errorf("%s was answered while the encoder was held: %v", r.ID, r.Err)
		case r.Err != nil:
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
}

// heldEncoder is maskedMean held until proceed is closed; each call sends
// on entered (which holds 64) as it begins.
func heldEncoder() (f backend.Func, entered, proceed chan struct{}) {
	entered, proceed = make(chan struct{}, 64), make(chan struct{})
	return func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		entered <- struct{}{}
		<-proceed
		return maskedMean(ctx, in)
	}, entered, proceed
}

// runHeld runs reqs on e all at once while e's encoder (heldEncoder) is
// held, and lets it go once the first response has come: with the
// encoder held nothing can be answered but a refusal, so a first response
// shows that refusals do not wait for room. A refusal that waited would
// never come, which the bound (a hang guard) turns into a failure.
func runHeld(t *testing.T, e *Engine, reqs []Request, proceed chan struct{}) (first Response, rest []Response) {
	t.Helper()
	answers := make(chan Response, len(reqs))
	for _, r := range reqs {
		go func() { answers <- e.Run(context.Background(), r) }()
	}
	select {
	case first = <-answers:
	case <-time.After(time.Minute):
		close(proceed)
		t.Fatalf("%d requests at once, the encoder held: none refused", len(reqs))
	}
	close(proceed)
	for range len(reqs) - 1 {
		rest = append(rest, <-answers)
	}
	return first, rest
}

// TestUnreadyBackendRunsSolo: a component whose backend declines grouped
// execution never receives a group; the decline is counted with its reason.
func TestUnreadyBackendRunsSolo(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: 20 * time.Millisecond}, map[string]string{"encoder": "no grouped kernel on this provider"})
	defer e.Close()
	rng := rand.New(rand.NewSource(14))
	var reqs []Request
	for i := range 8 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 2))
	}
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	s := e.Stats().Components["encoder"]
	if s.MaxGroupRequests != 1 || s.Invocations != 8 {
		t.Errorf("a declined component formed groups: %+v", s)
	}
	if s.Declines["go/binding: no grouped kernel on this provider"] != 1 {
		t.Errorf("declines: %v", s.Declines)
	}
}

// TestOperatorDeclineRunsSolo: a decline keyed by an operator type the
// component's graph uses (the plan lists the image encoder's, Where among
// them) makes it run solo; one keyed by a type it does not use changes
// nothing.
func TestOperatorDeclineRunsSolo(t *testing.T) {
	for _, tc := range []struct {
		op       string
		declined bool
	}{{"Where", true}, {"Conv", false}} {
		e := engineWith(t, maskedMean, Options{MaxDelay: 20 * time.Millisecond,
			Declines: backend.Declines{{OpClass: tc.op}: tc.op + " is unverified"}}, nil)
		rng := rand.New(rand.NewSource(15))
		var reqs []Request
		for i := range 6 {
			reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 2))
		}
		for _, r := range e.RunAll(context.Background(), reqs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		s := e.Stats().Components["encoder"]
		e.Close()
		if got := s.Declines["go/binding: "+tc.op+" is unverified"] == 1; got != tc.declined {
			t.Errorf("decline by %s: declines %v, want declined %v", tc.op, s.Declines, tc.declined)
		}
		if tc.declined && s.MaxGroupRequests != 1 {
			t.Errorf("declined by %s, the component formed groups: %+v", tc.op, s)
		}
	}
}

// TestLoad runs a bounded load of in-process clients at two max delays and
// reports throughput and latency percentiles (figures, not assertions on
// time: the machines are shared).
func TestLoad(t *testing.T) {
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		e := engineWith(t, slowEncoder(200*time.Microsecond), Options{MaxDelay: delay}, nil)
		rng := rand.New(rand.NewSource(15))
		const clients, perClient = 16, 25
		lat := make([]time.Duration, 0, clients*perClient)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			reqs := make([]Request, perClient)
			for i := range reqs {
				reqs[i] = imageRequest(rng, fmt.Sprint(c, "-", i), 1+rng.Intn(2))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, r := range reqs {
					t0 := time.Now()
					if res := e.Run(context.Background(), r); res.Err != nil {
						t.Errorf("%s: %v", r.ID, res.Err)
					}
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.Sort(lat)
		s := e.Stats().Components["encoder"]
		t.Logf("max-delay %v: %d requests in %v (%.0f req/s), latency p50 %v p99 %v, %d invocations, largest group %d",
			delay, len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
			lat[len(lat)/2], lat[len(lat)*99/100], s.Invocations, s.MaxGroupRequests)
		for _, p := range s.BudgetPeaks {
			if p.Peak > p.MaxTotal {
				t.Errorf("budget %v exceeded", p.Dimensions)
			}
		}
		e.Close()
	}
}

// TestBackendFailureFailsOnlyItsRequest: when the backend fails a group,
// the group runs again one request at a time, so only the request whose
// item the backend refuses fails (with the backend's own rule).
func TestBackendFailureFailsOnlyItsRequest(t *testing.T) {
	picky := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		for _, v := range in["pixel_patches"].Float32s() {
			if v < 0 {
				return nil, &backend.RunError{Rule: "run/input", Message: "a negative pixel"}
			}
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, picky, Options{MaxDelay: 50 * time.Millisecond}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(16))
	reqs := []Request{imageRequest(rng, "a", 2), imageRequest(rng, "bad", 1), imageRequest(rng, "c", 3)}
	reqs[1].Inputs["pixel_patches"].Float32s()[0] = -1
	res := e.RunAll(context.Background(), reqs)
	for i, r := range res {
		var re *backend.RunError
		switch {
		case i == 1 && (!errors.As(r.Err, &re) || re.Rule != "run/input"):
			t.Errorf("the bad request: %v", r.Err)
		case i == 1 && (re.At == nil || re.At.Path != "pipeline.workflow.steps[0]"):
			// No port accounts for what the backend refused: the error is
			// located at the invoke step.
			t.Errorf("the bad request's error is located at %+v, want the invoke step pipeline.workflow.steps[0]", re.At)
		case i != 1 && r.Err != nil:
			t.Errorf("%s failed with its neighbour: %v", r.ID, r.Err)
		}
	}
	if s := e.Stats().Components["encoder"]; s.Regrouped != 1 {
		t.Errorf("regrouped %d times, want 1: %+v", s.Regrouped, s)
	}
}

// TestSubmit: Submit returns the response and its failure as an error.
func TestSubmit(t *testing.T) {
	e := imageEngine(t, Options{})
	rng := rand.New(rand.NewSource(17))
	if resp, err := e.Submit(context.Background(), imageRequest(rng, "ok", 2)); err != nil || resp.Outputs.Get("embeddings") == nil {
		t.Fatalf("%v %v", resp, err)
	}
	bad := imageRequest(rng, "bad", 1)
	delete(bad.Inputs, "patch_lengths")
	var re *backend.RunError
	if _, err := e.Submit(context.Background(), bad); !errors.As(err, &re) || re.Rule != "run/input" {
		t.Fatalf("a request without patch_lengths: %v", err)
	}
}
