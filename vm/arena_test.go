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
// group (same memory), cleared when asked, and grows when too small; the
// tensor a port hands out is one header, re-pointed for each group.
func TestArenaReusesAndZeroes(t *testing.T) {
	a := newArena(1)
	first, _ := a.tensor(0, "float32", []int64{2, 3}, false)
	firstData := first.Float32s()
	for i := range firstData {
		firstData[i] = 7
	}
	again, _ := a.tensor(0, "float32", []int64{1, 4}, true)
	if &again.Float32s()[0] != &firstData[0] || again != first || !slices.Equal(again.Shape, []int64{1, 4}) {
		t.Errorf("a smaller group got %v, not the runner's buffer under the port's header", again)
	}
	if slices.ContainsFunc(again.Float32s(), func(v float32) bool { return v != 0 }) {
		t.Errorf("a reused buffer asked for zero fill holds %v", again.Float32s())
	}
	bigger, _ := a.tensor(0, "float32", []int64{4, 3}, false)
	if &bigger.Float32s()[0] == &firstData[0] || bigger.Len() != 12 {
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
		kept[i] = slices.Clone(r.Outputs.Get("embeddings").Float32s())
	}
	if s := e.Stats().Components["encoder"]; s.MaxGroupRequests < 2 {
		t.Fatalf("the requests ran in groups of at most %d: nothing was assembled", s.MaxGroupRequests)
	}
	for range 3 {
		e.RunAll(context.Background(), batch())
	}
	for i, r := range first {
		if got := r.Outputs.Get("embeddings").Float32s(); !slices.Equal(got, kept[i]) {
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
	a.group(nil, 1)
	kept, echoed := a.int64s(4), a.int64s(3)
	a.release(outputs{{DType: "int64", Shape: []int64{2}, Data: echoed[1:]}})
	a.group(nil, 1)
	again, fresh := a.int64s(4), a.int64s(3)
	if &again[0] != &kept[0] {
		t.Error("a vector no output shares was not reused")
	}
	if &fresh[0] == &echoed[0] {
		t.Error("the next group was handed a vector an output of the last group shares")
	}
}

// TestArenaReleasesHandedBackHeaders: a port's tensor header is re-pointed
// for every group, unless the backend handed it back as an output, or
// handed back an output shaped by its shape slice: the results own it
// then, and the next group gets a new header.
func TestArenaReleasesHandedBackHeaders(t *testing.T) {
	a := newArena(3)
	a.group(nil, 1)
	echoed, _ := a.tensor(0, "float32", []int64{2, 3}, false)
	shaped, _ := a.tensor(1, "float32", []int64{2, 2}, false)
	kept, _ := a.tensor(2, "float32", []int64{2, 2}, false)
	a.release(outputs{echoed, {DType: "float32", Shape: shaped.Shape[:1], Data: make([]float32, 2)}})
	a.group(nil, 1)
	for port, old := range []*backend.Tensor{echoed, shaped} {
		if now, _ := a.tensor(port, "float32", []int64{1, 1}, false); now == old || old.Shape[0] != 2 {
			t.Errorf("port %d: the next group re-pointed a header a result holds (now %v)", port, old)
		}
	}
	if now, _ := a.tensor(2, "float32", []int64{1, 1}, false); now != kept {
		t.Error("a header no output holds was not reused")
	}
}
