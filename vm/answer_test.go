package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/sched"
)

// TestServedCallersAnsweredThroughTheirGroup: callers that outnumber a
// group (a server's), on one runner and on two, are each answered with
// their solo result, the others' answers given by each group's leading
// caller; and callers that cancel at random moments, a group's leader
// among them, strand none of the others: every caller that does not
// cancel is answered with its solo result, and none waits forever.
func TestServedCallersAnsweredThroughTheirGroup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	before := runtime.NumGoroutine()
	rng := rand.New(rand.NewSource(31))
	reqs := make([]Request, 192)
	for i := range reqs {
		reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3))
	}
	solo := imageEngine(t, Options{Solo: true})
	want := solo.RunAll(context.Background(), reqs)
	for _, c := range []struct {
		callers, workers int
		cancel           bool // whether every third request is cancelled
	}{
		{callers: 4, workers: 1},
		{callers: 64, workers: 1},
		{callers: 64, workers: 2},
		{callers: 64, workers: 1, cancel: true},
		{callers: 64, workers: 2, cancel: true},
	} {
		t.Run(fmt.Sprintf("callers=%d/workers=%d/cancel=%v", c.callers, c.workers, c.cancel), func(t *testing.T) {
			e := engineWith(t, slowEncoder(200*time.Microsecond), Options{MaxDelay: time.Millisecond, Workers: c.workers}, nil)
			got := make([]Response, len(reqs))
			cancelled := make([]bool, len(reqs))
			done := make(chan struct{})
			var wg sync.WaitGroup
			for k := range c.callers {
				wg.Go(func() {
					crng := rand.New(rand.NewSource(int64(k)))
					for i := k; i < len(reqs); i += c.callers {
						ctx := context.Background()
						if c.cancel && i%3 == 0 {
							var stop context.CancelFunc
							ctx, stop = context.WithTimeout(ctx, time.Duration(crng.Intn(600))*time.Microsecond)
							defer stop()
							cancelled[i] = true
						}
						got[i] = e.Run(ctx, reqs[i])
					}
				})
			}
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("callers still waiting for their answers after a minute")
			}
			gaveUp := 0
			for i := range reqs {
				if cancelled[i] && errors.Is(got[i].Err, context.DeadlineExceeded) {
					gaveUp++
					continue
				}
				if got[i].Err != nil {
					t.Fatalf("%s: %v", reqs[i].ID, got[i].Err)
				}
				if !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
					t.Errorf("%s differs from solo", reqs[i].ID)
				}
			}
			st := e.Stats().Components["encoder"]
			t.Logf("%d requests in %d groups, %d cancelled in time", len(reqs), st.Invocations, gaveUp)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := solo.Close(); err != nil {
		t.Fatal(err)
	}
	waitForGoroutines(t, before)
}

// TestLeaderCancelledAsItIsAnsweredGivesTheOthers: a caller made its
// group's leader whose request is cancelled as the answer arrives (its
// wait sees both ready, and picks either) still gives the other callers
// their answers before it returns.
func TestLeaderCancelledAsItIsAnsweredGivesTheOthers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 {
		lead := &pending{e: sched.Entry{Ctx: ctx}, done: make(chan share, 1), leads: true}
		others := []*pending{{e: sched.Entry{Ctx: ctx}, done: make(chan share, 1)}, {e: sched.Entry{Ctx: ctx}, done: make(chan share, 1)}}
		batch := append([]*pending{lead}, others...)
		answerGroup(batch, shareSlab{}, fmt.Errorf("answer %d", i))
		if _, received := lead.waitShare(); !received {
			t.Fatalf("round %d: the leader returned without its answer", i)
		}
		for k, p := range others {
			select {
			case s := <-p.done:
				if s.err == nil || s.err.Error() != fmt.Sprintf("answer %d", i) {
					t.Fatalf("round %d: caller %d got %v", i, k, s.err)
				}
			default:
				t.Fatalf("round %d: caller %d was not answered by its leader", i, k)
			}
		}
	}
}
