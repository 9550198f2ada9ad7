package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ort"
)

// The throughput benchmarks (row 28) run, on the VM, the same N concurrent
// requests three ways in every iteration, so that the ratios compare like with like
// on one machine state:
//
//	solo     an engine with Solo: true, one invocation per request
//	grouped  an engine that groups them (the budgets decide the groups)
//	ideal    one direct ONNX Runtime call (the vm/ort backend's
//	         Session.Run) on a batch of all the requests' items assembled by
//	         hand before the clock starts, ignoring every budget
//
// and report items per second for each, with grouped/solo and
// grouped/ideal. image_padded is a tiny model, so its figures are bound by
// the runtime's overhead; the wakeword CNN is bound by the model.
//
//	go test ./vm/e2e -run '^$' -bench . -benchtime 20x -count 5

// benchCase is one workload: requests, the hand-assembled ideal batch, and
// how many items they hold.
type benchCase struct {
	pkg, component string
	reqs           []vm.Request
	ideal          map[string]*backend.Tensor
	output         string // the ideal call's output
	items          int64
}

// imagePaddedWorkload is 64 requests of 1 to 3 images, each request with
// its own patch extent in [1, 8]; the ideal batch pads every image to the
// widest.
func imagePaddedWorkload() benchCase {
	rng := rand.New(rand.NewPCG(28, 1))
	c := benchCase{pkg: "image_padded", component: "encoder", output: "embeddings"}
	for i := range 64 {
		c.reqs = append(c.reqs, fixtures.ImagePadded(rng, fmt.Sprint("r", i), 1+rng.IntN(3)))
	}
	var lengths, perRequest []int64
	extent := int64(0)
	for _, r := range c.reqs {
		x := r.Inputs["pixel_patches"]
		extent = max(extent, x.Shape[1])
		lengths = append(lengths, r.Inputs["patch_lengths"].Int64s()...)
		perRequest = append(perRequest, x.Shape[0])
		c.items += x.Shape[0]
	}
	batch, _ := backend.NewTensor("float32", []int64{c.items, extent, 8})
	dst, row := batch.Float32s(), int64(0)
	for _, r := range c.reqs {
		x := r.Inputs["pixel_patches"]
		src := x.Float32s()
		for i := range x.Shape[0] {
			for p := range x.Shape[1] {
				copy(dst[((row+i)*extent+p)*8:((row+i)*extent+p+1)*8], src[(i*x.Shape[1]+p)*8:(i*x.Shape[1]+p+1)*8])
			}
		}
		row += x.Shape[0]
	}
	offsets := []int64{0}
	for _, n := range perRequest {
		offsets = append(offsets, offsets[len(offsets)-1]+n)
	}
	c.ideal = map[string]*backend.Tensor{
		"pixel_patches": batch,
		"patch_lengths": fixtures.I64(lengths...),
		"image_offsets": fixtures.I64(offsets...),
		"image_owner":   fixtures.I64(fixtures.OwnerOf(offsets)...),
	}
	return c
}

// wakewordWorkload is 32 requests of 2 windows each (two groups of the
// 32-window budget); the ideal batch is all 64 windows.
func wakewordWorkload() benchCase {
	rng := rand.New(rand.NewPCG(28, 2))
	c := benchCase{pkg: "wakeword", component: "embedding", output: "conv2d_19"}
	var data []float32
	for i := range 32 {
		r := fixtures.Wakeword(rng, fmt.Sprint("r", i), 2)
		c.reqs = append(c.reqs, r)
		data = append(data, r.Inputs["windows"].Float32s()...)
		c.items += 2
	}
	c.ideal = map[string]*backend.Tensor{"input_1": fixtures.F32([]int64{c.items, 76, 32, 1}, data)}
	return c
}

func BenchmarkThroughput(b *testing.B) {
	for _, w := range []func() benchCase{imagePaddedWorkload, wakewordWorkload} {
		c := w()
		for _, threads := range []int{1, 0} {
			for _, delay := range []time.Duration{0, time.Millisecond} {
				name := fmt.Sprintf("%s/threads=%d/max_delay=%s", c.pkg, threads, delay)
				if threads == 0 {
					name = fmt.Sprintf("%s/threads=auto/max_delay=%s", c.pkg, delay)
				}
				b.Run(name, func(b *testing.B) { benchThroughput(b, c, threads, delay) })
			}
		}
	}
}

func benchThroughput(b *testing.B, c benchCase, threads int, delay time.Duration) {
	be := backendWith(b, ort.Options{IntraOpThreads: threads})
	fx := fixtures.Lookup(c.pkg)
	soloEngine := vmEngine.start(b, fx, genrt.WithSolo(), genrt.WithBackend(ir.ImplONNX, be))
	groupEngine := vmEngine.start(b, fx, genrt.WithMaxDelay(delay), genrt.WithBackend(ir.ImplONNX, be))
	direct := session(b, fx, c.component, be)
	ctx := context.Background()
	check := func(res []vm.Response) {
		for _, r := range res {
			if r.Err != nil {
				b.Fatalf("%s: %v", r.ID, r.Err)
			}
		}
	}
	// Warm up every path once (and check it works) before the clock runs.
	check(runAll(ctx, soloEngine, c.reqs))
	check(runAll(ctx, groupEngine, c.reqs))
	if _, err := direct.Run(ctx, c.ideal, []string{c.output}); err != nil {
		b.Fatal(err)
	}
	before := groupEngine.Stats().Components[c.component]
	var soloTime, groupTime, idealTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		runAll(ctx, soloEngine, c.reqs)
		soloTime += time.Since(start)
		start = time.Now()
		runAll(ctx, groupEngine, c.reqs)
		groupTime += time.Since(start)
		start = time.Now()
		if _, err := direct.Run(ctx, c.ideal, []string{c.output}); err != nil {
			b.Fatal(err)
		}
		idealTime += time.Since(start)
	}
	items := float64(c.items) * float64(b.N)
	soloRate, groupRate, idealRate := items/soloTime.Seconds(), items/groupTime.Seconds(), items/idealTime.Seconds()
	b.ReportMetric(soloRate, "solo-items/s")
	b.ReportMetric(groupRate, "grouped-items/s")
	b.ReportMetric(idealRate, "ideal-items/s")
	b.ReportMetric(groupRate/soloRate, "grouped/solo")
	b.ReportMetric(groupRate/idealRate, "grouped/ideal")
	after := groupEngine.Stats().Components[c.component]
	b.ReportMetric(float64(after.Invocations-before.Invocations)/float64(b.N), "groups/op")
	b.ReportMetric(0, "ns/op") // the sum of three runs means nothing
}

// vmEngine is the engine the throughput benchmarks measure; package
// codegen's BenchmarkExecutor compares it with generated executors.
var vmEngine = engines[0]
