package vm

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// BenchmarkRuntimeOverhead measures the runtime's own cost per request
// (admission, grouping, assembly, split) with a component that does no
// work, grouped and solo, side by side.
func BenchmarkRuntimeOverhead(b *testing.B) {
	free := func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		p := in["pixel_patches"].Shape[0]
		return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{p, 4}, Data: make([]float32, p*4)}}, nil
	}
	rng := rand.New(rand.NewSource(1))
	reqs := make([]Request, 64)
	for i := range reqs {
		reqs[i] = imageRequest(rng, fmt.Sprint(i), 1+rng.Intn(3))
	}
	for _, solo := range []bool{false, true} {
		b.Run(fmt.Sprintf("solo=%v", solo), func(b *testing.B) {
			e := engineWith(b, free, Options{Solo: solo}, nil)
			defer e.Close()
			cpu := cpuTime()
			for b.Loop() {
				for _, r := range e.RunAll(context.Background(), reqs) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*len(reqs)), "cpu-ns/request")
		})
	}
	// served: as many callers as requests, each sending its request
	// through Run once the last is answered, as a server's connections
	// do; an iteration is every caller's request answered once.
	b.Run("served", func(b *testing.B) {
		e := engineWith(b, free, Options{}, nil)
		defer e.Close()
		var round sync.WaitGroup
		start := make(chan struct{})
		for i := range reqs {
			go func() {
				for range start {
					if r := e.Run(context.Background(), reqs[i]); r.Err != nil {
						b.Error(r.Err)
					}
					round.Done()
				}
			}()
		}
		defer close(start)
		cpu := cpuTime()
		for b.Loop() {
			round.Add(len(reqs))
			for range reqs {
				start <- struct{}{}
			}
			round.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*len(reqs)), "cpu-ns/request")
	})
}

// cpuTime is the CPU time (user and system) the process has used: the
// runtime's cost per request is CPU, which wall time on a busy machine
// hides.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
