package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGC: genaic raises the collector's target only where the user
// has not chosen one.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tuneGC(func(string) string { return "50" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the target became %d", got)
	}
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC, the target is %d, want %d", got, gcPercent)
	}
}
