//go:build cgo

package ort

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/ortlib"
)

// Tests that need ONNX Runtime or a model fail, never skip, when it is
// missing: "make setup" provides both.
const fixSetup = `run "make setup" at the root of the genaic checkout, then re-run the tests`

// newBackend returns a backend on the cached library, failing the test
// when the library is missing.
func newBackend(t testing.TB, opts Options) *Backend {
	t.Helper()
	b, err := New(opts)
	if err != nil {
		t.Fatalf("ONNX Runtime is not available (%v): %s", err, fixSetup)
	}
	return b
}

// embedding describes the cached openWakeWord embedding model: its folder,
// its file and its one input and one output.
type embedding struct {
	dir, file, in, out string
}

// embeddingModel finds the real-model guard's model and reads its port
// names from the graph itself.
func embeddingModel(t testing.TB) embedding {
	t.Helper()
	newBackend(t, Options{}) // GetInputOutputInfo needs the environment
	path, err := ortlib.Model("embedding_model.onnx")
	if err != nil {
		t.Fatalf("%v: %s", err, fixSetup)
	}
	ins, outs, err := ortgo.GetInputOutputInfo(path)
	if err != nil {
		t.Fatalf("read the ports of %s: %v", path, err)
	}
	if len(ins) != 1 || len(outs) != 1 {
		t.Fatalf("%s has inputs %v and outputs %v, want one of each", path, ins, outs)
	}
	return embedding{dir: filepath.Dir(path), file: filepath.Base(path), in: ins[0].Name, out: outs[0].Name}
}

// component builds the IR component of the embedding model by hand.
func (e embedding) component(name string) *ir.Component {
	return &ir.Component{
		Name:     name,
		Impl:     ir.ImplONNX,
		Artifact: e.file,
		Inputs:   []*ir.Port{{Name: e.in, Contract: contract("float32", "windows", 76, 32, 1)}},
		Outputs:  []*ir.Port{{Name: e.out, Contract: contract("float32", "windows", 1, 1, 96)}},
	}
}

// contract is a port contract as the compiler writes one: a dims entry is
// a shape symbol (a string) or a fixed extent (an int).
func contract(dtype string, dims ...any) *ir.Contract {
	c := &ir.Contract{DType: dtype, Rank: len(dims), HasShape: true}
	for _, d := range dims {
		switch d := d.(type) {
		case string:
			c.Shape = append(c.Shape, ir.Dim{Sym: d})
		case int:
			c.Shape = append(c.Shape, ir.Dim{Size: int64(d)})
		}
	}
	return c
}

func (e embedding) load(t testing.TB, b *Backend) backend.Session {
	t.Helper()
	s, err := b.Load(e.component("embedding"), e.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// windows returns n deterministic mel-spectrogram windows [n, 76, 32, 1]
// with values in the range the embedding model sees.
func windows(n int, seed uint64) *backend.Tensor {
	t, _ := backend.NewTensor("float32", []int64{int64(n), 76, 32, 1})
	d := t.Float32s()
	state := seed
	for i := range d {
		state = state*6364136223846793005 + 1442695040888963407
		d[i] = float32(state>>40)/float32(1<<24)*4 - 2
	}
	return t
}

func near(a, b []float32, tol float64) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Abs(float64(a[i])-float64(b[i])) > tol || math.IsNaN(float64(a[i])) != math.IsNaN(float64(b[i])) {
			return i, false
		}
	}
	return 0, true
}

