package vm

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/sched"
)

// TestRunAllClosesGroupsItself: RunAll announces its requests, so a group
// closes as soon as every request is waiting, however long max_delay is;
// with an hour of delay this test would otherwise never end.
func TestRunAllClosesGroupsItself(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Hour}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(31))
	var reqs []Request
	for i := range 6 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1))
	}
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if s := e.Stats().Components["encoder"]; s.MaxGroupRequests < 2 {
		t.Errorf("no group formed: %+v", s.GroupSizes)
	}
}

// TestGroupsFillWhileTheRunnerIsBusy: with no delay at all, the items that
// arrive while the one runner is busy wait for it and leave together.
func TestGroupsFillWhileTheRunnerIsBusy(t *testing.T) {
	e := engineWith(t, slowEncoder(20*time.Millisecond), Options{MaxDelay: 0}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(32))
	var reqs []Request
	for i := range 8 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 1))
	}
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	s := e.Stats().Components["encoder"]
	if s.Invocations >= 8 || s.MaxGroupRequests < 2 {
		t.Errorf("with the runner busy, items did not wait for it together: %d invocations, groups %v", s.Invocations, s.GroupSizes)
	}
}

// paddedRequest is an image request of one image with extent patches,
// every patch valid.
func paddedRequest(id string, patches int64) Request {
	rng := rand.New(rand.NewSource(patches))
	r := imageRequest(rng, id, 1)
	px := r.Inputs["pixel_patches"]
	data := make([]float32, patches*px.Shape[2])
	for i := range data {
		data[i] = float32(rng.Intn(100)) / 8
	}
	r.Inputs["pixel_patches"] = &backend.Tensor{DType: "float32", Shape: []int64{1, patches, px.Shape[2]}, Data: data}
	r.Inputs["patch_lengths"] = &backend.Tensor{DType: "int64", Shape: []int64{1}, Data: []int64{patches}}
	return r
}

// paddedItem is a pending image request of one image with extent patches.
func paddedItem(t *testing.T, g *grouper, patches int64, queued time.Time) *pending {
	t.Helper()
	r := paddedRequest("x", patches)
	it, err := g.spec.admit(r.Inputs, valueMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := &pending{e: sched.Entry{Ctx: context.Background()}, done: make(chan share, 1)}
	p.hold(g.spec, it, queued)
	return p
}

// TestAFinishedRequestClosesTheGroupWaitingForIt: a group waits while a
// request the engine counts as running may still bring an item; when that
// request ends without reaching the component, the waiting group closes
// at once, not after max_delay (an hour here). Only a request's end with
// items waiting wakes a runner: a lone caller's requests would otherwise
// wake the parked runner for nothing, once each.
func TestAFinishedRequestClosesTheGroupWaitingForIt(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Hour}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(41))
	e.Begin() // a request that will end without an item for the encoder
	done := make(chan Response, 1)
	go func() {
		// RunBatchWith, as a generated executor runs its requests: counted
		// as running, and not an open stream.
		done <- e.RunBatchWith(context.Background(), []Request{imageRequest(rng, "waiting", 1)}, BatchOptions{}, nil)[0]
	}()
	time.Sleep(20 * time.Millisecond) // the item queues; its group waits
	select {
	case r := <-done:
		t.Fatalf("the group closed while a running request could still bring an item: %v", r.Err)
	default:
	}
	e.End()
	select {
	case r := <-done:
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the group still waits after the request it waited for ended")
	}
}

