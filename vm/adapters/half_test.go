package adapters

import (
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
