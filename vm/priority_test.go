package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// TestUrgentRequestsRunFirst: while the component's one slot is busy,
// requests of several priorities queue; once it frees up they run most
// urgent first, and in the order they came within a priority. Each image
// is too large to share an invocation, so every group is one request.
func TestUrgentRequestsRunFirst(t *testing.T) {
	gated, entered, proceed := heldEncoder()
	e := engineWith(t, gated, Options{Workers: 1}, nil)
	defer e.Close()
	done := make(chan Response, 8)
	run := func(level int, id string, patches int64) {
		ctx := context.Background()
		if level != 0 {
			ctx = WithPriority(ctx, level)
		}
		go func() { done <- e.Run(ctx, paddedRequest(id, patches)) }()
	}
	run(0, "busy", 2000) // holds the slot in the backend
	<-entered
	for i, r := range []struct {
		level   int
		id      string
		patches int64
	}{{2, "low1", 2100}, {2, "low2", 2200}, {0, "default", 2300}, {-1, "urgent", 2400}, {2, "low3", 2500}} {
		run(r.level, r.id, r.patches)
		waitQueued(t, e.groupers["encoder"], i+1)
	}
	var order []string
	for range 6 {
		proceed <- struct{}{}
		r := <-done
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
		order = append(order, r.ID)
		if len(order) < 6 {
			<-entered
		}
	}
	if want := []string{"busy", "urgent", "default", "low1", "low2", "low3"}; !slices.Equal(order, want) {
		t.Errorf("ran %v, want %v", order, want)
	}
}

// TestUrgentRequestDisplacesFromAFullQueue: a request that finds its
// component's queue full of less urgent requests takes the room of the
// newest of them, which fails run/queue-full; one as urgent as those
// waiting is refused run/queue-full itself; the others run.
func TestUrgentRequestDisplacesFromAFullQueue(t *testing.T) {
	gated, entered, proceed := heldEncoder()
	e := engineWith(t, gated, Options{Workers: 1, Queue: 2}, nil)
	defer e.Close()
	done := make(chan Response, 8)
	run := func(level int, id string) {
		go func() { done <- e.Run(WithPriority(context.Background(), level), paddedRequest(id, 3000)) }()
	}
	run(0, "busy") // holds the slot in the backend
	<-entered
	for i, id := range []string{"bulk1", "bulk2"} {
		run(1, id)
		waitQueued(t, e.groupers["encoder"], i+1)
	}
	answered := map[string]error{}
	answer := func() {
		r := <-done
		answered[r.ID] = r.Err
	}
	run(1, "bulk3") // as urgent as the queue: refused
	answer()
	run(0, "urgent") // displaces bulk2, the newest
	answer()
	for _, id := range []string{"bulk3", "bulk2"} {
		var qf *QueueFullError
		if re := AsRunError(answered[id]); re == nil || re.Rule != "run/queue-full" || !errors.As(answered[id], &qf) || qf.Displaced != (id == "bulk2") {
			t.Errorf("%s: %v, want run/queue-full (displaced: %v)", id, answered[id], id == "bulk2")
		}
	}
	if n := e.Stats().Components["encoder"].Displaced; n != 1 {
		t.Errorf("%d items counted displaced, want 1", n)
	}
	close(proceed)
	for range 3 {
		answer()
	}
	for _, id := range []string{"busy", "urgent", "bulk1"} {
		if err, ok := answered[id]; !ok || err != nil {
			t.Errorf("%s: answered %v, %v; want its result", id, ok, err)
		}
	}
}

// TestPriorityOfContext: a context's priority is WithPriority's, the
// innermost where contexts nest, and 0 without one.
func TestPriorityOfContext(t *testing.T) {
	ctx := context.Background()
	if got := PriorityOf(ctx); got != 0 {
		t.Errorf("no priority: %d, want 0", got)
	}
	inner, cancel := context.WithCancel(WithPriority(WithPriority(ctx, 3), -2))
	defer cancel()
	if got := PriorityOf(inner); got != -2 {
		t.Errorf("nested: %d, want -2", got)
	}
}

