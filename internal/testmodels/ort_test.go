package testmodels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/vm/ortlib"
)

// These tests load every fixture model in ONNX Runtime. They fail, never
// skip, when the runtime library is missing: "make setup" caches it.

var (
	ortOnce sync.Once
	ortErr  error
)

func initORT(t *testing.T) {
	t.Helper()
	ortOnce.Do(func() {
		lib, err := ortlib.Library()
		if err == nil {
			err = ortlib.Verify(lib)
		}
		if err != nil {
			ortErr = err
			return
		}
		ort.SetSharedLibraryPath(lib)
		ortErr = ort.InitializeEnvironment()
	})
	if ortErr != nil {
		t.Fatalf("ONNX Runtime is needed to check the fixture models: %v", ortErr)
	}
}

// session is one model loaded in ONNX Runtime.
type session struct {
	m *testmodels.Model
	s *ort.DynamicAdvancedSession
}

func open(t *testing.T, m *testmodels.Model) *session {
	t.Helper()
	initORT(t)
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	// One thread: results must not depend on how work is split.
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		t.Fatal(err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		t.Fatal(err)
	}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(m.Bytes(), portNames(m.Inputs), portNames(m.Outputs), opts)
	if err != nil {
		t.Fatalf("%s: ONNX Runtime refuses the model: %v", m.Path(), err)
	}
	t.Cleanup(func() { s.Destroy() })
	return &session{m: m, s: s}
}

func portNames(ps []testmodels.Port) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// run runs the model on in and returns its outputs by name.
func (s *session) run(in map[string]testmodels.Tensor) (map[string]testmodels.Tensor, error) {
	inputs := make([]ort.Value, len(s.m.Inputs))
	defer func() {
		for _, v := range inputs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, p := range s.m.Inputs {
		v, err := toORT(in[p.Name])
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", p.Name, err)
		}
		inputs[i] = v
	}
	// onnxruntime_go reads a rank-0 output only into a Scalar made for it.
	outputs := make([]ort.Value, len(s.m.Outputs))
	for i, p := range s.m.Outputs {
		if len(p.Dims) == 0 && p.DType == "int64" {
			v, err := ort.NewEmptyScalar[int64]()
			if err != nil {
				return nil, err
			}
			outputs[i] = v
		}
	}
	if err := s.s.Run(inputs, outputs); err != nil {
		return nil, err
	}
	out := map[string]testmodels.Tensor{}
	for i, p := range s.m.Outputs {
		switch v := outputs[i].(type) {
		case *ort.Tensor[float32]:
			out[p.Name] = testmodels.Float32(v.GetShape(), slices.Clone(v.GetData()))
		case *ort.Tensor[int64]:
			out[p.Name] = testmodels.Int64(v.GetShape(), slices.Clone(v.GetData()))
		case *ort.Scalar[int64]:
			out[p.Name] = testmodels.Int64([]int64{}, []int64{v.GetData()})
		default:
			return nil, fmt.Errorf("output %s is a %T", p.Name, v)
		}
		outputs[i].Destroy()
	}
	return out, nil
}

func toORT(t testmodels.Tensor) (ort.Value, error) {
	if len(t.Shape) == 0 && t.I64 != nil {
		return ort.NewScalar(t.I64[0])
	}
	if t.I64 != nil {
		return ort.NewTensor(ort.NewShape(t.Shape...), slices.Clone(t.I64))
	}
	return ort.NewTensor(ort.NewShape(t.Shape...), slices.Clone(t.F32))
}

// TestModelsMatchReference runs every model on random inputs (with empty
// items, zero-length items and odd counts among them) and compares each
// output with the plain-Go reference: integer outputs exactly, float
// outputs within 1e-5 (absolute, or relative above 1).
func TestModelsMatchReference(t *testing.T) {
	for _, m := range testmodels.Models() {
		t.Run(m.Package, func(t *testing.T) {
			s := open(t, m)
			gen := generators[m.Package]
			if gen == nil {
				t.Fatalf("no input generator for %s", m.Package)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(m.Package))))
			for trial := range 20 {
				in := gen(rng, trial)
				compare(t, fmt.Sprintf("trial %d", trial), s, in)
			}
		})
	}
}

func compare(t *testing.T, what string, s *session, in map[string]testmodels.Tensor) map[string]testmodels.Tensor {
	t.Helper()
	want, err := s.m.Reference(in)
	if err != nil {
		t.Fatalf("%s: reference: %v", what, err)
	}
	got, err := s.run(in)
	if err != nil {
		t.Fatalf("%s: ONNX Runtime: %v (inputs %v)", what, err, shapes(in))
	}
	for _, p := range s.m.Outputs {
		if err := within(got[p.Name], want[p.Name]); err != nil {
			t.Errorf("%s: output %s: %v (inputs %v)", what, p.Name, err, shapes(in))
		}
	}
	return got
}

func shapes(in map[string]testmodels.Tensor) map[string][]int64 {
	out := map[string][]int64{}
	for k, v := range in {
		out[k] = v.Shape
	}
	return out
}

