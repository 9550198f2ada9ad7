package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcPercent is the collector's target genaic sets when GOGC is unset. A
// serving process's garbage is short-lived per-request bookkeeping over a
// small live heap, so Go's default (100) collects very often: at 400 the
// no-op-backend runtime costs 3.5 µs of CPU per grouped request instead
// of 4.0 (BenchmarkRuntimeOverhead, interleaved, 3 runs each), for a heap
// that may grow to five times what is live. GOGC (and GOMEMLIMIT) set by
// the user win.
const gcPercent = 400

// gcHeadroom bounds the growth the raised target buys: five times a live
// heap of a few megabytes is nothing, but five times a large one (a bench
// of 256 k requests keeps 330 MB of decoded tensors live) is gigabytes.
// After every collection the target is lowered, for as long as the live
// heap stays large, so that the heap may grow by at most gcHeadroom or by
// what is live, whichever is more: Go's default (100) is the floor.
const gcHeadroom = 256 << 20

// tuneGC applies gcPercent unless the environment sets GOGC, and keeps it
// within gcHeadroom as the live heap grows (gcTuner). stop ends the
// tuning, leaving the target where it is.
func tuneGC(getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	t := &gcTuner{headroom: gcHeadroom, most: gcPercent}
	t.start()
	return t.stop
}

// gcTuner sets the collector's target after each collection from the live
// heap that collection found: most, or less where most would let the heap
// grow by more than headroom.
type gcTuner struct {
	headroom uint64
	most     int

	mu      sync.Mutex
	set     int // the target last set
	stopped bool
	live    [1]metrics.Sample
}

// gcSentinel is what the tuner watches: one is allocated, dropped, and
// collected by every cycle, whose cleanup tunes and allocates the next.
// It is 16 bytes and holds a pointer, so that it is an object of its own
// and not part of a tiny allocator's block, which would keep it alive
// with its neighbours.
type gcSentinel struct {
	_ *byte
	_ uint64
}

// target is the percent for a live heap of live bytes.
func (t *gcTuner) target(live uint64) int {
	if live == 0 {
		return t.most
	}
	return int(min(max(t.headroom*100/live, 100), uint64(t.most)))
}

func (t *gcTuner) start() {
	t.live[0].Name = "/gc/heap/live:bytes"
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set = t.most
	debug.SetGCPercent(t.most)
	t.arm()
}

// arm asks to be called after the next collection.
func (t *gcTuner) arm() {
	runtime.AddCleanup(&gcSentinel{}, (*gcTuner).collected, t)
}

// collected runs on the runtime's cleanup goroutine after a collection.
func (t *gcTuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	metrics.Read(t.live[:])
	if t.live[0].Value.Kind() == metrics.KindUint64 {
		if p := t.target(t.live[0].Value.Uint64()); p != t.set {
			debug.SetGCPercent(p)
			t.set = p
		}
	}
	t.arm()
}

func (t *gcTuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
}
