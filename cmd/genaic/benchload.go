package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// bencher drives the load of one bench command.
type bencher struct {
	f      *plan.File
	pkgDir string
	flags  benchFlags
	modes  []benchMode
	reqs   []vm.Request
	items  []int64 // per request, as itemCounts counts them
	// plans holds each mode's planned execution, by mode name, where the
	// flags leave it to be planned.
	plans map[string]*vm.Execution
}

// sweep measures every mode at every concurrency level. Sequential and
// direct do not depend on the level, so they run with the first level's
// modes only; direct, which sends no requests, runs in the closed loop
// only, and only where the workflow invokes a component.
func (b *bencher) sweep() ([]modeResult, error) {
	var all []modeResult
	for i, c := range b.flags.levels {
		modes := slices.DeleteFunc(slices.Clone(b.modes), func(m benchMode) bool {
			return (i > 0 && (m.sequential || m.direct)) || (m.direct && (b.flags.rate > 0 || len(engine.Invoked(b.f.IR)) == 0))
		})
		res, err := b.level(c, modes)
		if err != nil {
			return nil, err
		}
		all = append(all, res...)
	}
	setVsDirect(all)
	return all, nil
}

// way is a mode under a Go processor count.
type way struct {
	mode  benchMode
	procs int
}

// ways is every mode under every --procs count, the counts innermost.
func (b *bencher) ways(modes []benchMode) []way {
	procs := b.flags.procs
	if len(procs) == 0 {
		procs = levels{runtime.GOMAXPROCS(0)}
	}
	var out []way
	for _, m := range modes {
		for _, p := range procs {
			out = append(out, way{m, p})
		}
	}
	return out
}

// target is what a mode sends the document's requests to: an engine in
// this process, or a server (benchremote.go).
type target interface {
	// run sends the document's request i and waits for its answer; the
	// error is the request's failure, as the caller would show it.
	run(i int) error
	// snapshot is what the target tells of its work so far: two of them
	// make a round's groups and a server's times.
	snapshot() snapshot
	close()
}

// snapshot is a target's account of its work so far.
type snapshot struct {
	// stats are the groups formed (what a server's metrics tell:
	// invocations and requests per component; zero where it tells none).
	stats vm.Stats
	// server is a genaic server's own times, nil for anything else.
	server *serverTimes
}

// engineTarget runs the requests on an engine of the package.
type engineTarget struct {
	eng  *vm.Engine
	reqs []vm.Request
}

func (t engineTarget) run(i int) error {
	r := t.eng.Run(context.Background(), t.reqs[i])
	r.Release() // as a server does once it has written the response
	if r.Err != nil {
		return fmt.Errorf("request %s: %v", r.ID, r.Err)
	}
	return nil
}

func (t engineTarget) snapshot() snapshot { return snapshot{stats: t.eng.Stats()} }
func (t engineTarget) close()             { t.eng.Close() }

// level opens a target per mode and processor count, warms each up, then
// runs the timed rounds with the ways taking turns, in an order drawn
// afresh each round, so that a drift of the machine's state touches
// every way alike. The process's GOMAXPROCS is set for each way's rounds
// and restored at the end.
func (b *bencher) level(c int, modes []benchMode) ([]modeResult, error) {
	ways := b.ways(modes)
	targets := make([]target, len(ways))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func() {
		for _, t := range targets {
			if t != nil {
				t.close()
			}
		}
	}()
	least := make([]time.Duration, len(ways))
	for i, w := range ways {
		t, err := b.open(w.mode)
		if err != nil {
			return nil, err
		}
		targets[i] = t
		runtime.GOMAXPROCS(w.procs)
		least[i] = b.flags.roundTime
		for range b.flags.warmup {
			least[i] = b.leastRound(b.round(t, clients(w.mode, c), uint64(i), b.flags.roundTime), clients(w.mode, c))
		}
	}
	runs := make([][]roundResult, len(ways))
	// A way runs slower after one that leaves garbage to collect or threads
	// spinning. Each round takes the ways in a fresh order, so that every
	// way follows every other alike: rounds that only start one way further
	// on keep each way behind the same one (grouped always behind
	// sequential), and its ratio carries that one's leftovers.
	order := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(len(ways))))
	for r := range b.flags.rounds {
		for _, i := range order.Perm(len(ways)) {
			w := ways[i]
			runtime.GOMAXPROCS(w.procs)
			runs[i] = append(runs[i], b.round(targets[i], clients(w.mode, c), uint64(r*len(ways)+i), least[i]))
		}
	}
	out := make([]modeResult, len(ways))
	for i, w := range ways {
		out[i] = summarize(w.mode.name, clients(w.mode, c), runs[i], targets[i].snapshot().stats)
		out[i].RoundMS = float64(least[i]) / float64(time.Millisecond)
		if d, ok := targets[i].(*directTarget); ok {
			out[i].Concurrency, out[i].Direct = d.choice.Callers, &d.choice
		}
	}
	setRatios(out)
	return out, nil
}

