//go:build cgo

package ort

import (
	"context"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
)

// TestPackedOutputPredicted: a text encoder's segment embeddings, packed
// over segment offsets that no graph input carries, are allocated by the
// session at the size the tokens' offsets give (one row per segment) and
// written in place, and they equal what ONNX Runtime returns when it
// allocates the output itself.
func TestPackedOutputPredicted(t *testing.T) {
	fx := fixtures.Lookup("text_packed")
	f, dir := fixtures.Compile(t, fx)
	comp := f.IR.Component(fx.Component)
	load := func() *session {
		s, err := newBackend(t, Options{IntraOpThreads: 1}).Load(comp, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.(*session)
	}
	in := map[string]*backend.Tensor{
		"token_ids":     {DType: "int64", Shape: []int64{10}, Data: []int64{5, 9, 1, 60, 2, 2, 7, 33, 4, 0}},
		"token_offsets": {DType: "int64", Shape: []int64{4}, Data: []int64{0, 3, 7, 10}},
		"token_owner":   {DType: "int64", Shape: []int64{10}, Data: []int64{0, 0, 0, 1, 1, 1, 1, 2, 2, 2}},
	}
	predicted := load()
	made := watchAlloc(t, predicted)
	got, err := predicted.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	emb := got["segment_embeddings"]
	if len(*made) != 1 || !sameData(emb.Data, (*made)[0].Data) || emb.Shape[0] != 3 {
		t.Fatalf("the segment embeddings %v are not a buffer the session allocated for 3 segments (it allocated %d)", emb, len(*made))
	}
	unplanned := load()
	for i := range unplanned.outputs {
		unplanned.outputs[i].missed.Store(true)
	}
	want, err := unplanned.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := want["segment_embeddings"]; !slices.Equal(w.Shape, emb.Shape) || !slices.Equal(w.Float32s(), emb.Float32s()) {
		t.Errorf("predicted output %v differs from ONNX Runtime's own %v", emb, w)
	}
}

// TestFailingRunRunsOnce: a graph that fails on its inputs (a token id
// outside the embedding table: ONNX Runtime's Gather refuses it) fails the
// call after one run of the graph, though the call provided its predicted
// output: only ONNX Runtime refusing that output is worth a second run.
// The prediction stays on, and the next good call is written in place.
func TestFailingRunRunsOnce(t *testing.T) {
	s := fixtureSession(t, "text_packed", nil)
	made := watchAlloc(t, s)
	in := func(id int64) map[string]*backend.Tensor {
		return map[string]*backend.Tensor{
			"token_ids":     {DType: "int64", Shape: []int64{3}, Data: []int64{5, id, 1}},
			"token_offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, 3}},
			"token_owner":   {DType: "int64", Shape: []int64{3}, Data: []int64{0, 0, 0}},
		}
	}
	if _, err := s.Run(context.Background(), in(1<<20), nil); err == nil {
		t.Fatal("a token id outside the table ran")
	}
	if n := s.runs.Load(); n != 1 || len(*made) != 1 {
		t.Fatalf("the failing call ran the graph %d times with %d predicted buffers; want once, with its one prediction", n, len(*made))
	}
	if s.outputs[0].missed.Load() {
		t.Error("a graph failing on its inputs turned the prediction off")
	}
	got, err := s.Run(context.Background(), in(7), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.runs.Load(); n != 2 || len(*made) != 2 || !sameData(got["segment_embeddings"].Data, (*made)[1].Data) {
		t.Errorf("the good call after it: %d runs in all, %d buffers, output written in place %v; want 2, 2, true", n, len(*made), len(*made) == 2 && sameData(got["segment_embeddings"].Data, (*made)[1].Data))
	}
}

// fixtureSession loads the grouped component of a fixture on one thread,
// its IR component first changed by edit (when not nil) on a copy.
func fixtureSession(t *testing.T, name string, edit func(*ir.Component)) *session {
	t.Helper()
	fx := fixtures.Lookup(name)
	f, dir := fixtures.Compile(t, fx)
	comp := *f.IR.Component(fx.Component)
	if edit != nil {
		edit(&comp)
	}
	s, err := newBackend(t, Options{IntraOpThreads: 1}).Load(&comp, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*session)
}
