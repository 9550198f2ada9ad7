package adapters

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
	"github.com/genaic/genaic/vm/jsonio"
)

// The image oracle data testdata/oracle/gen.py writes with numpy.
const imageOracleDir = "../../testdata/oracle/image"

type imageOracle struct {
	Grids [][6]int `json:"grids"` // h, w, tile_size, max_tiles, rows, cols
	// GridBoundaries are grids as Grids, listed under each wrong rounding
	// of the scaled sides (round, ceil, unrounded) that chooses another
	// grid on every one of them.
	GridBoundaries map[string][][6]int `json:"grid_boundaries"`
	Patchify       []struct {
		Image     string `json:"image"`
		PatchSize int    `json:"patch_size"`
		Patches   string `json:"patches"`
		Grid      [2]int64
	} `json:"patchify"`
	Tile []struct {
		Image     string `json:"image"`
		TileSize  int    `json:"tile_size"`
		MaxTiles  int    `json:"max_tiles"`
		Thumbnail string `json:"thumbnail"`
		Tiles     string `json:"tiles"`
		Grid      [2]int64
	} `json:"tile"`
	// WebP and JPEG are images PIL encoded and the RGB it decodes each to.
	WebP []struct {
		WebP string `json:"webp"`
		RGB  string `json:"rgb"`
	} `json:"webp"`
	JPEG []struct {
		JPEG string `json:"jpeg"`
		RGB  string `json:"rgb"`
	} `json:"jpeg"`
	// Resize are 8-bit images PIL resizes, in RGB or after its 8-bit
	// luma (mode L).
	Resize []struct {
		Image         string `json:"image"`
		Height, Width int
		Interpolation string `json:"interpolation"`
		Mode          string `json:"mode"`
		Resized       string `json:"resized"`
	} `json:"resize"`
}

func readImageOracle(t *testing.T) imageOracle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(imageOracleDir, "index.json"))
	if err != nil {
		t.Fatalf("the oracle data is missing (run /usr/bin/python3 testdata/oracle/gen.py): %v", err)
	}
	var idx imageOracle
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Grids) == 0 || len(idx.Patchify) == 0 || len(idx.Tile) == 0 || len(idx.WebP) == 0 || len(idx.JPEG) == 0 || len(idx.Resize) == 0 {
		t.Fatal("the image oracle lists no case")
	}
	return idx
}

func readNPY(t *testing.T, name string) *backend.Tensor {
	t.Helper()
	x, err := jsonio.ReadNPY(filepath.Join(imageOracleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// pngOf encodes a c×h×w uint8 array (c 1 or 3) as a PNG, losslessly.
func pngOf(t *testing.T, x *backend.Tensor) []byte {
	t.Helper()
	c, h, w := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2])
	pix := x.Data.([]uint8)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for i := range w {
			at := func(k int) uint8 { return pix[(k*h+y)*w+i] }
			if c == 1 {
				img.SetNRGBA(i, y, color.NRGBA{at(0), at(0), at(0), 255})
			} else {
				img.SetNRGBA(i, y, color.NRGBA{at(0), at(1), at(2), 255})
			}
		}
	}
	return encodePNG(t, img)
}

// seqFixture is an image adapter whose port `units` packs what the last
// transform makes (tiles or patches) with two produced levels, and whose
// port `grid` carries each image's grid.
func seqFixture(content string, unit []ir.Dim, transforms ...ir.Transform) *fixture {
	f := newFixture(transforms, nil)
	c := packed(contract("float32", append([]ir.Dim{{Sym: "units"}}, unit...)), "unit_offsets", "unit_owner", ir.ExtentProduced)
	c.Layout.Levels = append(c.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "image_offsets"}, Owner: ir.Ref{Name: "image_owner"}, Extent: ir.ExtentProduced})
	f.comp.Outputs = []*ir.Port{
		{Name: "units", Contract: c},
		{Name: "unit_offsets", Contract: contract("int64", dims("images_plus_one"))},
		{Name: "unit_owner", Contract: contract("int64", dims("units"))},
		{Name: "image_offsets", Contract: contract("int64", dims("rows_plus_one"))},
		{Name: "image_owner", Contract: contract("int64", dims("images"))},
		{Name: "grid", Contract: contract("int64", dims("images", 2))},
	}
	last := transforms[len(transforms)-1].Outputs[0]
	f.prog.Outputs = []ir.ProgramOutput{
		{Name: "units", Source: last, Content: content},
		{Name: "unit_offsets", Source: last, Content: "pack_offsets"},
		{Name: "unit_owner", Source: last, Content: "pack_owner"},
		{Name: "image_offsets", Source: last, Content: "pack_offsets"},
		{Name: "image_owner", Source: last, Content: "pack_owner"},
		{Name: "grid", Source: last, Content: "grid"},
	}
	return f
}

