package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

func init() {
	register(command{
		name: "bench",
		usage: "bench PATH|plan.json [--requests FILE] [--allow-abs] [--rounds N] [--warmup N] [--round-time D] [--concurrency C[,C...]] [--procs P[,P...]] [--rate R [--arrivals poisson|fixed]] " +
			"[--json] [--plot FILE.svg|png] [--max-delay D] [--queue N] [--workers N] [--threads N] [--provider P] [--backend KIND=NAME] [--decline KEY=REASON] [--max-media-bytes N] [--cpu-class batch|normal] " +
			"[--url URL] [--grpc ADDR] [--model NAME] [--protocols P[,P...]] [--timeout D] [--priority N]",
		summary: "load-test the same requests grouped, one at a time and sequentially, beside direct backend calls on the same batches (or a server, with --url/--grpc): throughput, latency, groups",
		run:     runBench,
	})
}

// benchMode is one way of running the same requests.
type benchMode struct {
	name       string
	solo       bool
	sequential bool // one client, whatever the concurrency level
	// direct is the reference: the components called straight on their
	// backends (benchdirect.go), no clients.
	direct bool
	// remote, for a mode that sends the requests to a server, makes its
	// client (benchremote.go).
	remote func(b *bencher) (target, error)
}

var benchModes = []benchMode{
	{name: "grouped"},
	{name: "one-at-a-time", solo: true},
	{name: "sequential", solo: true, sequential: true},
	{name: "direct", direct: true},
}

// benchFlags are the options of one bench run.
type benchFlags struct {
	engineFlags
	remoteFlags
	requests, plot, arrivals string
	rounds, warmup           int
	roundTime                time.Duration
	levels                   levels
	// procs is --procs: the Go processor counts (GOMAXPROCS) each mode
	// runs under, every one in turn within each round; empty: the
	// process's own, unchanged.
	procs          levels
	rate           float64
	json, allowAbs bool
}

func runBench(e *env, args []string) int {
	c := commands["bench"]
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	bf := benchFlags{levels: levels{64}}
	fs.StringVar(&bf.requests, "requests", "", "the requests document, as for genaic run (default: the package's requests.json, as serve plans with it; for a package without one, the requests serve synthesizes from the workflow's inputs)")
	fs.BoolVar(&bf.allowAbs, "allow-abs", false, allowAbsHelp)
	fs.IntVar(&bf.rounds, "rounds", 3, "how many timed rounds each mode runs; the modes take turns, in a fresh order each round")
	fs.IntVar(&bf.warmup, "warmup", 1, "untimed rounds each mode runs first")
	fs.DurationVar(&bf.roundTime, "round-time", 100*time.Millisecond, "the least a round runs: it sends the document's requests again and again, in order, until this much time has passed and each was sent once (0: each once)")
	fs.Var(&bf.levels, "concurrency", "clients in the closed loop (with --rate: the most requests in flight), or a list such as 1,4,16,64 to sweep")
	fs.Var(&bf.procs, "procs", "run every mode under each of these Go processor counts (GOMAXPROCS), such as 1,2, in turn within each round: where ONNX Runtime computes on threads of its own, fewer processors than cores may serve faster")
	fs.Float64Var(&bf.rate, "rate", 0, "open loop: send requests at this many per second instead of C clients each waiting for its answer")
	fs.StringVar(&bf.arrivals, "arrivals", "poisson", "open loop arrivals: poisson or fixed (a fixed interval)")
	fs.BoolVar(&bf.json, "json", false, `print {"modes":[{"name","requests_per_second","items_per_second","latency_ms":{"p50","p90","p99"},"groups":{...}}]}`)
	fs.StringVar(&bf.plot, "plot", "", "write throughput against latency over the concurrency levels, one line per mode (.svg or .png)")
	bf.engineFlags.register(fs, 5*time.Millisecond, "the upper bound of a grouped item's wait for more items (a group closes earlier when waiting cannot help; 0: group only what is already waiting)")
	bf.remoteFlags.register(fs)
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	modes := benchModes
	if bf.remote() {
		var err error
		if modes, err = bf.remoteFlags.modes(); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		// The server's options are the server's: those of an engine in
		// this process mean nothing here.
		var engineOnly []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "max-delay", "threads", "provider", "queue", "workers", "backend", "decline", "procs":
				engineOnly = append(engineOnly, "--"+f.Name)
			}
		})
		if len(engineOnly) > 0 {
			e.errorf("%s configure engines in this process; against a server (--url, --grpc) set them where it runs (genaic serve --config)", strings.Join(engineOnly, ", "))
			return exitUsage
		}
	}
	if !bf.valid(e) || !bf.engineFlags.valid(e) ||
		!noStdin(e, "bench", "PATH", paths[0], "give the document's path, its package folder or a plan") ||
		!noStdin(e, "bench", "--plot", bf.plot, "give the file to draw to") {
		return exitUsage
	}
	bf.useCPUClass(e)
	f, pkgDir, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	if !bf.validPlan(e, f) {
		return exitUsage
	}
	var reqs []vm.Request
	if bf.requests == "" {
		// The package's own requests, where it ships them: serve plans
		// and warms up with them.
		if own := filepath.Join(pkgDir, "requests.json"); exists(own) {
			bf.requests = own
			fmt.Fprintf(e.stderr, "genaic: bench: no --requests: measuring the package's %s\n", own)
		}
	}
	if bf.requests == "" {
		var err error
		if reqs, err = synthesizedToBench(f, pkgDir, bf.options(false)); reqs == nil {
			e.errorf("%s", unsynthesized("bench", err))
			return exitUsage
		}
		fmt.Fprintf(e.stderr, "genaic: bench: no --requests: measuring the %d requests synthesized from the workflow's inputs (as serve compares a package without requests.json: items of 1 to 4 positions, values of no meaning); give --requests FILE for numbers of your traffic's sizes\n", len(reqs))
	} else {
		var err error
		if reqs, err = readRequestsFile(e, bf.requests, jsonio.ReadOptions{AllowAbs: bf.allowAbs}); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		if len(reqs) == 0 {
			e.errorf("%s holds no request", bf.requests)
			return exitUsage
		}
	}
	if bf.model == "" {
		bf.model = packageName(pkgDir)
	}
	if !bf.remote() {
		warnDivergence(e, f, pkgDir, bf.options(false), reqs)
	}
	b := &bencher{f: f, pkgDir: pkgDir, flags: bf, modes: modes, reqs: reqs, items: itemCounts(f, reqs)}
	results, err := b.sweep()
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	return b.report(e, results)
}

