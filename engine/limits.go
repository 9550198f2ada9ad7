package engine

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm/adapters"
)

// The limits of the engine's settings: the command line's flags and
// `genaic serve --config` check them here, so that both refuse the same
// values with the same words. Each bound stops a value that only costs
// memory, threads or time without serving faster.
const (
	// MaxWorkers bounds the groups of one component formed and run at
	// once: each holds a goroutine and its buffers, and past the cores
	// more of them only wait on each other.
	MaxWorkers = 1024
	// MaxQueue bounds the items that may wait for one component.
	MaxQueue = 1 << 20
	// MaxDelay bounds how long a group waits for more items: a lone
	// request is always answered within it (and warm-up, which waits on
	// every group it forms, ends).
	MaxDelay = 10 * time.Second
	// MaxMediaBytes bounds the memory budget of one request's decoded
	// media (adapters.Backend.MaxMediaBytes), from 1 MiB.
	MaxMediaBytes = 64 << 30
	minMediaBytes = 1 << 20
)

// MaxThreads is the most ONNX Runtime intra-op threads a run takes: four
// per CPU of this machine (more only multiplies OS threads and memory).
func MaxThreads() int { return runtime.NumCPU() * 4 }

// CheckWorkers, CheckThreads, CheckQueue and CheckMaxDelay check one
// setting against its limit. The error says what is wanted; the caller
// puts the setting's name and value before it ("--workers 5000: ...").
func CheckWorkers(n int) error {
	if n < 0 || n > MaxWorkers {
		return fmt.Errorf("want 0 (planned, or 1) to %d groups of a component that may run at once", MaxWorkers)
	}
	return nil
}

// CheckThreads: see CheckWorkers.
func CheckThreads(n int) error {
	if n < 0 || n > MaxThreads() {
		return fmt.Errorf("want 0 (ONNX Runtime's default) to %d (4 per CPU of this machine)", MaxThreads())
	}
	return nil
}

// CheckQueue: see CheckWorkers.
func CheckQueue(n int) error {
	if n < 1 || n > MaxQueue {
		return fmt.Errorf("want 1 to %d items waiting for one component", MaxQueue)
	}
	return nil
}

// CheckMaxDelay: see CheckWorkers.
func CheckMaxDelay(d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("want 0 to %v: how long a group waits for more items (a lone request waits all of it)", MaxDelay)
	}
	return nil
}

// CheckMaxMediaBytes: see CheckWorkers.
func CheckMaxMediaBytes(n int64) error {
	if n != 0 && (n < minMediaBytes || n > MaxMediaBytes) {
		return fmt.Errorf("want 0 (the default, %d) or %d to %d bytes of decoded media per request", adapters.DefaultMaxMediaBytes, minMediaBytes, int64(MaxMediaBytes))
	}
	return nil
}

// CheckDeclines refuses each --decline whose component is none of
// components (a key naming no component matches any): one line per such
// decline, naming the components there are.
func CheckDeclines(d backend.Declines, components []string) error {
	known := map[string]bool{}
	for _, c := range components {
		known[c] = true
	}
	names := slices.Sorted(maps.Keys(known))
	keys := slices.SortedFunc(maps.Keys(d), func(a, b backend.ReadinessKey) int { return strings.Compare(a.String(), b.String()) })
	var errs []error
	for _, k := range keys {
		if k.Component != "" && !known[k.Component] {
			errs = append(errs, fmt.Errorf("--decline %s: there is no component %q (the components: %s; * matches any)", k, k.Component, strings.Join(names, ", ")))
		}
	}
	return errors.Join(errs...)
}
