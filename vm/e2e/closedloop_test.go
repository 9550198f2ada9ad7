package e2e

import (
	"context"
	"runtime"
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
//
// The test runs on one Go processor, where every caller the runner
// answers waits behind it: the interleaving is then the scheduler's, not
// the machine's. On two processors the outcome depends on how the
// callers happen to be placed and paced, and a loaded machine can starve
// them into running one at a time, as it should then; on one processor a
// runner that yields groups nearly every request and one that does not
// groups almost none, whatever else the machine runs. Under the race
// detector the run groups as well and is judged too, but the detector's
// own scheduling hides a missing yield: the plain run is the one that
// catches it.
func TestClosedLoopCallersGroup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
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
	alone := st.GroupSizes[1]
	if mean < callers/2 || float64(alone) > float64(st.Requests)/16 {
		t.Errorf("%d callers in a closed loop: %d invocations for %d requests (%.1f each, %d alone; sizes %v), want %d or more each on average and at most a sixteenth alone",
			callers, st.Invocations, st.Requests, mean, alone, st.GroupSizes, callers/2)
	}
}
