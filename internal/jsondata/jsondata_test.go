package jsondata

import (
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestFillOptions: MaxNesting bounds how deep arrays nest, and a 16-bit
// float is its bits without a converter, a converted number with one.
func TestFillOptions(t *testing.T) {
	ft := func(dtype string, n int64) *backend.Tensor {
		x, err := backend.NewTensor(dtype, []int64{n})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if Fill(ft("float32", 2), []byte(`[[1], [2]]`), Options{MaxNesting: 1}) {
		t.Error("a flat reader took nested arrays")
	}
	if !Fill(ft("float32", 2), []byte(`[[1], [2]]`), Options{MaxNesting: 2}) {
		t.Error("a reader of two levels refused two")
	}
	bits := ft("float16", 1)
	if !Fill(bits, []byte(`[15360]`), Options{MaxNesting: 1}) || bits.Data.([]uint16)[0] != 15360 {
		t.Errorf("float16 bits read as %v", bits.Data)
	}
	if Fill(ft("float16", 1), []byte(`[1.5]`), Options{MaxNesting: 1}) {
		t.Error("float16 bits took a fraction")
	}
	half := ft("float16", 1)
	one := func(f float32) uint16 { return uint16(f * 10) }
	if !Fill(half, []byte(`[1.5]`), Options{MaxNesting: 1, F16: one}) || half.Data.([]uint16)[0] != 15 {
		t.Errorf("a converted float16 read as %v", half.Data)
	}
}
