//go:build cgo

package ort

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/genaic/genaic/backend"
	ortgo "github.com/yalue/onnxruntime_go"
)

// session is one component's DynamicAdvancedSession.
//
// Run needs no lock: ONNX Runtime documents that one session may run on
// many threads at once, and onnxruntime_go's Run keeps no state of its own
// between calls (each call builds its own value arrays; the name arrays and
// the session handle are only read). Close is the one writer, and the
// RWMutex keeps it from destroying the session under a running call.
type session struct {
	comp    string
	inputs  []ortgo.InputOutputInfo // the graph's, in its order
	outputs []ortgo.InputOutputInfo
	ready   backend.Readiness

	mu  sync.RWMutex
	ort *ortgo.DynamicAdvancedSession // nil once closed
}

// Ready implements backend.Session.
func (s *session) Ready() backend.Readiness { return s.ready }

// Close implements backend.Session.
func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ort == nil {
		return nil
	}
	err := s.ort.Destroy()
	s.ort = nil
	if err != nil {
		return fmt.Errorf("component `%s`: close the onnxruntime session: %w", s.comp, err)
	}
	return nil
}

// Run implements backend.Session. Inputs are handed to ONNX Runtime without a
// copy (the ORT values point into the callers' Go slices); ONNX Runtime
// allocates the outputs, and each is copied once into Go memory, which the
// returned tensors own. A nil outputs list asks for every graph output.
func (s *session) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	res, err := s.run(ctx, inputs, outputs)
	if err != nil {
		return nil, fmt.Errorf("component `%s`: %w", s.comp, err)
	}
	return res, nil
}

func (s *session) run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	want, err := s.wanted(outputs)
	if err != nil {
		return nil, err
	}
	ins, err := s.wrapInputs(inputs)
	defer destroyAll(ins)
	if err != nil {
		return nil, err
	}
	outs := make([]ortgo.Value, len(s.outputs)) // nil: ONNX Runtime allocates
	defer destroyAll(outs)
	if err := s.invoke(ctx, ins, outs); err != nil {
		return nil, s.explain(err)
	}
	res := make(map[string]*backend.Tensor, len(want))
	for i, o := range s.outputs {
		if !want[o.Name] {
			continue
		}
		t, err := hostTensor(outs[i])
		if err != nil {
			return nil, fmt.Errorf("output `%s`: %w", o.Name, err)
		}
		res[o.Name] = t
	}
	return res, nil
}

// wanted resolves the requested output names.
func (s *session) wanted(outputs []string) (map[string]bool, error) {
	want := map[string]bool{}
	if outputs == nil {
		for _, o := range s.outputs {
			want[o.Name] = true
		}
		return want, nil
	}
	for _, name := range outputs {
		if !s.hasOutput(name) {
			return nil, fmt.Errorf("output `%s` was requested, but the graph's outputs are [%s]", name, infoNames(s.outputs))
		}
		want[name] = true
	}
	return want, nil
}

