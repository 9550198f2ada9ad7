package vm

import (
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestPadPartsLayOutAnItem: an item's padded parts are, per padded port,
// its rows, the product of its other unpadded axes, its own elements and
// its extent on each padded axis (0 where its rank stops short); where the
// graph fixes a padded extent, the item spans it whole, and that padding
// counts as its own.
func TestPadPartsLayOutAnItem(t *testing.T) {
	s := &componentSpec{pads: []padPort{{at: 0, axes: []int{1}}, {at: 1, axes: []int{1, 3}, fixed: []int64{6, 0}}}}
	it := newItem(2)
	it.ports[0].t = &backend.Tensor{DType: "float32", Shape: []int64{2, 5, 3}, Data: make([]float32, 30)}
	it.ports[1].t = &backend.Tensor{DType: "float32", Shape: []int64{1, 4}, Data: make([]float32, 4)}
	want := []int64{
		2, 3, 30, 5, // rows 2, inner 3, 30 elements, 5 on axis 1
		1, 1, 6, 6, 0, // rows 1, inner 1, 4 elements padded to the fixed 6, 6 on axis 1, none on axis 3
	}
	if got := s.padParts(it); !slices.Equal(got, want) {
		t.Errorf("padded parts %v, want %v", got, want)
	}
	if (&componentSpec{}).padParts(newItem(1)) != nil {
		t.Error("a component with no padded port gave an item padded parts")
	}
}

// TestSharedKeyTellsValuesApart: items whose shared inputs hold equal
// values get equal keys; values that differ in an element (-0 and 0
// included, which a group would pass as one), a dtype or a shape get
// different ones, and so does the session's key.
func TestSharedKeyTellsValuesApart(t *testing.T) {
	s := &componentSpec{sharedAt: []int{0}}
	key := func(session string, v *backend.Tensor) string {
		it := newItem(1)
		it.key, it.ports[0].t = session, v
		return s.sharedKey(it)
	}
	f32 := func(shape []int64, v ...float32) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: shape, Data: v}
	}
	negZero := float32(0)
	negZero = -negZero
	base := key("", f32([]int64{2}, 1, 0))
	if key("", f32([]int64{2}, 1, 0)) != base {
		t.Error("equal shared values got different keys")
	}
	for name, k := range map[string]string{
		"an element":   key("", f32([]int64{2}, 1, 2)),
		"-0 for 0":     key("", f32([]int64{2}, 1, negZero)),
		"the shape":    key("", f32([]int64{1, 2}, 1, 0)),
		"the dtype":    key("", &backend.Tensor{DType: "int32", Shape: []int64{2}, Data: []int32{1, 0}}),
		"the session":  key("a", f32([]int64{2}, 1, 0)),
		"no value":     key("", nil),
		"a longer key": key("2:", f32([]int64{2}, 1, 0)),
	} {
		if k == base {
			t.Errorf("items that differ in %s got one key %q", name, k)
		}
	}
}
