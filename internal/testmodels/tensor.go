package testmodels

import (
	"fmt"
	"math"
)

// Tensor is a dense row-major tensor of float32 or int64 values, the two
// element types the fixture models use.
type Tensor struct {
	Shape []int64
	F32   []float32 // float32 elements; nil for an int64 tensor
	I64   []int64   // int64 elements; nil for a float32 tensor
}

// Float32 returns a float32 tensor; it panics when the data does not fill
// the shape.
func Float32(shape []int64, data []float32) Tensor {
	if int64(len(data)) != numel(shape) {
		panic(fmt.Sprintf("testmodels: %d float32 values for shape %v", len(data), shape))
	}
	return Tensor{Shape: shape, F32: nonNil(data)}
}

// Int64 returns an int64 tensor; it panics when the data does not fill the
// shape.
func Int64(shape []int64, data []int64) Tensor {
	if int64(len(data)) != numel(shape) {
		panic(fmt.Sprintf("testmodels: %d int64 values for shape %v", len(data), shape))
	}
	return Tensor{Shape: shape, I64: nonNil(data)}
}

// DType returns "float32" or "int64".
func (t Tensor) DType() string {
	if t.I64 != nil {
		return "int64"
	}
	return "float32"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// conforms checks that t can be read as port p: the dtype, the rank, every
// extent the model fixes, and that the data fills the shape.
func (t Tensor) conforms(p Port) error {
	if t.DType() != p.DType {
		return fmt.Errorf("dtype is %s, the model reads %s", t.DType(), p.DType)
	}
	if len(t.Shape) != len(p.Dims) {
		return fmt.Errorf("shape %v has rank %d, the model reads rank %d", t.Shape, len(t.Shape), len(p.Dims))
	}
	for i, d := range p.Dims {
		if t.Shape[i] < 0 || (d.Size > 0 && t.Shape[i] != d.Size) {
			return fmt.Errorf("shape %v: axis %d must be %s", t.Shape, i, d.describe())
		}
	}
	n := len(t.F32)
	if t.I64 != nil {
		n = len(t.I64)
	}
	if int64(n) != numel(t.Shape) {
		return fmt.Errorf("%d elements do not fill shape %v", n, t.Shape)
	}
	return nil
}

func (d Dim) describe() string {
	if d.Size > 0 {
		return fmt.Sprint(d.Size)
	}
	return "non-negative"
}

// matrix is a float64 working copy of a float32 tensor viewed as rows of
// the last axis.
type matrix struct {
	rows, cols int
	v          []float64
}

func (m matrix) row(i int) []float64 { return m.v[i*m.cols : (i+1)*m.cols] }

// rowsOf views t as a matrix whose rows are its last axis.
func rowsOf(t Tensor) matrix {
	cols := int(t.Shape[len(t.Shape)-1])
	v := make([]float64, len(t.F32))
	for i, x := range t.F32 {
		v[i] = float64(x)
	}
	rows := 0
	if cols > 0 {
		rows = len(v) / cols
	}
	return matrix{rows: rows, cols: cols, v: v}
}

// linear returns x·W + b for a row x, with W stored [len(x), len(b)].
func linear(x []float64, w []float32, b []float32) []float64 {
	out := make([]float64, len(b))
	for j := range out {
		s := float64(b[j])
		for k, xk := range x {
			s += xk * float64(w[k*len(b)+j])
		}
		out[j] = s
	}
	return out
}

// addTo adds src to dst element-wise.
func addTo(dst, src []float64) {
	for i := range dst {
		dst[i] += src[i]
	}
}

// scale returns v / n, or v unchanged when n < 1 (the graphs divide by
// max(count, 1), so an empty pool is all zeros).
func scale(v []float64, n int) []float64 {
	d := float64(max(n, 1))
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / d
	}
	return out
}

// stack rounds rows of float64 values into a float32 tensor [len(rows), width].
func stack(rows [][]float64, width int) Tensor {
	data := make([]float32, 0, len(rows)*width)
	for _, r := range rows {
		for _, x := range r {
			data = append(data, float32(x))
		}
	}
	return Float32([]int64{int64(len(rows)), int64(width)}, data)
}

// unitCount is the number of units an offsets vector delimits: its length
// less one, never negative.
func unitCount(offsets Tensor) int { return max(len(offsets.I64)-1, 0) }

// clamp limits n to [0, hi].
func clamp(n int64, hi int64) int { return int(min(max(n, 0), hi)) }

// negInf is the identity of max pooling.
var negInf = math.Inf(-1)
