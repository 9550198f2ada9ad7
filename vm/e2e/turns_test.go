package e2e

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// Interleaved ways collect their own garbage.
//
// The benchmarks that interleave ways document by document (Workloads,
// WorkloadFloor, Release, Served) run them in one process, on one heap: a
// collection that one way's garbage starts marks on through the turns
// that follow it, so a way that allocates little pays for ways that
// allocate much: the ideal's direct calls allocate their outputs afresh,
// the grouped engine, its responses released, hardly anything, so the
// collector's work would fall mostly in other ways' turns. Each way is timed as if it ran alone, garbage and all: the
// collector is off while the ways take turns, each way's allocation is
// counted, and a way whose garbage reaches what the collector lets the
// heap grow between collections (its goal less the live heap, measured
// when the turns start) collects at the end of its turn, timed with it.
// (A forced collection blocks its caller where a paced one marks beside
// it; either costs the way whose garbage it is about the same work.)
//
// A turn's CPU time (the process's, user and system) is counted too: on a
// saturated machine throughput is the cores over the CPU a request takes,
// so the CPU a way spends per request beyond another's says in absolute
// terms what separates them.
type turns struct {
	debt   []uint64        // per way: what it allocated since its last collection
	cpu    []time.Duration // per way: the CPU time of its turns
	room   uint64
	sample []metrics.Sample
}

func newTurns(b *testing.B, ways int) *turns {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	t := &turns{debt: make([]uint64, ways), cpu: make([]time.Duration, ways), room: s[0].Value.Uint64() - s[1].Value.Uint64(),
		sample: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}}
	old := debug.SetGCPercent(-1)
	b.Cleanup(func() { debug.SetGCPercent(old) })
	return t
}

// allocated is what the process has allocated so far.
func (t *turns) allocated() uint64 {
	metrics.Read(t.sample)
	return t.sample[0].Value.Uint64()
}

// take runs way i's turn and returns the time it took, with the
// collection of its garbage where the turn brought that to the room.
func (t *turns) take(i int, run func()) time.Duration {
	before := t.allocated()
	cpu := cpuTime()
	start := time.Now()
	run()
	d := time.Since(start)
	if t.debt[i] += t.allocated() - before; t.debt[i] >= t.room {
		start = time.Now()
		runtime.GC()
		d += time.Since(start)
		t.debt[i] = 0
	}
	t.cpu[i] += cpuTime() - cpu
	return d
}

// cpuTime is the CPU time, user and system, the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