// decodeAs decodes an image of c channels (1 as L).
func decodeAs(c int64) []ir.Transform {
	ts := []ir.Transform{op("decode", "", "i.rgb")}
	if c == 1 {
		return append(ts, op("convert_color", "i.rgb", "i.decoded", "mode", "L"))
	}
	return append(ts, op("convert_color", "i.rgb", "i.decoded", "mode", "RGB"))
}

// The grid tile chooses equals LLaVA-NeXT's select_best_resolution on 400
// random sizes, tile sizes and tile budgets, and on 50 boundary cases per
// wrong rounding of the scaled sides (rounding to nearest, ceiling, no
// rounding), where that rounding would choose another grid.
func TestTileGridOracle(t *testing.T) {
	idx := readImageOracle(t)
	check := func(what string, grids [][6]int) {
		for _, g := range grids {
			tl := preprocess.Tile{Size: g[2], MaxTiles: g[3]}
			if r, c := tl.Grid(g[0], g[1]); r != g[4] || c != g[5] {
				t.Errorf("%s: %d×%d in tiles of %d, at most %d: grid %d×%d, LLaVA-NeXT %d×%d", what, g[0], g[1], g[2], g[3], r, c, g[4], g[5])
			}
		}
	}
	check("random size", idx.Grids)
	for _, wrong := range []string{"round", "ceil", "unrounded"} {
		if len(idx.GridBoundaries[wrong]) < 50 {
			t.Fatalf("the image oracle lists %d grid boundaries against %s, want 50 (run /usr/bin/python3 testdata/oracle/gen.py)", len(idx.GridBoundaries[wrong]), wrong)
		}
		check("a boundary where "+wrong+" differs", idx.GridBoundaries[wrong])
	}
}

// Patchify equals numpy's reshape and transpose exactly, packed over the
// images of a request with both levels and each image's grid.
func TestPatchifyOracle(t *testing.T) {
	for _, c := range readImageOracle(t).Patchify {
		t.Run(c.Image, func(t *testing.T) {
			img, want := readNPY(t, c.Image), readNPY(t, c.Patches)
			ts := append(decodeAs(img.Shape[0]), op("patchify", "i.decoded", "i.patches", "patch_size", fmt.Sprint(c.PatchSize)))
			s := seqFixture("patches", []ir.Dim{{Size: want.Shape[1]}}, ts...).load(t)
			b := pngOf(t, img)
			out := run(t, s, request(b, b), "units", "unit_offsets", "image_offsets", "grid")
			n := want.Shape[0]
			wantShape(t, "units", out["units"], 2*n, want.Shape[1])
			wantInts(t, "unit_offsets", out["unit_offsets"], 0, n, 2*n)
			wantInts(t, "image_offsets", out["image_offsets"], 0, 2)
			wantGrid(t, out["grid"], c.Grid, c.Grid)
			got := out["units"].Float32s()
			if !slices.Equal(got[:len(got)/2], want.Float32s()) || !slices.Equal(got[len(got)/2:], want.Float32s()) {
				t.Errorf("patches differ from numpy's")
			}
		})
	}
}

// Tiles equal numpy's cut of the zero-padded canvas exactly, with the
// thumbnail first or last, where the image fits its grid unresampled.
func TestTileOracle(t *testing.T) {
	for _, c := range readImageOracle(t).Tile {
		t.Run(c.Image, func(t *testing.T) {
			img, want := readNPY(t, c.Image), readNPY(t, c.Tiles)
			ts := append(decodeAs(img.Shape[0]), op("tile", "i.decoded", "i.tiles", "tile_size", fmt.Sprint(c.TileSize),
				"max_tiles", fmt.Sprint(c.MaxTiles), "thumbnail", c.Thumbnail))
			s := seqFixture("tiles", dims(int(img.Shape[0]), c.TileSize, c.TileSize), ts...).load(t)
			out := run(t, s, request(pngOf(t, img)), "units", "unit_offsets", "grid")
			wantShape(t, "units", out["units"], want.Shape...)
			wantInts(t, "unit_offsets", out["unit_offsets"], 0, want.Shape[0])
			wantGrid(t, out["grid"], c.Grid)
			if !slices.Equal(out["units"].Float32s(), want.Float32s()) {
				t.Errorf("tiles differ from numpy's:\n got %v\nwant %v", out["units"].Float32s(), want.Float32s())
			}
		})
	}
}

func wantGrid(t *testing.T, got *backend.Tensor, grids ...[2]int64) {
	t.Helper()
	var want []int64
	for _, g := range grids {
		want = append(want, g[0], g[1])
	}
	if got == nil || !slices.Equal(got.Shape, []int64{int64(len(grids)), 2}) || !slices.Equal(got.Int64s(), want) {
		t.Errorf("grid is %v, want %v of shape [%d, 2]", got, want, len(grids))
	}
}

