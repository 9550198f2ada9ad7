package vm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// TestArenaReusesAndZeroes: a runner's buffer comes back for the next
// group (same memory), cleared when asked, and grows when too small.
func TestArenaReusesAndZeroes(t *testing.T) {
	a := newArena(1)
	first, _ := a.tensor(0, "float32", []int64{2, 3}, false)
	for i := range first.Float32s() {
		first.Float32s()[i] = 7
	}
	again, _ := a.tensor(0, "float32", []int64{1, 4}, true)
	if !backend.SameBuffer(again, first) {
		t.Error("a smaller group did not reuse the runner's buffer")
	}
	if slices.ContainsFunc(again.Float32s(), func(v float32) bool { return v != 0 }) {
		t.Errorf("a reused buffer asked for zero fill holds %v", again.Float32s())
	}
	bigger, _ := a.tensor(0, "float32", []int64{4, 3}, false)
	if backend.SameBuffer(bigger, first) || bigger.Len() != 12 {
		t.Errorf("a larger group got %v over the old buffer", bigger.Shape)
	}
	other, _ := a.tensor(0, "int64", []int64{2}, false)
	if other.DType != "int64" || len(other.Int64s()) != 2 {
		t.Errorf("a new dtype got %v", other)
	}
}

// TestArenaKeepsOutputsThatAliasInputs: a backend that returns (a view
// of) its input as an output hands the group's buffer to the requests'
// results; the runner must not assemble its next group over it. Each
// request's result stays what it was after later groups ran.
func TestArenaKeepsOutputsThatAliasInputs(t *testing.T) {
	echo := func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["pixel_patches"]
		n := x.Shape[0]
		// The first n×4 values of the group's patches, in place.
		return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{n, 4}, Data: x.Float32s()[:n*4]}}, nil
	}
	e := engineWith(t, echo, Options{MaxDelay: time.Second}, nil)
	defer e.Close()
	rng := rand.New(rand.NewSource(3))
	batch := func() []Request {
		var reqs []Request
		for i := range 8 {
			reqs = append(reqs, imageRequest(rng, fmt.Sprint(i), 2))
		}
		return reqs
	}
	first := e.RunAll(context.Background(), batch())
	kept := make([][]float32, len(first))
	for i, r := range first {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		kept[i] = slices.Clone(r.Outputs["embeddings"].Float32s())
	}
	if s := e.Stats().Components["encoder"]; s.MaxGroupRequests < 2 {
		t.Fatalf("the requests ran in groups of at most %d: nothing was assembled", s.MaxGroupRequests)
	}
	for range 3 {
		e.RunAll(context.Background(), batch())
	}
	for i, r := range first {
		if got := r.Outputs["embeddings"].Float32s(); !slices.Equal(got, kept[i]) {
			t.Errorf("request %d: its result changed from %v to %v when later groups ran", i, kept[i], got)
		}
	}
}

// TestArenaReleasesAliasedVectors: the int64 vectors a group's offsets
// and owners are composed into come back for the next group, unless an
// output shares their memory (a graph that returns its offsets input):
// then the requests' results own them and the next group gets new ones.
func TestArenaReleasesAliasedVectors(t *testing.T) {
	a := newArena(1)
	a.group(nil)
	kept, echoed := a.int64s(4), a.int64s(3)
	a.release(map[string]*backend.Tensor{"offsets": {DType: "int64", Shape: []int64{2}, Data: echoed[1:]}})
	a.group(nil)
	again, fresh := a.int64s(4), a.int64s(3)
	if &again[0] != &kept[0] {
		t.Error("a vector no output shares was not reused")
	}
	if &fresh[0] == &echoed[0] {
		t.Error("the next group was handed a vector an output of the last group shares")
	}
}
