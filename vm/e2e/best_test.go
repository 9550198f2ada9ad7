package e2e

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ort"
)

// BenchmarkBest sets a workload served as a server meets it, at the
// defaults a user runs, against the best strategy a person could
// assemble by hand on this machine, each measured in turn with the others
// (turns):
//
//	served        callersBest callers sending the document through Run on
//	              an engine whose execution is planned as genaic serve
//	              plans it (engine.PlanExecution with the document)
//	batched P×T   the document as the budget-sized FIFO batches of the
//	              ideal (BenchmarkWorkloads), on P sessions of T ONNX
//	              Runtime threads each, P·T the cores, each session taking
//	              the next batch as it frees up
//	single P×T    the same with one request per call
//
// for P = 1, 2, 4, ... and the cores. The fastest strategy is the
// reference: it reports served/best, the items per second of each way,
// and the planned slots and threads.
//
//	go test ./vm/e2e -run '^$' -bench Best -benchtime 10x -count 3
func BenchmarkBest(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { benchBest(b, w) })
	}
}

// callersBest is how many callers serve a workload: genaic bench's
// default concurrency.
const callersBest = 64

// strategy is one hand-assembled way of running a document: its calls'
// inputs on slots sessions, each taking the next call as it frees up.
type strategy struct {
	name     string
	sessions []backend.Session
	inputs   []map[string]*backend.Tensor
	output   string
}

// run makes every call of the strategy once.
func (s strategy) run(b *testing.B) {
	var next atomic.Int64
	var wg sync.WaitGroup
	outs := []string{s.output}
	for _, sess := range s.sessions {
		wg.Go(func() {
			for k := next.Add(1) - 1; k < int64(len(s.inputs)); k = next.Add(1) - 1 {
				if _, err := sess.Run(context.Background(), s.inputs[k], outs); err != nil {
					b.Errorf("%s: %v", s.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchBest(b *testing.B, w workload) {
	s := newBench(b, w)
	fx, reqs := s.fx, s.reqs
	var items int64
	for _, r := range reqs {
		items += w.items(r)
	}
	single := make([]map[string]*backend.Tensor, len(reqs))
	for i, r := range reqs {
		single[i] = w.assemble([]vm.Request{r})
	}
	cores := runtime.NumCPU()
	var ways []func()
	var names []string
	for p := cores; p >= 1; p /= 2 {
		t := cores / p
		be := backendWith(b, ort.Options{IntraOpThreads: t, InterOpThreads: 1})
		sessions := make([]backend.Session, p)
		for i := range sessions {
			sessions[i] = session(b, fx, fx.Component, be)
		}
		for _, st := range []strategy{
			{name: fmt.Sprintf("batched-%dx%d", p, t), sessions: sessions, inputs: s.inputs, output: w.output},
			{name: fmt.Sprintf("single-%dx%d", p, t), sessions: sessions, inputs: single, output: w.output},
		} {
			names = append(names, st.name)
			ways = append(ways, func() {
				for range servedDocs {
					st.run(b)
				}
			})
		}
	}

	f, dir := fixtures.Compile(b, fx)
	x, err := engine.PlanExecution(context.Background(), f, dir, engine.Options{}, reqs, engine.PlanOptions{Cores: cores})
	if err != nil {
		b.Fatal(err)
	}
	e := vmEngine.start(b, fx, genrt.WithMaxDelay(genrt.DefaultMaxDelay), genrt.WithWorkers(x.Slots),
		genrt.WithBackendConfig(engine.Config{IntraOpThreads: x.Threads, InterOpThreads: 1}))
	mustRun(b, e, reqs)
	ways = append(ways, newCallers(b, callersBest, reqs).serve(e))
	names = append(names, "served")
	for _, way := range ways {
		way() // warm up
	}
	times := interleaved(b, ways)
	rate := func(i int) float64 { return float64(items*servedDocs) * float64(b.N) / times[i].Seconds() }
	best := 0.0
	for i, name := range names {
		b.ReportMetric(rate(i), name+"-items/s")
		if name != "served" {
			best = max(best, rate(i))
		}
	}
	b.ReportMetric(rate(len(ways)-1)/best, "served/best")
	b.ReportMetric(float64(x.Slots), "planned-slots")
	b.ReportMetric(float64(x.Threads), "planned-threads")
	b.ReportMetric(0, "ns/op") // the sum of the ways means nothing
}
