package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	fs.StringVar(&rf.requests, "requests", "", "the requests document: {\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]}")
	fs.StringVar(&rf.out, "out", "", "write the responses here instead of stdout")
	fs.BoolVar(&rf.solo, "solo", false, "run every invocation with exactly one request (the reference)")
	fs.BoolVar(&rf.stats, "stats", false, "add per-component stats to the responses")
	rf.register(fs, 5*time.Millisecond, "how long a group waits for more items")
	fs.IntVar(&rf.concurrency, "concurrency", 0, "how many requests are in flight at once (0: all of them)")
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

func runPlan(e *env, f *plan.File, pkgDir string, rf runFlags) int {
	reqs, err := readRequestsFile(rf.requests)
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
	if failed := reportFailures(e, f, pkgDir, resps); failed > 0 {
		fmt.Fprintf(e.stderr, "genaic: %d of %d requests failed\n", failed, len(resps))
		return exitDiags
	}
	return exitOK
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