func (s *session) hasOutput(name string) bool {
	for _, o := range s.outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

// wrapInputs makes one ORT value per graph input, in the graph's order.
// The returned slice holds every value made so far even on error, so that
// the caller can destroy them.
func (s *session) wrapInputs(inputs map[string]*backend.Tensor) ([]ortgo.Value, error) {
	var unknown []string
	for name := range inputs {
		if !s.hasInput(name) {
			unknown = append(unknown, "`"+name+"`")
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("input %s is not an input of the graph, whose inputs are [%s]", strings.Join(unknown, ", "), infoNames(s.inputs))
	}
	vals := make([]ortgo.Value, 0, len(s.inputs))
	for _, in := range s.inputs {
		t := inputs[in.Name]
		if t == nil {
			return vals, fmt.Errorf("input `%s` is missing: every graph input [%s] needs a tensor", in.Name, infoNames(s.inputs))
		}
		if err := checkInput(in, t); err != nil {
			return vals, fmt.Errorf("input `%s`: %w", in.Name, err)
		}
		v, err := ortValue(t)
		if err != nil {
			return vals, fmt.Errorf("input `%s`: %w", in.Name, err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

func (s *session) hasInput(name string) bool {
	for _, in := range s.inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

// checkInput compares a tensor with what the graph declares, so that a
// mistake reads in genaic's terms rather than ONNX Runtime's.
func checkInput(in ortgo.InputOutputInfo, t *backend.Tensor) error {
	if want, ok := dtypeName(in.DataType); ok && want != t.DType {
		return fmt.Errorf("the tensor is %s, but the graph takes %s", t.DType, want)
	}
	dims := in.Dimensions
	if len(dims) == 0 {
		return nil // a rank the graph leaves open
	}
	if len(dims) != len(t.Shape) {
		return fmt.Errorf("got %s (rank %d), but the graph takes rank %d, shape %v", t, len(t.Shape), len(dims), dims)
	}
	for i, d := range dims {
		if d > 0 && t.Shape[i] != d {
			return fmt.Errorf("got %s, but the graph fixes axis %d at %d (shape %v)", t, i, d, dims)
		}
	}
	return nil
}

// invoke runs the graph. When ctx can be cancelled, a cancellation sets
// ONNX Runtime's terminate flag, so that a long run stops early.
func (s *session) invoke(ctx context.Context, ins, outs []ortgo.Value) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ort == nil {
		return errors.New("the session is closed")
	}
	if ctx.Done() == nil {
		return s.ort.Run(ins, outs)
	}
	opts, err := ortgo.NewRunOptions()
	if err != nil {
		return err
	}
	terminated := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(terminated)
		opts.Terminate()
	})
	err = s.ort.RunWithOptions(ins, outs, opts)
	if !stop() {
		<-terminated // Terminate is running: let it finish before Destroy
	}
	opts.Destroy()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("run cancelled: %w", ctx.Err())
	}
	return err
}

// explain adds what genaic knows to a failed run: onnxruntime_go cannot
// hold a rank-0 output, and says only "invalid tensor shape".
func (s *session) explain(err error) error {
	for _, o := range s.outputs {
		if len(o.Dimensions) == 0 && o.OrtValueType == ortgo.ONNXTypeTensor {
			return fmt.Errorf("%w (graph output `%s` may be a scalar: onnxruntime_go v1.27.0 cannot return rank-0 outputs, so give it shape [1] inside the graph)", err, o.Name)
		}
	}
	return err
}

func destroyAll(vals []ortgo.Value) {
	for _, v := range vals {
		if v != nil {
			v.Destroy()
		}
	}
}

// ortValue wraps a host tensor's slice as an ORT tensor without copying:
// onnxruntime_go's NewTensor hands the slice's address to ONNX Runtime
// (CreateTensorWithDataAsOrtValue), which reads it in place.
func ortValue(t *backend.Tensor) (ortgo.Value, error) {
	if len(t.Shape) == 0 {
		return nil, fmt.Errorf("got a scalar (rank 0) %s, which onnxruntime_go v1.27.0 cannot pass to ONNX Runtime: give the graph input shape [1] and reshape inside the graph", t.DType)
	}
	if n, err := dataLen(t.Data); err != nil {
		return nil, err
	} else if int64(n) != t.Len() {
		return nil, fmt.Errorf("%s holds %d elements, but its shape needs %d", t, n, t.Len())
	}
	if err := checkHostType(t); err != nil {
		return nil, err
	}
	shape := ortgo.NewShape(t.Shape...)
	switch d := t.Data.(type) {
	case []float32:
		return ortgo.NewTensor(shape, d)
	case []float64:
		return ortgo.NewTensor(shape, d)
	case []int64:
		return ortgo.NewTensor(shape, d)
	case []int32:
		return ortgo.NewTensor(shape, d)
	case []int16:
		return ortgo.NewTensor(shape, d)
	case []int8:
		return ortgo.NewTensor(shape, d)
	case []uint8:
		return ortgo.NewTensor(shape, d)
	case []uint32:
		return ortgo.NewTensor(shape, d)
	case []uint64:
		return ortgo.NewTensor(shape, d)
	case []bool:
		return ortgo.NewTensor(shape, d)
	case []uint16:
		return uint16Value(t.DType, shape, d)
	}
	return nil, fmt.Errorf("%s has data of Go type %T, which the onnxruntime backend does not pass", t, t.Data)
}

// uint16Value wraps 16-bit data: uint16 itself, or the raw bits of
// float16/bfloat16, which onnxruntime_go takes as bytes.
func uint16Value(dtype string, shape ortgo.Shape, d []uint16) (ortgo.Value, error) {
	if dtype == "uint16" {
		return ortgo.NewTensor(shape, d)
	}
	if len(d) == 0 {
		return nil, fmt.Errorf("an empty %s tensor cannot be passed: onnxruntime_go v1.27.0 needs at least one element for %s", dtype, dtype)
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 2*len(d))
	kind := ortgo.TensorElementDataType(ortgo.TensorElementDataTypeFloat16)
	if dtype == "bfloat16" {
		kind = ortgo.TensorElementDataTypeBFloat16
	}
	return ortgo.NewCustomDataTensor(shape, raw, kind)
}

// hostTensor takes an ORT-allocated output. onnxruntime_go has already
// copied ONNX Runtime's buffer into a fresh Go slice (and released ONNX
// Runtime's value); that copy is the one transfer off the backend. The
// slice is adopted as is — destroying the wrapper releases only the ORT
// value that points into it, never the Go memory.
func hostTensor(v ortgo.Value) (*backend.Tensor, error) {
	shape := []int64(v.GetShape())
	var data any
	var dtype string
	switch t := v.(type) {
	case *ortgo.Tensor[float32]:
		data, dtype = t.GetData(), "float32"
	case *ortgo.Tensor[float64]:
		data, dtype = t.GetData(), "float64"
	case *ortgo.Tensor[int64]:
		data, dtype = t.GetData(), "int64"
	case *ortgo.Tensor[int32]:
		data, dtype = t.GetData(), "int32"
	case *ortgo.Tensor[int16]:
		data, dtype = t.GetData(), "int16"
	case *ortgo.Tensor[int8]:
		data, dtype = t.GetData(), "int8"
	case *ortgo.Tensor[uint8]:
		data, dtype = t.GetData(), "uint8"
	case *ortgo.Tensor[uint16]:
		data, dtype = t.GetData(), "uint16"
	case *ortgo.Tensor[uint32]:
		data, dtype = t.GetData(), "uint32"
	case *ortgo.Tensor[uint64]:
		data, dtype = t.GetData(), "uint64"
	case *ortgo.Tensor[bool]:
		data, dtype = t.GetData(), "bool"
	case *ortgo.CustomDataTensor:
		name, ok := dtypeName(ortgo.TensorElementDataType(t.DataType()))
		if !ok || (name != "float16" && name != "bfloat16") {
			return nil, fmt.Errorf("the graph produced %s elements, which this runtime has no host representation for", ortgo.TensorElementDataType(t.DataType()))
		}
		data, dtype = bitsOf16(t.GetData()), name
	default:
		return nil, fmt.Errorf("the graph produced a %s value, not a tensor this runtime can hold", v.GetONNXType())
	}
	return &backend.Tensor{DType: dtype, Shape: shape, Data: data}, nil
}

// bitsOf16 views raw 16-bit elements as []uint16 (in host byte order, as
// ONNX Runtime wrote them), copying only if the bytes are misaligned.
func bitsOf16(raw []byte) []uint16 {
	n := len(raw) / 2
	if n == 0 {
		return []uint16{}
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%unsafe.Alignof(uint16(0)) == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	}
	out := make([]uint16, n)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), 2*n), raw)
	return out
}

