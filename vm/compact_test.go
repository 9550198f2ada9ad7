package vm

import (
	"context"
	"errors"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// randomPacked builds a two-level value: rows of clips of frames, each
// frame a row of 2 floats tagged with its row, clip and frame.
func randomPacked(rng *rand.Rand, rows int) (Packed, [][][]float32) {
	var frames []float32
	clipOffs, frameOffs := []int64{0}, []int64{0}
	var tree [][][]float32
	for r := range rows {
		var clips [][]float32
		nc := rng.Intn(3)
		for c := range nc {
			nf := rng.Intn(3)
			var clip []float32
			for f := range nf {
				v := []float32{float32(r*100 + c*10 + f), float32(-r)}
				frames = append(frames, v...)
				clip = append(clip, v...)
			}
			clips = append(clips, clip)
			frameOffs = append(frameOffs, frameOffs[len(frameOffs)-1]+int64(nf))
		}
		tree = append(tree, clips)
		clipOffs = append(clipOffs, clipOffs[len(clipOffs)-1]+int64(nc))
	}
	n := int64(len(frames) / 2)
	return Packed{Payload: &backend.Tensor{DType: "float32", Shape: []int64{n, 2}, Data: frames}, Levels: [][]int64{frameOffs, clipOffs}}, tree
}

// reference rebuilds a selection naively from the tree: concatenate the
// selected rows' clips and frames.
func reference(tree [][][]float32, selection []int64) Packed {
	var frames []float32
	clipOffs, frameOffs := []int64{0}, []int64{0}
	for _, r := range selection {
		for _, clip := range tree[r] {
			frames = append(frames, clip...)
			frameOffs = append(frameOffs, frameOffs[len(frameOffs)-1]+int64(len(clip)/2))
		}
		clipOffs = append(clipOffs, clipOffs[len(clipOffs)-1]+int64(len(tree[r])))
	}
	if frames == nil {
		frames = []float32{}
	}
	return Packed{Payload: &backend.Tensor{DType: "float32", Shape: []int64{int64(len(frames) / 2), 2}, Data: frames}, Levels: [][]int64{frameOffs, clipOffs}}
}

func TestCompactMatchesNaiveSelection(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for trial := range 200 {
		rows := 1 + rng.Intn(5)
		p, tree := randomPacked(rng, rows)
		sel := make([]int64, rng.Intn(6))
		for i := range sel {
			sel[i] = rng.Int63n(int64(rows)) // repeats and drops
		}
		var copies Copies
		got, err := Compact(p, sel, &copies)
		if err != nil {
			t.Fatal(err)
		}
		want := reference(tree, sel)
		if !reflect.DeepEqual(got.Levels, want.Levels) || !sameResult(got.Payload, want.Payload) {
			t.Fatalf("trial %d, selection %v:\n got %v %v\nwant %v %v", trial, sel, got.Levels, got.Payload.Data, want.Levels, want.Payload.Data)
		}
		if err := got.Check(); err != nil {
			t.Fatalf("the compacted chain is malformed: %v", err)
		}
		if !reflect.DeepEqual(got.Owners(1), ownersFromOffsets(want.Levels[1])) {
			t.Fatalf("owners are not derived from the new offsets")
		}
	}
}

// TestCompactPrefixIsAReslice: dropping trailing rows in order copies
// nothing; the payload is a view of the original buffer.
func TestCompactPrefixIsAReslice(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	p, _ := randomPacked(rng, 6)
	for p.Payload.Shape[0] == 0 {
		p, _ = randomPacked(rng, 6)
	}
	var copies Copies
	got, err := Compact(p, []int64{0, 1, 2}, &copies)
	if err != nil {
		t.Fatal(err)
	}
	if copies.Bytes() != 0 {
		t.Errorf("a prefix selection copied %d bytes", copies.Bytes())
	}
	if got.Payload.Len() > 0 && addrOf(got.Payload.Data) != addrOf(p.Payload.Data) {
		t.Errorf("the prefix is not a view of the original payload")
	}
	if _, err := Compact(p, []int64{2, 0}, &copies); err != nil || copies.Bytes() == 0 && p.Payload.Len() > 0 {
		t.Errorf("a reordering must gather (and count it): err %v, %d bytes", err, copies.Bytes())
	}
	if _, err := Compact(p, []int64{6}, nil); err == nil {
		t.Error("a selection past the last row was accepted")
	}
}

// TestEngineCompact runs requests end to end and regroups their packed
// output by rows: the selected rows come back in selection order, repeated
// where selected twice, with the level's offsets and owners recomputed; a
// prefix of one response is a view; a bad selection or an output without
// levels is refused.
func TestEngineCompact(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	rng := rand.New(rand.NewSource(21))
	reqs := []Request{imageRequest(rng, "a", 2), imageRequest(rng, "b", 1), imageRequest(rng, "c", 3)}
	var from []map[string]*backend.Tensor
	for _, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		from = append(from, r.Outputs.Map())
	}
	got, err := e.Compact("embeddings", from, []int64{2, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if offs := got["image_offsets"].Int64s(); !slices.Equal(offs, []int64{0, 3, 5, 7}) {
		t.Errorf("offsets %v, want [0 3 5 7]", offs)
	}
	if own := got["image_owner"].Int64s(); !slices.Equal(own, []int64{0, 0, 0, 1, 1, 2, 2}) {
		t.Errorf("owner %v, want [0 0 0 1 1 2 2]", own)
	}
	var want []float32
	for _, r := range []int{2, 0, 0} {
		want = append(want, from[r]["embeddings"].Float32s()...)
	}
	if emb := got["embeddings"]; emb.Shape[0] != 7 || !slices.Equal(emb.Float32s(), want) {
		t.Errorf("embeddings %v = %v, want the rows of c, a, a: %v", emb, emb.Float32s(), want)
	}

	kept, err := e.Compact("embeddings", from[:1], []int64{0})
	if err != nil {
		t.Fatal(err)
	}
	if !backend.SameBuffer(kept["embeddings"], from[0]["embeddings"]) {
		t.Error("keeping the one row of a response copied it; a prefix is a view")
	}
	none, err := e.Compact("embeddings", from, nil)
	if err != nil || none["embeddings"].Shape[0] != 0 || !slices.Equal(none["image_offsets"].Int64s(), []int64{0}) {
		t.Errorf("an empty selection: %v, %v", none, err)
	}

	var re *backend.RunError
	if _, err := e.Compact("embeddings", from, []int64{3}); !errors.As(err, &re) || re.Rule != "run/extent" {
		t.Errorf("row 3 of three responses of one row each: %v", err)
	}
	if _, err := e.Compact("image_offsets", from, []int64{0}); !errors.As(err, &re) || re.Rule != "run/input" {
		t.Errorf("an output without levels: %v", err)
	}
	delete(from[1], "image_offsets")
	if _, err := e.Compact("embeddings", from, []int64{0}); !errors.As(err, &re) || !strings.Contains(re.Message, "response 1") {
		t.Errorf("a response without the level's offsets: %v", err)
	}
}
