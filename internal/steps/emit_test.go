package steps

import (
	"errors"
	"reflect"
	"testing"

	"github.com/genaic/genaic/backend"
)

func f32(shape []int64, data ...float32) *backend.Tensor {
	return &backend.Tensor{DType: "float32", Shape: shape, Data: data}
}

func TestEmitModes(t *testing.T) {
	a := f32([]int64{1, 3}, 1, 2, 3)
	b := f32([]int64{1, 2}, 4, 5)
	yes := &backend.Tensor{DType: "bool", Shape: []int64{1}, Data: []bool{true}}
	no := &backend.Tensor{DType: "bool", Shape: []int64{1}, Data: []bool{false}}
	two := &backend.Tensor{DType: "int64", Shape: []int64{1}, Data: []int64{2}}
	scalar := &backend.Tensor{DType: "int64", Shape: []int64{}, Data: []int64{160}}
	tests := []struct {
		name        string
		prev, value *backend.Tensor
		mode        string
		axis        int64
		when, vl    *backend.Tensor
		want        *backend.Tensor
		rule        string
	}{
		{"replace", b, a, "replace", -1, nil, nil, a, ""},
		{"replace a scalar", nil, scalar, "replace", -1, nil, nil, scalar, ""},
		{"append a scalar", nil, scalar, "append", -1, nil, nil, nil, "run/input"},
		{"trim a scalar", nil, scalar, "replace", -1, nil, two, nil, "run/input"},
		{"append on the final axis", a, b, "append", -1, nil, nil, f32([]int64{1, 5}, 1, 2, 3, 4, 5), ""},
		{"first append", nil, b, "append", -1, nil, nil, b, ""},
		{"append on axis 0", f32([]int64{1, 2}, 1, 2), b, "append", 0, nil, nil, f32([]int64{2, 2}, 1, 2, 4, 5), ""},
		{"when true", nil, a, "replace", -1, yes, nil, a, ""},
		{"when false keeps the output", b, a, "replace", -1, no, nil, b, ""},
		{"valid_length trims", nil, a, "replace", -1, nil, two, f32([]int64{1, 2}, 1, 2), ""},
		{"append trimmed", b, a, "append", -1, nil, two, f32([]int64{1, 4}, 4, 5, 1, 2), ""},
		{"valid_length past the extent", nil, b, "replace", -1, nil, &backend.Tensor{DType: "int64", Shape: []int64{1}, Data: []int64{3}}, nil, "run/lengths"},
		{"axis outside the rank", nil, a, "append", 2, nil, nil, nil, "run/input"},
		{"mismatched append", f32([]int64{2, 1}, 1, 2), a, "append", -1, nil, nil, nil, "run/input"},
		{"event", nil, a, "event", -1, nil, nil, nil, "run/unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Emit("out", tt.prev, tt.value, tt.mode, tt.axis, tt.when, tt.vl)
			if tt.rule != "" {
				var re *backend.RunError
				if !errors.As(err, &re) || re.Rule != tt.rule {
					t.Fatalf("err = %v, want %s", err, tt.rule)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v %v (%v), want %v %v", got, got.Data, err, tt.want, tt.want.Data)
			}
		})
	}
}
