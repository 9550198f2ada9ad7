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
	e.groupers["encoder"].s.Cost().Observe(1, 1, 1, time.Microsecond)
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
// its requests' items at the end of its admission, all at once, but never
// a request whose items no queue of that limit could hold (run/budget, for
// that request alone; sched's TestEnqueueBurst has the rest). A request
// that failed its admission, or brought nothing to queue, is passed over;
// the wait group counts the items queued.
func TestEnqueueOwnQueuesTheWindow(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Second, Queue: 4}, nil)
	t.Cleanup(func() { e.Close() })
	g := e.groupers["encoder"]
	now := time.Now()
	item := func() []*pending { return []*pending{paddedItem(t, g, 4, now)} }
	g.s.Promise(5) // one more than the batch's: the runner forms nothing meanwhile
	failed := errors.New("its admission failed")
	tooMany := append(append(item(), item()...), append(item(), item()...)...)
	tooMany = append(tooMany, item()...)
	subs := []submission{{ps: item()}, {err: failed}, {}, {ps: item()}, {ps: tooMany}, {ps: item()}}
	var wg sync.WaitGroup
	g.enqueueOwn(subs, 4, &wg)
	c := g.s.Counts()
	g.s.Abandon(1, false, func(*sched.Entry) bool { return true }) // never run: their requests are this test's
	for range 3 {
		wg.Done() // panics below zero: the group counted more than the queued items
	}
	wg.Wait()
	if c.Waiting != 3 || c.Promised != 1 {
		t.Errorf("queue holds %d items, %d promised; want the batch's three and the other one", c.Waiting, c.Promised)
	}
	if subs[1].err != failed || subs[2].err != nil || subs[0].err != nil || subs[3].err != nil || subs[5].err != nil {
		t.Errorf("errors of the queued or passed-over requests: %v, %v, %v, %v, %v", subs[0].err, subs[1].err, subs[2].err, subs[3].err, subs[5].err)
	}
	if ruleOf(subs[4].err) != backend.RunBudget {
		t.Errorf("the request of more items than the queue holds: %v, want run/budget", subs[4].err)
	}
}
