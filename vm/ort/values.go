//go:build cgo

package ort

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/genaic/genaic/backend"
	ortgo "github.com/yalue/onnxruntime_go"
)

// ortValue checks a host tensor's data against its dtype and shape and
// wraps it as an ORT value (newValue).
func ortValue(t *backend.Tensor) (ortgo.Value, error) {
	if err := checkData(t); err != nil {
		return nil, err
	}
	return newValue(t)
}

// checkData demands a tensor whose data is the Go slice type of its dtype
// and holds exactly its shape's element count. It runs on every input of
// every call: a sound tensor costs one type switch (backend's Problem);
// only a faulty one is examined for a message in this backend's terms.
func checkData(t *backend.Tensor) error {
	msg := t.Problem()
	if msg == "" {
		return nil
	}
	if err := explainData(t); err != nil {
		return err
	}
	return fmt.Errorf("%s %s", t, msg)
}

// explainData says why a tensor's data cannot be passed: not the Go slice
// type of its dtype, or not its shape's element count.
func explainData(t *backend.Tensor) error {
	if n, err := dataLen(t.Data); err != nil {
		return err
	} else if int64(n) != t.Len() {
		return fmt.Errorf("%s holds %d elements, but its shape needs %d", t, n, t.Len())
	}
	return checkHostType(t)
}

// newValue wraps a checked host tensor's slice as an ORT tensor without
// copying: onnxruntime_go's NewTensor hands the slice's address to ONNX
// Runtime (CreateTensorWithDataAsOrtValue), which reads, or for an output
// writes, it in place. A rank-0 tensor is the exception (scalarValue).
func newValue(t *backend.Tensor) (ortgo.Value, error) {
	if len(t.Shape) == 0 {
		return scalarValue(t)
	}
	shape := ortgo.Shape(t.Shape)
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

// scalarValue makes a rank-0 ORT value holding a copy of a checked host
// tensor's one element. onnxruntime_go v1.27.0 makes rank-0 values only as
// Scalars (NewTensor refuses an empty shape), and a Scalar owns its
// element: ONNX Runtime reads, or for an output writes, the Scalar's
// memory, not the tensor's. So such a value is never cached (keyOf), since
// what a caller writes into the tensor's buffer later would not reach it,
// and an output written into one is copied back into its tensor after the
// run (readScalar). Scalars exist only of Go element types: a float16 or
// bfloat16 scalar cannot be made.
func scalarValue(t *backend.Tensor) (ortgo.Value, error) {
	switch d := t.Data.(type) {
	case []float32:
		return scalarOf(d)
	case []float64:
		return scalarOf(d)
	case []int64:
		return scalarOf(d)
	case []int32:
		return scalarOf(d)
	case []int16:
		return scalarOf(d)
	case []int8:
		return scalarOf(d)
	case []uint8:
		return scalarOf(d)
	case []uint32:
		return scalarOf(d)
	case []uint64:
		return scalarOf(d)
	case []bool:
		return scalarOf(d)
	case []uint16:
		if t.DType == "uint16" {
			return scalarOf(d)
		}
		return nil, fmt.Errorf("a rank-0 %s cannot be passed: onnxruntime_go v1.27.0 makes rank-0 values only of Go element types, and %s has none", t.DType, t.DType)
	}
	return nil, fmt.Errorf("%s has data of Go type %T, which the onnxruntime backend does not pass", t, t.Data)
}

// scalarOf makes a Scalar holding d's one element.
func scalarOf[T ortgo.TensorData](d []T) (ortgo.Value, error) {
	v, err := ortgo.NewScalar(d[0])
	if err != nil {
		return nil, err
	}
	return v, nil
}

// readScalar copies the element ONNX Runtime wrote into a Scalar made by
// scalarValue back into the tensor it was made for.
func readScalar(v ortgo.Value, t *backend.Tensor) error {
	if scalarInto[float32](v, t.Data) || scalarInto[float64](v, t.Data) || scalarInto[int64](v, t.Data) ||
		scalarInto[int32](v, t.Data) || scalarInto[int16](v, t.Data) || scalarInto[int8](v, t.Data) ||
		scalarInto[uint8](v, t.Data) || scalarInto[uint16](v, t.Data) || scalarInto[uint32](v, t.Data) ||
		scalarInto[uint64](v, t.Data) || scalarInto[bool](v, t.Data) {
		return nil
	}
	return fmt.Errorf("%s cannot take the element of a %T", t, v)
}

// scalarInto copies v's element into data's first when v is a Scalar of
// data's element type, and reports whether it was.
func scalarInto[T ortgo.TensorData](v ortgo.Value, data any) bool {
	s, ok := v.(*ortgo.Scalar[T])
	d, same := data.([]T)
	if !ok || !same || len(d) == 0 {
		return false
	}
	d[0] = s.GetData()
	return true
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

// dataAddr is the address of a host tensor's first element.
func dataAddr(data any) uintptr {
	addr, _ := dataSpan(data)
	return addr
}

// dataSpan is the address of a host tensor's first element and its
// length in elements.
func dataSpan(data any) (uintptr, int) {
	switch d := data.(type) {
	case []float32:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []float64:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []int64:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []int32:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []int16:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []int8:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []uint8:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []uint16:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []uint32:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []uint64:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	case []bool:
		return uintptr(unsafe.Pointer(unsafe.SliceData(d))), len(d)
	}
	return 0, 0
}

// checkHostType demands that a tensor's data is the Go slice type its
// dtype is carried in, so that ONNX Runtime never reads bytes as the wrong
// element type.
func checkHostType(t *backend.Tensor) error {
	want, ok := hostTypes[t.DType]
	if !ok {
		return fmt.Errorf("dtype %q is not one the onnxruntime backend passes (it passes %s)", t.DType, strings.Join(slices.Sorted(maps.Keys(hostTypes)), ", "))
	}
	if got := hostType(t.Data); got != want {
		return fmt.Errorf("a %s tensor must carry its data as %s, but it holds %s", t.DType, want, got)
	}
	return nil
}

// hostType names the Go type of tensor data as %T does, without
// formatting for the slice types a tensor may hold (it runs on every call).
func hostType(data any) string {
	switch data.(type) {
	case []float32:
		return "[]float32"
	case []float64:
		return "[]float64"
	case []int64:
		return "[]int64"
	case []int32:
		return "[]int32"
	case []int16:
		return "[]int16"
	case []int8:
		return "[]int8"
	case []uint8:
		return "[]uint8"
	case []uint16:
		return "[]uint16"
	case []uint32:
		return "[]uint32"
	case []uint64:
		return "[]uint64"
	case []bool:
		return "[]bool"
	}
	return fmt.Sprintf("%T", data)
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
