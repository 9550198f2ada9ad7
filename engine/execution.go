package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// A machine's cores can be spent on one wide run at a time (ONNX Runtime's
// intra-op threads across every core) or on many narrow runs at once (a
// component's groups on several slots, each run on one thread), and which
// serves more depends on the model and the requests: a small text encoder
// served 2.1 times as many requests on two cores as two one-thread slots
// as it did on one slot of ONNX Runtime's default threads, where a tiny
// image encoder, whose groups cost more in Go than in the graph, did
// better on one slot. So the choice is measured, on the machine and with
// the package's own requests, rather than fixed.

// PlanOptions say how PlanExecution measures.
type PlanOptions struct {
	// Cores is how many cores to divide (the process's CPUs when 0).
	Cores int
	// Clients is how many callers send the requests at once (a closed
	// loop; 8 per core, at least 64, when 0): enough to keep every slot
	// of the widest candidate busy with full groups.
	Clients int
	// Round is the least each round of a candidate runs (100 ms when 0;
	// longer where the requests are slow, see PlanExecution), and Rounds
	// how many rounds each candidate runs, the candidates taking turns (3
	// when 0): the median round decides.
	Round  time.Duration
	Rounds int
}

// maxPlanRound bounds a round of the slowest workloads.
const maxPlanRound = time.Second

// plannedMargin is how close to the best a candidate with fewer slots
// (wider runs: lower latency, one session's memory) may stay and still be
// chosen: a difference this small is within a shared machine's noise.
const plannedMargin = 0.97

// PlanExecution measures, on this machine, each way of dividing its cores
// between the slots that run groups at once and the threads each run
// computes on: for threads 1, 2, 4, ... up to the cores (and the cores
// themselves), that many threads per run on cores/threads slots. An engine
// is opened per way with opts, the requests are served by a closed loop of
// callers in rounds taken in turn, and the way whose median round served
// the most requests per second wins, the one with fewer slots where two
// are within plannedMargin. The returned Execution says the choice and
// what each way served; Apply puts it into options.
//
// A workflow that invokes no ONNX component has no threads to divide: its
// execution is one slot, planned without measuring anything. Planning
// needs requests that succeed: a way that fails a request is an error.
func PlanExecution(ctx context.Context, f *plan.File, pkgDir string, opts Options, reqs []vm.Request, po PlanOptions) (*vm.Execution, error) {
	po = po.withDefaults()
	x := &vm.Execution{Slots: 1, Threads: 0, Cores: po.Cores, Planned: true}
	if f.IR == nil || !slices.Contains(Invoked(f.IR), ir.ImplONNX) {
		return x, nil
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("planning the execution needs requests to measure with")
	}
	// A queue cut short (a test of back-pressure) would refuse what the
	// planning loop sends: it measures with the default queue at least.
	opts.Queue = max(opts.Queue, 1024)
	cands := candidates(po.Cores)
	engines := make([]*vm.Engine, len(cands))
	defer func() {
		for _, e := range engines {
			if e != nil {
				e.Close()
			}
		}
	}()
	// A round lasts po.Round, or long enough for every client to be
	// answered about twice at the slowest warm rate: a round of a slow
	// workload that ends while most of its requests are in flight says
	// more about where they were than how fast they go.
	round := po.Round
	for i, c := range cands {
		e, err := Open(f, pkgDir, Apply(opts, &vm.Execution{Slots: c.Slots, Threads: c.Threads}))
		if err != nil {
			return nil, err
		}
		engines[i] = e
		rps, err := serveFor(ctx, e, reqs, po.Clients, 0) // warm: sessions, pools
		if err != nil {
			return nil, err
		}
		round = max(round, min(time.Duration(2*float64(po.Clients)/rps*float64(time.Second)), maxPlanRound))
	}
	rates := make([][]float64, len(cands))
	for range po.Rounds {
		for i, e := range engines {
			rps, err := serveFor(ctx, e, reqs, po.Clients, round)
			if err != nil {
				return nil, err
			}
			rates[i] = append(rates[i], rps)
		}
	}
	for i := range cands {
		slices.Sort(rates[i])
		cands[i].RequestsPerSecond = rates[i][len(rates[i])/2]
	}
	c := cands[choose(cands)]
	x.Slots, x.Threads, x.Tried = c.Slots, c.Threads, cands
	return x, nil
}

// choose is the candidate (of cands, fewest slots first) that served the
// most, or the first that served within plannedMargin of it.
func choose(cands []candidate) int {
	best := 0.0
	for _, c := range cands {
		best = max(best, c.RequestsPerSecond)
	}
	return slices.IndexFunc(cands, func(c candidate) bool { return c.RequestsPerSecond >= plannedMargin*best })
}

// Apply returns opts running as x says: its slots as the workers of every
// grouped component, its threads as ONNX Runtime's intra-op threads, and
// x reported in the engine's stats.
func Apply(opts Options, x *vm.Execution) Options {
	opts.Workers, opts.Config.IntraOpThreads, opts.Execution = x.Slots, x.Threads, x
	return opts
}

func (po PlanOptions) withDefaults() PlanOptions {
	if po.Cores <= 0 {
		po.Cores = runtime.NumCPU()
	}
	if po.Clients <= 0 {
		po.Clients = max(64, 8*po.Cores)
	}
	if po.Round <= 0 {
		po.Round = 100 * time.Millisecond
	}
	if po.Rounds <= 0 {
		po.Rounds = 3
	}
	return po
}

// candidates are the ways of dividing cores: threads 1, 2, 4, ... and the
// cores themselves, each on cores/threads slots, fewest slots first.
func candidates(cores int) []candidate {
	var out []candidate
	for t := 1; t <= cores; t *= 2 {
		out = append(out, candidate{Slots: cores / t, Threads: t})
	}
	if last := out[len(out)-1]; last.Threads != cores {
		out = append(out, candidate{Slots: 1, Threads: cores})
	}
	slices.Reverse(out)
	return out
}

type candidate = vm.Candidate

// serveFor serves reqs on e from a closed loop of clients, each sending
// its next request (the document's, in turn) as soon as its last is
// answered: every request once, and again while d has not passed. It
// returns the requests served per second; a request that fails is an
// error.
func serveFor(ctx context.Context, e *vm.Engine, reqs []vm.Request, clients int, d time.Duration) (float64, error) {
	var next, served atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(reqs)) || time.Since(start) < d; i = next.Add(1) - 1 {
				if ctx.Err() != nil || failed.Load() != nil {
					return
				}
				r := e.Run(ctx, reqs[i%int64(len(reqs))])
				r.Release()
				if r.Err != nil {
					err := fmt.Errorf("planning the execution: request %s failed: %w", r.ID, r.Err)
					failed.CompareAndSwap(nil, &err)
					return
				}
				served.Add(1)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return 0, *err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(served.Load()) / time.Since(start).Seconds(), nil
}