// within reports how got differs from want beyond the tolerance.
func within(got, want testmodels.Tensor) error {
	if !slices.Equal(got.Shape, want.Shape) || got.DType() != want.DType() {
		return fmt.Errorf("got %s %v, want %s %v", got.DType(), got.Shape, want.DType(), want.Shape)
	}
	if want.I64 != nil {
		if !slices.Equal(got.I64, want.I64) {
			return fmt.Errorf("got %v, want %v", got.I64, want.I64)
		}
		return nil
	}
	for i, w := range want.F32 {
		g := got.F32[i]
		if d := math.Abs(float64(g) - float64(w)); !(d <= 1e-5*max(1, math.Abs(float64(w)))) {
			return fmt.Errorf("element %d is %v, want %v (difference %g)", i, g, w, d)
		}
	}
	return nil
}

// TestPaddingInvisible fills the padded positions of the padded models with
// garbage (NaN, infinities, huge values) and checks that the outputs are
// bitwise those of zero padding; then pads further and checks the outputs
// stay within the tolerance.
func TestPaddingInvisible(t *testing.T) {
	for _, name := range []string{"image_padded", "video_frames"} {
		t.Run(name, func(t *testing.T) {
			m := testmodels.Lookup(name)
			s := open(t, m)
			rng := rand.New(rand.NewPCG(2, 3))
			for trial := range 10 {
				in := generators[name](rng, trial)
				base := compare(t, "zero padding", s, in)
				x, lengths := padded(name, in)

				garbage := withPadding(x, lengths, 0, func(i int) float32 { return garbageValues[i%len(garbageValues)] })
				in[inputOf(name)] = garbage
				got := compare(t, "garbage padding", s, in)
				for _, p := range m.Outputs {
					if !slices.Equal(bits(got[p.Name]), bits(base[p.Name])) {
						t.Errorf("trial %d: output %s changes with the values in the padding:\n zero    %v\n garbage %v", trial, p.Name, base[p.Name].F32, got[p.Name].F32)
					}
				}

				extra := 1 + rng.IntN(5)
				wider := withPadding(x, lengths, extra, func(i int) float32 { return garbageValues[(i+1)%len(garbageValues)] })
				in[inputOf(name)] = wider
				got = compare(t, fmt.Sprintf("%d more padded positions", extra), s, in)
				for _, p := range m.Outputs {
					if err := within(got[p.Name], base[p.Name]); err != nil {
						t.Errorf("trial %d: output %s changes with the padded extent: %v", trial, p.Name, err)
					} else if !slices.Equal(bits(got[p.Name]), bits(base[p.Name])) {
						t.Logf("trial %d: output %s is within the tolerance, not bitwise equal, with %d more padded positions", trial, p.Name, extra)
					}
				}
			}
		})
	}
}

var garbageValues = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 3e38, -3e38, 12345}

func inputOf(name string) string {
	if name == "image_padded" {
		return "pixel_patches"
	}
	return "pixel_values"
}

func padded(name string, in map[string]testmodels.Tensor) (testmodels.Tensor, []int64) {
	return in[inputOf(name)], in["patch_lengths"].I64
}

// withPadding copies x [N, P, F] into [N, P+extra, F], keeping each item's
// first lengths[n] positions and filling every other one from fill.
func withPadding(x testmodels.Tensor, lengths []int64, extra int, fill func(int) float32) testmodels.Tensor {
	n, p, f := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2])
	q := p + extra
	out := make([]float32, n*q*f)
	for i := range n {
		for j := range q {
			for k := range f {
				o := (i*q+j)*f + k
				if j < int(lengths[i]) {
					out[o] = x.F32[(i*p+j)*f+k]
				} else {
					out[o] = fill(o)
				}
			}
		}
	}
	return testmodels.Float32([]int64{int64(n), int64(q), int64(f)}, out)
}

func bits(t testmodels.Tensor) []uint32 {
	out := make([]uint32, len(t.F32))
	for i, v := range t.F32 {
		out[i] = math.Float32bits(v)
	}
	return out
}

// TestRuntimeSeesDeclaredPorts: ONNX Runtime reads each model's inputs and
// outputs with the declared names, in order, element types and extents (a
// dynamic dimension reads as -1).
func TestRuntimeSeesDeclaredPorts(t *testing.T) {
	initORT(t)
	for _, m := range testmodels.Models() {
		ins, outs, err := ort.GetInputOutputInfoWithONNXData(m.Bytes())
		if err != nil {
			t.Errorf("%s: %v", m.Path(), err)
			continue
		}
		matchInfo(t, m, "input", ins, m.Inputs)
		matchInfo(t, m, "output", outs, m.Outputs)
	}
}

