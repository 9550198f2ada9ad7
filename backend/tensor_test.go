package backend

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestViewsAreViews: Views gives each span the tensor View gives it,
// sharing t's memory, for a rank that fits a view's room and one that
// does not.
func TestViewsAreViews(t *testing.T) {
	for _, shape := range [][]int64{{6, 2}, {6, 1, 1, 1, 2}} {
		x, err := NewTensor("float32", shape)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Float32s() {
			x.Float32s()[i] = float32(i)
		}
		spans := [][2]int64{{0, 2}, {2, 2}, {2, 6}}
		vs := x.Views(spans)
		if len(vs) != len(spans) {
			t.Fatalf("%d views for %d spans", len(vs), len(spans))
		}
		for i, sp := range spans {
			want := x.View(sp[0], sp[1])
			if !slices.Equal(vs[i].Shape, want.Shape) || !slices.Equal(vs[i].Float32s(), want.Float32s()) || !SameBuffer(vs[i], x) {
				t.Errorf("shape %v span %v: got %v %v, want %v %v", shape, sp, vs[i].Shape, vs[i].Float32s(), want.Shape, want.Float32s())
			}
		}
		vs[0].Shape[0] = 99
		if vs[2].Shape[0] != 4 || x.Shape[0] != 6 {
			t.Errorf("views share their shapes: %v %v", vs[2].Shape, x.Shape)
		}
	}
}

// TestViewsOfEveryDtype: a view's data, whose slice header lives in the
// view (sliceInto), is the slice slicing gives, for every dtype, for
// empty spans at either end, and after collections; a view that keeps a
// buffer alive keeps what it saw.
func TestViewsOfEveryDtype(t *testing.T) {
	spans := [][2]int64{{0, 0}, {0, 1}, {1, 3}, {3, 3}, {3, 4}, {4, 4}}
	for _, dtype := range []string{"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool"} {
		x, err := NewTensor(dtype, []int64{4, 3})
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Len() {
			one, _ := NewTensor(dtype, []int64{1})
			if dtype == "bool" {
				one.Data.([]bool)[0] = i%2 == 1
			} else {
				one = fromFloat(t, dtype, float64(i+1))
			}
			x.CopyElems(i, one, 0, 1)
		}
		vs := x.Views(spans)
		x = nil
		for range 2 {
			runtime.GC()
		}
		for i, sp := range spans {
			v := vs[i]
			if v.Len() != (sp[1]-sp[0])*3 || DataLen(v.Data) != v.Len() {
				t.Fatalf("%s span %v: %d elements, data of %d", dtype, sp, v.Len(), DataLen(v.Data))
			}
			rv := reflect.ValueOf(v.Data)
			if rv.Cap() != rv.Len() {
				t.Errorf("%s span %v: capacity %d beyond length %d", dtype, sp, rv.Cap(), rv.Len())
			}
			for k := range rv.Len() {
				at := sp[0]*3 + int64(k)
				want := fmt.Sprint(float64(at + 1))
				if dtype == "bool" {
					want = fmt.Sprint(at%2 == 1)
				}
				if got := fmt.Sprint(rv.Index(k).Interface()); got != want && fmt.Sprint(rv.Index(k).Convert(reflect.TypeOf(0.0)).Interface()) != want {
					t.Errorf("%s span %v element %d: %s, want %s", dtype, sp, k, got, want)
				}
			}
		}
	}
}

// fromFloat is a one-element tensor of dtype holding f.
func fromFloat(t *testing.T, dtype string, f float64) *Tensor {
	t.Helper()
	x, err := NewTensor(dtype, []int64{1})
	if err != nil {
		t.Fatal(err)
	}
	rv := reflect.ValueOf(x.Data).Index(0)
	rv.Set(reflect.ValueOf(f).Convert(rv.Type()))
	return x
}

