package codegen_test

import (
	"context"
	"sync"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/examples/audio"
	"github.com/genaic/genaic/examples/imagepadded"
	"github.com/genaic/genaic/examples/videoframes"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ort"
)

// runFunc runs one request and reports its failure.
type runFunc func(ctx context.Context, req vm.Request) error

// opener opens a committed executor with max_delay 0 (a group takes what
// is waiting and never waits for more) on ONNX Runtime, or on be.
type opener func(dir string, be backend.Backend) (runFunc, func() error, error)

var benchExecutors = map[string]opener{
	"imagepadded": func(dir string, be backend.Backend) (runFunc, func() error, error) {
		opts := []imagepadded.Option{genrt.WithMaxDelay(0), genrt.WithBackendConfig(oneThread)}
		if be != nil {
			opts = append(opts, genrt.WithBackend(ir.ImplONNX, be))
		}
		x, err := imagepadded.New(dir, opts...)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, r vm.Request) error {
			_, err := x.Run(ctx, &imagepadded.Request{PixelPatches: r.Inputs["pixel_patches"], PatchLengths: r.Inputs["patch_lengths"],
				ImageOffsets: r.Inputs["image_offsets"], ImageOwner: r.Inputs["image_owner"]})
			return err
		}, x.Close, nil
	},
	"videoframes": func(dir string, _ backend.Backend) (runFunc, func() error, error) {
		x, err := videoframes.New(dir, genrt.WithMaxDelay(0), genrt.WithBackendConfig(oneThread))
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, r vm.Request) error {
			_, err := x.Run(ctx, &videoframes.Request{PixelValues: r.Inputs["pixel_values"], PatchLengths: r.Inputs["patch_lengths"],
				FrameOffsets: r.Inputs["frame_offsets"], FrameOwner: r.Inputs["frame_owner"],
				ClipOffsets: r.Inputs["clip_offsets"], ClipOwner: r.Inputs["clip_owner"]})
			return err
		}, x.Close, nil
	},
	"audio": func(dir string, _ backend.Backend) (runFunc, func() error, error) {
		x, err := audio.New(dir, genrt.WithMaxDelay(0), genrt.WithBackendConfig(oneThread))
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, r vm.Request) error {
			_, err := x.Run(ctx, &audio.Request{Spectrogram: r.Inputs["spectrogram"], FrameOffsets: r.Inputs["frame_offsets"],
				FrameOwner: r.Inputs["frame_owner"], WindowOffsets: r.Inputs["window_offsets"], WindowOwner: r.Inputs["window_owner"]})
			return err
		}, x.Close, nil
	},
}

// zeroEncoder stands in for the image encoder: a zero embedding per image,
// computed in no time, so that what is measured is the runtime around it.
func zeroEncoder(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	t, err := backend.NewTensor("float32", []int64{in["pixel_patches"].Shape[0], 4})
	return map[string]*backend.Tensor{"embeddings": t}, err
}

// BenchmarkExecutor compares the generated executor with the VM on the
// same 16 concurrent requests per iteration, on ONNX Runtime and, for the
// image encoder, on a Go stand-in that costs nothing, which leaves the
// runtime's own work (interpretation, admission, grouping, splitting) to
// compare. Compare vm with generated in benchstat; ns/request is per
// request.
func BenchmarkExecutor(b *testing.B) {
	for _, name := range []string{"imagepadded", "videoframes", "audio"} {
		fx := fixtures.Lookup(name)
		reqs := fx.Requests(7, 16)
		backends := map[string]backend.Backend{"ort": nil}
		if name == "imagepadded" {
			stub := &backend.Bindings{}
			stub.Register("encoder", zeroEncoder)
			backends["stub"] = stub
		}
		for _, beName := range []string{"ort", "stub"} {
			be, ok := backends[beName]
			if !ok {
				continue
			}
			b.Run(name+"/"+beName+"/vm", func(b *testing.B) {
				e := benchEngine(b, fx, be)
				measure(b, reqs, func(ctx context.Context, r vm.Request) error { return e.Run(ctx, r).Err })
			})
			b.Run(name+"/"+beName+"/generated", func(b *testing.B) {
				_, dir := fixtures.Compile(b, fx)
				run, closeFn, err := benchExecutors[name](dir, be)
				if err != nil {
					b.Fatalf("%v: %s", err, fixtures.FixSetup)
				}
				defer closeFn()
				measure(b, reqs, run)
			})
		}
	}
}

func benchEngine(b *testing.B, fx fixtures.Fixture, be backend.Backend) *vm.Engine {
	b.Helper()
	if be == nil {
		o, err := ort.New(ortOptions)
		if err != nil {
			b.Fatalf("ONNX Runtime is not available (%v): %s", err, fixtures.FixSetup)
		}
		be = o
	}
	f, dir := fixtures.Compile(b, fx)
	e, err := vm.Open(f, dir, vm.Backends{ir.ImplONNX: be}, vm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// measure runs every request concurrently per iteration, as a server
// would, and reports the time per request.
func measure(b *testing.B, reqs []vm.Request, run runFunc) {
	ctx := context.Background()
	b.ReportAllocs()
	errs := make([]error, len(reqs))
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = run(ctx, reqs[i])
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				b.Fatalf("%s: %v", reqs[i].ID, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
}
