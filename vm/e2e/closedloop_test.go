package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/ort"
)

// TestClosedLoopCallersGroup: 16 callers that each send their next request
// as soon as the last is answered (a closed loop, as a server's clients
// do) meet in groups on the short-text encoder. The callers a runner
// answers are runnable behind it; unless it yields to them before it
// forms the next group, the first one's request readies it ahead of the
// others and runs alone (before, 163 of 175 groups held one request).
func TestClosedLoopCallersGroup(t *testing.T) {
	w := workloads[0]
	fx := fixtures.Lookup(w.pkg)
	reqs := readDocument(t, w.pkg, w.doc)
	be := backendWith(t, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	e := vmEngine.start(t, fx, genrt.WithBackend(ir.ImplONNX, be), genrt.WithMaxDelay(genrt.DefaultMaxDelay), genrt.WithWorkers(1))
	const callers, rounds = 16, 6
	// Rounds of the whole document, as genaic bench runs them: each round's
	// callers take the next request until none is left.
	for range rounds {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
					if r := e.Run(context.Background(), reqs[i]); r.Err != nil {
						t.Error(r.Err)
					}
				}
			})
		}
		wg.Wait()
	}
	st := e.Stats().Components[fx.Component]
	mean := float64(st.Requests) / float64(st.Invocations)
	if raceDetector {
		// Under the race detector the callers' pace is the detector's:
		// the grouping is judged by the plain run of the tests.
		t.Logf("race detector: %.1f requests a group, not judged", mean)
		return
	}
	if mean < callers/2 {
		t.Errorf("%d callers in a closed loop: %d invocations for %d requests (%.1f each; sizes %v), want %d or more each on average",
			callers, st.Invocations, st.Requests, mean, st.GroupSizes, callers/2)
	}
}
