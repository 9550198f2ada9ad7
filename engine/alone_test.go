package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestAgreeAlone: a value grouped agrees with the same value alone where
// every element alone has is there, within the float tolerance (a padded
// output may be longer grouped); it differs otherwise, saying where.
func TestAgreeAlone(t *testing.T) {
	f32 := func(shape []int64, v ...float32) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: shape, Data: v}
	}
	i64 := func(shape []int64, v ...int64) *backend.Tensor {
		return &backend.Tensor{DType: "int64", Shape: shape, Data: v}
	}
	half := func(v ...uint16) *backend.Tensor {
		return &backend.Tensor{DType: "float16", Shape: []int64{int64(len(v))}, Data: v}
	}
	nan := float32(math.NaN())
	for _, tt := range []struct {
		name           string
		grouped, alone *backend.Tensor
		padded         []int
		want           string // "" agree, else a part of the difference
	}{
		{"equal", f32([]int64{1, 2}, 1, 2), f32([]int64{1, 2}, 1, 2), nil, ""},
		{"within the tolerance", f32([]int64{2}, 1000.05, 0.00005), f32([]int64{2}, 1000, 0), nil, ""},
		{"past it", f32([]int64{2}, 1, 0.0002), f32([]int64{2}, 1, 0), nil, "differs at [1]: 0.0002 grouped, 0 alone"},
		{"NaN both", f32([]int64{1}, nan), f32([]int64{1}, nan), nil, ""},
		{"NaN grouped", f32([]int64{1}, nan), f32([]int64{1}, 1), nil, "differs at [0]"},
		// A padded output keeps the group's extent: the request's values
		// are its start.
		{"padded", f32([]int64{1, 3, 2}, 1, 2, 3, 4, 9, 9), f32([]int64{1, 2, 2}, 1, 2, 3, 4), []int{1}, ""},
		{"padded, a real position differs", f32([]int64{1, 3, 2}, 1, 2, 3, 5, 9, 9), f32([]int64{1, 2, 2}, 1, 2, 3, 4), []int{1}, "differs at [0 1 1]: 5 grouped, 4 alone"},
		{"longer where not padded", f32([]int64{1, 3, 2}, 1, 2, 3, 4, 9, 9), f32([]int64{1, 2, 2}, 1, 2, 3, 4), nil, "has shape [1 3 2] grouped and [1 2 2] alone"},
		{"an item, longer anywhere", f32([]int64{3, 2}, 1, 2, 3, 4, 9, 9), f32([]int64{2, 2}, 1, 2, 3, 4), []int{anyAxis}, ""},
		{"shorter grouped", f32([]int64{1, 1}, 1), f32([]int64{1, 2}, 1, 2), nil, "has shape [1 1] grouped and [1 2] alone"},
		{"another dtype", i64([]int64{1}, 1), f32([]int64{1}, 1), nil, "is int64 [1] grouped and float32 [1] alone"},
		{"integers exactly", i64([]int64{2}, 3, 4), i64([]int64{2}, 3, 5), nil, "differs at [1]: 4 grouped, 5 alone"},
		{"missing", nil, f32([]int64{1}, 1), nil, "is missing grouped"},
		// 1 and 1.0078125 (0x3c02) are two half steps apart: within the
		// half tolerance; 1.25 (0x3d00) is not.
		{"half", half(0x3c02), half(0x3c00), nil, ""},
		{"half past it", half(0x3d00), half(0x3c00), nil, "differs at [0]: 1.25 grouped, 1 alone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := AgreeAlone(tt.grouped, tt.alone, tt.padded)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("AgreeAlone = %q, want %q", got, tt.want)
			}
		})
	}
}
