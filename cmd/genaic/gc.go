package main

import (
	"runtime/debug"
)

// gcPercent is the collector's target genaic sets when GOGC is unset. A
// serving process's garbage is short-lived per-request bookkeeping over a
// small live heap, so Go's default (100) collects very often: at 400 the
// no-op-backend runtime costs 3.5 µs of CPU per grouped request instead
// of 4.0 (BenchmarkRuntimeOverhead, interleaved, 3 runs each), for a heap
// that may grow to five times what is live. GOGC (and GOMEMLIMIT) set by
// the user win.
const gcPercent = 400

// tuneGC applies gcPercent unless the environment sets GOGC.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