// synthesizedToBench are the requests serve synthesizes for a package
// without requests.json (serve.Synthesized), chosen on an engine of its
// own; nil and why where none runs.
func synthesizedToBench(f *plan.File, pkgDir string, opts engine.Options) ([]vm.Request, error) {
	eng, err := engine.Open(f, pkgDir, opts)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	return serve.Synthesized(context.Background(), f.IR, pkgDir, eng)
}

// warnDivergence compares, before any timing, the document's first
// requests grouped and alone (engine.CompareAlone), and warns where an
// answer differs: the throughput grouping then reaches is that of other
// answers than a request gets alone.
func warnDivergence(e *env, f *plan.File, pkgDir string, opts engine.Options, reqs []vm.Request) {
	if !slices.ContainsFunc(f.Components, func(g *plan.GroupPlan) bool { return g.Grouped }) {
		return
	}
	eng, err := engine.Open(f, pkgDir, opts)
	if err != nil {
		return // the modes open it again and say why
	}
	defer eng.Close()
	reqs = reqs[:min(len(reqs), engine.CompareRequests)]
	grouped := eng.RunAll(context.Background(), reqs)
	divs := engine.CompareAlone(context.Background(), eng, reqs, grouped)
	if len(divs) == 0 {
		return
	}
	why := engine.Causes(divs)
	if q := engine.QuantizesPerCall(f); len(q) > 0 {
		why = engine.QuantizationNote(q)
	}
	fmt.Fprintf(e.stderr, "genaic: bench: warning: grouped, %d of the first %d requests are answered otherwise than alone (%s): the throughput grouped is that of other answers; %s; `genaic run --verify` lists every difference\n",
		engine.DifferingRequests(divs), len(reqs), divs[0], why)
}

// maxRounds bounds --rounds and --warmup: each round runs the whole
// document in every mode.
const maxRounds = 1000

// maxProcs bounds --procs.
const maxProcs = 1024

// maxRoundTime bounds --round-time.
const maxRoundTime = time.Minute

// minRate bounds --rate from below: the open loop sends every request of
// the document in each round, so a round lasts at least its requests
// divided by the rate; slower than this, a run would not end.
const minRate = 1.0

// maxConcurrency bounds a --concurrency level: each client is a goroutine
// with a request in flight.
const maxConcurrency = 10000

// maxTimeout bounds --timeout: how long one request may take against a
// server.
const maxTimeout = time.Hour

