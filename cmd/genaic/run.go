package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

func init() {
	register(command{
		name:    "run",
		usage:   "run PKG|plan.json --requests FILE [--solo] [--stats] [--max-delay D] [--queue N] [--workers N] [--concurrency N] [--threads N] [--provider P] [--backend KIND=NAME] [--decline KEY=REASON] [--out FILE]",
		summary: "run requests concurrently through the VM",
		run:     runRun,
	})
}

type runFlags struct {
	engineFlags
	requests, out string
	solo, stats   bool
	concurrency   int
}

func runRun(e *env, args []string) int {
	c := commands["run"]
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var rf runFlags
	fs.StringVar(&rf.requests, "requests", "", "the requests document: {\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]}; - reads standard input")
	fs.StringVar(&rf.out, "out", "", "write the responses here instead of stdout (checked writable before the run; never the requests file)")
	fs.BoolVar(&rf.solo, "solo", false, "run every invocation with exactly one request (the reference)")
	fs.BoolVar(&rf.stats, "stats", false, "add per-component stats to the responses")
	rf.register(fs, 5*time.Millisecond, "how long a group waits for more items")
	fs.IntVar(&rf.concurrency, "concurrency", 0, "how many requests are in flight at once (default: what --queue holds; 0: all of them)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || rf.requests == "" {
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
		!noStdin(e, "run", "--out", rf.out, "leave --out out to write the responses to standard output") {
		return exitUsage
	}
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

// output is where run writes the responses: --out, opened before the run
// so that a run whose responses could not be written never starts, or
// standard output.
type output struct {
	w       io.Writer
	file    *os.File
	created bool // the file did not exist: remove it if nothing is written
}

// openOutput opens --out for writing without truncating it yet: an
// existing file keeps its contents until the responses replace them.
func openOutput(e *env, path string) (*output, error) {
	if path == "" {
		return &output{w: e.stdout}, nil
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("--out %s is a folder; give a file", path)
	}
	created := false
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		file, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		created = err == nil
	}
	if err != nil {
		return nil, err
	}
	return &output{w: file, file: file, created: created}, nil
}

// discard closes an output nothing was written to, removing the file it
// created.
func (o *output) discard() {
	if o.file == nil {
		return
	}
	o.file.Close()
	if o.created {
		os.Remove(o.file.Name())
	}
}

// write replaces the output's contents with the responses.
func (o *output) write(resps []vm.Response, stats *vm.Stats) error {
	if o.file == nil {
		return jsonio.WriteResponses(o.w, resps, stats)
	}
	if info, err := o.file.Stat(); err == nil && info.Mode().IsRegular() {
		if err := o.file.Truncate(0); err != nil {
			return err
		}
	}
	bw := bufio.NewWriter(o.file)
	err := jsonio.WriteResponses(bw, resps, stats)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := o.file.Close(); err == nil {
		err = cerr
	}
	return err
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
	d, err := passes.CheckPath(path, passes.Options{})
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
	if err := f.CheckPackage(filepath.Dir(d.File)); err != nil {
		e.errorf("%v", err)
		return nil, "", exitUsage
	}
	return f, filepath.Dir(d.File), exitOK
}

// isPlanFile reports whether path is a regular file holding a plan.
func isPlanFile(path string) bool {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && plan.LooksLikePlan(b)
}

func runPlan(e *env, f *plan.File, pkgDir string, rf runFlags) int {
	out, err := openOutput(e, rf.out)
	if err != nil {
		return ioError(e, err)
	}
	written := false
	defer func() {
		if !written {
			out.discard()
		}
	}()
	reqs, err := readRequestsFile(e, rf.requests)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	eng, err := engine.Open(f, pkgDir, rf.options(rf.solo))
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer eng.Close()
	// The watch lasts until the responses are written: a second signal
	// while they are written still exits at once.
	ctx, interrupted, stop := interruptible(e)
	defer stop()
	resps := eng.RunAllLimit(ctx, reqs, rf.concurrency)
	var stats *vm.Stats
	if rf.stats {
		s := eng.Stats()
		stats = &s
	}
	written = true
	if err := out.write(resps, stats); err != nil {
		return ioError(e, err)
	}
	if sig := interrupted(); sig != nil {
		finished := 0
		for _, r := range resps {
			if r.Err == nil || !cancelled(r.Err) {
				finished++
			}
		}
		e.errorf("interrupted (%v): %d of %d requests finished and are in the responses; the %d not run are there with the error they were cancelled with",
			sig, finished, len(resps), len(resps)-finished)
		reportFailures(e, f, pkgDir, resps, true)
		return exitInterrupted
	}
	if failed := reportFailures(e, f, pkgDir, resps, false); failed > 0 {
		fmt.Fprintf(e.stderr, "genaic: %d of %d requests failed\n", failed, len(resps))
		return exitDiags
	}
	return exitOK
}

// interruptible returns the context a run runs under: the first SIGINT or
// SIGTERM cancels it, so that no request is admitted any more, while every
// invocation already started finishes; a second one exits at once.
// interrupted says which signal came, if one did; stop ends the watch.
func interruptible(e *env) (ctx context.Context, interrupted func() os.Signal, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			got.Store(sig)
			e.errorf("%v: admitting no more requests; finishing those running, then writing the responses (a second signal exits at once)", sig)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			e.errorf("%v again: exiting without writing the responses", sig)
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	interrupted = func() os.Signal {
		sig, _ := got.Load().(os.Signal)
		return sig
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
	return ctx, interrupted, stop
}

// cancelled reports whether a request failed because the run was
// interrupted before it ran.
func cancelled(err error) bool {
	var re *backend.RunError
	return errors.Is(err, context.Canceled) || (errors.As(err, &re) && re.Rule == backend.RunCancelled)
}

// maxReported bounds the failed requests run prints one by one.
const maxReported = 10

// reportFailures prints the first failed requests as diagnostics are
// printed, at the place in the package's document the error concerns when
// the runtime located it, and returns how many requests failed.
//
// When skipCancelled is set (the run was interrupted), requests that were
// not run are counted but not printed.
func reportFailures(e *env, f *plan.File, pkgDir string, resps []vm.Response, skipCancelled bool) int {
	failed := 0
	for _, r := range resps {
		if r.Err == nil || (skipCancelled && cancelled(r.Err)) {
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
