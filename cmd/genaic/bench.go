package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/genaic/genaic/vm"
)

func init() {
	register(command{
		name:    "bench",
		usage:   "bench PKG|plan.json --requests FILE [--rounds N] [--max-delay D] [--workers N]",
		summary: "measure grouped vs one-at-a-time vs sequential runs of the same requests",
		run:     runBench,
	})
}

// benchMode is one way of running the same requests.
type benchMode struct {
	name        string
	solo        bool
	concurrency int // 0: all at once; 1: one after another
}

var benchModes = []benchMode{
	{name: "grouped", solo: false},
	{name: "one-at-a-time", solo: true},
	{name: "sequential", solo: true, concurrency: 1},
}

func runBench(e *env, args []string) int {
	c := commands["bench"]
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	requests := fs.String("requests", "", "the requests document, as for genaic run")
	rounds := fs.Int("rounds", 5, "how many times each mode runs every request")
	maxDelay := fs.Duration("max-delay", 0, "the grouped mode's max delay (0: group what is already waiting)")
	threads := fs.Int("threads", 0, "ONNX Runtime intra-op threads (0: its default)")
	workers := fs.Int("workers", 1, "how many groups of one component may be formed and run at once")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || *requests == "" || *rounds < 1 {
		fs.Usage()
		return exitUsage
	}
	f, pkgDir, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	file, err := os.Open(*requests)
	if err != nil {
		return ioError(e, err)
	}
	reqs, err := vm.ReadRequests(file, filepath.Dir(*requests))
	file.Close()
	if err != nil {
		e.errorf("%s: %v", *requests, err)
		return exitUsage
	}
	bes, err := runBackends(f, *threads, nil)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "%d requests × %d rounds per mode, max delay %v\n", len(reqs), *rounds, *maxDelay)
	var base float64
	for _, m := range benchModes {
		eng, err := vm.Open(f, pkgDir, vm.Options{Backends: bes, Solo: m.solo, MaxDelay: *maxDelay, Workers: *workers})
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		start := time.Now()
		for range *rounds {
			for _, r := range eng.RunAllLimit(context.Background(), reqs, m.concurrency) {
				if r.Err != nil {
					eng.Close()
					e.errorf("request %s failed in %s mode: %v", r.ID, m.name, r.Err)
					return exitDiags
				}
			}
		}
		elapsed := time.Since(start)
		perSec := float64(len(reqs)**rounds) / elapsed.Seconds()
		if base == 0 {
			base = perSec
		}
		fmt.Fprintf(e.stdout, "%-14s %9.1f requests/s  %6.2fx grouped  (%v)\n", m.name, perSec, perSec/base, elapsed.Round(time.Millisecond))
		printGroups(e, eng.Stats())
		eng.Close()
	}
	return exitOK
}

func printGroups(e *env, s vm.Stats) {
	for _, name := range s.Names() {
		cs := s.Components[name]
		fmt.Fprintf(e.stdout, "  %-12s %d invocations for %d request items, largest group %d, padding overhead %.2f\n",
			name, cs.Invocations, cs.Requests, cs.MaxGroupRequests, cs.PaddingOverhead)
	}
}