// TestFinishedRequestsLeaveNoGroupWaiting: many callers of Run, each
// sending its next request once answered, on an engine whose groups may
// wait an hour for requests still running: every request is answered,
// round after round, at every number of callers. A group that waits for a
// request that has ended, its wake lost (a finished request sees no
// runner holding items while a runner decides on the old count of
// running requests), would leave the last callers waiting the hour.
func TestFinishedRequestsLeaveNoGroupWaiting(t *testing.T) {
	for round := range 10 {
		e := engineWith(t, maskedMean, Options{MaxDelay: time.Hour}, nil)
		rng := rand.New(rand.NewSource(int64(round)))
		reqs := make([]Request, 64)
		for i := range reqs {
			reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3))
		}
		callers := []int{16, 40, 64}[round%3]
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for i := range 200 {
					if r := e.Run(context.Background(), reqs[(c+i)%len(reqs)]); r.Err != nil {
						t.Error(r.Err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("round %d, %d callers: requests still wait after a minute", round, callers)
		}
		e.Close()
	}
}

// TestPanickingBindingFailsItsRequestAlone: a Go binding that panics on
// one request's image fails that request alone with run/backend (its
// group fails, and its requests run alone); every other request equals
// its solo run.
func TestPanickingBindingFailsItsRequestAlone(t *testing.T) {
	const marker = 7 // patches of the image the binding panics on
	panicky := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		if slices.Contains(in["patch_lengths"].Int64s(), marker) {
			panic("an image of 7 patches")
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, panicky, Options{MaxDelay: time.Hour}, nil)
	defer e.Close()
	solo := imageEngine(t, Options{Solo: true})
	var reqs []Request
	for i := range 12 {
		reqs = append(reqs, paddedRequest(fmt.Sprint(i), int64(1+i%5)))
	}
	bad := 5
	reqs[bad] = paddedRequest("bad", marker)
	got := e.RunAll(context.Background(), reqs)
	want := solo.RunAll(context.Background(), reqs)
	for i := range reqs {
		if i == bad {
			if re := AsRunError(got[i].Err); re == nil || re.Rule != backend.RunBackend || !strings.Contains(re.Message, "panicked") {
				t.Errorf("the request that makes the binding panic got %v, want run/backend naming the panic", got[i].Err)
			}
			continue
		}
		if got[i].Err != nil || !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
			t.Errorf("%s beside a panicking request: %v, %v; want its solo result", reqs[i].ID, got[i].Err, got[i].Outputs.Get("embeddings"))
		}
	}
	if s := e.Stats().Components["encoder"]; s.Regrouped == 0 {
		t.Errorf("the failed group was not run again request by request: %+v", s)
	}
}

// panicOnce is a backend whose sessions panic on their first call and
// then run maskedMean: a panic that no binding recovers.
type panicOnce struct{ fired atomic.Bool }

func (p *panicOnce) Name() string { return "panic-once" }

func (p *panicOnce) Load(*ir.Component, string) (backend.Session, error) {
	return panicOnceSession{p}, nil
}

type panicOnceSession struct{ p *panicOnce }

func (s panicOnceSession) Run(ctx context.Context, in map[string]*backend.Tensor, _ []string) (map[string]*backend.Tensor, error) {
	if s.p.fired.CompareAndSwap(false, true) {
		panic("the backend's first call")
	}
	return maskedMean(ctx, in)
}

func (panicOnceSession) Ready() backend.Readiness {
	return backend.Readiness{Ready: true, Provider: "go", OpClass: "test"}
}
func (panicOnceSession) Close() error { return nil }