// TestEmbeddingBatchEqualsSolo is the real-model guard: a batch of windows
// gives each window the output it gets alone.
func TestEmbeddingBatchEqualsSolo(t *testing.T) {
	e := embeddingModel(t)
	s := e.load(t, newBackend(t, Options{}))
	in := windows(5, 1)
	res, err := s.Run(context.Background(), map[string]*backend.Tensor{e.in: in}, []string{e.out})
	if err != nil {
		t.Fatal(err)
	}
	batch := res[e.out]
	if want := []int64{5, 1, 1, 96}; !reflect.DeepEqual(batch.Shape, want) || batch.DType != "float32" {
		t.Fatalf("batch output is %v, want float32%v", batch, want)
	}
	if backend.SameBuffer(batch, in) {
		t.Error("the output aliases the input")
	}
	for i := range int64(5) {
		// A view: the window's rows of the batch buffer, passed in place.
		one, err := s.Run(context.Background(), map[string]*backend.Tensor{e.in: in.View(i, i+1)}, []string{e.out})
		if err != nil {
			t.Fatal(err)
		}
		got := one[e.out]
		if want := []int64{1, 1, 1, 96}; !reflect.DeepEqual(got.Shape, want) {
			t.Fatalf("window %d alone gives %v, want shape %v", i, got, want)
		}
		if j, ok := near(got.Float32s(), batch.View(i, i+1).Float32s(), 1e-5); !ok {
			t.Errorf("window %d: alone and in a batch of 5 differ at element %d: %v vs %v",
				i, j, got.Float32s()[j], batch.View(i, i+1).Float32s()[j])
		}
	}
}

