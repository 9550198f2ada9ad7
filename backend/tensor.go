package backend

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"unsafe"
)

// Tensor is a dense, row-major host tensor. Data holds a typed slice
// ([]float32, []int64, ...) of exactly the shape's element count. A tensor
// may be a view: its Data then aliases part of another tensor's buffer.
type Tensor struct {
	DType string // canonical dtype name (ir.LookupDType)
	Shape []int64
	Data  any
}

// Elements returns the number of elements a shape holds.
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Len returns the number of elements of t.
func (t *Tensor) Len() int64 { return Elements(t.Shape) }

// MaxElements bounds the extents of a tensor a caller brings: their
// product, an empty axis counted as one, so that an empty tensor cannot
// declare an axis a model would size its outputs by (a [0, 2^40] input of
// a pooling model asks for outputs of 2^40 elements per unit).
const MaxElements = 1 << 32

// Problem says why t cannot be read as the tensor it declares, or is ""
// when it can: its data is the host slice of its dtype, no extent is
// negative, the extents multiply (empty axes counted as one) to at most
// MaxElements, and their product is the data's length. A tensor built
// here always can; one a caller builds (vm.Request, a generated
// executor's input) is checked before it is read.
func (t *Tensor) Problem() string {
	have, ok := hostLen(t.DType, t.Data)
	switch {
	case t.Data == nil:
		return "carries no data"
	case !ok:
		return fmt.Sprintf("carries %T data", t.Data)
	}
	n, extents := int64(1), int64(1)
	for _, d := range t.Shape {
		switch {
		case d < 0:
			return "has a negative extent"
		case d == 0:
			n = 0
			continue
		}
		if hi, lo := bits.Mul64(uint64(extents), uint64(d)); hi != 0 || lo > MaxElements {
			return tooMany
		}
		extents *= d
		n *= d
	}
	if have != n {
		return "carries a different number of elements"
	}
	return ""
}

const tooMany = "has extents that multiply to more than 4294967296 elements (an empty axis counted as one)"

// hostLen returns the length of data and whether it is the slice type
// makeData gives dtype.
func hostLen(dtype string, data any) (int64, bool) {
	switch d := data.(type) {
	case []float32:
		return int64(len(d)), dtype == "float32"
	case []int64:
		return int64(len(d)), dtype == "int64"
	case []float64:
		return int64(len(d)), dtype == "float64"
	case []int32:
		return int64(len(d)), dtype == "int32"
	case []int16:
		return int64(len(d)), dtype == "int16"
	case []int8:
		return int64(len(d)), dtype == "int8"
	case []uint8:
		return int64(len(d)), dtype == "uint8"
	case []uint16:
		return int64(len(d)), dtype == "uint16" || dtype == "float16" || dtype == "bfloat16"
	case []uint32:
		return int64(len(d)), dtype == "uint32"
	case []uint64:
		return int64(len(d)), dtype == "uint64"
	case []bool:
		return int64(len(d)), dtype == "bool"
	}
	return 0, false
}

// Rank returns the number of axes.
func (t *Tensor) Rank() int { return len(t.Shape) }

