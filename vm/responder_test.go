package vm

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestResponderAnswersServedCallers: callers that outnumber a group (a
// server's) are answered through the responder, each with its solo result,
// and none is lost when the engine closes; callers that fit in one group
// are answered by the runner, which yields to them so that their next
// requests join the next group.
func TestResponderAnswersServedCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	before := runtime.NumGoroutine()
	rng := rand.New(rand.NewSource(31))
	reqs := make([]Request, 96)
	for i := range reqs {
		reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3))
	}
	solo := imageEngine(t, Options{Solo: true})
	want := solo.RunAll(context.Background(), reqs)
	for _, c := range []struct {
		callers, workers int
		handed           bool // whether groups must be handed off
	}{
		// Four callers bring at most 12 images, never the 16 that fill a
		// group: the runner must wait for their next requests.
		{callers: 4, workers: 1, handed: false},
		{callers: 64, workers: 1, handed: true},
		// Two runners hand their answers to one responder.
		{callers: 64, workers: 2, handed: true},
	} {
		t.Run(fmt.Sprintf("callers=%d/workers=%d", c.callers, c.workers), func(t *testing.T) {
			e := engineWith(t, slowEncoder(200*time.Microsecond), Options{MaxDelay: time.Millisecond, Workers: c.workers}, nil)
			got := make([]Response, len(reqs))
			var wg sync.WaitGroup
			for k := range c.callers {
				wg.Go(func() {
					for i := k; i < len(reqs); i += c.callers {
						got[i] = e.Run(context.Background(), reqs[i])
					}
				})
			}
			wg.Wait()
			for i := range reqs {
				if got[i].Err != nil {
					t.Fatalf("%s: %v", reqs[i].ID, got[i].Err)
				}
				if !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
					t.Errorf("%s differs from solo", reqs[i].ID)
				}
			}
			st := e.Stats().Components["encoder"]
			t.Logf("%d callers: %d of %d groups handed off", c.callers, st.HandedOff, st.Invocations)
			if handed := st.HandedOff > 0; handed != c.handed {
				t.Errorf("%d callers: %d groups handed off, want handed off: %v", c.callers, st.HandedOff, c.handed)
			}
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

// TestResponderLosesNoAnswer: answers handed to a responder that is
// answering, polling, parked or stopping all reach their callers. The
// pauses straddle the time it polls before it parks, so that answers come
// as it stops polling too (an answer handed over then, if neither seen nor
// nudged, would wait forever).
func TestResponderLosesNoAnswer(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	r := newResponder()
	rng := rand.New(rand.NewSource(5))
	for i := range 3000 {
		p := &pending{done: make(chan share, 1)}
		r.hand(p, share{err: fmt.Errorf("answer %d", i)})
		r.nudge()
		select {
		case s := <-p.done:
			if want := fmt.Sprintf("answer %d", i); s.err == nil || s.err.Error() != want {
				t.Fatalf("got %v, want %s", s.err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("answer %d was never sent", i)
		}
		if i%3 == 0 {
			spin(responderSpin - 10*time.Microsecond + time.Duration(rng.Intn(20))*time.Microsecond)
		}
	}
	// Answers handed over without a nudge, to a responder that has
	// parked, are sent when it stops.
	time.Sleep(10 * responderSpin)
	ps := make([]*pending, 10)
	for i := range ps {
		ps[i] = &pending{done: make(chan share, 1)}
		r.hand(ps[i], share{})
	}
	r.close()
	for i, p := range ps {
		select {
		case <-p.done:
		default:
			t.Errorf("answer %d was not sent before the responder stopped", i)
		}
	}
}

// spin waits for d without parking, as a runner busy with an invocation
// would keep its processor.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// TestRespondersPollWithinTheirPlaces: however many components serve at
// once, at most half the processors (one of two) have a responder
// polling, and every answer still arrives.
func TestRespondersPollWithinTheirPlaces(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rs := []*responder{newResponder(), newResponder(), newResponder()}
	var most atomic.Int32
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := pollers.Load(); n > most.Load() {
				most.Store(n)
			}
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			for i := range 2000 {
				p := &pending{done: make(chan share, 1)}
				r.hand(p, share{})
				r.nudge()
				select {
				case <-p.done:
				case <-time.After(5 * time.Second):
					t.Errorf("answer %d was never sent", i)
					return
				}
				spin(10 * time.Microsecond) // answers closer than responderSpin: they poll
			}
		})
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	for _, r := range rs {
		r.close()
	}
	t.Logf("at most %d responders polled at once", most.Load())
	if n := most.Load(); n > 1 {
		t.Errorf("%d responders polled at once on 2 processors, want at most 1", n)
	}
	if n := pollers.Load(); n != 0 {
		t.Errorf("%d pollers' places still taken once every responder stopped", n)
	}
}
