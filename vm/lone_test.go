package vm

import (
	"context"
	"errors"
	"math/rand"
	"testing"
	"time"
)

// waitQueued waits until n items wait in g's queue, failing the test
// after a minute (a hang guard).
func waitQueued(t *testing.T, g *grouper, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		q := g.s.Counts().Waiting
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d items queued, want %d", q, n)
		}
	}
}

// TestCancelledRequestKeepsItsEntry: a request run alone that is cancelled
// while its group runs leaves its pooled entry (item and answer channel)
// to that group; the next request gets an entry of its own, and equals
// solo. Reusing the cancelled one would admit the next request's item into
// the item the running group still splits by, and hand it that group's
// answer.
func TestCancelledRequestKeepsItsEntry(t *testing.T) {
	gated, entered, proceed := heldEncoder()
	e := engineWith(t, gated, Options{Workers: 1}, nil)
	defer e.Close()
	solo := imageEngine(t, Options{Solo: true})
	defer solo.Close()
	queued := func(n int) { waitQueued(t, e.groupers["encoder"], n) }
	rng := rand.New(rand.NewSource(5))
	reqA, reqB, reqC := imageRequest(rng, "a", 3), imageRequest(rng, "b", 2), imageRequest(rng, "c", 1)
	done := make(chan Response, 3)
	run := func(ctx context.Context, r Request) { go func() { done <- e.Run(ctx, r) }() }

	run(context.Background(), reqB) // holds the worker slot in the backend
	<-entered
	ctxA, cancelA := context.WithCancel(context.Background())
	run(ctxA, reqA) // queued behind b
	queued(1)
	proceed <- struct{}{} // b's group ends; the runner takes a's
	if r := <-done; r.Err != nil || r.ID != "b" {
		t.Fatalf("b: %s %v", r.ID, r.Err)
	}
	<-entered
	cancelA() // a stops waiting while its group runs
	if r := <-done; r.ID != "a" || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("a: %s %v, want its cancellation", r.ID, r.Err)
	}
	run(context.Background(), reqC) // queued behind a's group
	queued(1)
	close(proceed)
	r := <-done
	want := solo.Run(context.Background(), reqC)
	if r.ID != "c" || r.Err != nil || !sameResult(r.Outputs.Get("embeddings"), want.Outputs.Get("embeddings")) {
		t.Fatalf("c: %s %v %v, solo %v", r.ID, r.Err, r.Outputs.Get("embeddings"), want.Outputs.Get("embeddings"))
	}
}
