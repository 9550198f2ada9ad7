package adapters

import (
	"fmt"
	"image/color"
	"math/rand"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// TestExtentsAgreeWithRun: what extents reads off an image's header (the
// key a grouped adapter groups by) is what run makes of the decoded image,
// for every op that changes a size, on images of many sizes: the same
// channels, height, width and units, or the same refusal.
func TestExtentsAgreeWithRun(t *testing.T) {
	programs := map[string][]ir.Transform{
		"resize height, L":   {op("decode", "", "d"), op("convert_color", "d", "g", "mode", "L"), op("resize", "g", "r", "height", "6", "rounding", "ceil")},
		"resize width":       {op("decode", "", "d"), op("resize", "d", "r", "width", "5")},
		"max_size, crop":     {op("decode", "", "d"), op("resize", "d", "r", "max_size", "9", "rounding", "floor"), op("center_crop", "r", "c", "height", "4")},
		"size, normalize":    {op("decode", "", "d"), op("resize", "d", "r", "size", "3"), op("rescale", "r", "s", "factor", "0.5"), op("normalize", "s", "n", "mean", "[0.5]", "std", "[0.5]")},
		"tile":               {op("decode", "", "d"), op("tile", "d", "t", "tile_size", "3", "max_tiles", "6", "thumbnail", "first"), op("rescale", "t", "s", "factor", "0.5")},
		"max_size, multiple": {op("decode", "", "d"), op("resize", "d", "r", "max_size", "12", "multiple", "4", "rounding", "floor")},
		"capped, pad":        {op("decode", "", "d"), op("resize", "d", "r", "height", "6", "max_width", "8"), op("pad", "r", "p", "height", "6", "width", "8")},
		"pad":                {op("decode", "", "d"), op("pad", "d", "p", "height", "12", "width", "15", "value", "2")},
		"patchify":           {op("decode", "", "d"), op("patchify", "d", "p", "patch_size", "2")},
		"resize, patchify":   {op("decode", "", "d"), op("resize", "d", "r", "height", "4"), op("patchify", "r", "p", "patch_size", "2")},
	}
	rng := rand.New(rand.NewSource(3))
	for name, tr := range programs {
		t.Run(name, func(t *testing.T) {
			f := newFixture(tr, dims("images", "c", "h", "w"))
			cp, _ := preprocess.Compile(f.prog, f.comp, preprocess.InvokedPorts(f.m, f.comp))
			if len(cp.Ops) != len(tr) {
				t.Fatalf("the program does not compile: %d of %d ops", len(cp.Ops), len(tr))
			}
			p := compileImage(cp)
			keep := []string{cp.Last}
			for range 60 {
				h, w := 1+rng.Intn(20), 1+rng.Intn(20)
				data := encodePNG(t, solid(w, h, color.NRGBA{R: 9, A: 255}))
				maxPixels := int64(40 + rng.Intn(400))
				ext, eerr := p.extents(data, maxPixels, keep)
				img, rerr := p.run(data, maxPixels, keep)
				at := fmt.Sprintf("%d×%d image, %d pixels at most", h, w, maxPixels)
				switch {
				case (eerr == nil) != (rerr == nil):
					t.Fatalf("%s: extents says %v, run %v", at, eerr, rerr)
				case eerr != nil && eerr.Error() != rerr.Error():
					t.Fatalf("%s: extents refuses %q, run %q", at, eerr, rerr)
				case eerr == nil && ext[0] != extentOf(img[0]):
					t.Fatalf("%s: extents %+v, run made %+v", at, ext[0], extentOf(img[0]))
				}
			}
		})
	}
}

// TestKeyedByAsKeyed: what an image adapter says it keys its invocations
// by (KeyedBy, which a plan states) is what Key keys them by: the width a
// resize to a height leaves to each image, on a port that neither pads
// nor fixes it; nothing where the program fixes both sides.
func TestKeyedByAsKeyed(t *testing.T) {
	aspect := newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "height", "4")}, dims("images", 3, 4, "width"))
	s := aspect.load(t)
	if by := s.(backend.KeyDescriber).KeyedBy(); !slices.Equal(by, []string{"width of `pixels`"}) {
		t.Errorf("keyed by %q; want the width of `pixels`", by)
	}
	wide, narrow := encodePNG(t, solid(8, 2, color.NRGBA{A: 255})), encodePNG(t, solid(2, 2, color.NRGBA{A: 255}))
	k1, err1 := s.(backend.Keyer).Key(request(wide))
	k2, err2 := s.(backend.Keyer).Key(request(narrow))
	if k1 != "width 16 of `pixels`" || k2 != "width 4 of `pixels`" || err1 != nil || err2 != nil {
		t.Errorf("keys %q (%v), %q (%v); want each image's width", k1, err1, k2, err2)
	}
	fixed := newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "height", "4", "width", "4")}, dims("images", 3, 4, "width"))
	s = fixed.load(t)
	if by := s.(backend.KeyDescriber).KeyedBy(); len(by) != 0 {
		t.Errorf("a program of fixed sides is keyed by %q", by)
	}
	if k, err := s.(backend.Keyer).Key(request(wide)); k != "" || err != nil {
		t.Errorf("a program of fixed sides keys %q, %v", k, err)
	}
}