// TestConcurrentRuns runs one session from many goroutines at once (no
// lock serializes Run) and checks every result against a sequential run.
func TestConcurrentRuns(t *testing.T) {
	e := embeddingModel(t)
	s := e.load(t, newBackend(t, Options{IntraOpThreads: 2}))
	const workers = 8
	want := make([][]float32, workers)
	ins := make([]*backend.Tensor, workers)
	for w := range workers {
		ins[w] = windows(1+w%3, uint64(w+10))
		res, err := s.Run(context.Background(), map[string]*backend.Tensor{e.in: ins[w]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[w] = res[e.out].Float32s()
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background()) // exercises the terminate hook
			defer cancel()
			for range 3 {
				res, err := s.Run(ctx, map[string]*backend.Tensor{e.in: ins[w]}, []string{e.out})
				if err != nil {
					errs[w] = err
					return
				}
				if j, ok := near(res[e.out].Float32s(), want[w], 0); !ok {
					errs[w] = fmt.Errorf("worker %d: concurrent result differs from the sequential one at %d", w, j)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q\ndoes not contain %q", err, p)
		}
	}
}

func TestPortMismatch(t *testing.T) {
	e := embeddingModel(t)
	b := newBackend(t, Options{})
	comp := e.component("embedding")
	comp.Inputs[0].Name = "audio"
	comp.Outputs = append(comp.Outputs, &ir.Port{Name: "logits"})
	_, err := b.Load(comp, e.dir)
	wantErr(t, err,
		"component `embedding`",
		filepath.Join(e.dir, e.file),
		"declared input port `audio` is not an input of the graph",
		"graph input `"+e.in+"` is not a declared input port",
		"declared output port `logits` is not an output of the graph",
		"declare every input, and ports by the graph's names")
}

// TestPortsAsCheckSeesThem: a graph output no port declares is not
// fetched (the session loads and runs with the declared one), and a port
// declared for a graph output that is not a tensor is refused at load.
func TestPortsAsCheckSeesThem(t *testing.T) {
	newBackend(t, Options{})
	dir := t.TempDir()
	b, err := testmodels.SequenceOutput()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	comp := &ir.Component{Name: "m", Impl: ir.ImplONNX, Artifact: "m.onnx",
		Inputs:  []*ir.Port{{Name: "x", Contract: contract("float32", "n", 4)}},
		Outputs: []*ir.Port{{Name: "y", Contract: contract("float32", "n", 4)}}}
	s, err := newBackend(t, Options{}).Load(comp, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := &backend.Tensor{DType: "float32", Shape: []int64{2, 4}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8}}
	out, err := s.Run(context.Background(), map[string]*backend.Tensor{"x": x}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if y := out["y"]; len(out) != 1 || y == nil || !reflect.DeepEqual(y.Data, x.Data) {
		t.Errorf("got %v, want y = x alone", out)
	}
	comp.Outputs = append(comp.Outputs, &ir.Port{Name: "scores", Contract: contract("float32", "n", 4)})
	_, err = newBackend(t, Options{}).Load(comp, dir)
	wantErr(t, err, "output port `scores` is a tensor, but the graph's output is not", "genaic carries tensors only")
}

func TestDTypeMismatch(t *testing.T) {
	e := embeddingModel(t)
	comp := e.component("embedding")
	comp.Inputs[0].Contract.DType = "fp16"
	_, err := newBackend(t, Options{}).Load(comp, e.dir)
	wantErr(t, err, "input port `"+e.in+"` is declared fp16, but the graph's input is float32")
	comp.Inputs[0].Contract.DType = "fp32" // an alias of float32 agrees
	s, err := newBackend(t, Options{}).Load(comp, e.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestMissingArtifact(t *testing.T) {
	b := newBackend(t, Options{})
	dir := t.TempDir()
	comp := &ir.Component{Name: "encoder", Impl: ir.ImplONNX, Artifact: "models/encoder.onnx"}
	_, err := b.Load(comp, dir)
	wantErr(t, err, "component `encoder`", "artifact models/encoder.onnx not found at "+filepath.Join(dir, "models/encoder.onnx"), "add the file")

	comp.Artifact = ""
	_, err = b.Load(comp, dir)
	wantErr(t, err, "component `encoder` names no artifact")

	comp.Artifact = "encoder.onnx"
	if err := os.WriteFile(filepath.Join(dir, "encoder.onnx"), []byte("not a graph"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = b.Load(comp, dir)
	wantErr(t, err, "component `encoder`", filepath.Join(dir, "encoder.onnx"))

	_, err = b.Load(&ir.Component{Name: "tok", Impl: ir.ImplBinding}, dir)
	wantErr(t, err, "component `tok` is implemented by")
	_, err = b.Load(nil, dir)
	wantErr(t, err, "no component")
}

// TestProviderReadiness: sessions on the cpu are ready; a provider the
// library lacks (the cached library is a cpu build) declines grouped
// execution with its reason and still runs, on the cpu; a provider name
// genaic does not know is refused when the backend is made.
func TestProviderReadiness(t *testing.T) {
	e := embeddingModel(t)
	b := newBackend(t, Options{})
	if b.Name() != "onnxruntime" {
		t.Errorf("Name() = %q", b.Name())
	}
	cpu := e.load(t, b)
	if got, want := cpu.Ready(), (backend.Readiness{Ready: true, Provider: "cpu", OpClass: OpClass}); got != want {
		t.Errorf("Ready() on the cpu = %+v, want %+v", got, want)
	}
	cuda := e.load(t, newBackend(t, Options{Provider: "CUDA"}))
	r := cuda.Ready()
	if r.Ready || r.Provider != "cuda" || r.OpClass != OpClass || !strings.Contains(r.Reason, "cannot run the cuda execution provider") {
		t.Errorf("Ready() with a provider the library lacks = %+v, want a decline naming cuda", r)
	}
	run := func(s backend.Session) []float32 {
		out, err := s.Run(context.Background(), map[string]*backend.Tensor{e.in: windows(1, 7)}, []string{e.out})
		if err != nil {
			t.Fatal(err)
		}
		return out[e.out].Float32s()
	}
	if got, want := run(cuda), run(cpu); !slices.Equal(got, want) {
		t.Errorf("the declined session computes %v, the cpu session %v", got, want)
	}
	_, err := New(Options{Provider: "gpu"})
	wantErr(t, err, `execution provider "gpu" is not one genaic knows`, "cuda")
}

func TestLibraryErrors(t *testing.T) {
	lib := newBackend(t, Options{}).LibraryPath()

	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	_, err := New(Options{LibraryPath: missing})
	wantErr(t, err, "ONNX Runtime shared library not found at "+missing, `run "make setup"`, "ONNXRUNTIME_LIB")

	t.Setenv(ortlib.EnvLib, missing)
	_, err = New(Options{})
	wantErr(t, err, "ONNXRUNTIME_LIB is set to "+missing, "no file exists there")

	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.Symlink(lib, other); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{LibraryPath: other})
	wantErr(t, err, "already initialized in this process from "+lib, "second library from "+other)

	_, err = New(Options{LibraryPath: lib, IntraOpThreads: -1})
	wantErr(t, err, "thread counts must be 0")
	if _, err := New(Options{LibraryPath: lib}); err != nil {
		t.Errorf("New with the loaded library again: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	e := embeddingModel(t)
	b := newBackend(t, Options{})
	s := e.load(t, b)
	ctx := context.Background()
	in := windows(1, 3)
	tests := []struct {
		name   string
		inputs map[string]*backend.Tensor
		outs   []string
		want   []string
	}{
		{"missing input", map[string]*backend.Tensor{}, nil, []string{"input `" + e.in + "` is missing"}},
		{"unknown input", map[string]*backend.Tensor{e.in: in, "extra": in}, nil, []string{"input `extra` is not an input of the graph"}},
		{"unknown output", map[string]*backend.Tensor{e.in: in}, []string{"logits"}, []string{"output `logits` was requested", e.out}},
		{"wrong dtype", map[string]*backend.Tensor{e.in: {DType: "int64", Shape: []int64{1, 76, 32, 1}, Data: make([]int64, 76*32)}}, nil,
			[]string{"the tensor is int64, but the graph takes float32"}},
		{"wrong rank", map[string]*backend.Tensor{e.in: {DType: "float32", Shape: []int64{76, 32, 1}, Data: make([]float32, 76*32)}}, nil,
			[]string{"got float32[76, 32, 1] (rank 3), but the graph takes rank 4"}},
		{"wrong extent", map[string]*backend.Tensor{e.in: {DType: "float32", Shape: []int64{1, 75, 32, 1}, Data: make([]float32, 75*32)}}, nil,
			[]string{"got float32[1, 75, 32, 1], but the graph fixes axis 1 at 76"}},
		{"short data", map[string]*backend.Tensor{e.in: {DType: "float32", Shape: []int64{1, 76, 32, 1}, Data: make([]float32, 10)}}, nil,
			[]string{"holds 10 elements, but its shape needs 2432"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Run(ctx, tt.inputs, tt.outs)
			wantErr(t, err, append([]string{"component `embedding`: "}, tt.want...)...)
		})
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Run(cancelled, map[string]*backend.Tensor{e.in: in}, nil)
	wantErr(t, err, "component `embedding`", "context canceled")

	closed, err := b.Load(e.component("embedding"), e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	_, err = closed.Run(ctx, map[string]*backend.Tensor{e.in: in}, nil)
	wantErr(t, err, "component `embedding`: the session is closed")
}

// TestDTypes round-trips every host dtype through an ORT value: inputs are
// wrapped in place (the ORT tensor's slice is the caller's), outputs come
// back as the dtype and data they hold.
func TestDTypes(t *testing.T) {
	newBackend(t, Options{})
	for _, dtype := range []string{"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool", "float16", "bfloat16"} {
		t.Run(dtype, func(t *testing.T) {
			in, v := valueOf(t, dtype, []int64{2, 3})
			if d, ok := valueData(v); !ok || reflect.ValueOf(d).Pointer() != reflect.ValueOf(in.Data).Pointer() {
				t.Errorf("the ORT value does not wrap the caller's slice in place")
			}
			out, err := hostTensor(v)
			if err != nil {
				t.Fatal(err)
			}
			if out.DType != dtype || !reflect.DeepEqual(out.Shape, in.Shape) || !reflect.DeepEqual(out.Data, in.Data) {
				t.Errorf("round trip gives %v %v, want %v %v", out, out.Data, in, in.Data)
			}
		})
	}
}

// TestScalarDTypes round-trips a scalar of every dtype onnxruntime_go
// makes rank-0 values of: its ORT value holds the element as that dtype,
// with no extents, and the element read back from it is the one put in.
func TestScalarDTypes(t *testing.T) {
	newBackend(t, Options{})
	for _, dtype := range []string{"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool"} {
		t.Run(dtype, func(t *testing.T) {
			in, v := valueOf(t, dtype, nil)
			out, err := backend.NewTensor(dtype, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := readScalar(v, out); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Data, in.Data) {
				t.Errorf("read back %v, want %v", out.Data, in.Data)
			}
		})
	}
}

// valueOf makes a host tensor of dtype and shape, filled (fill), and its
// ORT value, destroyed when the test ends, failing the test unless the
// value holds that dtype and shape.
func valueOf(t *testing.T, dtype string, shape []int64) (*backend.Tensor, ortgo.Value) {
	t.Helper()
	in, err := backend.NewTensor(dtype, shape)
	if err != nil {
		t.Fatal(err)
	}
	fill(in.Data)
	v, err := ortValue(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Destroy() })
	if got, _ := dtypeName(ortgo.TensorElementDataType(v.DataType())); got != dtype {
		t.Errorf("the ORT value holds %s, want %s", got, dtype)
	}
	if got := []int64(v.GetShape()); len(got) != len(shape) || len(got) > 0 && !reflect.DeepEqual(got, in.Shape) {
		t.Errorf("the ORT value has shape %v, want %v", got, shape)
	}
	return in, v
}

// valueData returns the Go memory an ORT value was made over: the slice
// its GetData method returns (Tensor[T] is generic, hence reflection).
func valueData(v ortgo.Value) (any, bool) {
	m := reflect.ValueOf(v).MethodByName("GetData")
	if !m.IsValid() {
		return nil, false
	}
	return m.Call(nil)[0].Interface(), true
}

// fill writes 1, 2, 3, ... (true, false, ... for bool) into a typed slice.
func fill(data any) {
	rv := reflect.ValueOf(data)
	for i := range rv.Len() {
		e := rv.Index(i)
		switch e.Kind() {
		case reflect.Bool:
			e.SetBool(i%2 == 0)
		case reflect.Float32, reflect.Float64:
			e.SetFloat(float64(i + 1))
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			e.SetInt(int64(i + 1))
		default:
			e.SetUint(uint64(i + 1))
		}
	}
}

func TestValueErrors(t *testing.T) {
	newBackend(t, Options{})
	tests := []struct {
		name string
		t    *backend.Tensor
		want string
	}{
		{"float16 scalar", &backend.Tensor{DType: "float16", Shape: nil, Data: []uint16{0x3c00}}, "a rank-0 float16 cannot be passed"},
		{"bfloat16 scalar", &backend.Tensor{DType: "bfloat16", Shape: nil, Data: []uint16{0x3f80}}, "a rank-0 bfloat16 cannot be passed"},
		{"go type", &backend.Tensor{DType: "float32", Shape: []int64{2}, Data: []float64{1, 2}}, "must carry its data as []float32, but it holds []float64"},
		{"unknown dtype", &backend.Tensor{DType: "float8e4m3fn", Shape: []int64{2}, Data: []uint8{1, 2}}, `dtype "float8e4m3fn" is not one the onnxruntime backend passes`},
		{"not a slice", &backend.Tensor{DType: "float32", Shape: []int64{2}, Data: "ab"}, "Go type string"},
		{"empty float16", &backend.Tensor{DType: "float16", Shape: []int64{0}, Data: []uint16{}}, "at least one element"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ortValue(tt.t)
			if v != nil {
				v.Destroy()
			}
			wantErr(t, err, tt.want)
		})
	}
}

// imagePadded loads the fixture encoder of testdata/packages/image_padded
// with its ports as the fixture generator declares them.
func imagePadded(t *testing.T) (*testmodels.Model, backend.Session) {
	t.Helper()
	m, comp := imagePaddedComponent(t)
	dir := filepath.Join(testenv.Root(t), filepath.Dir(m.Path()))
	s, err := newBackend(t, Options{}).Load(comp, dir)
	if err != nil {
		t.Fatalf("%v (regenerate the fixtures with go run ./testdata/models/gen)", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// imagePaddedComponent is the IR component of the image_padded encoder,
// its port shapes named by the metadata's symbols.
func imagePaddedComponent(t testing.TB) (*testmodels.Model, *ir.Component) {
	t.Helper()
	m := testmodels.Lookup("image_padded")
	if m == nil {
		t.Fatal("internal/testmodels has no image_padded model")
	}
	comp := &ir.Component{Name: m.Component, Impl: ir.ImplONNX, Artifact: m.Artifact}
	for _, p := range m.Inputs {
		comp.Inputs = append(comp.Inputs, &ir.Port{Name: p.Name, Contract: portContract(p)})
	}
	for _, p := range m.Outputs {
		comp.Outputs = append(comp.Outputs, &ir.Port{Name: p.Name, Contract: portContract(p)})
	}
	return m, comp
}

func portContract(p testmodels.Port) *ir.Contract {
	dims := make([]any, len(p.Dims))
	for i, d := range p.Dims {
		dims[i] = d.Sym
		if d.Sym == "" {
			dims[i] = int(d.Size)
		}
	}
	return contract(p.DType, dims...)
}

// TestImagePadded runs the padded image encoder with float32 and int64
// inputs and compares it with the model's plain-Go reference.
func TestImagePadded(t *testing.T) {
	m, s := imagePadded(t)
	const images, patches, features = 3, 5, 8
	px := make([]float32, images*patches*features)
	for i := range px {
		px[i] = float32(i%13)/8 - 0.75
	}
	lengths := []int64{5, 2, 0}
	in := map[string]*backend.Tensor{
		"pixel_patches": {DType: "float32", Shape: []int64{images, patches, features}, Data: px},
		"patch_lengths": {DType: "int64", Shape: []int64{images}, Data: lengths},
		"image_offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, images}},
		"image_owner":   {DType: "int64", Shape: []int64{images}, Data: []int64{0, 0, 0}},
	}
	res, err := s.Run(context.Background(), in, []string{"embeddings"})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := m.Reference(map[string]testmodels.Tensor{
		"pixel_patches": testmodels.Float32(in["pixel_patches"].Shape, px),
		"patch_lengths": testmodels.Int64(in["patch_lengths"].Shape, lengths),
		"image_offsets": testmodels.Int64([]int64{2}, []int64{0, images}),
		"image_owner":   testmodels.Int64([]int64{images}, []int64{0, 0, 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, want := res["embeddings"], ref["embeddings"]
	if !reflect.DeepEqual(got.Shape, want.Shape) {
		t.Fatalf("embeddings %v, want shape %v", got, want.Shape)
	}
	if j, ok := near(got.Float32s(), want.F32, 1e-5); !ok {
		t.Errorf("embeddings differ from the reference at %d: %v vs %v", j, got.Float32s()[j], want.F32[j])
	}
}

// TestZeroElements passes empty tensors (no image at all): ONNX Runtime
// takes a nil data pointer for an empty tensor and returns an empty output.
func TestZeroElements(t *testing.T) {
	_, s := imagePadded(t)
	in := map[string]*backend.Tensor{
		"pixel_patches": {DType: "float32", Shape: []int64{0, 4, 8}, Data: []float32{}},
		"patch_lengths": {DType: "int64", Shape: []int64{0}, Data: []int64{}},
		"image_offsets": {DType: "int64", Shape: []int64{1}, Data: []int64{0}},
		"image_owner":   {DType: "int64", Shape: []int64{0}, Data: []int64{}},
	}
	res, err := s.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res["embeddings"]; got == nil || got.Len() != 0 || len(got.Shape) != 2 || got.Shape[0] != 0 {
		t.Errorf("embeddings of no image = %v, want float32[0, 4]", got)
	}
}

// BenchmarkEmbedding compares one run of 16 windows with 16 runs of one.
func BenchmarkEmbedding(b *testing.B) {
	e := embeddingModel(b)
	s := e.load(b, newBackend(b, Options{}))
	in := windows(16, 7)
	ctx := context.Background()
	b.Run("batch16", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Run(ctx, map[string]*backend.Tensor{e.in: in}, nil); err != nil {
				b.Fatal(err)
			}
		}
		perWindow(b, 16)
	})
	b.Run("solo16", func(b *testing.B) {
		for b.Loop() {
			for i := range int64(16) {
				if _, err := s.Run(ctx, map[string]*backend.Tensor{e.in: in.View(i, i+1)}, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		perWindow(b, 16)
	})
}

func perWindow(b *testing.B, windows int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*windows), "ns/window")
}
