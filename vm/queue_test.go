package vm

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestRequestTooBigForTheQueueIsRefusedOnce: a request whose items split
// into more groups than the component's queue holds at once can never be
// queued; it fails run/budget, which says so (not run/queue-full, which
// tells a client to retry), whether a server's caller or a batch sends
// it. One that fits runs.
func TestRequestTooBigForTheQueueIsRefusedOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	for _, c := range []struct {
		queue, images int
		refused       bool
	}{
		{queue: 4, images: 200, refused: true}, // 13 groups of at most 16 images
		{queue: 1, images: 17, refused: true},
		{queue: 1, images: 16},
		{queue: 2, images: 17},
	} {
		e := imageEngine(t, Options{Queue: c.queue})
		req := imageRequest(rng, fmt.Sprintf("q%d-i%d", c.queue, c.images), c.images)
		for way, r := range map[string]Response{"Run": e.Run(context.Background(), req), "RunAll": e.RunAll(context.Background(), []Request{req})[0]} {
			switch {
			case !c.refused && r.Err != nil:
				t.Errorf("%s, queue %d, %d images: %v", way, c.queue, c.images, r.Err)
			case c.refused && (ruleOf(r.Err) != backend.RunBudget || !strings.Contains(r.Err.Error(), "queue")):
				t.Errorf("%s, queue %d, %d images: %v (rule %s), want run/budget naming the queue", way, c.queue, c.images, r.Err, ruleOf(r.Err))
			}
		}
	}
}

// TestBatchRequestsWaitForRoom: a batch's requests (RunAll, in lockstep
// windows, and RunBatchWith, each request on a goroutine of its own) whose
// items outnumber the queue wait for room as it drains: none is lost to
// run/queue-full, and each is answered with its solo result, whatever
// the queue's limit against the groups' size.
func TestBatchRequestsWaitForRoom(t *testing.T) {
	rng := rand.New(rand.NewSource(43))
	solo := imageEngine(t, Options{Solo: true})
	for _, c := range []struct{ queue, images, requests int }{
		{queue: 1, images: 16, requests: 60},
		{queue: 2, images: 17, requests: 60},
		{queue: 3, images: 3, requests: 200},
		{queue: 8, images: 40, requests: 60},
	} {
		reqs := make([]Request, c.requests)
		for i := range reqs {
			reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(c.images))
		}
		want := solo.RunAll(context.Background(), reqs)
		e := imageEngine(t, Options{Queue: c.queue})
		ways := map[string][]Response{
			"RunAll": e.RunAll(context.Background(), reqs),
			"RunBatchWith": e.RunBatchWith(context.Background(), reqs, BatchOptions{}, func(ctx context.Context, req Request) Response {
				return e.exec(ctx, req)
			}),
		}
		for way, got := range ways {
			for i := range reqs {
				if got[i].Err != nil {
					t.Fatalf("%s, queue %d: %s: %v", way, c.queue, reqs[i].ID, got[i].Err)
				}
				if !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
					t.Errorf("%s, queue %d: %s differs from solo", way, c.queue, reqs[i].ID)
				}
			}
		}
	}
}
