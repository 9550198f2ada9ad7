package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unsafe"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
)

// oipTypes maps the protocol's datatypes to genaic's dtypes. BYTES has no
// counterpart: genaic tensors are numeric; a BYTES tensor is taken only
// for a packed uint8 media input, each element one encoded item (bytes.go).
var oipTypes = map[string]string{
	"BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
	"INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
	"FP16": "float16", "BF16": "bfloat16", "FP32": "float32", "FP64": "float64",
}

// oipNames maps genaic's dtypes to the protocol's datatypes.
var oipNames = func() map[string]string {
	m := map[string]string{}
	for k, v := range oipTypes {
		m[v] = k
	}
	return m
}()

// Datatype returns the protocol's datatype of a genaic dtype.
func Datatype(dtype string) string {
	if name, ok := oipNames[dtype]; ok {
		return name
	}
	return "BYTES"
}

func dtypeOf(name, datatype string) (string, error) {
	dt, ok := oipTypes[datatype]
	if !ok {
		return "", inputErr("input `%s` has datatype %q; genaic serve takes BOOL, UINT8-64, INT8-64, FP16, BF16, FP32 or FP64, and BYTES for packed uint8 media inputs", name, datatype)
	}
	return dt, nil
}

func inputErr(format string, args ...any) error {
	return backend.Errorf(backend.RunInput, format, args...)
}

// elements checks a shape and returns its element count, bounded by limit
// (the most elements the request's body could carry).
func elements(name string, shape []int64, limit int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, inputErr("input `%s` has shape %v: a dimension cannot be negative", name, shape)
		}
		if d != 0 && n > limit/d {
			return 0, inputErr("input `%s` has shape %v: more elements than the request carries", name, shape)
		}
		n *= d
	}
	return n, nil
}

// size is the byte size of one element of dtype on the wire.
func size(dtype string) int64 {
	switch dtype {
	case "float64", "int64", "uint64":
		return 8
	case "float32", "int32", "uint32":
		return 4
	case "int16", "uint16", "float16", "bfloat16":
		return 2
	}
	return 1
}

// hostLittleEndian reports whether this machine's numbers are
// little-endian, as the protocol's binary data is: then a tensor's bytes
// are its memory, copied (or viewed) whole instead of element by element,
// which encoding/binary's loop would do at a cost in every answer.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rawMemory is the memory of numeric tensor data as bytes: a view, not a
// copy. Booleans (Go's representation is its own) report false.
func rawMemory(data any) ([]byte, bool) {
	switch d := data.(type) {
	case []float32:
		return memoryOf(d), true
	case []float64:
		return memoryOf(d), true
	case []int64:
		return memoryOf(d), true
	case []int32:
		return memoryOf(d), true
	case []int16:
		return memoryOf(d), true
	case []int8:
		return memoryOf(d), true
	case []uint64:
		return memoryOf(d), true
	case []uint32:
		return memoryOf(d), true
	case []uint16:
		return memoryOf(d), true
	case []uint8:
		return d, true
	}
	return nil, false
}

func memoryOf[E float32 | float64 | int64 | int32 | int16 | int8 | uint64 | uint32 | uint16](s []E) []byte {
	var e E
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(e)))
}

// fromBytes reads a tensor from little-endian bytes (the binary tensor
// extension, gRPC raw contents). Where the host is little-endian too and
// b lies on a boundary of the element's size, the tensor is a view of b,
// not a copy (viewBytes): b must then stay unwritten for as long as the
// tensor is read, which the callers' buffers are (a request body or a
// message read for this request alone, never pooled: a runner may still
// read a cancelled request's inputs after Run has returned). Otherwise,
// and for booleans, the elements are copied. shape is kept, not copied.
func fromBytes(name, dtype string, shape []int64, b []byte) (*backend.Tensor, error) {
	n, err := elements(name, shape, int64(len(b))+1)
	if err != nil {
		return nil, err
	}
	if n*size(dtype) != int64(len(b)) {
		return nil, inputErr("input `%s` (%s%v) needs %d bytes, the request gives %d", name, Datatype(dtype), shape, n*size(dtype), len(b))
	}
	if data, ok := viewBytes(dtype, b, int(n)); ok {
		return &backend.Tensor{DType: dtype, Shape: shape, Data: data}, nil
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, inputErr("input `%s`: %v", name, err)
	}
	if d, ok := t.Data.([]bool); ok {
		for i, c := range b {
			d[i] = c != 0
		}
		return t, nil
	}
	if mem, ok := rawMemory(t.Data); ok && hostLittleEndian {
		copy(mem, b)
		return t, nil
	}
	if _, err := binary.Decode(b, binary.LittleEndian, t.Data); err != nil {
		return nil, inputErr("input `%s`: %v", name, err)
	}
	return t, nil
}

