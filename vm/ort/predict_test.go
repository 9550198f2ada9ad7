//go:build cgo

package ort

import (
	"context"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
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
