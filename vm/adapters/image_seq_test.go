package adapters

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"slices"
	"testing"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// noisy is a w×h image of varied colours.
func noisy(w, h int) []byte {
	img := solid(w, h, color.NRGBA{A: 255})
	for i := range img.Pix {
		if i%4 != 3 {
			img.Pix[i] = uint8(i * 37 % 251)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// Images of different sizes stack their patches on a new axis, padded to
// the most patches with zeros, with each image's count; each image's rows
// are its patches alone.
func TestPatchesStackedPadded(t *testing.T) {
	ts := []ir.Transform{op("decode", "", "i.decoded"), op("patchify", "i.decoded", "i.patches", "patch_size", "2")}
	f := newFixture(ts, nil)
	c := contract("float32", dims("images", "patches", 12))
	c.Padding = []ir.Padding{{Dim: ir.Ref{Name: "patches"}, Lengths: ir.Ref{Name: "lengths"}}}
	f.comp.Outputs = []*ir.Port{{Name: "patches", Contract: c}, {Name: "lengths", Contract: contract("int64", dims("images"))},
		{Name: "grid", Contract: contract("int64", dims("images", 2))}}
	f.prog.Outputs = []ir.ProgramOutput{{Name: "patches", Source: "i.patches", Content: "patches"},
		{Name: "lengths", Source: "i.patches", Content: "valid_lengths"}, {Name: "grid", Source: "i.patches", Content: "grid"}}
	big, small := noisy(6, 4), noisy(2, 2)
	out := run(t, f.load(t), request(big, small), "patches", "lengths", "grid")
	wantShape(t, "patches", out["patches"], 2, 6, 12)
	wantInts(t, "lengths", out["lengths"], 6, 1)
	wantGrid(t, out["grid"], [2]int64{2, 3}, [2]int64{1, 1})
	got := out["patches"].Float32s()
	alone := func(b []byte) []float32 {
		return run(t, seqFixture("patches", dims(12), ts...).load(t), request(b), "units")["units"].Float32s()
	}
	if !slices.Equal(got[:72], alone(big)) || !slices.Equal(got[72:84], alone(small)) || slices.ContainsFunc(got[84:], func(v float32) bool { return v != 0 }) {
		t.Errorf("stacked patches are not each image's patches then zeros: %v", got)
	}
}

// An image not a multiple of the patch size fails its request with
// run/input; an image whose tiles would exceed the adapter's bound is
// refused before they are made.
func TestSeqRefusals(t *testing.T) {
	ts := []ir.Transform{op("decode", "", "i.decoded"), op("patchify", "i.decoded", "i.patches", "patch_size", "2")}
	_, err := seqFixture("patches", dims(12), ts...).load(t).Run(context.Background(), request(noisy(6, 4), noisy(5, 4)), nil)
	wantRunError(t, err, "run/input", "image 1", "4×5", "not a multiple of patch_size 2")
	ts = []ir.Transform{op("decode", "", "i.decoded"), op("tile", "i.decoded", "i.tiles", "tile_size", "64", "max_tiles", "8", "thumbnail", "last")}
	f := seqFixture("tiles", dims(3, 64, 64), ts...)
	b := New(f.m)
	b.MaxPixels = 64 * 64 // one tile, and this image makes one and a thumbnail
	s, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), request(noisy(8, 30)), nil)
	wantRunError(t, err, "run/input", "transform 1 (tile)", "which would make it")
}

// A resized image makes its grid's tiles and a thumbnail: pixels within
// the canvas's fit, zeros around it.
func TestTileResized(t *testing.T) {
	ts := []ir.Transform{op("decode", "", "i.decoded"), op("tile", "i.decoded", "i.tiles", "tile_size", "8", "max_tiles", "6", "thumbnail", "last", "interpolation", "bilinear")}
	out := run(t, seqFixture("tiles", dims(3, 8, 8), ts...).load(t), request(noisy(25, 7)), "units", "grid")
	tl := preprocess.Tile{Size: 8, MaxTiles: 6}
	r, c := tl.Grid(7, 25)
	wantGrid(t, out["grid"], [2]int64{int64(r), int64(c)})
	wantShape(t, "units", out["units"], int64(r*c+1), 3, 8, 8)
	px := out["units"].Float32s()
	for i, v := range px {
		if v < 0 || v > 255 {
			t.Fatalf("value %d is %v, outside [0, 255]", i, v)
		}
	}
}

// Arbitrary bytes through tile and patchify fail the request with
// run/input, never a panic.
func FuzzImageSeqRequest(f *testing.F) {
	f.Add(noisy(6, 4))
	f.Add(noisy(1, 1))
	f.Add(noisy(3, 500))
	ts := []ir.Transform{op("decode", "", "i.decoded"), op("tile", "i.decoded", "i.tiles", "tile_size", "4", "max_tiles", "6", "thumbnail", "first")}
	tiles := seqFixture("tiles", dims(3, 4, 4), ts...)
	patches := seqFixture("patches", dims(12), op("decode", "", "i.decoded"), op("patchify", "i.decoded", "i.patches", "patch_size", "2"))
	fuzzImages(f, 1<<14, tiles, patches)
}