func matchInfo(t *testing.T, m *testmodels.Model, kind string, got []ort.InputOutputInfo, want []testmodels.Port) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: ONNX Runtime sees %d %ss, the model declares %d", m.Path(), len(got), kind, len(want))
		return
	}
	for i, p := range want {
		dims := make(ort.Shape, len(p.Dims))
		for j, d := range p.Dims {
			dims[j] = -1
			if d.Size > 0 {
				dims[j] = d.Size
			}
		}
		dtype := ort.TensorElementDataType(ort.TensorElementDataTypeFloat)
		if p.DType == "int64" {
			dtype = ort.TensorElementDataType(ort.TensorElementDataTypeInt64)
		}
		g := got[i]
		if g.Name != p.Name || g.DataType != dtype || !slices.Equal(g.Dimensions, dims) {
			t.Errorf("%s: %s %d is %s, want %s %v %v", m.Path(), kind, i, g.String(), p.Name, dtype, dims)
		}
	}
}

// TestEmptyAxes: every model runs, and agrees with its reference, when its
// packed or row axis is empty, and when every unit of a level owns nothing
// (zeros for each such unit). A runtime never invokes a group of zero
// packed positions; these cases pin what the graphs would do anyway.
func TestEmptyAxes(t *testing.T) {
	scale := testmodels.Float32([]int64{1}, []float32{2})
	cases := map[string]map[string]testmodels.Tensor{
		"image_padded": {
			"pixel_patches": testmodels.Float32([]int64{2, 0, 8}, nil),
			"patch_lengths": vector([]int64{0, 0}),
			"image_offsets": vector([]int64{0, 2}),
			"image_owner":   vector([]int64{0, 0}),
		},
		"image_pinned": {"pixel_patches": testmodels.Float32([]int64{0, 3, 8}, nil)},
		"ocr_lines": {
			"line_images":  testmodels.Float32([]int64{2, 0, 8}, nil),
			"line_widths":  vector([]int64{0, 0}),
			"line_offsets": vector([]int64{0, 2}),
			"line_owner":   vector([]int64{0, 0}),
		},
		"video_frames": {
			"pixel_values":  testmodels.Float32([]int64{0, 3, 8}, nil),
			"patch_lengths": vector([]int64{}),
			"frame_offsets": vector([]int64{0, 0, 0}),
			"frame_owner":   vector([]int64{}),
			"clip_offsets":  vector([]int64{0, 2}),
			"clip_owner":    vector([]int64{0, 0}),
		},
		"video_fixed": {"pixel_values": testmodels.Float32([]int64{0, 2, 3, 8}, nil)},
		"audio": {
			"spectrogram":   testmodels.Float32([]int64{0, 6}, nil),
			"frame_offsets": vector([]int64{0, 0, 0}),
			"frame_owner":   vector([]int64{}),
		},
		"image_tiles": {
			"tiles":        testmodels.Float32([]int64{0, 3, 4, 4}, nil),
			"tile_offsets": vector([]int64{0, 0, 0}),
			"tile_owner":   vector([]int64{}),
		},
		"video_fps": {
			"pixels":        testmodels.Float32([]int64{0, 3, 4, 4}, nil),
			"frame_offsets": vector([]int64{0, 0, 0}),
			"frame_owner":   vector([]int64{}),
		},
		"image_patches": {
			"patches":       testmodels.Float32([]int64{0, 12}, nil),
			"patch_offsets": vector([]int64{0, 0, 0}),
			"patch_owner":   vector([]int64{}),
		},
		"audio_mel": {
			"spectrogram":   testmodels.Float32([]int64{0, 6}, nil),
			"frame_offsets": vector([]int64{0, 0, 0}),
			"frame_owner":   vector([]int64{}),
		},
		"text": {
			"token_ids":     vector([]int64{}),
			"token_offsets": vector([]int64{0, 0}),
			"token_owner":   vector([]int64{}),
		},
		"token_merge": {
			"tokens":          testmodels.Float32([]int64{0, 4}, nil),
			"token_offsets":   vector([]int64{0, 0, 0}),
			"segment_offsets": vector([]int64{0, 2}),
			"segment_owner":   vector([]int64{0, 0}),
		},
		"text_packed": {
			"token_ids":     vector([]int64{}),
			"token_offsets": vector([]int64{0, 0}),
			"token_owner":   vector([]int64{}),
		},
		"text_padded": {
			"token_ids":       testmodels.Int64([]int64{2, 0}, nil),
			"token_lengths":   vector([]int64{0, 0}),
			"segment_offsets": vector([]int64{0, 2}),
			"segment_owner":   vector([]int64{0, 0}),
		},
		"request_expanded": {"latents": testmodels.Float32([]int64{0, 4}, nil), "guidance_scale": scale},
		"time_major":       {"frames": testmodels.Float32([]int64{2, 0, 4}, nil)},
		"solo":             {"features": testmodels.Float32([]int64{0, 4}, nil)},
		"sample_rate":      {"audio": testmodels.Float32([]int64{0, 4}, nil), "sr": testmodels.Int64([]int64{}, []int64{16000})},
	}
	for _, m := range testmodels.Models() {
		t.Run(m.Package, func(t *testing.T) {
			in, ok := cases[m.Package]
			if !ok {
				t.Fatalf("no empty case for %s", m.Package)
			}
			compare(t, "empty", open(t, m), in)
		})
	}
}