// open makes a mode's target: an engine, or a server's client.
func (b *bencher) open(m benchMode) (target, error) {
	if m.remote != nil {
		return m.remote(b)
	}
	if m.direct {
		return b.openDirect()
	}
	opts := b.flags.options(m.solo)
	if b.flags.planned() {
		x, err := b.plan(m, opts)
		if err != nil {
			return nil, err
		}
		opts = engine.Apply(opts, x)
	}
	eng, err := engine.Open(b.f, b.pkgDir, opts)
	if err != nil {
		return nil, err
	}
	return engineTarget{eng, b.reqs}, nil
}

// plan is a mode's execution planned on this machine with the document's
// requests, once per mode: each mode gets the division of the cores that
// serves it best (sequential with its one client), so that the modes are
// compared at their best.
func (b *bencher) plan(m benchMode, opts engine.Options) (*vm.Execution, error) {
	if x := b.plans[m.name]; x != nil {
		return x, nil
	}
	po := engine.PlanOptions{}
	if m.sequential {
		po.Clients = 1
	}
	x, err := engine.PlanExecution(context.Background(), b.f, b.pkgDir, opts, b.reqs, po)
	if err != nil {
		return nil, fmt.Errorf("mode %s: %w", m.name, err)
	}
	if b.plans == nil {
		b.plans = map[string]*vm.Execution{}
	}
	b.plans[m.name] = x
	return x, nil
}

func clients(m benchMode, c int) int {
	if m.sequential {
		return 1
	}
	return c
}

// roundResult is what one pass over the document measured.
type roundResult struct {
	elapsed   time.Duration
	latencies []time.Duration // of the requests that succeeded
	ok        int
	items     int64
	failed    int
	firstErr  string
	groups    map[string]groupDelta
	procs     int // GOMAXPROCS while it ran
	// peak is the most requests that were in flight at once: the
	// concurrency the round reached.
	peak int64
	// gaps are the open loop's times between arrivals as sent (ns).
	gaps welford
	// server is what a genaic server's own times grew by.
	server *serverTimes
}

// welford is a running mean and sum of squared deviations.
type welford struct {
	n, mean, m2 float64
}

func (w *welford) add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / w.n
	w.m2 += d * (x - w.mean)
}

// cv is the coefficient of variation (standard deviation over mean): 1
// for Poisson arrivals, 0 for evenly spaced ones, far above 1 for bursts.
func (w welford) cv() float64 {
	if w.n < 2 || w.mean <= 0 {
		return 0
	}
	return math.Sqrt(w.m2/(w.n-1)) / w.mean
}

// groupDelta is what one component's groups did during a round.
type groupDelta struct {
	invocations, requests int64
	sizes                 map[int]int64
}

// leastRound is how long a closed loop's timed round of c clients runs
// at least: --round-time, or, where the warm-up round w served so slowly
// that such a round would end with most of its requests in flight, long
// enough for every client to be answered about twice (up to
// maxRoundTime). A round's throughput counts the requests answered; a
// round no longer than a request says more about where the requests
// were when it ended than how fast they go. --round-time 0 and the open
// loop keep what they say.
func (b *bencher) leastRound(w roundResult, c int) time.Duration {
	d := b.flags.roundTime
	if d == 0 || b.flags.rate > 0 || w.ok == 0 {
		return d
	}
	rps := float64(w.ok) / w.elapsed.Seconds()
	return max(d, min(time.Duration(2*float64(c)/rps*float64(time.Second)), maxRoundTime))
}

// round sends every request of the document, in the closed loop of c
// clients or, with --rate, in the open loop, and measures it: once, and
// again from the first while the round has run less than least, so that
// a small document on a fast model still gives a round long enough to
// measure.
func (b *bencher) round(t target, c int, seed uint64, least time.Duration) roundResult {
	if p, ok := t.(passer); ok {
		return p.passRound(least)
	}
	before := t.snapshot()
	rec := newRecorder(len(b.reqs))
	start := time.Now()
	more := func(i int64) bool {
		return i < int64(len(b.reqs)) || time.Since(start) < least
	}
	if b.flags.rate > 0 {
		b.openLoop(t, c, rand.New(rand.NewPCG(seed, 0xbe4c)), rec, more)
	} else {
		b.closedLoop(t, c, rec, more)
	}
	res := rec.result(time.Since(start))
	after := t.snapshot()
	res.groups, res.procs = statsDelta(before.stats, after.stats), runtime.GOMAXPROCS(0)
	if before.server != nil && after.server != nil {
		d := after.server.minus(*before.server)
		res.server = &d
	}
	return res
}

