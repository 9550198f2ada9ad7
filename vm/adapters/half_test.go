package adapters

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// A data port declared float16 or bfloat16 receives, element for element,
// the float32 the same port receives, rounded (nearest, ties to even), in
// the same shape; its companions do not change. Every modality and the
// ports of tiles or patches, which are laid out apart from pixels.
func TestHalfPrecisionPorts(t *testing.T) {
	imgs := request(noisy(6, 4), noisy(3, 5))
	frames := videoRequest(frameSeq(t, 0, 3), frameSeq(t, 3, 1))
	clips := request(wav(16000, wavPCM, 16, mono(0.1, -0.3, 0.7, 0.33333, 0.9, -1, 0.5)), wav(16000, wavFloat, 32, mono(1e-5, 3e-8, -0.2)))
	patchify := []ir.Transform{op("decode", "", "i.decoded"), op("rescale", "i.decoded", "i.rescaled", "factor", "0.00392156862745098"),
		op("patchify", "i.rescaled", "i.patches", "patch_size", "1")}
	for _, c := range []struct {
		name    string
		fixture func() *fixture
		port    string
		in      map[string]*backend.Tensor
	}{
		{"image pixels", func() *fixture { return newFixture(clipLike("4"), dims("images", 3, 4, 4)) }, "pixels", imgs},
		{"image patches", func() *fixture { return seqFixture("patches", dims(3), patchify...) }, "units", imgs},
		{"video pixels", func() *fixture {
			return videoFixture(decodeOnly(op("rescale", "v.decoded", "v.rescaled", "factor", "0.00392156862745098")))
		}, "pixels", frames},
		{"audio frames", func() *fixture { return audioFixture(framing()) }, "frames", clips},
	} {
		for _, dtype := range []string{"float16", "bfloat16"} {
			t.Run(c.name+"/"+dtype, func(t *testing.T) {
				wide := run(t, c.fixture().load(t), c.in)
				f := c.fixture()
				f.comp.Output(c.port).Contract.DType = dtype
				narrow := run(t, f.load(t), c.in)
				round := backend.Float32ToHalf
				if dtype == "bfloat16" {
					round = backend.Float32ToBFloat16
				}
				w, n := wide[c.port], narrow[c.port]
				if n.DType != dtype || n.Problem() != "" || !slices.Equal(w.Shape, n.Shape) {
					t.Fatalf("%s is %s %v (%s), want %s %v", c.port, n.DType, n.Shape, n.Problem(), dtype, w.Shape)
				}
				bits, _ := n.Data.([]uint16)
				exact := 0
				for i, v := range w.Float32s() {
					if bits[i] != round(v) {
						t.Fatalf("%s value %d is %#04x, want %#04x (%v rounded)", c.port, i, bits[i], round(v), v)
					}
					if backend.HalfToFloat32(bits[i]) == v && dtype == "float16" {
						exact++
					}
				}
				if dtype == "float16" && exact == len(bits) {
					t.Errorf("every value of %s is exact in half precision: the case shows no rounding", c.port)
				}
				for name, tw := range wide {
					if name == c.port {
						continue
					}
					if tn := narrow[name]; tn.DType != tw.DType || !slices.Equal(tn.Shape, tw.Shape) {
						t.Errorf("companion %s is %s %v, want %s %v", name, tn.DType, tn.Shape, tw.DType, tw.Shape)
					}
				}
			})
		}
	}
}

// A uint8 pixels port receives the float32 port's pixels rounded to the
// nearest integer (halves up) and clamped to [0, 255]: resized after a
// pad of a fractional value (no longer an 8-bit image, whose resize PIL's
// rounds itself), a bicubic resize overshoots an edge's range, which the
// port clamps, as PIL does.
func TestUint8PixelPorts(t *testing.T) {
	img := solid(9, 7, color.NRGBA{R: 255, A: 255})
	for x := range 4 {
		for y := range 7 {
			img.SetNRGBA(x, y, color.NRGBA{G: 255, B: 3, A: 255})
		}
	}
	resized := []ir.Transform{op("decode", "", "i.decoded"), op("pad", "i.decoded", "i.padded", "height", "7", "width", "10", "value", "127.5"),
		op("resize", "i.padded", "i.resized", "size", "5", "interpolation", "bicubic")}
	port := func(dtype string) *fixture {
		f := newFixture(resized, dims("images", 3, 5, 5))
		f.comp.Output("pixels").Contract.DType = dtype
		return f
	}
	in := request(encodePNG(t, img))
	wide := run(t, port("float32").load(t), in)["pixels"].Float32s()
	raw := run(t, port("uint8").load(t), in)["pixels"]
	got, _ := raw.Data.([]uint8)
	if raw.DType != "uint8" || len(got) != len(wide) {
		t.Fatalf("pixels are %s %v", raw.DType, raw.Shape)
	}
	clamped, fractional := 0, 0
	for i, v := range wide {
		want := uint8(min(max(math.Floor(float64(v)+0.5), 0), 255))
		if got[i] != want {
			t.Fatalf("pixel value %d is %d, want %d (%v rounded and clamped)", i, got[i], want, v)
		}
		if v < 0 || v > 255 {
			clamped++
		}
		if v != float32(math.Floor(float64(v))) {
			fractional++
		}
	}
	if clamped == 0 || fractional == 0 {
		t.Errorf("%d values clamped and %d rounded: the case shows neither", clamped, fractional)
	}
}