// viewBytes returns b as the n elements of dtype's host slice, sharing
// its memory (its capacity is n: appending to it cannot reach what
// follows b), where that is b's meaning: the host is little-endian and b
// starts on a boundary of the element's size, so that the pointer
// conversion is valid (checkptr, under -race, refuses a misaligned one).
// ok is false otherwise, and for booleans, whose Go representation only
// admits 0 and 1.
func viewBytes(dtype string, b []byte, n int) (any, bool) {
	if !hostLittleEndian || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size(dtype)) != 0 {
		return nil, false
	}
	switch dtype {
	case "float32":
		return viewOf[float32](b, n), true
	case "float64":
		return viewOf[float64](b, n), true
	case "int64":
		return viewOf[int64](b, n), true
	case "int32":
		return viewOf[int32](b, n), true
	case "int16":
		return viewOf[int16](b, n), true
	case "int8":
		return viewOf[int8](b, n), true
	case "uint64":
		return viewOf[uint64](b, n), true
	case "uint32":
		return viewOf[uint32](b, n), true
	case "uint16", "float16", "bfloat16":
		return viewOf[uint16](b, n), true
	case "uint8":
		return b[:n:n], true
	}
	return nil, false
}

// viewOf is b's memory as n elements of E; b holds n*sizeof(E) bytes at
// an address aligned for E.
func viewOf[E float32 | float64 | int64 | int32 | int16 | int8 | uint64 | uint32 | uint16](b []byte, n int) []E {
	if n == 0 {
		return []E{}
	}
	return unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// toBytes returns a tensor's elements as little-endian bytes. Where the
// host is little-endian too, that is the tensor's own memory, not a copy:
// the caller only reads it, while the tensor is not written (an answer's
// outputs, a client's request).
func toBytes(t *backend.Tensor) []byte {
	if mem, ok := rawMemory(t.Data); ok && hostLittleEndian {
		return mem
	}
	if d, ok := t.Data.([]bool); ok {
		out := make([]byte, len(d))
		for i, v := range d {
			if v {
				out[i] = 1
			}
		}
		return out
	}
	b, err := binary.Append(make([]byte, 0, t.Len()*size(t.DType)), binary.LittleEndian, t.Data)
	if err != nil {
		panic(fmt.Sprintf("serve: tensor %s holds %T", t, t.Data))
	}
	return b
}

// fromJSON reads a tensor from its JSON data: the elements in row-major
// order, flat or nested as the shape. The common form is read in one
// pass (fastJSON); the rest, and every mistake, element by element
// (slowJSON).
func fromJSON(name, dtype string, shape []int64, raw json.RawMessage) (*backend.Tensor, error) {
	if t, ok := fastJSON(dtype, shape, raw); ok {
		return t, nil
	}
	return slowJSON(name, dtype, shape, raw)
}

// jsonSpace is the white space JSON allows between tokens (RFC 8259): not
// Unicode's, whose vertical tab or form feed no JSON parser takes.
const jsonSpace = " \t\n\r"

// slowJSON is fromJSON with encoding/json, element by element, naming
// what is wrong.
func slowJSON(name, dtype string, shape []int64, raw json.RawMessage) (*backend.Tensor, error) {
	var flat []json.RawMessage
	if err := flatten(raw, &flat, 0); err != nil {
		return nil, inputErr("input `%s`: data %v", name, err)
	}
	n, err := elements(name, shape, int64(len(flat))+1)
	if err != nil {
		return nil, err
	}
	if n != int64(len(flat)) {
		return nil, inputErr("input `%s` has shape %v (%d elements) but its data holds %d", name, shape, n, len(flat))
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, inputErr("input `%s`: %v", name, err)
	}
	for i, el := range flat {
		if err := setJSON(t, i, el); err != nil {
			return nil, inputErr("input `%s`: element %d (%s) is no %s: %v", name, i, el, Datatype(dtype), err)
		}
	}
	return t, nil
}

// flatten appends the leaves of nested JSON arrays to out.
func flatten(raw json.RawMessage, out *[]json.RawMessage, depth int) error {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) == 0 || raw[0] != '[' {
		if depth == 0 {
			return fmt.Errorf("is no array")
		}
		*out = append(*out, raw)
		return nil
	}
	if depth > 32 {
		return fmt.Errorf("nests arrays deeper than 32")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return err
	}
	for _, el := range elems {
		if err := flatten(el, out, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func setJSON(t *backend.Tensor, i int, el json.RawMessage) error {
	switch d := t.Data.(type) {
	case []bool:
		return json.Unmarshal(el, &d[i])
	case []float32:
		return json.Unmarshal(el, &d[i])
	case []float64:
		return json.Unmarshal(el, &d[i])
	case []int8:
		return json.Unmarshal(el, &d[i])
	case []int16:
		return json.Unmarshal(el, &d[i])
	case []int32:
		return json.Unmarshal(el, &d[i])
	case []int64:
		return json.Unmarshal(el, &d[i])
	case []uint8:
		return json.Unmarshal(el, &d[i])
	case []uint32:
		return json.Unmarshal(el, &d[i])
	case []uint64:
		return json.Unmarshal(el, &d[i])
	case []uint16:
		if t.DType == "uint16" {
			return json.Unmarshal(el, &d[i])
		}
		var f float32
		if err := json.Unmarshal(el, &f); err != nil {
			return err
		}
		if t.DType == "bfloat16" {
			d[i] = backend.Float32ToBFloat16(f)
		} else {
			d[i] = backend.Float32ToHalf(f)
		}
		return nil
	}
	return fmt.Errorf("unsupported %T", t.Data)
}

// jsonData returns a tensor's elements as a flat array JSON encodes as
// numbers (bytes would be base64, 16-bit floats their bits). NaN and
// infinities have no JSON form: such a tensor must travel as binary data.
func jsonData(t *backend.Tensor) (any, error) {
	switch d := t.Data.(type) {
	case []uint8:
		out := make([]int, len(d))
		for i, v := range d {
			out[i] = int(v)
		}
		return out, nil
	case []uint16:
		if t.DType == "uint16" {
			return d, nil
		}
		out := make([]float32, len(d))
		for i, v := range d {
			if t.DType == "bfloat16" {
				out[i] = math.Float32frombits(uint32(v) << 16)
			} else {
				out[i] = backend.HalfToFloat32(v)
			}
		}
		return finite32(out)
	case []float32:
		return finite32(d)
	case []float64:
		for _, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("holds %v, which JSON cannot carry; ask for it as binary data", v)
			}
		}
		return d, nil
	}
	return t.Data, nil
}

func finite32(d []float32) (any, error) {
	for _, v := range d {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("holds %v, which JSON cannot carry; ask for it as binary data", v)
		}
	}
	return d, nil
}