// oracleRGB decodes the image file name of the oracle and reads PIL's
// decoding of it, rgb, as planes alike.
func oracleRGB(t *testing.T, name, rgb string) (got, want *planar) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(imageOracleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if got, err = decodeImage(data, "", 1<<20); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	x := readNPY(t, rgb)
	h, w := int(x.Shape[0]), int(x.Shape[1])
	if got.c != 3 || got.h != h || got.w != w {
		t.Fatalf("%s: decoded %s, PIL %d×%d", name, got.dims(), h, w)
	}
	if !got.is8() {
		t.Fatalf("%s: decoded to float values, not an 8-bit image", name)
	}
	want = newPlanar(3, h, w)
	for i, v := range x.Data.([]uint8) {
		want.pix[(i%3)*h*w+i/3] = float32(v)
	}
	return got.floats(), want
}

// Decoded, a JPEG holds within 3 levels the pixels PIL decodes it to
// (libjpeg), 9 values in 10 exactly, whatever its chroma subsampling and
// sides: libjpeg's chroma upsampling and colour tables are followed, and
// what is left is the two decoders' inverse DCTs, which round apart.
// Each pixel's nearest chroma sample, as Go's Y′CbCr conversion takes,
// put values tens of levels away on these images.
func TestJPEGNearPIL(t *testing.T) {
	for _, c := range readImageOracle(t).JPEG {
		got, want := oracleRGB(t, c.JPEG, c.RGB)
		exact, worst := 0, float32(0)
		for i, v := range got.pix {
			d := float32(math.Abs(float64(v - want.pix[i])))
			worst = max(worst, d)
			if d == 0 {
				exact++
			}
		}
		if worst > 3 || float64(exact) < 0.9*float64(len(got.pix)) {
			t.Errorf("%s: %d of %d values as PIL's, the farthest %v levels away", c.JPEG, exact, len(got.pix), worst)
		}
	}
}

// Decoded, a WebP holds the pixels PIL decodes it to (libwebp), exactly:
// lossy ones, whose VP8 planes keep BT.601's studio range and half the
// chroma resolution, at every side odd or even, with and without alpha,
// and lossless ones.
func TestWebPAgreesWithPIL(t *testing.T) {
	for _, c := range readImageOracle(t).WebP {
		got, want := oracleRGB(t, c.WebP, c.RGB)
		for i, v := range got.pix {
			if plane := got.h * got.w; v != want.pix[i] {
				t.Fatalf("%s: channel %d of the pixel at row %d, column %d is %v, PIL's %v", c.WebP, i/plane, i%plane/got.w, i%got.w, v, want.pix[i])
			}
		}
	}
}

// A decoder that panics on a client's bytes fails that image, saying so,
// rather than the process.
func TestDecoderPanicIsTheImagesError(t *testing.T) {
	_, _, err := guarded(func() (image.Image, string, error) {
		var pix []uint8
		return nil, "", fmt.Errorf("unreached %d", pix[3]) // index out of range, as a decoder's bug would be
	})
	if err == nil || !strings.Contains(err.Error(), "made the decoder fail") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("got %v", err)
	}
}

// An 8-bit image resizes to exactly the pixels PIL resizes it to, with
// every filter, shrinking or enlarging, one side or both; and so does
// PIL's 8-bit luma of it.
func TestResizeAgreesWithPIL(t *testing.T) {
	for _, c := range readImageOracle(t).Resize {
		x := readNPY(t, c.Image)
		h, w := int(x.Shape[0]), int(x.Shape[1])
		p := newPlanar8(3, h, w)
		for i, v := range x.Data.([]uint8) {
			p.pix8[(i%3)*h*w+i/3] = v
		}
		if c.Mode == "L" {
			p = convertColor(p, "L")
		}
		got := resize(p, c.Height, c.Width, filters[c.Interpolation])
		if !got.is8() {
			t.Fatalf("%s: resized to float values, not an 8-bit image", c.Resized)
		}
		got = got.floats()
		want := readNPY(t, c.Resized).Data.([]uint8)
		if got.h != c.Height || got.w != c.Width || len(got.pix) != len(want) {
			t.Fatalf("%s: resized %s, want %d values", c.Resized, got.dims(), len(want))
		}
		plane := got.h * got.w
		for i, v := range want {
			k, at := i%got.c, i/got.c // PIL's values are interleaved
			if g := got.pix[k*plane+at]; g != float32(v) {
				t.Fatalf("%s: channel %d of the pixel at row %d, column %d is %v, PIL's %d", c.Resized, k, at/got.w, at%got.w, g, v)
			}
		}
	}
}
