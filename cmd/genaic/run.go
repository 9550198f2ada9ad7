package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/backends"
	"github.com/genaic/genaic/vm/jsonio"
	"github.com/genaic/genaic/vm/ort"
)

func init() {
	register(command{
		name:    "run",
		usage:   "run PKG|plan.json --requests FILE [--solo] [--stats] [--max-delay D] [--queue N] [--workers N] [--concurrency N] [--decline C=R] [--out FILE]",
		summary: "run requests concurrently through the VM",
		run:     runRun,
	})
}

type runFlags struct {
	requests, out string
	solo, stats   bool
	maxDelay      time.Duration
	threads       int
	queue         int
	workers       int
	concurrency   int
	decline       declines
}

// declines is the readiness table given on the command line:
// --decline COMPONENT=REASON, repeatable.
type declines map[string]string

func (d *declines) String() string { return fmt.Sprint(map[string]string(*d)) }

func (d *declines) Set(v string) error {
	name, reason, ok := strings.Cut(v, "=")
	if !ok || name == "" || reason == "" {
		return fmt.Errorf("want COMPONENT=REASON, got %q", v)
	}
	if *d == nil {
		*d = declines{}
	}
	(*d)[name] = reason
	return nil
}

func runRun(e *env, args []string) int {
	c := commands["run"]
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var rf runFlags
	fs.StringVar(&rf.requests, "requests", "", "the requests document: {\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]}")
	fs.StringVar(&rf.out, "out", "", "write the responses here instead of stdout")
	fs.BoolVar(&rf.solo, "solo", false, "run every invocation with exactly one request (the reference)")
	fs.BoolVar(&rf.stats, "stats", false, "add per-component stats to the responses")
	fs.DurationVar(&rf.maxDelay, "max-delay", 5*time.Millisecond, "how long a group waits for more items")
	fs.IntVar(&rf.threads, "threads", 0, "ONNX Runtime intra-op threads (0: its default)")
	fs.IntVar(&rf.queue, "queue", 1024, "the most items that may wait for one component; beyond it a request fails at once")
	fs.IntVar(&rf.workers, "workers", 1, "how many groups of one component may be formed and run at once")
	fs.IntVar(&rf.concurrency, "concurrency", 0, "how many requests are in flight at once (0: all of them)")
	fs.Var(&rf.decline, "decline", "COMPONENT=REASON: the backend declines grouped execution of COMPONENT (repeatable); it runs one request per invocation and the decline is counted")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || rf.requests == "" {
		fs.Usage()
		return exitUsage
	}
	f, pkgDir, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	return runPlan(e, f, pkgDir, rf)
}

// loadPlan reads a plan file (checked against its package) or compiles a
// package in memory.
func loadPlan(e *env, path string) (*plan.File, string, int) {
	if b, err := os.ReadFile(path); err == nil && plan.LooksLikePlan(b) {
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

// runBackends returns the backends the CLI runs a plan with: ONNX Runtime for
// the onnx components it invokes and the built-in preprocessing adapters
// (which run its preprocessing programs) for adapter components. Binding
// components need an application to register them.
func runBackends(f *plan.File, threads int, notReady map[string]string) (map[ir.ImplKind]backend.Backend, error) {
	m := f.IR
	return backends.For(m, ort.Options{IntraOpThreads: threads, NotReady: notReady}, nil)
}

func runPlan(e *env, f *plan.File, pkgDir string, rf runFlags) int {
	reqs, err := readRequestsFile(rf.requests)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	bes, err := runBackends(f, rf.threads, rf.decline)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	eng, err := vm.Open(f, pkgDir, vm.Options{Backends: bes, Solo: rf.solo, MaxDelay: rf.maxDelay, Queue: rf.queue, Workers: rf.workers})
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	defer eng.Close()
	resps := eng.RunAllLimit(context.Background(), reqs, rf.concurrency)
	var stats *vm.Stats
	if rf.stats {
		s := eng.Stats()
		stats = &s
	}
	var w io.Writer = e.stdout
	if rf.out != "" {
		out, err := os.Create(rf.out)
		if err != nil {
			return ioError(e, err)
		}
		defer out.Close()
		w = out
	}
	if err := jsonio.WriteResponses(w, resps, stats); err != nil {
		return ioError(e, err)
	}
	failed := 0
	for _, r := range resps {
		if r.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "genaic: %d of %d requests failed\n", failed, len(resps))
		return exitDiags
	}
	return exitOK
}
