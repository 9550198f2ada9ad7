package vm

import (
	"math/rand"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestPlaceIntoMatchesElementwise: placing a tensor into a larger one,
// row offset on its stacking axis and all, writes exactly the elements an
// index-by-index copy writes, for ranks 1 to 6 with every pattern of
// shorter axes and every stacking axis, and leaves every other element as
// it was.
func TestPlaceIntoMatchesElementwise(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := range 400 {
		rank := 1 + trial%6
		src := make([]int64, rank)
		dst := make([]int64, rank)
		stack := rng.Intn(rank)
		for a := range rank {
			src[a] = int64(rng.Intn(4))
			dst[a] = src[a]
			if a != stack && rng.Intn(2) == 0 {
				dst[a] += int64(rng.Intn(3)) // a padded axis
			}
		}
		row := int64(rng.Intn(3))
		dst[stack] = src[stack] + row + int64(rng.Intn(2))
		s, _ := backend.NewTensor("float32", src)
		for i := range s.Float32s() {
			s.Float32s()[i] = float32(i + 1)
		}
		got, _ := backend.NewTensor("float32", dst)
		want, _ := backend.NewTensor("float32", dst)
		for i := range got.Float32s() {
			got.Float32s()[i], want.Float32s()[i] = -1, -1
		}
		copied := placeInto(got, row, s, stack)
		// The reference: every index of src, one element at a time.
		idx := make([]int64, rank)
		for i := range s.Len() {
			rem := i
			for a := rank - 1; a >= 0; a-- {
				idx[a] = rem % src[a]
				rem /= src[a]
			}
			at := int64(0)
			for a := range rank {
				v := idx[a]
				if a == stack {
					v += row
				}
				at = at*dst[a] + v
			}
			want.Float32s()[at] = s.Float32s()[i]
		}
		if copied != s.Bytes() {
			t.Errorf("src %v into %v at row %d of axis %d: %d bytes reported, %d copied", src, dst, row, stack, copied, s.Bytes())
		}
		for i, v := range got.Float32s() {
			if v != want.Float32s()[i] {
				t.Fatalf("src %v into %v at row %d of axis %d: element %d is %v, want %v", src, dst, row, stack, i, v, want.Float32s()[i])
			}
		}
	}
}
