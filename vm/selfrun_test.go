package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/sched"
)

// TestSelfRunRule: a lockstep batch that finds the component idle runs
// its own groups with one worker slot; with two, only once the groups are
// measured to run shorter than selfRunBelow (none measured yet, or longer:
// the runners run them side by side). A busy component's batch hands its
// groups over, as a batch does where the rule is off (selfRunBelow 0).
func TestSelfRunRule(t *testing.T) {
	start := func(g *grouper) bool {
		self := g.startBatch()
		if self {
			undoSelfRun(g)
		}
		return self
	}
	one := imageEngine(t, Options{MaxDelay: time.Millisecond})
	g := one.groupers["encoder"]
	if !start(g) {
		t.Error("one slot, idle: the batch hands its groups to the runner")
	}
	g.mu.Lock()
	g.running++ // a group runs
	g.mu.Unlock()
	if start(g) {
		t.Error("one slot, busy: the batch runs its own groups")
	}
	g.mu.Lock()
	g.running--
	g.selfRunBelow = 0
	g.mu.Unlock()
	if start(g) {
		t.Error("the rule off: the batch runs its own groups")
	}

	two := imageEngine(t, Options{MaxDelay: time.Millisecond, Workers: 2})
	g = two.groupers["encoder"]
	if start(g) {
		t.Error("two slots, no group measured: the batch runs its own groups")
	}
	g.pol.Cost.Observe(4, 64, 64, 2*selfRunBelow)
	if start(g) {
		t.Error("two slots, groups measured long: the batch runs its own groups")
	}
	for range 64 { // the mean comes down to short runs
		g.pol.Cost.Observe(4, 64, 64, selfRunBelow/10)
	}
	if run, _ := g.pol.Cost.ExpectedRun(); run >= selfRunBelow {
		t.Fatalf("expected run %v after short runs", run)
	}
	if !start(g) {
		t.Error("two slots, groups measured short: the batch hands them to the runners")
	}
}

// undoSelfRun ends a self-run that startBatch began and no batch runs.
func undoSelfRun(g *grouper) {
	g.mu.Lock()
	g.selfRun--
	g.mu.Unlock()
	g.wg.Done()
}

// TestSelfRunGroupsEqualSolo: batches that run their own groups, while
// other callers send requests at the same component, answer every request
// as solo does, never run more groups at once than the worker slots, and
// run their groups on their own goroutine (counted in the stats), with
// one worker slot and with two (where groups were measured short).
func TestSelfRunGroupsEqualSolo(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) { selfRunEqualsSolo(t, workers) })
	}
}

func selfRunEqualsSolo(t *testing.T, workers int) {
	var running, most atomic.Int64
	count := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, count, Options{MaxDelay: time.Millisecond, Workers: workers}, nil)
	defer e.Close()
	// As measured where invocations are short against a thread's wake
	// (with several slots; with one, batches at an idle component always
	// run their own groups).
	e.groupers["encoder"].pol.Cost.Observe(1, 1, 1, time.Microsecond)
	solo := imageEngine(t, Options{Solo: true})
	rng := rand.New(rand.NewSource(21))
	var batches [][]Request
	for b := range 6 {
		var reqs []Request
		for i := range 40 {
			reqs = append(reqs, imageRequest(rng, fmt.Sprintf("b%d-%d", b, i), rng.Intn(4)))
		}
		batches = append(batches, reqs)
	}
	var lone []Request
	for i := range 60 {
		lone = append(lone, imageRequest(rng, fmt.Sprint("lone", i), 1+rng.Intn(3)))
	}
	check := func(got, want Response) {
		if got.Err != nil || want.Err != nil || !sameResult(got.Outputs.Get("embeddings"), want.Outputs.Get("embeddings")) {
			t.Errorf("%s: grouped %v (%v), solo %v (%v)", got.ID, got.Outputs.Get("embeddings"), got.Err, want.Outputs.Get("embeddings"), want.Err)
		}
	}
	var wg sync.WaitGroup
	for b, reqs := range batches {
		if b == 2 { // the first batches alone, the others beside a lone caller
			wg.Go(func() {
				for _, r := range lone {
					check(e.Run(context.Background(), r), solo.Run(context.Background(), r))
				}
			})
		}
		got := e.RunAll(context.Background(), reqs)
		want := solo.RunAll(context.Background(), reqs)
		for i := range reqs {
			check(got[i], want[i])
		}
	}
	wg.Wait()
	st := e.Stats().Components["encoder"]
	if st.OwnGroups == 0 {
		t.Errorf("no batch ran its own groups: %+v", st)
	}
	if most.Load() > int64(workers) {
		t.Errorf("%d groups ran at once with %d worker slots", most.Load(), workers)
	}
}

// TestEnqueueOwnQueuesTheWindow: a batch that runs its own groups queues
// its requests' items at the end of its admission, all at once, past the
// queue's limit if need be (it runs them itself at once: waiting for room
// would wait for itself), but never a request whose items no queue of
// that limit could hold (run/budget, alone). A request that failed its
// admission, or brought nothing to queue, is passed over; the batch's
// promise ends.
func TestEnqueueOwnQueuesTheWindow(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Second, Queue: 3}, nil)
	t.Cleanup(func() { e.Close() })
	g := e.groupers["encoder"]
	now := time.Now()
	item := func() []*pending { return []*pending{paddedItem(t, g, 4, now)} }
	g.mu.Lock()
	g.push(item()) // another caller's
	g.promised = 4
	g.mu.Unlock()
	failed := errors.New("its admission failed")
	tooMany := append(append(item(), item()...), append(item(), item()...)...)
	subs := []submission{{ps: item()}, {err: failed}, {}, {ps: item()}, {ps: tooMany}, {ps: item()}}
	var wg sync.WaitGroup
	g.enqueueOwn(subs, 4, &wg)
	g.mu.Lock()
	queued, promised := g.pol.Len(), g.promised
	g.pol.Drop(func(*sched.Entry) bool { return true }) // never run: their requests are this test's
	g.mu.Unlock()
	if queued != 4 || promised != 0 {
		t.Errorf("queue holds %d items, %d promised; want 4 (the other caller's and the batch's three) and 0", queued, promised)
	}
	if subs[1].err != failed || subs[2].err != nil || subs[0].err != nil || subs[3].err != nil || subs[5].err != nil {
		t.Errorf("errors of the queued or passed-over requests: %v, %v, %v, %v, %v", subs[0].err, subs[1].err, subs[2].err, subs[3].err, subs[5].err)
	}
	if ruleOf(subs[4].err) != backend.RunBudget {
		t.Errorf("the request of more items than the queue holds: %v, want run/budget", subs[4].err)
	}
}
