package vm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

// countingObserver counts what an engine tells its observer.
type countingObserver struct {
	mu                          sync.Mutex
	waits, invocations, members int64
	footprint                   int64
}

func (o *countingObserver) QueueWait(string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waits++
}

func (o *countingObserver) Invoked(_ string, requests int, footprint, real int64, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.invocations++
	o.members += int64(requests)
	if footprint < real {
		o.footprint = -1 << 40 // a footprint below the real elements is wrong
	}
	o.footprint += footprint
}

// TestObserver: the observer hears of every invocation and its requests,
// as Stats counts them, and of a queue wait per grouped item.
func TestObserver(t *testing.T) {
	obs := &countingObserver{}
	e := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond, Observer: obs})
	rng := rand.New(rand.NewSource(3))
	var reqs []Request
	for i := range 32 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint("r", i), 1+rng.Intn(3)))
	}
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	s := e.Stats().Components["encoder"]
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.invocations != s.Invocations || obs.members != s.Requests || obs.waits != s.Requests {
		t.Errorf("observer heard %d invocations of %d requests and %d waits; stats count %d invocations of %d requests",
			obs.invocations, obs.members, obs.waits, s.Invocations, s.Requests)
	}
	if obs.footprint <= 0 {
		t.Errorf("observed footprint %d: want the groups' assembled elements", obs.footprint)
	}
}

// waitsSeen records the queue waits an Observer is told.
type waitsSeen []time.Duration

func (w *waitsSeen) QueueWait(_ string, d time.Duration)              { *w = append(*w, d) }
func (w *waitsSeen) Invoked(string, int, int64, int64, time.Duration) {}

// TestQueueWaitNeverNegative: an item queued after the time its group was
// formed at (it joined as the group formed, its clock read later) is
// recorded as having waited nothing, not a negative wait that a server's
// histogram would sum.
func TestQueueWaitNeverNegative(t *testing.T) {
	var seen waitsSeen
	c := &counter{name: "c", obs: &seen}
	now := time.Now()
	early, late := &pending{}, &pending{}
	early.e.Queued, late.e.Queued = now.Add(-time.Millisecond), now.Add(time.Millisecond)
	c.waited(now, []*pending{early, late})
	if len(seen) != 2 || seen[0] != time.Millisecond || seen[1] != 0 {
		t.Errorf("waits told %v, want [1ms 0s]", seen)
	}
	if slices.Min(c.wait.ring) < 0 {
		t.Errorf("waits kept %v", c.wait.ring)
	}
}
