package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

func init() {
	register(command{
		name:    "run",
		usage:   "run PATH|plan.json (--requests FILE | --verify) [--out FILE | --out-dir DIR] [--format json|jsonl] [--allow-abs] [--solo] [--verify] [--stats] [--max-delay D] [--queue N] [--workers N] [--concurrency N] [--threads N] [--provider P] [--backend KIND=NAME] [--decline KEY=REASON] [--max-media-bytes N] [--cpu-class batch|normal]",
		summary: "run requests concurrently through the VM",
		run:     runRun,
	})
}

type runFlags struct {
	engineFlags
	requests, out, outDir, format string
	solo, stats, allowAbs, verify bool
	concurrency                   int
}

func runRun(e *env, args []string) int {
	c := commands["run"]
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var rf runFlags
	fs.StringVar(&rf.requests, "requests", "", "the requests document: {\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]}; - reads standard input")
	fs.StringVar(&rf.out, "out", "", "write the responses here instead of stdout (checked writable before the run; never the requests file)")
	fs.StringVar(&rf.outDir, "out-dir", "", "write each output as DIR/REQUEST/OUTPUT.npy and the responses, naming them {\"dtype\",\"shape\",\"npy\"}, to DIR/responses.json (.jsonl with --format jsonl); the folder is made if missing")
	fs.StringVar(&rf.format, "format", "json", "json: one responses document once the run ends; jsonl: one response per line as each request finishes")
	fs.BoolVar(&rf.allowAbs, "allow-abs", false, allowAbsHelp)
	fs.BoolVar(&rf.solo, "solo", false, "run every invocation with exactly one request (the reference)")
	fs.BoolVar(&rf.stats, "stats", false, "add per-component stats to the responses")
	fs.BoolVar(&rf.verify, "verify", false, "then run each request alone and report every one whose grouped answer differs (exit 1); without --requests, on requests synthesized from the workflow's inputs, as serve compares a package without requests.json")
	rf.register(fs, 5*time.Millisecond, "how long a group waits for more items")
	fs.IntVar(&rf.concurrency, "concurrency", 0, "how many requests are in flight at once (default: what --queue holds; 0: all of them)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || rf.requests == "" && !rf.verify {
		fs.Usage()
		return exitUsage
	}
	concurrencySet := false
	fs.Visit(func(f *flag.Flag) { concurrencySet = concurrencySet || f.Name == "concurrency" })
	if !concurrencySet {
		// As many in flight as a component's queue holds: more would
		// only fail on a full queue.
		rf.concurrency = rf.queue
	}
	if !rf.valid(e) || !rf.validRun(e) ||
		!noStdin(e, "run", "PATH", paths[0], "give the document's path, its package folder or a plan (--requests - reads the requests from standard input)") ||
		!noStdin(e, "run", "--out", rf.out, "leave --out out to write the responses to standard output") ||
		!noStdin(e, "run", "--out-dir", rf.outDir, "give a folder") {
		return exitUsage
	}
	rf.useCPUClass(e)
	f, pkgDir, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	if !rf.validPlan(e, f) {
		return exitUsage
	}
	return runPlan(e, f, pkgDir, rf)
}

// validRun checks the flags run adds to the engine's.
func (rf *runFlags) validRun(e *env) bool {
	if rf.concurrency < 0 {
		e.errorf("--concurrency %d: want 0 (all of them) or more", rf.concurrency)
		return false
	}
	if rf.format != "json" && rf.format != "jsonl" {
		e.errorf("--format %s: want json (one responses document) or jsonl (one response per line)", rf.format)
		return false
	}
	if rf.out != "" && rf.outDir != "" {
		e.errorf("--out and --out-dir together: --out-dir writes its responses to DIR/responses.%s; give one of them", rf.format)
		return false
	}
	if rf.out != "" && rf.requests != stdinArg && sameFile(rf.out, rf.requests) {
		e.errorf("--out %s is the requests file %s: the responses would overwrite the requests; write them elsewhere", rf.out, rf.requests)
		return false
	}
	return true
}