// String summarises a tensor for messages: dtype and shape.
func (t *Tensor) String() string {
	if t == nil {
		return "<nil tensor>"
	}
	parts := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		parts[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s[%s]", t.DType, strings.Join(parts, ", "))
}

// NewTensor allocates a zero-filled tensor.
func NewTensor(dtype string, shape []int64) (*Tensor, error) {
	data, err := makeData(dtype, int(Elements(shape)))
	if err != nil {
		return nil, err
	}
	if len(shape) == 0 || len(shape) > inlineRank {
		return &Tensor{DType: dtype, Shape: append([]int64(nil), shape...), Data: data}, nil
	}
	// The tensor and its shape in one allocation: the runtime makes one
	// per group output and per assembled input.
	b := &struct {
		t    Tensor
		dims [inlineRank]int64
	}{}
	n := copy(b.dims[:], shape)
	b.t = Tensor{DType: dtype, Shape: b.dims[:n:n], Data: data}
	return &b.t, nil
}

// inlineRank is the highest rank NewTensor allocates with its tensor.
const inlineRank = 4

func makeData(dtype string, n int) (any, error) {
	switch dtype {
	case "float32":
		return make([]float32, n), nil
	case "float64":
		return make([]float64, n), nil
	case "int64":
		return make([]int64, n), nil
	case "int32":
		return make([]int32, n), nil
	case "int16":
		return make([]int16, n), nil
	case "int8":
		return make([]int8, n), nil
	case "uint8":
		return make([]uint8, n), nil
	case "uint16":
		return make([]uint16, n), nil
	case "uint32":
		return make([]uint32, n), nil
	case "uint64":
		return make([]uint64, n), nil
	case "bool":
		return make([]bool, n), nil
	case "float16", "bfloat16":
		// 16-bit floats are carried as their raw bits.
		return make([]uint16, n), nil
	}
	return nil, fmt.Errorf("dtype %s has no host representation in this runtime", dtype)
}

// Int64s returns the data of an int64 tensor.
func (t *Tensor) Int64s() []int64 {
	v, _ := t.Data.([]int64)
	return v
}

// Float32s returns the data of a float32 tensor.
func (t *Tensor) Float32s() []float32 {
	v, _ := t.Data.([]float32)
	return v
}

// elemSize is the byte size of one element of t's host representation.
func (t *Tensor) elemSize() int64 { return max(elemSizeOf(t.Data), 1) }

// Bytes returns the payload size of t in bytes.
func (t *Tensor) Bytes() int64 { return t.Len() * t.elemSize() }

// slice returns elements [lo, hi) of any typed slice, sharing its memory.
func slice(data any, lo, hi int64) any {
	switch d := data.(type) {
	case []float32:
		return d[lo:hi:hi]
	case []float64:
		return d[lo:hi:hi]
	case []int64:
		return d[lo:hi:hi]
	case []int32:
		return d[lo:hi:hi]
	case []int16:
		return d[lo:hi:hi]
	case []int8:
		return d[lo:hi:hi]
	case []uint8:
		return d[lo:hi:hi]
	case []uint16:
		return d[lo:hi:hi]
	case []uint32:
		return d[lo:hi:hi]
	case []uint64:
		return d[lo:hi:hi]
	case []bool:
		return d[lo:hi:hi]
	}
	panic(fmt.Sprintf("backend: unsupported tensor data %T", data))
}

// CopyElems copies n elements of src, from its element so on, into t from
// its element at on, and returns n. Both tensors have one dtype.
func (t *Tensor) CopyElems(at int64, src *Tensor, so, n int64) int64 {
	return copyElems(t.Data, at, src.Data, so, n)
}

// copyElems copies n elements from src[so:] to dst[do:], returning n.
func copyElems(dst any, do int64, src any, so, n int64) int64 {
	switch d := dst.(type) {
	case []float32:
		return int64(copy(d[do:do+n], src.([]float32)[so:so+n]))
	case []float64:
		return int64(copy(d[do:do+n], src.([]float64)[so:so+n]))
	case []int64:
		return int64(copy(d[do:do+n], src.([]int64)[so:so+n]))
	case []int32:
		return int64(copy(d[do:do+n], src.([]int32)[so:so+n]))
	case []int16:
		return int64(copy(d[do:do+n], src.([]int16)[so:so+n]))
	case []int8:
		return int64(copy(d[do:do+n], src.([]int8)[so:so+n]))
	case []uint8:
		return int64(copy(d[do:do+n], src.([]uint8)[so:so+n]))
	case []uint16:
		return int64(copy(d[do:do+n], src.([]uint16)[so:so+n]))
	case []uint32:
		return int64(copy(d[do:do+n], src.([]uint32)[so:so+n]))
	case []uint64:
		return int64(copy(d[do:do+n], src.([]uint64)[so:so+n]))
	case []bool:
		return int64(copy(d[do:do+n], src.([]bool)[so:so+n]))
	}
	panic(fmt.Sprintf("backend: unsupported tensor data %T", dst))
}

// View returns rows [lo, hi) of axis 0 of t, sharing its memory: no copy.
func (t *Tensor) View(lo, hi int64) *Tensor {
	inner := Elements(t.Shape[1:])
	v := &view{Tensor: Tensor{DType: t.DType}}
	v.Data = sliceInto(&v.hdr, t.Data, lo*inner, hi*inner)
	if len(t.Shape) <= len(v.dims) {
		v.Shape = v.dims[:len(t.Shape):len(t.Shape)]
	} else {
		v.Shape = make([]int64, len(t.Shape))
	}
	copy(v.Shape, t.Shape)
	v.Shape[0] = hi - lo
	return &v.Tensor
}

// Views returns the views of rows [lo, hi) of axis 0 of t for each span,
// as View does, with the tensors of all of them in one allocation: a
// group is split into its requests' shares at once.
func (t *Tensor) Views(spans [][2]int64) []*Tensor {
	return t.AppendViews(nil, spans)
}

// AppendViews is Views appending the views to dst.
func (t *Tensor) AppendViews(dst []*Tensor, spans [][2]int64) []*Tensor {
	return t.appendViews(make([]view, len(spans)), dst, spans)
}

// ViewRoom is room for views that is written again: Append takes the
// views it hands out from it rather than allocating them, until Reset,
// which its owner calls once none of them is read any more (a group's
// share views, once every request viewing them is released).
type ViewRoom struct {
	vs []view
	n  int // handed out since the last Reset
}

// Append is AppendViews with the views taken from r.
func (r *ViewRoom) Append(t *Tensor, dst []*Tensor, spans [][2]int64) []*Tensor {
	if len(r.vs)-r.n < len(spans) {
		// A larger array; the views handed out so far stay in the old one.
		r.vs, r.n = make([]view, max(2*len(r.vs), len(spans))), 0
	}
	vs := r.vs[r.n : r.n+len(spans) : r.n+len(spans)]
	r.n += len(spans)
	return t.appendViews(vs, dst, spans)
}

// Reset makes every view r handed out free again, dropping what they
// viewed.
func (r *ViewRoom) Reset() {
	clear(r.vs[:r.n])
	r.n = 0
}

// appendViews makes vs (one per span) the views of t over spans and
// appends them to dst.
func (t *Tensor) appendViews(vs []view, dst []*Tensor, spans [][2]int64) []*Tensor {
	inner := Elements(t.Shape[1:])
	out := slices.Grow(dst, len(spans))[:len(dst)+len(spans)]
	for i, sp := range spans {
		v := &vs[i]
		v.DType, v.Data = t.DType, sliceInto(&v.hdr, t.Data, sp[0]*inner, sp[1]*inner)
		if len(t.Shape) <= len(v.dims) {
			v.Shape = v.dims[:len(t.Shape):len(t.Shape)]
		} else {
			v.Shape = make([]int64, len(t.Shape))
		}
		copy(v.Shape, t.Shape)
		v.Shape[0] = sp[1] - sp[0]
		out[len(dst)+i] = &v.Tensor
	}
	return out
}

// view is a tensor with room for its shape and its data's slice header,
// so that a view of the usual rank is one allocation rather than three.
type view struct {
	Tensor
	dims [4]int64
	hdr  sliceHeader
}

// sliceHeader is how every Go slice is laid out in memory.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// eface is how an interface value without methods is laid out: its
// dynamic type, and a pointer to its value for a value such as a slice.
type eface struct{ typ, data unsafe.Pointer }

// sliceInto returns elements [lo, hi) of a typed slice as slice does, but
// with the new slice's header written into hdr: boxing a slice into an
// interface otherwise allocates a header of its own, one per view. hdr
// must never be written again, as an interface's value never changes.
func sliceInto(hdr *sliceHeader, data any, lo, hi int64) any {
	size := elemSizeOf(data)
	if size == 0 {
		return slice(data, lo, hi)
	}
	src := (*sliceHeader)((*eface)(unsafe.Pointer(&data)).data)
	if lo < 0 || hi < lo || hi > int64(src.cap) {
		return slice(data, lo, hi) // which panics, as slicing does
	}
	p := src.data
	if hi > lo { // an empty slice keeps the base, as slicing does
		p = unsafe.Add(p, lo*size)
	}
	*hdr = sliceHeader{data: p, len: int(hi - lo), cap: int(hi - lo)}
	out := data
	(*eface)(unsafe.Pointer(&out)).data = unsafe.Pointer(hdr)
	return out
}

// elemSizeOf is the element size of the typed slices slice supports, 0
// for anything else.
func elemSizeOf(data any) int64 {
	switch data.(type) {
	case []float64, []int64, []uint64:
		return 8
	case []float32, []int32, []uint32:
		return 4
	case []int16, []uint16:
		return 2
	case []int8, []uint8, []bool:
		return 1
	}
	return 0
}

// SameBuffer reports whether a's data lies inside b's buffer: a is a view
// of b (used by tests and copy accounting).
func SameBuffer(a, b *Tensor) bool {
	return dataAddr(a.Data) >= dataAddr(b.Data) && dataAddr(a.Data) < dataAddr(b.Data)+uintptr(b.Bytes()) || a.Len() == 0
}

// dataAddr is the address of a typed slice's first element.
func dataAddr(data any) uintptr { return reflect.ValueOf(data).Pointer() }

// DataLen is the number of elements a typed slice holds.
func DataLen(data any) int64 {
	switch d := data.(type) {
	case []float32:
		return int64(len(d))
	case []int64:
		return int64(len(d))
	case []uint8:
		return int64(len(d))
	case []int32:
		return int64(len(d))
	}
	return int64(reflect.ValueOf(data).Len())
}

// HasNonFinite reports whether floating-point data of dtype holds NaN or
// an infinity (float16 and bfloat16 carried as their bits). It reads the
// exponent field alone, without a branch per element: the field is all
// ones exactly for NaN and the infinities, so adding one unit to it
// carries into the sign bit only for those.
func HasNonFinite(dtype string, data any) bool {
	switch d := data.(type) {
	case []float32:
		var acc uint32
		if len(d) > 0 && uintptr(unsafe.Pointer(&d[0]))%8 != 0 {
			acc, d = math.Float32bits(d[0])&0x7f800000+0x00800000, d[1:]
		}
		// Two at a time, read as one aligned word: one's field plus its
		// unit stays within its 32 bits, so it never carries into the
		// other's.
		var pairs uint64
		if len(d) >= 2 {
			for _, w := range unsafe.Slice((*uint64)(unsafe.Pointer(&d[0])), len(d)/2) {
				pairs |= w&0x7f8000007f800000 + 0x0080000000800000
			}
		}
		if len(d)%2 == 1 {
			acc |= math.Float32bits(d[len(d)-1])&0x7f800000 + 0x00800000
		}
		return acc&0x80000000 != 0 || pairs&0x8000000080000000 != 0
	case []float64:
		var acc uint64
		for _, v := range d {
			acc |= math.Float64bits(v)&0x7ff0000000000000 + 0x0010000000000000
		}
		return acc&0x8000000000000000 != 0
	case []uint16:
		var exp, one uint16
		switch dtype {
		case "float16":
			exp, one = 0x7c00, 0x0400
		case "bfloat16":
			exp, one = 0x7f80, 0x0080
		default:
			return false
		}
		var acc uint16
		for _, v := range d {
			acc |= v&exp + one
		}
		return acc&0x8000 != 0
	}
	return false
}

// Float64At is element k of t as a float64: float16 and bfloat16 decoded
// from their bits, integers and bools converted (true is 1). ok is false
// where t's data holds no numbers.
func (t *Tensor) Float64At(k int64) (v float64, ok bool) {
	switch d := t.Data.(type) {
	case []float32:
		return float64(d[k]), true
	case []float64:
		return d[k], true
	case []int64:
		return float64(d[k]), true
	case []int32:
		return float64(d[k]), true
	case []int16:
		return float64(d[k]), true
	case []int8:
		return float64(d[k]), true
	case []uint8:
		return float64(d[k]), true
	case []uint16:
		switch t.DType {
		case "float16":
			return float64(HalfToFloat32(d[k])), true
		case "bfloat16":
			return float64(math.Float32frombits(uint32(d[k]) << 16)), true
		}
		return float64(d[k]), true
	case []uint32:
		return float64(d[k]), true
	case []uint64:
		return float64(d[k]), true
	case []bool:
		if d[k] {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// SetFloat64At sets element k of t to v, Float64At's inverse: float16 and
// bfloat16 encoded to their bits, integers truncated toward zero, bools
// true where v is not zero. ok is false where t's data holds no numbers.
func (t *Tensor) SetFloat64At(k int64, v float64) (ok bool) {
	switch d := t.Data.(type) {
	case []float32:
		d[k] = float32(v)
	case []float64:
		d[k] = v
	case []int64:
		d[k] = int64(v)
	case []int32:
		d[k] = int32(v)
	case []int16:
		d[k] = int16(v)
	case []int8:
		d[k] = int8(v)
	case []uint8:
		d[k] = uint8(v)
	case []uint16:
		switch t.DType {
		case "float16":
			d[k] = Float32ToHalf(float32(v))
		case "bfloat16":
			d[k] = Float32ToBFloat16(float32(v))
		default:
			d[k] = uint16(v)
		}
	case []uint32:
		d[k] = uint32(v)
	case []uint64:
		d[k] = uint64(v)
	case []bool:
		d[k] = v != 0
	default:
		return false
	}
	return true
}

// HalfToFloat32 is the value of IEEE 754 half-precision bits, exactly.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToHalf rounds a float32 to IEEE half precision (nearest, ties to even).
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: still right
	}
	return sign | uint16(h)
}

// Float32ToBFloat16 rounds a float32 to bfloat16 (nearest, ties to even;
// a NaN stays a NaN).
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
