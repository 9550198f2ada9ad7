package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestTuneGC: genaic raises the collector's target only where the user
// has not chosen one.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tuneGC(func(string) string { return "50" })()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the target became %d", got)
	}
	tuneGC(func(string) string { return "" })()
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC, the target is %d, want %d", got, gcPercent)
	}
}

// TestGCTarget: the raised target lets the heap grow by at most the
// headroom, or by what is live, whichever is more.
func TestGCTarget(t *testing.T) {
	tu := &gcTuner{headroom: 256 << 20, most: 400}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400}, {10 << 20, 400}, {64 << 20, 400}, {128 << 20, 200},
		{200 << 20, 128}, {256 << 20, 100}, {4 << 30, 100},
	} {
		if got := tu.target(c.live); got != c.want {
			t.Errorf("live %d MiB: target %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestGCTunerFollowsLiveHeap: with a live heap of four times the
// headroom the tuner lowers the target to Go's default after a
// collection, and raises it again once that heap is dropped. The
// headroom is taken well above what the process already holds live (the
// package's other tests leave some), so that only the test's own heap
// moves the target.
func TestGCTunerFollowsLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	runtime.GC()
	held := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(held)
	headroom := max(16<<20, 8*held[0].Value.Uint64())
	tu := &gcTuner{headroom: headroom, most: 400}
	tu.start()
	defer tu.stop()
	settles := func(want int) {
		t.Helper()
		sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		deadline := time.Now().Add(time.Minute) // a hang guard
		for {
			runtime.GC() // the tuner runs after a collection, on the cleanup goroutine
			metrics.Read(sample)
			got := int(sample[0].Value.Uint64())
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the target stayed %d, want %d", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	live := make([][]byte, 4*headroom>>20)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 4 × the headroom in all
	}
	settles(100)
	runtime.KeepAlive(live)
	live = nil
	settles(400)
}
