package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestOutputsLookUpByName: Outputs answer by name whether the table is
// scanned (a few names) or indexed (many), leave out names with no value,
// and iterate in the table's order.
func TestOutputsLookUpByName(t *testing.T) {
	for _, n := range []int{1, scanNames, scanNames + 1, 40} {
		names := make([]string, n)
		vals := make([]*backend.Tensor, n)
		for i := range names {
			names[i] = fmt.Sprintf("out%02d", i)
			if i%3 != 1 { // every third one not emitted
				vals[i] = &backend.Tensor{DType: "int64", Shape: []int64{1}, Data: []int64{int64(i)}}
			}
		}
		o := NewOutputNames(names...).Outputs(vals)
		var want []string
		for i, name := range names {
			got, ok := o.Lookup(name)
			if ok != (vals[i] != nil) || got != vals[i] || o.Get(name) != vals[i] {
				t.Errorf("%d names: %s gives %v %v, want %v", n, name, got, ok, vals[i])
			}
			if vals[i] != nil {
				want = append(want, name)
			}
		}
		if _, ok := o.Lookup("absent"); ok || o.Get("absent") != nil {
			t.Errorf("%d names: a name not in the table is found", n)
		}
		if got := slices.Collect(o.Names()); !slices.Equal(got, want) || o.Len() != len(want) || len(o.Map()) != len(want) {
			t.Errorf("%d names: names %v (len %d, map %d), want %v", n, got, o.Len(), len(o.Map()), want)
		}
	}
	var zero Outputs
	if zero.Len() != 0 || zero.Get("x") != nil || zero.Map() != nil || zero.String() != "map[]" {
		t.Errorf("the zero Outputs hold something: %v", zero)
	}
	m := map[string]*backend.Tensor{"b": {DType: "int64", Shape: []int64{0}, Data: []int64{}}, "a": nil}
	if o := OutputsOf(m); o.Len() != 1 || o.Get("b") != m["b"] || slices.Collect(o.Names())[0] != "b" {
		t.Errorf("OutputsOf(%v) = %v", m, o)
	}
	// Encoded, a response's outputs read as the map they stand for.
	x := &backend.Tensor{DType: "int64", Shape: []int64{2}, Data: []int64{4, 5}}
	for _, c := range []struct {
		o    Outputs
		want map[string]*backend.Tensor
	}{{OutputsOf(map[string]*backend.Tensor{"x": x, "y": nil}), map[string]*backend.Tensor{"x": x}}, {Outputs{}, map[string]*backend.Tensor{}}} {
		got, err := json.Marshal(c.o)
		want, _ := json.Marshal(c.want)
		if err != nil || string(got) != string(want) {
			t.Errorf("%v encodes as %s (%v), want %s", c.o, got, err, want)
		}
	}
}

// TestWindowOutputsStayTheirs: the responses of a lockstep window share
// one slice of outputs, which is theirs: the engine's next windows, on the
// same recycled batch, never write into it.
func TestWindowOutputsStayTheirs(t *testing.T) {
	e := imageEngine(t, Options{})
	defer e.Close()
	rng := rand.New(rand.NewSource(7))
	window := func(prefix string) []Request {
		var reqs []Request
		for i := range 6 {
			reqs = append(reqs, imageRequest(rng, fmt.Sprint(prefix, i), 1+rng.Intn(3)))
		}
		return reqs
	}
	first := e.RunAll(context.Background(), window("a"))
	held := make([]*backend.Tensor, len(first))
	data := make([][]float32, len(first))
	for i, r := range first {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		held[i] = r.Outputs.Get("embeddings")
		data[i] = slices.Clone(held[i].Float32s())
	}
	for range 3 {
		for _, r := range e.RunAll(context.Background(), window("b")) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	for i, r := range first {
		if got := r.Outputs.Get("embeddings"); got != held[i] || !slices.Equal(got.Float32s(), data[i]) {
			t.Errorf("response %s changed after later windows: %v, was %v", r.ID, got, data[i])
		}
	}
}
