package vm

import (
	"math/rand"
	"reflect"
	"testing"

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
