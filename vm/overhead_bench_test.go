package vm

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// BenchmarkRuntimeOverhead measures the runtime's own cost per request
// (admission, grouping, assembly, split) with a component that does no
// work, grouped and solo, side by side; served by callers of Run; and
// served with the images given as items (served/items: each image one
// item, packed and its companions derived, the answer joined back into
// items), as genaic serve's clients send media.
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
	// The same requests with each image an item (served/items).
	items := make([]Request, len(reqs))
	for i, r := range reqs {
		x := r.Inputs["pixel_patches"]
		var images []*backend.Tensor
		for k, n := range r.Inputs["patch_lengths"].Int64s() {
			row := x.Shape[1] * x.Shape[2]
			images = append(images, &backend.Tensor{DType: "float32", Shape: []int64{n, x.Shape[2]},
				Data: x.Float32s()[int64(k)*row : int64(k)*row+n*x.Shape[2]]})
		}
		items[i] = Request{ID: r.ID, Items: map[string][]Item{"pixel_patches": TensorItems(images...)}}
	}
	// served: callers of Run that each send their next request as soon
	// as the last is answered, as a server's connections and genaic
	// bench's clients do, for as long as the iterations' requests last
	// (an iteration is 64 requests answered). Nothing holds a caller
	// back between its requests: a barrier each round would measure its
	// own wakes.
	for _, c := range []struct {
		name    string
		callers int
		reqs    []Request
	}{{"served/callers=16", 16, reqs}, {"served/callers=64", 64, reqs}, {"served/items", 16, items}} {
		callers, reqs := c.callers, c.reqs
		b.Run(c.name, func(b *testing.B) {
			e := engineWith(b, free, Options{}, nil)
			defer e.Close()
			var left atomic.Int64
			left.Store(int64(b.N * len(reqs)))
			var all sync.WaitGroup
			cpu := cpuTime()
			b.ResetTimer()
			for c := range callers {
				all.Go(func() {
					for i := c; left.Add(-1) >= 0; i += callers {
						if r := e.Run(context.Background(), reqs[i%len(reqs)]); r.Err != nil {
							b.Error(r.Err)
						}
					}
				})
			}
			all.Wait()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*len(reqs)), "cpu-ns/request")
		})
	}
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
