package e2e

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm/ort"
)

// BenchmarkBeside measures how much work on another processor slows a
// direct ONNX Runtime call: the 64-image workload's ideal calls, timed
// while a second goroutine does nothing, arithmetic, allocation (the
// runtime's own kind of work: small objects, the collector), a walk over
// 256 KB (assembling a group's buffers), or yields in a loop (a spinning
// waiter). Every way takes a turn in every iteration, and each is reported
// as a ratio of time to the idle way's.
//
// It says whether overlapping the runtime's work with the invocations can
// pay on a machine: a pipeline that assembles group k+1 while group k
// runs gains the work it hides and loses what that work slows the call
// by (RATIONALE, "A runner assembles into its own buffers; it does not
// pipeline"; the figures are in docs/perf.md).
//
//	go test ./vm/e2e -run '^$' -bench Beside -benchtime 10x -count 3
func BenchmarkBeside(b *testing.B) {
	w := workloadNamed(b, "image_padded/64")
	fx := fixtures.Lookup(w.pkg)
	f, _ := fixtures.Compile(b, fx)
	reqs := readDocument(b, w.pkg, w.doc)
	be := backendWith(b, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	ideal := idealCalls(b, idealInputs(b, w, f.Component(fx.Component), reqs), w.output, session(b, fx, fx.Component, be))
	ideal() // warm up
	times := make([]time.Duration, len(besides))
	for b.Loop() {
		for i, beside := range besides {
			times[i] += timeBeside(beside.work, ideal)
		}
	}
	for i, beside := range besides[1:] {
		b.ReportMetric(float64(times[i+1])/float64(times[0]), beside.name+"/idle")
	}
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
	b.ReportMetric(0, "ns/op") // the sum of every way's time means nothing
}

// besides are the works BenchmarkBeside runs beside the calls; the first
// is none.
var besides = []struct {
	name string
	work func(stop *atomic.Bool)
}{
	{"idle", nil},
	{"arith", func(stop *atomic.Bool) {
		x := 1.0
		for !stop.Load() {
			for range 1000 {
				x = x*1.0000001 + 1e-9
			}
		}
		sink.Store(int64(x))
	}},
	{"alloc", func(stop *atomic.Bool) {
		kept := make([][]byte, 0, 1024)
		for !stop.Load() {
			if kept = append(kept, make([]byte, 256)); len(kept) == cap(kept) {
				kept = kept[:0]
			}
		}
	}},
	{"walk256k", func(stop *atomic.Bool) {
		buf := make([]float32, 64<<10)
		for !stop.Load() {
			for i := range buf {
				buf[i]++
			}
		}
		sink.Store(int64(buf[0]))
	}},
	{"yield", func(stop *atomic.Bool) {
		for !stop.Load() {
			runtime.Gosched()
		}
	}},
}

// sink keeps the works' results alive.
var sink atomic.Int64

// besideDocs is how many documents' calls one way's turn times.
const besideDocs = 50

// timeBeside times besideDocs runs of calls while work runs on another
// goroutine (nil: none), started before the clock and stopped after it.
// The clock starts a millisecond after the work: a new goroutine first
// runs on its creator's processor, and the scheduler needs the time to
// put the two on different ones.
func timeBeside(work func(*atomic.Bool), calls func()) time.Duration {
	var stop atomic.Bool
	done := make(chan struct{})
	if work != nil {
		go func() {
			work(&stop)
			close(done)
		}()
	}
	time.Sleep(time.Millisecond)
	start := time.Now()
	for range besideDocs {
		calls()
	}
	d := time.Since(start)
	stop.Store(true)
	if work != nil {
		<-done
	}
	return d
}

// workloadNamed is the workload of that name.
func workloadNamed(tb testing.TB, name string) workload {
	for _, w := range workloads {
		if w.name == name {
			return w
		}
	}
	tb.Fatalf("no workload %q", name)
	return workload{}
}