// TestHasNonFinite: NaN and either infinity are found in every
// floating-point dtype, wherever they sit; the largest finite values,
// subnormals and zeros of either sign are not, nor any integer.
func TestHasNonFinite(t *testing.T) {
	f32 := []float32{0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1}
	f64 := []float64{0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1}
	// float16: largest finite 0x7bff, smallest subnormal 0x0001, -0 0x8000;
	// bfloat16: largest finite 0x7f7f.
	f16, bf16 := []uint16{0x7bff, 0xfbff, 0x0001, 0x8000, 0x3c00}, []uint16{0x7f7f, 0xff7f, 0x0001, 0x8000, 0x3f80}
	cases := []struct {
		dtype   string
		finite  any
		spoiled func(at int) any
	}{
		{"float32", f32, func(at int) any {
			d := slices.Clone(f32)
			d[at] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[at%3]
			return d
		}},
		{"float64", f64, func(at int) any {
			d := slices.Clone(f64)
			d[at] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[at%3]
			return d
		}},
		{"float16", f16, func(at int) any {
			d := slices.Clone(f16)
			d[at] = []uint16{0x7e00, 0x7c00, 0xfc00}[at%3]
			return d
		}},
		{"bfloat16", bf16, func(at int) any {
			d := slices.Clone(bf16)
			d[at] = []uint16{0x7fc0, 0x7f80, 0xff80}[at%3]
			return d
		}},
	}
	for _, c := range cases {
		if HasNonFinite(c.dtype, c.finite) {
			t.Errorf("%s %v: reported non-finite", c.dtype, c.finite)
		}
		for at := range int(DataLen(c.finite)) {
			if d := c.spoiled(at); !HasNonFinite(c.dtype, d) {
				t.Errorf("%s %v: the non-finite value at %d was not found", c.dtype, d, at)
			}
		}
	}
	for _, d := range []any{[]int64{math.MaxInt64, -1}, []int32{math.MinInt32}, []uint8{0xff}, []bool{true}, []uint16{0xffff}} {
		if HasNonFinite("int64", d) {
			t.Errorf("%v: integer data reported non-finite", d)
		}
	}
	if HasNonFinite("float32", []float32{}) {
		t.Error("no data reported non-finite")
	}
	// float32 is read two at a time from an aligned word: a view may
	// start anywhere, and a NaN in either half, or in a lone first or last
	// element, is found.
	// Views that end where their allocation ends, at either alignment,
	// so that reading past the end would be caught (checkptr, under
	// -race: it was, for a lone misaligned last float).
	for n := range 9 {
		for start := range 2 {
			d := make([]float32, 64+n)[64-start:]
			if HasNonFinite("float32", d) {
				t.Errorf("%d finite floats from %d: reported non-finite", len(d), start)
			}
		}
		for at := range n {
			d := make([]float32, n+1)
			d[1+at] = float32(math.NaN())
			for start := range 2 {
				v := d[start:]
				if got, want := HasNonFinite("float32", v), 1+at >= start; got != want {
					t.Errorf("%d floats from %d, NaN at %d: reported %v", len(v), start, 1+at, got)
				}
			}
		}
	}
}

// TestProblem: a tensor a caller builds is readable only when its data is
// its dtype's host slice and exactly as long as its extents say, no
// extent is negative, and the extents, an empty axis counted as one, stay
// within MaxElements.
func TestProblem(t *testing.T) {
	for _, c := range []struct {
		t    Tensor
		want string // in the problem; "" for none
	}{
		{Tensor{DType: "float32", Shape: []int64{2, 3}, Data: make([]float32, 6)}, ""},
		{Tensor{DType: "float16", Shape: []int64{2}, Data: make([]uint16, 2)}, ""},
		{Tensor{DType: "int64", Shape: []int64{0, 4}, Data: []int64{}}, ""},
		{Tensor{DType: "bool", Shape: nil, Data: []bool{true}}, ""},
		{Tensor{DType: "float32", Shape: []int64{2}}, "no data"},
		{Tensor{DType: "float32", Shape: []int64{2}, Data: []int64{1, 2}}, "[]int64 data"},
		{Tensor{DType: "float32", Shape: []int64{2, -1}, Data: []float32{}}, "negative extent"},
		{Tensor{DType: "float32", Shape: []int64{3}, Data: make([]float32, 2)}, "different number"},
		{Tensor{DType: "float32", Shape: []int64{0, 1 << 40}, Data: []float32{}}, "multiply to more than"},
		{Tensor{DType: "float32", Shape: []int64{1 << 32, 1 << 32, 0}, Data: []float32{}}, "multiply to more than"},
		{Tensor{DType: "float32", Shape: []int64{1 << 62, 4}, Data: []float32{}}, "multiply to more than"},
	} {
		got := c.t.Problem()
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%v of %T: problem %q, want %q", c.t.Shape, c.t.Data, got, c.want)
		}
	}
}

// TestViewRoom: views appended from a room are the views AppendViews
// makes; once reset, the room hands the same memory out again; when it
// runs short it takes a larger array and the views it handed out before
// stay as they were.
func TestViewRoom(t *testing.T) {
	x, err := NewTensor("float32", []int64{6, 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Float32s() {
		x.Float32s()[i] = float32(i)
	}
	spans := [][2]int64{{0, 2}, {2, 3}, {3, 6}}
	var r ViewRoom
	got := r.Append(x, nil, spans)
	want := x.AppendViews(nil, spans)
	for i := range want {
		if !slices.Equal(got[i].Shape, want[i].Shape) || !slices.Equal(got[i].Float32s(), want[i].Float32s()) {
			t.Fatalf("view %d: %v %v, want %v %v", i, got[i].Shape, got[i].Float32s(), want[i].Shape, want[i].Float32s())
		}
	}
	first := got[0]
	more := r.Append(x, nil, spans[:1]) // beyond the room: a larger array
	if !slices.Equal(first.Float32s(), []float32{0, 1, 2, 3}) || !slices.Equal(more[0].Float32s(), first.Float32s()) {
		t.Errorf("a view handed out before the room grew changed: %v", first.Float32s())
	}
	r.Reset()
	if more[0].Data != nil {
		t.Errorf("Reset left a view's data: %v", more[0].Data)
	}
	again := r.Append(x, nil, spans[1:2])
	if again[0] != more[0] {
		t.Errorf("a reset room handed out new memory")
	}
}