// dtypeName maps ONNX Runtime's element types to genaic's canonical dtypes.
func dtypeName(t ortgo.TensorElementDataType) (string, bool) {
	switch t {
	case ortgo.TensorElementDataTypeFloat:
		return "float32", true
	case ortgo.TensorElementDataTypeDouble:
		return "float64", true
	case ortgo.TensorElementDataTypeFloat16:
		return "float16", true
	case ortgo.TensorElementDataTypeBFloat16:
		return "bfloat16", true
	case ortgo.TensorElementDataTypeInt8:
		return "int8", true
	case ortgo.TensorElementDataTypeInt16:
		return "int16", true
	case ortgo.TensorElementDataTypeInt32:
		return "int32", true
	case ortgo.TensorElementDataTypeInt64:
		return "int64", true
	case ortgo.TensorElementDataTypeUint8:
		return "uint8", true
	case ortgo.TensorElementDataTypeUint16:
		return "uint16", true
	case ortgo.TensorElementDataTypeUint32:
		return "uint32", true
	case ortgo.TensorElementDataTypeUint64:
		return "uint64", true
	case ortgo.TensorElementDataTypeBool:
		return "bool", true
	case ortgo.TensorElementDataTypeFloat8E4M3FN:
		return "float8e4m3fn", true
	case ortgo.TensorElementDataTypeFloat8E4M3FNUZ:
		return "float8e4m3fnuz", true
	case ortgo.TensorElementDataTypeFloat8E5M2:
		return "float8e5m2", true
	case ortgo.TensorElementDataTypeFloat8E5M2FNUZ:
		return "float8e5m2fnuz", true
	}
	return "", false
}