// BenchmarkPriority measures what priority does for a few urgent callers
// among many bulk ones, all looping on one engine whose encoder takes a
// while per group (busy, as a model computes): the urgent callers'
// latencies (median and 99th percentile) and the bulk callers' median,
// with the urgent callers at the bulk callers' priority (same) and more
// urgent (urgent).
//
//	go test ./vm -run '^$' -bench Priority -benchtime 2000x
func BenchmarkPriority(b *testing.B) {
	const bulk, urgentCallers = 32, 2
	work := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
		return maskedMean(ctx, in)
	}
	rng := rand.New(rand.NewSource(7))
	reqs := make([]Request, 64)
	for i := range reqs {
		reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3))
	}
	for _, way := range []string{"same", "urgent"} {
		b.Run(way, func(b *testing.B) {
			e := engineWith(b, work, Options{Workers: 1, MaxDelay: time.Millisecond}, nil)
			defer e.Close()
			level := 0
			if way == "urgent" {
				level = -1
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			lat := make([][]time.Duration, bulk+urgentCallers)
			var all sync.WaitGroup
			b.ResetTimer()
			for c := range bulk + urgentCallers {
				ctx := context.Background()
				if c >= bulk {
					ctx = WithPriority(ctx, level)
				}
				all.Go(func() {
					for i := c; left.Add(-1) >= 0; i += bulk + urgentCallers {
						t := time.Now()
						if r := e.Run(ctx, reqs[i%len(reqs)]); r.Err != nil {
							b.Error(r.Err)
						}
						lat[c] = append(lat[c], time.Since(t))
					}
				})
			}
			all.Wait()
			quantile := func(ls [][]time.Duration, q float64) float64 {
				var all []time.Duration
				for _, l := range ls {
					all = append(all, l...)
				}
				slices.Sort(all)
				if len(all) == 0 {
					return 0
				}
				return float64(all[int(q*float64(len(all)-1))].Microseconds())
			}
			b.ReportMetric(quantile(lat[bulk:], 0.5), "urgent-p50-us")
			b.ReportMetric(quantile(lat[bulk:], 0.99), "urgent-p99-us")
			b.ReportMetric(quantile(lat[:bulk], 0.5), "bulk-p50-us")
		})
	}
}

// TestDisplacedChunkFailsItsRequest: a request split across invocations
// whose last chunk a more urgent request displaces from the full queue
// fails at once, not once its earlier chunks have run, and none of its
// chunks runs.
func TestDisplacedChunkFailsItsRequest(t *testing.T) {
	gated, entered, proceed := heldEncoder()
	var calls atomic.Int32
	counted := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		calls.Add(1)
		return gated(ctx, in)
	}
	e := engineWith(t, counted, Options{Workers: 1, Queue: 3}, nil)
	var once sync.Once
	release := func() { once.Do(func() { close(proceed) }) }
	defer e.Close()
	defer release()
	done := make(chan Response, 3)
	run := func(level int, r Request) {
		go func() { done <- e.Run(WithPriority(context.Background(), level), r) }()
	}
	run(0, paddedRequest("busy", 3000)) // holds the slot in the backend
	<-entered
	run(1, imageRequest(rand.New(rand.NewSource(5)), "big", 37)) // chunks of 16, 16 and 5 images
	waitQueued(t, e.groupers["encoder"], 3)
	run(0, paddedRequest("urgent", 3100)) // displaces the big request's last chunk
	var big Response
	select {
	case big = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the request whose chunk was displaced still waits while the encoder is held")
	}
	var qf *QueueFullError
	if big.ID != "big" || !errors.As(big.Err, &qf) || !qf.Displaced {
		t.Fatalf("first answer %s: %v; want the big request displaced", big.ID, big.Err)
	}
	release()
	for range 2 {
		if r := <-done; r.Err != nil {
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
	e.Close()
	if n := calls.Load(); n != 2 {
		t.Errorf("the encoder ran %d times; want 2 (busy and urgent), none of the displaced request's chunks", n)
	}
}