// TestABackendPanicLeavesNoSlotTaken: a backend panic that unwinds
// through a group (its batch running it, or a lone caller inline) gives
// the group's worker slot back. A caller that recovers it (as net/http
// recovers a handler's panic) then finds the engine serving: the next
// requests run, and Close finishes, rather than waiting forever for the
// slot. The batch holds more than one group, so that items still wait
// when the panic unwinds.
func TestABackendPanicLeavesNoSlotTaken(t *testing.T) {
	for _, lone := range []bool{false, true} {
		t.Run(fmt.Sprintf("lone=%v", lone), func(t *testing.T) {
			// A lone caller runs inline where no delay is allowed.
			opts := Options{MaxDelay: time.Hour}
			if lone {
				opts.MaxDelay = 0
			}
			path := filepath.Join("..", "testdata", "packages", "image_padded")
			e, err := Open(compilePlan(t, path), path, map[ir.ImplKind]backend.Backend{ir.ImplONNX: &panicOnce{}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			// One worker slot: the batch runs its groups itself, on its
			// caller's goroutine (sched.Scheduler).
			g := e.groupers["encoder"]
			var reqs []Request
			for i := range 40 { // 40 images: three groups of the 16-image budget
				reqs = append(reqs, paddedRequest(fmt.Sprint(i), int64(1+i%3)))
			}
			run := func() {
				if lone {
					e.Run(context.Background(), reqs[0])
				} else {
					e.RunAll(context.Background(), reqs)
				}
			}
			within := func(what string, f func()) any {
				done := make(chan any, 1)
				go func() {
					defer func() { done <- recover() }()
					f()
				}()
				select {
				case p := <-done:
					return p
				case <-time.After(10 * time.Second):
					t.Fatalf("%s still waits after 10s", what)
					return nil
				}
			}
			if p := within("the run whose backend panics", run); p == nil {
				t.Fatal("the backend's panic did not reach the caller")
			}
			if s := e.Stats().Components["encoder"]; lone && s.Inline != 1 || !lone && s.OwnGroups == 0 {
				t.Errorf("the group did not run on the caller's goroutine (lone %v): %+v", lone, s)
			}
			if c := g.s.Counts(); c.Waiting != 0 || c.Promised != 0 {
				t.Errorf("after the panic the queue holds %d items no one waits for, %d promised", c.Waiting, c.Promised)
			}
			if p := within("the next run", run); p != nil {
				t.Fatalf("the next run panicked: %v", p)
			}
			within("Close", func() { e.Close() })
		})
	}
}

// TestSortedBurstGroupsLikeExtents: a lockstep batch that runs its own
// groups sorts its burst, so that its groups hold images of like extents.
// After one image of 5 patches come images of 4 and 6 patches in turn:
// ranked against the oldest image, a 4 and a 6 add the same padding, and
// the group of 16 images (the budget) would take both kinds; sorted, the
// 4s fill one group, the 5 and the 6s the next. Every result still equals
// its solo run.
func TestSortedBurstGroupsLikeExtents(t *testing.T) {
	for _, self := range []bool{true, false} {
		t.Run(fmt.Sprintf("self=%v", self), func(t *testing.T) { testSortedBurst(t, self) })
	}
}

// testSortedBurst is TestSortedBurstGroupsLikeExtents with the batch
// running its own groups (self) or its runner running them while the
// batch admits.
func testSortedBurst(t *testing.T, self bool) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Hour}, nil)
	defer e.Close()
	solo := imageEngine(t, Options{Solo: true})
	if !self {
		g := e.groupers["encoder"]
		g.s.Lock()
		g.s.RunOwnBelow = 0 // batches hand their groups to the runner
		g.s.Unlock()
	}
	reqs := []Request{paddedRequest("first", 5)}
	for i := range 32 {
		reqs = append(reqs, paddedRequest(fmt.Sprint(i), 4+2*int64(i%2)))
	}
	checkEmbeddingsAsSolo(t, reqs, e.RunAll(context.Background(), reqs), solo.RunAll(context.Background(), reqs))
	s := e.Stats().Components["encoder"]
	if own := s.OwnGroups > 0; own != self {
		t.Fatalf("the batch ran %d groups of its own, want them all or none (self %v)", s.OwnGroups, self)
	}
	// Sorted, only the image of 5 patches is padded (by one patch);
	// ranked, eight images of 4 patches are padded by two in each group.
	if s.PaddingOverhead > 0.01 {
		t.Errorf("padding overhead %.3f over groups %v: the burst's groups mix extents", s.PaddingOverhead, s.GroupSizes)
	}
}