// fromContents reads a gRPC input's typed contents. Contents of the
// tensor's own element type become its data as they are, not copied: the
// message is decoded for this request alone and not read again.
func fromContents(name, dtype string, shape []int64, c *oippb.InferTensorContents) (*backend.Tensor, error) {
	if c == nil {
		c = &oippb.InferTensorContents{}
	}
	var have int
	var same any // contents of dtype's host type, taken as they are
	var fill func(t *backend.Tensor) error
	switch dtype {
	case "bool":
		have, same = len(c.BoolContents), c.BoolContents
	case "int8", "int16", "int32":
		have = len(c.IntContents)
		fill = func(t *backend.Tensor) error { return narrow(t, c.IntContents) }
	case "int64":
		have, same = len(c.Int64Contents), c.Int64Contents
	case "uint8", "uint16", "uint32":
		have = len(c.UintContents)
		fill = func(t *backend.Tensor) error { return narrow(t, c.UintContents) }
	case "uint64":
		have, same = len(c.Uint64Contents), c.Uint64Contents
	case "float32":
		have, same = len(c.Fp32Contents), c.Fp32Contents
	case "float64":
		have, same = len(c.Fp64Contents), c.Fp64Contents
	default:
		return nil, inputErr("input `%s` is %s, which has no typed contents field: send it in raw_input_contents", name, Datatype(dtype))
	}
	n, err := elements(name, shape, int64(have)+1)
	if err != nil {
		return nil, err
	}
	if n != int64(have) {
		return nil, inputErr("input `%s` has shape %v (%d elements) but its contents hold %d", name, shape, n, have)
	}
	if fill == nil && have > 0 { // an empty tensor gets an empty slice of its own, never nil
		return &backend.Tensor{DType: dtype, Shape: shape, Data: same}, nil
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, inputErr("input `%s`: %v", name, err)
	}
	if fill == nil {
		return t, nil
	}
	if err := fill(t); err != nil {
		return nil, inputErr("input `%s`: %v", name, err)
	}
	return t, nil
}

// narrow copies 32-bit contents into a narrower tensor, refusing values
// out of its range.
func narrow[T int32 | uint32](t *backend.Tensor, src []T) error {
	for i, v := range src {
		w := int64(v)
		var ok bool
		switch d := t.Data.(type) {
		case []int8:
			d[i], ok = int8(w), w >= math.MinInt8 && w <= math.MaxInt8
		case []int16:
			d[i], ok = int16(w), w >= math.MinInt16 && w <= math.MaxInt16
		case []int32:
			d[i], ok = int32(w), true
		case []uint8:
			d[i], ok = uint8(w), w <= math.MaxUint8
		case []uint16:
			d[i], ok = uint16(w), w <= math.MaxUint16
		case []uint32:
			d[i], ok = uint32(w), true
		}
		if !ok {
			return fmt.Errorf("element %d (%d) is out of range for %s", i, v, Datatype(t.DType))
		}
	}
	return nil
}
