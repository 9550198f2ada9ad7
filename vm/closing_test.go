package vm

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
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
	return &pending{ctx: context.Background(), it: it, done: make(chan share, 1), queued: queued}
}

// paddingCostlyGrouper returns the image encoder's grouper (max delay 1 s)
// with a scheduler that has measured a run time mostly per element: 1 µs
// a call and 100 ns an element, so that padding costs more than a call
// saves.
func paddingCostlyGrouper(t *testing.T) *grouper {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Second}, nil)
	t.Cleanup(func() { e.Close() })
	g := e.groupers["encoder"]
	for _, elements := range []int64{100, 400, 1600, 3200, 800, 200, 6400, 50, 1000, 2500} {
		g.sched.observe(1, groupElements{padded: elements, real: elements}, time.Duration(1000+100*elements))
	}
	return g
}

// TestFormationIsPaddingAware: among waiting items, a group takes those
// whose padded extents are like its oldest item's, leaving the others for
// a group of their own; an item past its delay bound is never passed over.
func TestFormationIsPaddingAware(t *testing.T) {
	g := paddingCostlyGrouper(t)
	now := time.Now()
	var queue []*pending
	for i, patches := range []int64{2, 60, 2, 60, 2, 60, 2, 60} {
		queue = append(queue, paddedItem(t, g, patches, now.Add(time.Duration(i)*time.Microsecond)))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = queue
	f := g.form(now.Add(time.Millisecond))
	var extents []int64
	for _, i := range f.chosen {
		extents = append(extents, queue[i].it.ports[0].t.Shape[1])
	}
	for _, x := range extents {
		if x != 2 {
			t.Fatalf("the group of an item of 2 patches took extents %v; the items of 60 patches belong together", extents)
		}
	}
	if len(extents) != 4 {
		t.Errorf("the group took %v, want the four items of 2 patches", extents)
	}
	// The same queue once the items of 60 patches have waited past the
	// delay: they are taken first, whatever they cost in padding.
	f = g.form(now.Add(2 * time.Second))
	late := 0
	for _, i := range f.chosen {
		if queue[i].it.ports[0].t.Shape[1] == 60 {
			late++
		}
	}
	if late == 0 {
		t.Errorf("items past their delay bound were passed over: %v", f.chosen)
	}
}

// TestPromisedGroupClosesOnceTheQueueHoldsOne: while a lockstep batch is
// still admitting, a free runner runs a group as soon as the queue holds
// a full group's worth, even when the group it forms is not full (here
// padding keeps the larger items out of the first one), so that groups
// run beside the rest of the admission instead of after it. With less
// queued, it waits for the batch.
func TestPromisedGroupClosesOnceTheQueueHoldsOne(t *testing.T) {
	g := paddingCostlyGrouper(t)
	now := time.Now()
	queue := []*pending{paddedItem(t, g, 2, now)}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.promised = 1000
	g.queue = append([]*pending(nil), queue...)
	g.fillStale = true
	if batch, wait, _ := g.take(now, nil); batch != nil || wait != promisedWait {
		t.Fatalf("one queued item of a batch still admitting ran as a group of %d (wait %v)", len(batch), wait)
	}
	for range 400 {
		queue = append(queue, paddedItem(t, g, 60, now))
	}
	head := queue[0]
	g.queue = queue
	g.fillStale = true
	batch, wait, _ := g.take(now, nil)
	if batch == nil {
		t.Fatalf("with %d items queued, the runner waits %v for more of the batch", len(queue), wait)
	}
	if len(batch) != 1 || batch[0] != head {
		t.Errorf("took %d items; want the oldest alone (padding keeps the others out)", len(batch))
	}
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
			g := e.groupers["encoder"]
			g.mu.Lock()
			g.overlap = 0 // the batch runs its groups itself, on its caller's goroutine
			g.mu.Unlock()
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
			g.mu.Lock()
			left, promised := len(g.queue), g.promised
			g.mu.Unlock()
			if left != 0 || promised != 0 {
				t.Errorf("after the panic the queue holds %d items no one waits for, %d promised", left, promised)
			}
			if p := within("the next run", run); p != nil {
				t.Fatalf("the next run panicked: %v", p)
			}
			within("Close", func() { e.Close() })
		})
	}
}

// TestArrivedAgainIsRepeatedArrivals: a burst's items after its first are
// recorded at once, as that many arrivals at the first's time would be,
// from a new stream and from one with a history.
func TestArrivedAgainIsRepeatedArrivals(t *testing.T) {
	start := time.Unix(0, 0)
	for _, history := range []int{0, 1, 3} {
		for _, k := range []int{0, 1, 5} {
			var one, many arrivals
			for i := range history {
				at := start.Add(time.Duration(i) * time.Millisecond)
				one.arrived(at, i%2 == 0)
				many.arrived(at, i%2 == 0)
			}
			at := start.Add(time.Duration(history) * time.Millisecond)
			one.arrived(at, false)
			many.arrived(at, false)
			for range k {
				one.arrived(at, true)
			}
			many.arrivedAgain(k)
			if one.seen != many.seen || one.lastGap != many.lastGap || !one.last.Equal(many.last) ||
				math.Abs(one.mean-many.mean) > 1e-6*max(1, one.mean) || math.Abs(one.overlap-many.overlap) > 1e-12 {
				t.Errorf("history %d, %d more: %+v, want %+v", history, k, many, one)
			}
		}
	}
}
