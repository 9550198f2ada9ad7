package backend

import (
	"slices"
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