// sameFile reports whether a and b name one file: the same path, or two
// paths to one file (links, bind mounts).
func sameFile(a, b string) bool {
	if absA, err := filepath.Abs(a); err == nil {
		if absB, err := filepath.Abs(b); err == nil && absA == absB {
			return true
		}
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// loadPlan reads a plan file (checked against its package) or compiles a
// package in memory.
func loadPlan(e *env, path string) (*plan.File, string, int) {
	// Only a regular file is read whole here: a folder is a package, and
	// a FIFO or device is left to the front end, which refuses it.
	if isPlanFile(path) {
		f, err := plan.Load(path)
		if err != nil {
			e.errorf("%v", err)
			return nil, "", exitUsage
		}
		return f, f.PackageDir(path), exitOK
	}
	f, doc, code := compileInMemory(e, path)
	if f == nil {
		return nil, "", code
	}
	dir := filepath.Dir(doc)
	if err := f.CheckPackage(dir); err != nil {
		e.errorf("%v", err)
		return nil, "", exitUsage
	}
	return f, dir, exitOK
}

// compileInMemory checks the document or package folder at path with the
// adapters loaded, as compile does (the plan states what each keys its
// invocations by), and builds its plan; and the document's path. When it
// returns no plan, it has reported why and returns the exit code.
func compileInMemory(e *env, path string) (*plan.File, string, int) {
	d, err := passes.CheckPath(path, passes.Options{Adapters: builtinAdapters})
	if err != nil {
		return nil, "", ioError(e, err)
	}
	if !d.Valid() {
		renderDiags(e, d)
		return nil, "", exitDiags
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		e.errorf("%v", err)
		return nil, "", exitUsage
	}
	return f, d.File, exitOK
}

// isPlanFile reports whether path is a regular file holding a plan.
func isPlanFile(path string) bool {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	b, err := safefile.ReadFile(path, plan.MaxPlanBytes)
	return err == nil && plan.LooksLikePlan(b)
}

func runPlan(e *env, f *plan.File, pkgDir string, rf runFlags) int {
	// The watch starts before the requests are read and the components
	// loaded (a signal then runs none of them) and lasts until the
	// responses are written: a second signal meanwhile exits at once.
	stop, interrupted, end := interruptible(e)
	defer end()
	outPath := rf.out
	var dir *outDir
	if rf.outDir != "" {
		var err error
		if dir, err = openOutDir(rf.outDir, f); err != nil {
			e.errorf("--out-dir %s", ioErrorText(err))
			return exitUsage
		}
		defer dir.close()
		outPath = filepath.Join(rf.outDir, "responses."+rf.format)
		if rf.requests != stdinArg && sameFile(outPath, rf.requests) {
			e.errorf("--out-dir %s would write its responses over the requests file %s; write them elsewhere", rf.outDir, rf.requests)
			return exitUsage
		}
	}
	out, err := openOutput(e, outPath, dir == nil)
	if err != nil {
		return ioError(e, err)
	}
	written := false
	defer func() {
		if !written {
			out.discard()
		}
	}()
	var reqs []vm.Request
	if rf.requests != "" {
		if reqs, err = readRequestsFile(e, rf.requests, jsonio.ReadOptions{AllowAbs: rf.allowAbs}); err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
	}
	eng, err := engine.Open(f, pkgDir, rf.options(rf.solo))
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer eng.Close()
	compared := "requests"
	if rf.requests == "" {
		// --verify alone: the requests serve compares at load where a
		// package ships none.
		if reqs, err = serve.Synthesized(context.Background(), f.IR, pkgDir, eng); reqs == nil {
			e.errorf("%s", unsynthesized("--verify", err))
			return exitUsage
		}
		compared = "requests synthesized from the workflow's inputs"
	}
	// The answers to requests synthesized for --verify are the check's,
	// not the user's: they are written where --out or --out-dir says, or
	// with --stats, and otherwise only the verdict is printed.
	quiet := rf.requests == "" && outPath == "" && !rf.stats
	var store jsonio.Store
	if dir != nil {
		dir.name(reqs)
		store = dir.store
	}
	opts := vm.BatchOptions{Limit: rf.concurrency, Stop: stop}
	if rf.format == "jsonl" && !quiet {
		written = true
		out.begin()
		opts.Finished = func(_ int, r vm.Response) {
			if !vm.NotStarted(r.Err) {
				if dir != nil {
					r = dir.settle(r)
				}
				out.emit(r, store)
			}
		}
	}
	// Requests run under no deadline: a signal ends admission (stop), and
	// what was admitted finishes.
	resps := eng.RunBatch(context.Background(), reqs, opts)
	var stats *vm.Stats
	if rf.stats {
		s := eng.Stats()
		stats = &s
	}
	var verified func() int
	if rf.verify && interrupted() == nil {
		verified = verify(e, f, eng, reqs, resps, compared)
	}
	if dir != nil {
		for i := range resps {
			resps[i] = dir.settle(resps[i])
		}
	}
	finished := make([]vm.Response, 0, len(resps))
	for _, r := range resps {
		if !vm.NotStarted(r.Err) {
			finished = append(finished, r)
		}
	}
	switch {
	case quiet:
	case rf.format == "jsonl":
		written = true
		err = out.end(stats)
	default:
		written = true
		err = out.write(finished, stats, store)
	}
	if err != nil {
		return ioError(e, err)
	}
	if sig := interrupted(); sig != nil {
		e.errorf("interrupted (%v): %d of %d requests finished and are in the responses; the %d not started are left out",
			sig, len(finished), len(resps), len(resps)-len(finished))
		reportFailures(e, f, pkgDir, finished)
		return exitInterrupted
	}
	code := exitOK
	if failed := reportFailures(e, f, pkgDir, resps); failed > 0 {
		fmt.Fprintf(e.stderr, "genaic: %d of %d requests failed\n", failed, len(resps))
		code = exitDiags
	}
	if verified != nil {
		code = max(code, verified())
	}
	if quiet {
		fmt.Fprintf(e.stderr, "genaic: --verify: the answers to the synthesized requests are not printed; --out FILE writes them\n")
	}
	return code
}

// verify runs each request alone on eng and compares its answer with
// grouped, its answer in the run that grouped it (engine.CompareAlone);
// the report it returns prints what differs and says the exit status.
// The largest group the run formed says whether anything was compared.
func verify(e *env, f *plan.File, eng *vm.Engine, reqs []vm.Request, grouped []vm.Response, compared string) (report func() int) {
	most := engine.LargestGroup(eng)
	divs := engine.CompareAlone(context.Background(), eng, reqs, grouped)
	return func() int {
		for _, d := range divs {
			fmt.Fprintf(e.stderr, "genaic: --verify: %s\n", d)
		}
		switch {
		case len(divs) > 0:
			why := engine.Causes(divs)
			if q := engine.QuantizesPerCall(f); len(q) > 0 {
				why = engine.QuantizationNote(q) + "; or " + why
			}
			fmt.Fprintf(e.stderr, "genaic: --verify: %d of %d %s are answered otherwise grouped than alone: grouping changes what the package computes; %s\n",
				engine.DifferingRequests(divs), len(reqs), compared, why)
			return exitDiags
		case most < 2:
			fmt.Fprintf(e.stderr, "genaic: --verify: no invocation held two requests, so grouping was not compared with running alone; give more requests, or more at once (--concurrency)\n")
		default:
			fmt.Fprintf(e.stderr, "genaic: --verify: each of the %d %s is answered alike grouped and alone (groups of up to %d requests)\n", len(reqs), compared, most)
		}
		return exitOK
	}
}

// interruptible watches for SIGINT and SIGTERM during a run: the first
// closes stop, so that no request is admitted any more while every request
// already started finishes; a second one exits at once. interrupted says
// which signal came, if one did; end ends the watch.
func interruptible(e *env) (stop <-chan struct{}, interrupted func() os.Signal, end func()) {
	stopped := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	done := make(chan struct{})
	exitNow := func(sig os.Signal) {
		e.errorf("%v again: exiting without writing the responses", sig)
		removeTemps()
		os.Exit(exitInterrupted)
	}
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		got.Store(sig)
		// A second signal that came with the first exits before the run
		// is told to stop: once told, it may end and write its responses
		// before a later look at the signals.
		select {
		case again := <-sigs:
			exitNow(again)
		default:
		}
		e.errorf("%v: admitting no more requests; finishing those started, then writing their responses (a second signal exits at once)", sig)
		close(stopped)
		select {
		case again := <-sigs:
			exitNow(again)
		case <-done:
		}
	}()
	interrupted = func() os.Signal {
		sig, _ := got.Load().(os.Signal)
		return sig
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
		})
	}
	return stopped, interrupted, end
}

