package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/backend"
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
	// Cores is how many cores to divide (CPUs when 0).
	Cores int
	// Clients is the most callers that send the requests at once (a
	// closed loop; 8 per core, at least 64, when 0): enough to keep every
	// slot of the widest candidate busy with full groups (fewer where
	// requests are slow, see PlanExecution).
	Clients int
	// Round is how long each round of a candidate sends requests (100 ms
	// when 0; the answers in flight then are waited for and counted), and
	// Rounds how many rounds each candidate runs, the candidates taking
	// turns (3 when 0, fewer once the rounds have taken planWayBudget per
	// way): the median round decides.
	Round  time.Duration
	Rounds int
}

// planWayBudget is how long the timed rounds of a plan may take, per way,
// before no way starts another (every way runs one); planDrain is about
// how long the answers still in flight at a round's end may take.
const (
	planWayBudget = 1500 * time.Millisecond
	planDrain     = time.Second
)

// planTogetherBytes is the most model bytes a package may hold for its
// ways to be measured side by side, a session of each open at once (a
// variable, so that a test can take the other branch).
var planTogetherBytes int64 = 256 << 20

// artifactBytes is the size of the package's ONNX models, as their files
// say (a file that cannot be read counts nothing: Open will say why).
func artifactBytes(f *plan.File, pkgDir string) int64 {
	var n int64
	for _, c := range f.IR.Components {
		if c.Impl != ir.ImplONNX || c.Artifact == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(pkgDir, c.Artifact)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// groupedHandicap is what the score of a way that groups is multiplied by
// before the ways are compared: grouping is kept only where it serves
// clearly more than the same division with every grouped component apart.
// A group also costs its requests the wait for it to fill, which requests
// per second do not show, and where the two serve within this of each
// other (a recognizer whose cost per line grows with its batch) their
// order changes from planning to planning on a shared machine.
const groupedHandicap = 0.9

// plannedMargin is how close to the best a candidate with fewer slots
// (wider runs: lower latency, one session's memory) may stay and still be
// chosen: a difference this small is within a shared machine's noise.
const plannedMargin = 0.97

// PlanExecution measures, on this machine, each way of dividing its cores
// between the slots that run groups at once and the threads each run
// computes on: for threads 1, 2, 4, ... up to the cores (and the cores
// themselves), that many threads per run on cores/threads slots, each
// with the grouped components run one request per invocation and grouped
// (withApart). An engine is opened per way with opts, the requests are
// served by a closed loop of callers in rounds taken in turn, at two
// loads (all the callers, and lightShare of them), and the way that comes
// closest at both to the most any way served there wins (choose), the one
// with fewer slots where two are within plannedMargin, a way that groups
// only by a clear margin. Where the package's models are large, the ways
// are measured one after another, each engine closed before the next
// opens.
// The returned Execution says the choice and what each way served; Apply
// puts it into options.
//
// A workflow that invokes no ONNX component has no threads to divide: its
// execution is one slot, planned without measuring anything. Planning
// needs requests that succeed: a way that fails a request is an error.
func PlanExecution(ctx context.Context, f *plan.File, pkgDir string, opts Options, reqs []vm.Request, po PlanOptions) (*vm.Execution, error) {
	po = po.withDefaults()
	x := &vm.Execution{Slots: 1, Threads: 0, Cores: po.Cores, Planned: true}
	if !measures(f) {
		return x, nil
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("planning the execution needs requests to measure with")
	}
	opts.Queue = planningQueue(opts.Queue)
	cands := plannedWays(f, opts, po)
	// A round sends the requests from a closed loop of callers for
	// po.Round (and to the end of the pass over reqs under way: serveFor),
	// then waits for the answers still to come and counts them
	// too, over the whole time: a round cut at its end would lose the work
	// of the groups in flight, the more of it the larger a way's groups and
	// the slower its requests. Where requests are slow that wait is long
	// (a request of every caller is in flight), so the callers are as many
	// as answer in about planDrain at the rate of the first way's warm-up
	// (at least two per core, at most po.Clients); and once the rounds have
	// taken planWayBudget per way, no way starts another.
	warm := reqs[:min(len(reqs), 2*po.Clients)]
	clients := 0
	ways := make([]way, len(cands))
	defer func() {
		for _, w := range ways {
			w.close()
		}
	}()
	start := func(i int) error {
		e, err := Open(f, pkgDir, Apply(opts, &vm.Execution{Slots: cands[i].Slots, Threads: cands[i].Threads, Ungrouped: cands[i].Ungrouped}))
		if err != nil {
			return err
		}
		ways[i].e = e
		rps, err := serveFor(ctx, e, warm, po.Clients, 0)
		if err != nil {
			return err
		}
		if clients == 0 {
			clients = min(po.Clients, max(2*po.Cores, int(rps*planDrain.Seconds())))
		}
		return nil
	}
	// A server's load comes and goes: a way is measured with a few
	// callers too, where a slot that waits for its callers' next
	// requests idles unless another slot runs meanwhile.
	timed := func(i int) error {
		for load, n := range loads(clients) {
			rps, err := serveFor(ctx, ways[i].e, reqs, n, po.Round)
			if err != nil {
				return err
			}
			ways[i].rates[load] = append(ways[i].rates[load], rps)
		}
		return nil
	}
	// The ways take turns, each engine open throughout, unless the models
	// are so large that holding a session per way would crowd the memory
	// a server needs: then one way at a time, each closed before the next.
	began := time.Now()
	more := func(round int, share time.Duration) bool {
		return round == 0 || time.Since(began) < share
	}
	if artifactBytes(f, pkgDir) <= planTogetherBytes {
		for i := range ways {
			if err := start(i); err != nil {
				return nil, err
			}
		}
		began = time.Now()
		for r := 0; r < po.Rounds && more(r, planWayBudget*time.Duration(len(ways))); r++ {
			for i := range ways {
				if err := timed(i); err != nil {
					return nil, err
				}
			}
		}
	} else {
		for i := range ways {
			if err := start(i); err != nil {
				return nil, err
			}
			began = time.Now()
			for r := 0; r < po.Rounds && more(r, planWayBudget); r++ {
				if err := timed(i); err != nil {
					return nil, err
				}
			}
			ways[i].close()
		}
	}
	for i, w := range ways {
		cands[i].RequestsPerSecond = median(w.rates[0])
		if n := loads(clients); len(n) > 1 {
			cands[i].LightClients, cands[i].LightRequestsPerSecond = n[1], median(w.rates[1])
		}
	}
	c := cands[choose(cands)]
	x.Slots, x.Threads, x.Ungrouped, x.Tried = c.Slots, c.Threads, c.Ungrouped, cands
	return x, nil
}

// measures says whether PlanExecution measures f's ways: where the
// workflow invokes an ONNX component, whose threads there are to divide.
func measures(f *plan.File) bool {
	return f.IR != nil && slices.Contains(Invoked(f.IR), ir.ImplONNX)
}

// planningQueue is the queue a plan measures with: a queue cut short (a
// test of back-pressure) would refuse what the planning loop sends, so
// the default queue at least.
func planningQueue(q int) int { return max(q, 1024) }

// plannedWays are the ways PlanExecution tries, in its order: each
// division of the cores, and where the plan groups a component (and opts
// is not Solo), each twice (withApart).
func plannedWays(f *plan.File, opts Options, po PlanOptions) []vm.Candidate {
	ways := Divisions(po.Cores)
	if grouped := groupedComponents(f); len(grouped) > 0 && !opts.Solo {
		ways = withApart(ways, grouped)
	}
	return ways
}

// groupedComponents are the components the plan groups.
func groupedComponents(f *plan.File) []string {
	var out []string
	for _, g := range f.Components {
		if g.Grouped {
			out = append(out, g.Component)
		}
	}
	return out
}

// withApart is each way of cands twice: with the grouped components run
// one request per invocation, then grouped. Whether grouping pays is
// measured as the division of the cores is, by serving: a model whose
// cost per item grows with its batch (a convolutional recognizer on one
// thread) serves more apart, and a lockstep burst's run times, measured
// apart from the serving, are too noisy to tell within a second. choose
// keeps grouping only where it serves clearly more (groupedHandicap).
func withApart(cands []candidate, grouped []string) []candidate {
	out := make([]candidate, 0, 2*len(cands))
	for _, c := range cands {
		apart := c
		apart.Ungrouped = grouped
		out = append(out, apart, c)
	}
	return out
}

// way is one candidate being measured: its engine and what its rounds
// served.
type way struct {
	e     *vm.Engine
	rates [2][]float64 // by load, as loads orders them
}

// lightShare is the part of the callers a way's light load has.
const lightShare = 4

// loads are the numbers of callers a way is measured with: all the
// clients, then (where they are several) a light load of a lightShare of
// them.
func loads(clients int) []int {
	if light := clients / lightShare; light >= 1 && light < clients {
		return []int{clients, light}
	}
	return []int{clients}
}

// close closes the way's engine, once.
func (w *way) close() {
	if w.e != nil {
		w.e.Close()
		w.e = nil
	}
}

// choose is the candidate (of cands, fewest slots first, apart before
// grouped) whose worse load came closest to the most any candidate served
// at that load, or the first whose score is within plannedMargin of the
// best score: a way that serves a full queue well but idles with a few
// callers (or the reverse) loses to one that serves both nearly as well.
// Where some ways run components apart (withApart), the ways that group
// (none apart) are scored groupedHandicap lower.
func choose(cands []candidate) int {
	var most [2]float64
	for _, c := range cands {
		most[0] = max(most[0], c.RequestsPerSecond)
		most[1] = max(most[1], c.LightRequestsPerSecond)
	}
	score := func(c candidate) float64 {
		s := 1.0
		if most[0] > 0 {
			s = c.RequestsPerSecond / most[0]
		}
		if most[1] > 0 {
			s = min(s, c.LightRequestsPerSecond/most[1])
		}
		return s
	}
	if slices.ContainsFunc(cands, func(c candidate) bool { return len(c.Ungrouped) > 0 }) {
		served := score
		score = func(c candidate) float64 {
			if len(c.Ungrouped) == 0 {
				return groupedHandicap * served(c)
			}
			return served(c)
		}
	}
	best := 0.0
	for _, c := range cands {
		best = max(best, score(c))
	}
	return slices.IndexFunc(cands, func(c candidate) bool { return score(c) >= plannedMargin*best })
}

// Apply returns opts running as x says: its slots as the workers of every
// grouped component, its threads as ONNX Runtime's intra-op threads, and
// x reported in the engine's stats.
func Apply(opts Options, x *vm.Execution) Options {
	opts.Workers, opts.Config.IntraOpThreads, opts.Execution = x.Slots, x.Threads, x
	if len(x.Ungrouped) > 0 {
		declines := maps.Clone(opts.Declines)
		if declines == nil {
			declines = backend.Declines{}
		}
		for _, name := range x.Ungrouped {
			declines[backend.ReadinessKey{Component: name}] = ungroupedReason
		}
		opts.Declines = declines
	}
	return opts
}

// ungroupedReason is the decline a planned ungrouped component reports.
const ungroupedReason = "planned: its requests served more run one per invocation than grouped"

func (po PlanOptions) withDefaults() PlanOptions {
	if po.Cores <= 0 {
		po.Cores = CPUs()
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

// Divide completes a division of cores of which a user set one half
// (--workers or --threads, or a model's config): workers slots with
// threads 0 share the cores between them, threads with workers 0 run on
// as many slots as the cores hold. Both set stay as set, and both 0 stay
// one slot of the backend's default threads, what runs where nothing
// plans. Left to the backend, the threads of every slot would each take
// every core (ONNX Runtime's default), and one slot of one thread would
// leave the other cores idle. Apply puts it into options.
func Divide(workers, threads, cores int) *vm.Execution {
	cores = max(cores, 1)
	switch {
	case workers > 0 && threads == 0:
		threads = max(1, cores/workers)
	case workers == 0 && threads > 0:
		workers = max(1, cores/threads)
	}
	return &vm.Execution{Slots: max(workers, 1), Threads: threads}
}

// Divisions are the ways of dividing cores: threads 1, 2, 4, ... and the
// cores themselves, each on cores/threads slots, fewest slots first.
func Divisions(cores int) []vm.Candidate {
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
// answered: with d 0, every request once; else for d and on to the end
// of the document's pass under way, and then every request still in
// flight is waited for and counted. It returns the requests answered per
// second; a request that fails is an error. Whole passes send every way
// the same mix of requests: where they differ in cost (a few of a
// model's slow requests in a round) a part of a pass would weigh on the
// rate as much as the way does.
func serveFor(ctx context.Context, e *vm.Engine, reqs []vm.Request, clients int, d time.Duration) (float64, error) {
	var next, served atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	n := int64(len(reqs))
	// end is where sending stops once d has passed: the end of the pass
	// holding every request drawn by then. Every client stops there, not
	// only the one that noticed the time was up.
	var end atomic.Int64
	end.Store(math.MaxInt64)
	sending := func(i int64) bool {
		switch {
		case d == 0:
			return i < n
		case i >= end.Load():
			return false
		case time.Since(start) < d:
			return true
		}
		end.CompareAndSwap(math.MaxInt64, (next.Load()+n-1)/n*n)
		return i < end.Load()
	}
	for range clients {
		wg.Go(func() {
			for i := next.Add(1) - 1; sending(i) && ctx.Err() == nil && failed.Load() == nil; i = next.Add(1) - 1 {
				r := e.Run(ctx, reqs[i%int64(len(reqs))])
				r.Release()
				if r.Err != nil {
					if ctx.Err() != nil {
						return
					}
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

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