// hostTypes is the Go element type each dtype is carried in (backend.NewTensor).
var hostTypes = map[string]string{
	"float32": "[]float32", "float64": "[]float64", "float16": "[]uint16", "bfloat16": "[]uint16",
	"int8": "[]int8", "int16": "[]int16", "int32": "[]int32", "int64": "[]int64",
	"uint8": "[]uint8", "uint16": "[]uint16", "uint32": "[]uint32", "uint64": "[]uint64",
	"bool": "[]bool",
}

// checkHostType demands that a tensor's data is the Go slice type its
// dtype is carried in, so that ONNX Runtime never reads bytes as the wrong
// element type.
func checkHostType(t *backend.Tensor) error {
	want, ok := hostTypes[t.DType]
	if !ok {
		return fmt.Errorf("dtype %q is not one the onnxruntime backend passes (it passes %s)", t.DType, strings.Join(slices.Sorted(maps.Keys(hostTypes)), ", "))
	}
	if got := fmt.Sprintf("%T", t.Data); got != want {
		return fmt.Errorf("a %s tensor must carry its data as %s, but it holds %s", t.DType, want, got)
	}
	return nil
}

// dataLen is the element count of a tensor's typed slice.
func dataLen(data any) (int, error) {
	switch d := data.(type) {
	case []float32:
		return len(d), nil
	case []float64:
		return len(d), nil
	case []int64:
		return len(d), nil
	case []int32:
		return len(d), nil
	case []int16:
		return len(d), nil
	case []int8:
		return len(d), nil
	case []uint8:
		return len(d), nil
	case []uint16:
		return len(d), nil
	case []uint32:
		return len(d), nil
	case []uint64:
		return len(d), nil
	case []bool:
		return len(d), nil
	}
	return 0, fmt.Errorf("tensor data of Go type %T is not a supported typed slice", data)
}

// OutputShape implements backend.ShapeHinter: the graph's static extents of an
// output, -1 where dynamic, or nil for an unknown output.
func (s *session) OutputShape(name string) []int64 {
	for _, o := range s.outputs {
		if o.Name == name {
			return append([]int64(nil), o.Dimensions...)
		}
	}
	return nil
}