// closedLoop runs c clients, each sending its next request as soon as its
// last one is answered, while more says the round goes on (the k-th
// request sent is the document's k-th, modulo its length). Clients may
// outnumber the document's requests: a round that repeats the document
// keeps all of them busy, several sending one request at once (a round
// that sends each request once has no more in flight than it holds, and
// its peak says so).
func (b *bencher) closedLoop(t target, c int, rec *recorder, more func(int64) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := next.Add(1) - 1; more(i); i = next.Add(1) - 1 {
				b.send(t, int(i%int64(len(b.reqs))), rec)
			}
		})
	}
	wg.Wait()
}

// openLoop sends the requests at the --rate, Poisson or evenly spaced,
// whether or not earlier ones were answered. At most c are in flight: a
// request that arrives when c are counts as failed, so the generator never
// waits for the engine. The arrivals are paced on a goroutine of their
// own (newPacer), which records the gaps it kept (arrival_cv).
func (b *bencher) openLoop(t target, c int, rng *rand.Rand, rec *recorder, more func(int64) bool) {
	slots := make(chan struct{}, c)
	var wg sync.WaitGroup
	paced := make(chan struct{})
	go func() {
		defer close(paced)
		sleep := newPacer()
		due := time.Now()
		var last time.Time
		for k := int64(0); more(k); k++ {
			i := int(k % int64(len(b.reqs)))
			if d := time.Until(due); d > 0 {
				sleep(d)
			}
			now := time.Now()
			if k > 0 {
				rec.gap(now.Sub(last))
			}
			last = now
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					b.send(t, i, rec)
				})
			default:
				rec.fail(fmt.Sprintf("request %s: not admitted: %d %s already in flight", b.reqs[i].ID, c, plural(c, "request")))
			}
			due = due.Add(b.gap(rng))
		}
	}()
	<-paced
	wg.Wait()
}

// gap is the time to the next arrival of the open loop.
func (b *bencher) gap(rng *rand.Rand) time.Duration {
	mean := float64(time.Second) / b.flags.rate
	if b.flags.arrivals == "fixed" {
		return time.Duration(mean)
	}
	return time.Duration(rng.ExpFloat64() * mean)
}

// send runs one request and records its latency as its client saw it.
func (b *bencher) send(t target, i int, rec *recorder) {
	rec.enter()
	defer rec.leave()
	start := time.Now()
	if err := t.run(i); err != nil {
		rec.fail(err.Error())
		return
	}
	rec.ok(time.Since(start), b.items[i])
}

// recorder collects a round's outcomes from many goroutines.
type recorder struct {
	mu       sync.Mutex
	res      roundResult
	inFlight atomic.Int64
	peak     atomic.Int64
}

// enter counts a request sent, leave one answered; the most in flight
// at once is the round's peak.
func (r *recorder) enter() {
	n := r.inFlight.Add(1)
	for {
		p := r.peak.Load()
		if n <= p || r.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (r *recorder) leave() { r.inFlight.Add(-1) }

// gap records the time since the open loop's last arrival (only the
// pacing goroutine calls it).
func (r *recorder) gap(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.gaps.add(float64(d))
}

func newRecorder(n int) *recorder {
	return &recorder{res: roundResult{latencies: make([]time.Duration, 0, n)}}
}

func (r *recorder) ok(d time.Duration, items int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.latencies = append(r.res.latencies, d)
	r.res.ok++
	r.res.items += items
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res.failed == 0 {
		r.res.firstErr = msg
	}
	r.res.failed++
}

func (r *recorder) result(elapsed time.Duration) roundResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	res.elapsed, res.peak = elapsed, r.peak.Load()
	return res
}

// statsDelta is what each component's groups did between two snapshots.
func statsDelta(before, after vm.Stats) map[string]groupDelta {
	out := map[string]groupDelta{}
	for name, a := range after.Components {
		b := before.Components[name]
		d := groupDelta{invocations: a.Invocations - b.Invocations, requests: a.Requests - b.Requests, sizes: map[int]int64{}}
		for size, n := range a.GroupSizes {
			if n -= b.GroupSizes[size]; n > 0 {
				d.sizes[size] = n
			}
		}
		out[name] = d
	}
	return out
}