// valid checks the flags bench adds to the engine's, saying what is wrong.
func (bf *benchFlags) valid(e *env) bool {
	switch {
	case bf.rounds < 1 || bf.rounds > maxRounds:
		e.errorf("--rounds %d: want 1 to %d timed rounds", bf.rounds, maxRounds)
	case bf.warmup < 0 || bf.warmup > maxRounds:
		e.errorf("--warmup %d: want 0 to %d untimed rounds", bf.warmup, maxRounds)
	case bf.roundTime < 0 || bf.roundTime > maxRoundTime:
		e.errorf("--round-time %v: want 0 to %v", bf.roundTime, maxRoundTime)
	case bf.rate != 0 && !(bf.rate >= minRate): // NaN too
		e.errorf("--rate %v: want at least %v request a second (or none: a closed loop)", bf.rate, minRate)
	case slices.ContainsFunc(bf.levels, func(c int) bool { return c > maxConcurrency }):
		e.errorf("--concurrency %v: want 1 to %d clients", []int(bf.levels), maxConcurrency)
	case bf.arrivals != "poisson" && bf.arrivals != "fixed":
		e.errorf("--arrivals is poisson or fixed, not %q", bf.arrivals)
	case slices.ContainsFunc(bf.procs, func(p int) bool { return p > maxProcs }):
		e.errorf("--procs %v: want 1 to %d processors", []int(bf.procs), maxProcs)
	case bf.timeout <= 0 || bf.timeout > maxTimeout:
		e.errorf("--timeout %v: want a positive duration up to %v", bf.timeout, maxTimeout)
	case bf.priority < 0 || bf.priority > serve.MaxPriority:
		e.errorf("--priority %d: want 1 (the most urgent) to %d, or 0 for none", bf.priority, serve.MaxPriority)
	case bf.priority != 0 && !bf.remote():
		e.errorf("--priority %d: a priority is a server's to honour: give --url or --grpc (in this process every request would have it)", bf.priority)
	case bf.plot != "" && plotFormat(bf.plot) == "":
		e.errorf("--plot %s: the file must end in .svg or .png", bf.plot)
	default:
		return true
	}
	return false
}

// report prints the results and writes the plot.
func (b *bencher) report(e *env, results []modeResult) int {
	if b.flags.json {
		if err := writeBenchJSON(e.stdout, b, results); err != nil {
			return ioError(e, err)
		}
	} else {
		writeBenchText(e.stdout, b, results)
	}
	if b.flags.plot != "" {
		if err := writePlot(b.flags.plot, results); err != nil {
			return ioError(e, err)
		}
	}
	return exitOK
}

// levels is --concurrency: one level or a comma-separated list.
type levels []int

func (l *levels) String() string { return fmt.Sprint([]int(*l)) }

func (l *levels) Set(v string) error {
	var out levels
	for _, word := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(word))
		if err != nil || n < 1 {
			return fmt.Errorf("want positive counts such as 1,4,16,64, got %q", v)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// allowAbsHelp is the help of --allow-abs.
const allowAbsHelp = "take absolute .npy and file paths of the requests document as given (without it they are refused; a relative path may not leave the requests folder by .., and symbolic links inside the folder are followed)"

// readRequestsFile reads a requests document; .npy paths are relative to
// it. "-" reads standard input, with .npy paths relative to the current
// folder.
func readRequestsFile(e *env, path string, opts jsonio.ReadOptions) ([]vm.Request, error) {
	if path == stdinArg {
		if e.stdin == nil {
			return nil, fmt.Errorf("%s: no standard input", stdinName)
		}
		reqs, err := jsonio.ReadRequestsWith(e.stdin, ".", opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", stdinName, err)
		}
		return reqs, nil
	}
	file, _, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	reqs, err := jsonio.ReadRequestsWith(file, filepath.Dir(path), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return reqs, nil
}

// itemCounts returns each request's items: for each packed workflow input,
// the units its outermost level holds (segments, images, clips: the last
// entry of that level's offsets, or its items where the request gives
// them), or its packed extent where the request does not carry those
// offsets; one per request where nothing is packed.
func itemCounts(f *plan.File, reqs []vm.Request) []int64 {
	out := make([]int64, len(reqs))
	for i, r := range reqs {
		for _, in := range f.IR.Inputs {
			if in.Contract == nil || in.Contract.Layout.Kind != ir.TokenPacked {
				continue
			}
			out[i] += packedItems(r, in)
		}
		if out[i] == 0 && !hasPacked(f) {
			out[i] = 1
		}
	}
	return out
}

func packedItems(r vm.Request, in *ir.Input) int64 {
	if its, ok := r.Items[in.Name]; ok {
		return int64(len(its)) // given as items: one per outermost unit
	}
	x := r.Inputs[in.Name]
	if x == nil || len(x.Shape) == 0 {
		return 0
	}
	levels := in.Contract.Layout.Levels
	if len(levels) > 0 {
		if offs := r.Inputs[levels[len(levels)-1].Offsets.Name]; offs != nil && offs.DType == "int64" && offs.Len() > 0 {
			v := offs.Int64s()
			return v[len(v)-1]
		}
	}
	return x.Shape[0]
}

func hasPacked(f *plan.File) bool {
	for _, in := range f.IR.Inputs {
		if in.Contract != nil && in.Contract.Layout.Kind == ir.TokenPacked {
			return true
		}
	}
	return false
}

// exists reports whether path names something in the file system.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