// maxReported bounds the failed requests run prints one by one.
const maxReported = 10

// reportFailures prints the first failed requests as diagnostics are
// printed, at the place in the package's document the error concerns when
// the runtime located it, and returns how many requests failed.
func reportFailures(e *env, f *plan.File, pkgDir string, resps []vm.Response) int {
	failed := 0
	for _, r := range resps {
		if r.Err == nil {
			continue
		}
		if failed++; failed > maxReported {
			continue
		}
		var re *backend.RunError
		switch {
		case errors.As(r.Err, &re) && re.At != nil:
			fmt.Fprintf(e.stderr, "%s:%d:%d: error[%s]: request %s: %s\n", filepath.Join(pkgDir, f.Source), re.At.Line, re.At.Col, re.Rule, r.ID, re.Message)
		case errors.As(r.Err, &re):
			fmt.Fprintf(e.stderr, "error[%s]: request %s: %s\n", re.Rule, r.ID, re.Message)
		default:
			fmt.Fprintf(e.stderr, "error: request %s: %v\n", r.ID, r.Err)
		}
	}
	if failed > maxReported {
		fmt.Fprintf(e.stderr, "(%d more failed requests are in the responses)\n", failed-maxReported)
	}
	return failed
}

// unsynthesized says why a command that takes requests synthesized from
// the workflow's inputs where --requests is not given (serve.Synthesized)
// has none to take: err, the smallest one's failure.
func unsynthesized(what string, err error) string {
	return fmt.Sprintf("%s without --requests: no request synthesized from the workflow's inputs runs on this package (its contracts' extents at 1, 16, 128 or 512 times 1 to 4); the smallest failed: %v; give --requests FILE with requests the model accepts", what, err)
}
