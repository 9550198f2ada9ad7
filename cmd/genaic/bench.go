package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

func init() {
	register(command{
		name:    "bench",
		usage:   "bench PKG|plan.json --requests FILE [--rounds N] [--max-delay D] [--workers N] [--threads N] [--provider P] [--backend KIND=NAME]",
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

// benchFlags are the options of one bench run.
type benchFlags struct {
	requests string
	engineFlags
	rounds int
}

func runBench(e *env, args []string) int {
	c := commands["bench"]
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var bf benchFlags
	fs.StringVar(&bf.requests, "requests", "", "the requests document, as for genaic run")
	fs.IntVar(&bf.rounds, "rounds", 5, "how many times each mode runs every request")
	bf.register(fs, 0, "the grouped mode's max delay (0: group what is already waiting)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 || bf.requests == "" || bf.rounds < 1 {
		fs.Usage()
		return exitUsage
	}
	f, pkgDir, code := loadPlan(e, paths[0])
	if f == nil {
		return code
	}
	reqs, err := readRequestsFile(bf.requests)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "%d requests × %d rounds per mode, max delay %v\n", len(reqs), bf.rounds, bf.maxDelay)
	var base float64
	for _, m := range benchModes {
		eng, err := engine.Open(f, pkgDir, bf.options(m.solo))
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		perSec, elapsed, err := timeMode(eng, reqs, m, bf.rounds)
		if err != nil {
			eng.Close()
			e.errorf("%v", err)
			return exitDiags
		}
		if base == 0 {
			base = perSec
		}
		fmt.Fprintf(e.stdout, "%-14s %9.1f requests/s  %6.2fx grouped  (%v)\n", m.name, perSec, perSec/base, elapsed.Round(time.Millisecond))
		printGroups(e, eng.Stats())
		eng.Close()
	}
	return exitOK
}

// readRequestsFile reads a requests document; .npy paths are relative to it.
func readRequestsFile(path string) ([]vm.Request, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	reqs, err := jsonio.ReadRequests(file, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return reqs, nil
}

// timeMode runs every request rounds times in one mode and returns the
// requests per second.
func timeMode(eng *vm.Engine, reqs []vm.Request, m benchMode, rounds int) (float64, time.Duration, error) {
	start := time.Now()
	for range rounds {
		for _, r := range eng.RunAllLimit(context.Background(), reqs, m.concurrency) {
			if r.Err != nil {
				return 0, 0, fmt.Errorf("request %s failed in %s mode: %v", r.ID, m.name, r.Err)
			}
		}
	}
	elapsed := time.Since(start)
	return float64(len(reqs)*rounds) / elapsed.Seconds(), elapsed, nil
}

func printGroups(e *env, s vm.Stats) {
	for _, name := range s.Names() {
		cs := s.Components[name]
		fmt.Fprintf(e.stdout, "  %-12s %d invocations for %d request items, largest group %d, padding overhead %.2f\n",
			name, cs.Invocations, cs.Requests, cs.MaxGroupRequests, cs.PaddingOverhead)
	}
}
