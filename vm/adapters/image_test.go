package adapters

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// clipLike is decode → resize 4 → rescale 1/255 → normalize 0.5/0.5.
func clipLike(size string) []ir.Transform {
	return []ir.Transform{
		op("decode", "", "img.decoded"),
		op("convert_color", "img.decoded", "img.rgb", "mode", "RGB"),
		op("resize", "img.rgb", "img.resized", "size", size),
		op("rescale", "img.resized", "img.rescaled", "factor", "0.00392156862745098"),
		op("normalize", "img.rescaled", "img.normalized", "mean", "[0.5, 0.5, 0.5]", "std", "[0.5, 0.5, 0.5]"),
	}
}

// Three solid images of different sizes pack into [3, 3, 4, 4] with one
// row: offsets [0, 3], owner [0, 0, 0], every value the normalized colour.
func TestPackThreeSolidImages(t *testing.T) {
	f := newFixture(clipLike("4"), dims("images", 3, 4, 4))
	s := f.load(t)
	colours := []color.NRGBA{{R: 255, G: 0, B: 51, A: 255}, {R: 10, G: 200, B: 128, A: 255}, {R: 0, G: 0, B: 0, A: 255}}
	sizes := [][2]int{{5, 7}, {2, 3}, {10, 4}}
	var encoded [][]byte
	for i, c := range colours {
		encoded = append(encoded, encodePNG(t, solid(sizes[i][0], sizes[i][1], c)))
	}
	out := run(t, s, request(encoded...), "pixels", "offsets", "owner")
	px := out["pixels"]
	wantShape(t, "pixels", px, 3, 3, 4, 4)
	wantInts(t, "offsets", out["offsets"], 0, 3)
	wantInts(t, "owner", out["owner"], 0, 0, 0)
	data := px.Float32s()
	for i, c := range colours {
		for k, v := range []uint8{c.R, c.G, c.B} {
			want := (float64(v)/255 - 0.5) / 0.5
			for j := range 16 {
				if got := data[(i*3+k)*16+j]; !near(float64(got), want, 1e-5) {
					t.Fatalf("image %d channel %d position %d = %v, want %v", i, k, j, got, want)
				}
			}
		}
	}
}

// A JPEG decodes through YCbCr; a solid colour comes back within JPEG's
// rounding.
func TestJPEGSolid(t *testing.T) {
	f := newFixture(clipLike("3"), dims("images", 3, 3, 3))
	s := f.load(t)
	c := color.NRGBA{R: 200, G: 100, B: 50, A: 255}
	out := run(t, s, request(encodeJPEG(t, solid(16, 16, c))), "pixels")
	data := out["pixels"].Float32s()
	for k, v := range []uint8{c.R, c.G, c.B} {
		want := (float64(v)/255 - 0.5) / 0.5
		for j := range 9 {
			if got := data[k*9+j]; !near(float64(got), want, 3.0/255*2) {
				t.Fatalf("channel %d position %d = %v, want %v ± 3/255", k, j, got, want)
			}
		}
	}
}

// The filters against hand-computed references with half-pixel centres:
// [0, 255] widened to four columns. Resized as decoded, an 8-bit image,
// each value is rounded and clamped to 8 bits, as PIL resizes one;
// resized after rescale (here by 1), values keep their fraction and a
// bicubic's overshoot.
func TestResizeReference(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 2, 1))
	src.Pix[0], src.Pix[1] = 0, 255
	for _, c := range []struct {
		interp string
		float  bool // resized after rescale
		want   []float64
	}{
		{"bilinear", true, []float64{0, 63.75, 191.25, 255}},
		{"bilinear", false, []float64{0, 64, 191, 255}},
		{"nearest", true, []float64{0, 0, 255, 255}},
		{"nearest", false, []float64{0, 0, 255, 255}},
		{"bicubic", true, []float64{-22.5, 52.82142857142857, 202.17857142857142, 277.5}}, // Keys a = -0.5
		{"bicubic", false, []float64{0, 53, 202, 255}},
	} {
		ts := []ir.Transform{op("decode", "", "d")}
		if c.float {
			ts = append(ts, op("rescale", "d", "d", "factor", "1"))
		}
		f := newFixture(append(ts, op("resize", "d", "r", "height", "1", "width", "4", "interpolation", c.interp)), dims("images", 3, 1, 4))
		out := run(t, f.load(t), request(encodePNG(t, src)), "pixels")
		data := out["pixels"].Float32s()
		for k := range 3 {
			for x, want := range c.want {
				if got := data[k*4+x]; !near(float64(got), want, 1e-3) {
					t.Errorf("%s (float %v): channel %d column %d = %v, want %v", c.interp, c.float, k, x, got, want)
				}
			}
		}
	}
}

// Shrinking widens the filter: a 4-column [0, 100, 200, 255] halves to
// weighted means of three, not to samples (rounded as an 8-bit image's
// where it is one).
func TestResizeShrinkAntialias(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 4, 1))
	copy(src.Pix, []uint8{0, 100, 200, 255})
	// Output centre 1 (source 1.0) with a triangle of radius 2: sources 0,
	// 1, 2 at distances 0.5, 0.5, 1.5 weigh 0.75, 0.75, 0.25.
	want := []float64{(0.75*0 + 0.75*100 + 0.25*200) / 1.75, (0.25*100 + 0.75*200 + 0.75*255) / 1.75}
	for _, float := range []bool{false, true} {
		ts := []ir.Transform{op("decode", "", "d")}
		if float {
			ts = append(ts, op("rescale", "d", "d", "factor", "1"))
		}
		f := newFixture(append(ts, op("resize", "d", "r", "height", "1", "width", "2")), dims("images", 3, 1, 2))
		data := run(t, f.load(t), request(encodePNG(t, src)), "pixels")["pixels"].Float32s()
		for x, w := range want {
			if !float {
				w = math.Floor(w + 0.5)
			}
			if !near(float64(data[x]), w, 1e-3) {
				t.Errorf("float %v: column %d = %v, want %v", float, x, data[x], w)
			}
		}
	}
}

// center_crop takes the window at top (H-h)/2 and left (W-w)/2, and
// zero-pads a window larger than the image.
func TestCenterCropCoordinates(t *testing.T) {
	enc := encodePNG(t, coords(6, 5))
	f := newFixture([]ir.Transform{
		op("decode", "", "d"),
		op("center_crop", "d", "c", "height", "3", "width", "2"),
	}, dims("images", 3, 3, 2))
	data := run(t, f.load(t), request(enc), "pixels")["pixels"].Float32s()
	for y := range 3 {
		for x := range 2 {
			if r, g := data[y*2+x], data[6+y*2+x]; r != float32(10*(x+2)) || g != float32(10*(y+1)) {
				t.Errorf("crop (%d, %d) holds red %v green %v, want the source pixel (%d, %d)", y, x, r, g, y+1, x+2)
			}
		}
	}
	f = newFixture([]ir.Transform{op("decode", "", "d"), op("center_crop", "d", "c", "size", "8")}, dims("images", 3, 8, 8))
	data = run(t, f.load(t), request(enc), "pixels")["pixels"].Float32s()
	for y := range 8 {
		for x := range 8 {
			sy, sx := y-1, x-1 // top = (5-8)/2 = -1, left = (6-8)/2 = -1
			want := [3]float32{}
			if sy >= 0 && sy < 5 && sx >= 0 && sx < 6 {
				want = [3]float32{float32(10 * sx), float32(10 * sy), 7}
			}
			for k := range 3 {
				if got := data[k*64+y*8+x]; got != want[k] {
					t.Fatalf("padded crop channel %d at (%d, %d) = %v, want %v", k, y, x, got, want[k])
				}
			}
		}
	}
}

// convert_color L is the luma; BGR reverses the channels; a GIF decodes
// through its palette.
func TestConvertColor(t *testing.T) {
	c := color.NRGBA{R: 200, G: 100, B: 50, A: 255}
	enc := encodePNG(t, solid(2, 2, c))
	f := newFixture([]ir.Transform{op("decode", "", "d"), op("convert_color", "d", "l", "mode", "L")}, dims("images", 1, 2, 2))
	data := run(t, f.load(t), request(enc), "pixels")["pixels"].Float32s()
	// PIL's 8-bit luma: (19595 R + 38470 G + 7471 B + 2^15) >> 16, where
	// 0.299 R + 0.587 G + 0.114 B is 124.2.
	if data[0] != 124 || len(data) != 4 {
		t.Errorf("luma = %v (%d values), want 124 in 4", data[0], len(data))
	}
	f = newFixture([]ir.Transform{op("decode", "", "d"), op("convert_color", "d", "b", "mode", "BGR")}, dims("images", 3, 2, 2))
	var g bytes.Buffer
	pal := image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, c})
	for i := range pal.Pix {
		pal.Pix[i] = 1
	}
	if err := gif.Encode(&g, pal, nil); err != nil {
		t.Fatal(err)
	}
	data = run(t, f.load(t), request(g.Bytes()), "pixels")["pixels"].Float32s()
	if data[0] != 50 || data[4] != 100 || data[8] != 200 {
		t.Errorf("BGR of a GIF = %v, %v, %v, want 50, 100, 200", data[0], data[4], data[8])
	}
}

// A channels-last port ([items, height, width, 3]) interleaves channels.
func TestChannelsLast(t *testing.T) {
	f := newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "size", "2")}, dims("images", "height", "width", 3))
	out := run(t, f.load(t), request(encodePNG(t, solid(3, 3, color.NRGBA{R: 1, G: 2, B: 3, A: 255}))), "pixels")
	wantShape(t, "pixels", out["pixels"], 1, 2, 2, 3)
	for i, v := range out["pixels"].Float32s() {
		if want := float32(i%3 + 1); !near(float64(v), float64(want), 1e-5) {
			t.Fatalf("value %d = %v, want %v", i, v, want)
		}
	}
}

// Images of different sizes pad to the largest on padded dimensions, with
// lengths shaped as the axes outer to each (DESIGN §3.2).
func TestPaddedHeightAndWidth(t *testing.T) {
	f := newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "max_size", "4")}, dims("images", 3, "height", "width"))
	px := f.comp.Outputs[0].Contract
	px.Padding = []ir.Padding{{Dim: ir.Ref{Name: "height"}, Lengths: ir.Ref{Name: "heights"}}, {Dim: ir.Ref{Name: "width"}, Lengths: ir.Ref{Name: "widths"}}}
	f.comp.Outputs = append(f.comp.Outputs,
		&ir.Port{Name: "heights", Contract: contract("int64", dims("images", 3))},
		&ir.Port{Name: "widths", Contract: contract("int64", dims("images", 3, "height"))})
	f.prog.Outputs = append(f.prog.Outputs,
		ir.ProgramOutput{Name: "heights", Source: "image.heights", Content: "valid_lengths"},
		ir.ProgramOutput{Name: "widths", Source: "image.widths", Content: "valid_lengths"})
	s := f.load(t)
	// 8×2 shrinks to 4×1; 3×3 stays (max_size never enlarges).
	a := encodePNG(t, solid(8, 2, color.NRGBA{R: 90, G: 90, B: 90, A: 255}))
	b := encodePNG(t, solid(3, 3, color.NRGBA{R: 30, G: 30, B: 30, A: 255}))
	out := run(t, s, request(a, b), "pixels", "heights", "widths")
	wantShape(t, "pixels", out["pixels"], 2, 3, 3, 4)
	wantInts(t, "heights", reshape(out["heights"]), 1, 1, 1, 3, 3, 3)
	wantShape(t, "heights", out["heights"], 2, 3)
	wantShape(t, "widths", out["widths"], 2, 3, 3)
	for i, v := range out["widths"].Int64s() {
		if want := []int64{4, 3}[i/9]; v != want {
			t.Fatalf("widths[%d] = %d, want %d", i, v, want)
		}
	}
	data := out["pixels"].Float32s()
	for y := range 3 {
		for x := range 4 {
			want0, want1 := float32(0), float32(0)
			if y < 1 {
				want0 = 90
			}
			if x < 3 {
				want1 = 30
			}
			if got := data[y*4+x]; !near(float64(got), float64(want0), 1e-3) {
				t.Errorf("image 0 (%d, %d) = %v, want %v", y, x, got, want0)
			}
			if got := data[48+y*4+x]; !near(float64(got), float64(want1), 1e-3) {
				t.Errorf("image 1 (%d, %d) = %v, want %v", y, x, got, want1)
			}
		}
	}
}

func reshape(t *backend.Tensor) *backend.Tensor {
	return &backend.Tensor{DType: t.DType, Shape: []int64{t.Len()}, Data: t.Data}
}

// Without padding, images that leave the program at different sizes are a
// request error naming both.
func TestUnpaddedSizesDisagree(t *testing.T) {
	f := newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "height", "2")}, dims("images", 3, 2, "width"))
	_, err := f.load(t).Run(context.Background(), request(encodePNG(t, solid(2, 2, color.NRGBA{A: 255})), encodePNG(t, solid(4, 2, color.NRGBA{A: 255}))), nil)
	wantRunError(t, err, "run/input", "image 1", "width", "does not pad")
}

// A request with no image gets empty pixels at the program's static size
// and offsets [0, 0].
func TestZeroImages(t *testing.T) {
	f := newFixture(clipLike("4"), dims("images", 3, "h", "w"))
	out := run(t, f.load(t), request(), "pixels", "offsets", "owner")
	wantShape(t, "pixels", out["pixels"], 0, 3, 4, 4)
	wantInts(t, "offsets", out["offsets"], 0, 0)
	wantInts(t, "owner", out["owner"])
}

// Corrupt bytes fail the request with run/input naming the image, its bytes
// and what was read.
func TestCorruptImage(t *testing.T) {
	f := newFixture(clipLike("4"), dims("images", 3, 4, 4))
	s := f.load(t)
	good := encodePNG(t, solid(2, 2, color.NRGBA{A: 255}))
	_, err := s.Run(context.Background(), request(good, []byte("not an image at all")), nil)
	wantRunError(t, err, "run/input", "image 1", "bytes", "6e 6f 74")
	_, err = s.Run(context.Background(), request(good[:len(good)/2]), nil)
	wantRunError(t, err, "run/input", "image 0", "png")
	_, err = s.Run(context.Background(), request(good, nil), nil)
	wantRunError(t, err, "run/input", "image 1", "empty")
	_, err = s.Run(context.Background(), request(encodeJPEG(t, solid(2, 2, color.NRGBA{A: 255}))), nil)
	if err != nil {
		t.Fatal(err)
	}
	f = newFixture([]ir.Transform{op("decode", "", "d", "format", "png"), op("resize", "d", "r", "size", "4")}, dims("images", 3, 4, 4))
	_, err = f.load(t).Run(context.Background(), request(encodeJPEG(t, solid(2, 2, color.NRGBA{A: 255}))), nil)
	wantRunError(t, err, "run/input", "jpeg", "format png")
}

// Byte offsets that do not cover the bytes are run/offsets.
func TestBadByteOffsets(t *testing.T) {
	f := newFixture(clipLike("4"), dims("images", 3, 4, 4))
	in := request(encodePNG(t, solid(2, 2, color.NRGBA{A: 255})))
	in["byte_offsets"].Data.([]int64)[1]--
	_, err := f.load(t).Run(context.Background(), in, nil)
	wantRunError(t, err, "run/offsets", "byte_offsets", "end at")
	delete(in, "byte_offsets")
	_, err = f.load(t).Run(context.Background(), in, nil)
	wantRunError(t, err, "run/input", "byte_offsets", "no value")
}

// An op, a parameter, a modality or a version the adapter does not run is
// refused at Load with run/unsupported.
func TestUnsupportedAtLoad(t *testing.T) {
	for _, c := range []struct {
		name      string
		edit      func(f *fixture)
		fragments []string
	}{
		{"op", func(f *fixture) {
			f.prog.Transforms = append(f.prog.Transforms, op("patchify", "img.normalized", "img.patches", "patch_size", "14"))
			f.prog.Outputs[0].Source = "img.patches"
		}, []string{"patchify", "transform 5"}},
		{"no decode", func(f *fixture) { f.prog.Transforms = f.prog.Transforms[1:] }, []string{"`convert_color`", "decode"}},
		{"interpolation", func(f *fixture) {
			f.prog.Transforms[2].Params = append(f.prog.Transforms[2].Params, irParam("interpolation", "lanczos"))
		}, []string{"lanczos"}},
		{"normalize channels", func(f *fixture) { f.prog.Transforms[4].Params[0] = irParam("mean", "[0.5, 0.5]") }, []string{"mean", "2 numbers", "3 channel"}},
		{"unknown input", func(f *fixture) { f.prog.Transforms[3].Inputs[0] = "img.nowhere" }, []string{"img.nowhere"}},
		{"fixed extent", func(f *fixture) { f.comp.Outputs[0].Contract.Shape[2] = ir.Dim{Size: 5} }, []string{"height", "5", "4"}},
		{"content", func(f *fixture) { f.prog.Outputs[2].Content = "validity_mask" }, []string{"validity_mask"}},
		{"unbound port", func(f *fixture) { f.prog.Outputs = f.prog.Outputs[:2] }, []string{"`owner`", "bound by no output"}},
		{"version", func(f *fixture) { f.comp.Version = "2" }, []string{`"2"`, `"1"`}},
		{"video without its program", func(f *fixture) { f.comp.ABI = preprocess.ABI("video") }, []string{"video-preprocess", "no preprocessing.video program"}},
		{"no program", func(f *fixture) { f.m.Programs = nil }, []string{"preprocessing.image"}},
		{"dtype", func(f *fixture) { f.comp.Outputs[0].Contract.DType = "float64" }, []string{"as float64", "float32, float16, bfloat16 or uint8"}},
		{"offsets not a port", func(f *fixture) { f.comp.Inputs = f.comp.Inputs[:1] }, []string{"byte_offsets", "not an input port"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(clipLike("4"), dims("images", 3, 4, 4))
			c.edit(f)
			_, err := New(f.m).Load(f.comp, "")
			wantRunError(t, err, "run/unsupported", c.fragments...)
		})
	}
}

// A port that is not token_packed carries one image: all of its bytes.
func TestWholeVectorIsOneImage(t *testing.T) {
	f := newFixture(clipLike("2"), dims("images", 3, 2, 2))
	f.comp.Inputs = []*ir.Port{{Name: "encoded", Contract: contract("uint8", dims("bytes"))}}
	enc := encodePNG(t, solid(3, 3, color.NRGBA{R: 255, A: 255}))
	out := run(t, f.load(t), map[string]*backend.Tensor{"encoded": {DType: "uint8", Shape: []int64{int64(len(enc))}, Data: enc}}, "pixels", "offsets")
	wantShape(t, "pixels", out["pixels"], 1, 3, 2, 2)
	wantInts(t, "offsets", out["offsets"], 0, 1)
}

// A second level bound as a port gives the rows: a grouped invocation of
// two requests, of two images and one.
func TestRowsFromSecondLevel(t *testing.T) {
	f := newFixture(clipLike("2"), dims("images", 3, 2, 2))
	enc := f.comp.Inputs[0].Contract
	enc.Layout.Levels = append(enc.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "image_rows"}, Owner: ir.Ref{Name: "image_row_owner"}})
	f.comp.Inputs = append(f.comp.Inputs, &ir.Port{Name: "image_rows", Contract: contract("int64", dims("nr"))})
	f.comp.Capacity = &ir.Capacity{}
	img := encodePNG(t, solid(3, 3, color.NRGBA{R: 255, A: 255}))
	in := request(img, img, img)
	in["image_rows"] = &backend.Tensor{DType: "int64", Shape: []int64{3}, Data: []int64{0, 2, 3}}
	out := run(t, f.load(t), in, "pixels", "offsets", "owner")
	wantInts(t, "offsets", out["offsets"], 0, 2, 3)
	wantInts(t, "owner", out["owner"], 0, 0, 1)
	// With a batch_capacity and one level, every image is its own row.
	f = newFixture(clipLike("2"), dims("images", 3, 2, 2))
	f.comp.Capacity = &ir.Capacity{}
	out = run(t, f.load(t), request(img, img), "offsets", "owner")
	wantInts(t, "offsets", out["offsets"], 0, 1, 2)
	wantInts(t, "owner", out["owner"], 0, 1)
}

// Many images of one request are processed at once, in order.
func TestManyImagesInOrder(t *testing.T) {
	f := newFixture(clipLike("2"), dims("images", 3, 2, 2))
	b := New(f.m)
	b.Workers = 3
	s, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	var imgs [][]byte
	for i := range 20 {
		imgs = append(imgs, encodePNG(t, solid(1+i%4, 2, color.NRGBA{R: uint8(10 * i), A: 255})))
	}
	out := run(t, s, request(imgs...), "pixels")
	data := out["pixels"].Float32s()
	for i := range 20 {
		want := (float64(10*i)/255 - 0.5) / 0.5
		if !near(float64(data[i*12]), want, 1e-5) {
			t.Fatalf("image %d red = %v, want %v", i, data[i*12], want)
		}
	}
}

// A decode bomb is refused from its header, before it is decoded.
func TestMaxPixels(t *testing.T) {
	f := newFixture(clipLike("2"), dims("images", 3, 2, 2))
	b := New(f.m)
	b.MaxPixels = 10
	s, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), request(encodePNG(t, solid(4, 4, color.NRGBA{A: 255}))), nil)
	wantRunError(t, err, "run/input", "4×4", "10 pixels")
	// A thin image that a one-sided resize would blow up is refused too.
	f = newFixture([]ir.Transform{op("decode", "", "d"), op("resize", "d", "r", "width", "20")}, dims("images", 3, "h", 20))
	b = New(f.m)
	b.MaxPixels = 100
	if s, err = b.Load(f.comp, ""); err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), request(encodePNG(t, solid(1, 8, color.NRGBA{A: 255}))), nil)
	wantRunError(t, err, "run/input", "8×1", "transform 1 (resize)", "160×20", "100 pixels")
}

// toRGB reads a YCbCr image of every chroma subsampling, with bounds that
// do not start at the origin, as image.YCbCr.At converts each pixel.
func TestToRGBYCbCr(t *testing.T) {
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410} {
		whole := image.NewYCbCr(image.Rect(0, 0, 13, 9), ratio)
		for i := range whole.Y {
			whole.Y[i] = uint8(i * 31)
		}
		for i := range whole.Cb {
			whole.Cb[i], whole.Cr[i] = uint8(i*17+40), uint8(250-i*13)
		}
		img := whole.SubImage(image.Rect(3, 1, 12, 8)).(*image.YCbCr)
		p, b := toRGB(img).floats(), img.Bounds()
		for y := range b.Dy() {
			for x := range b.Dx() {
				want := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				for k, v := range []uint8{want.R, want.G, want.B} {
					if got := p.pix[(k*b.Dy()+y)*b.Dx()+x]; got != float32(v) {
						t.Fatalf("%v: pixel (%d, %d) channel %d is %v, want %v", ratio, x, y, k, got, v)
					}
				}
			}
		}
	}
}

// toRGB reads an RGBA image (an opaque PNG's) as NRGBA's conversion
// does, translucent pixels un-premultiplied too, with bounds that do not
// start at the origin.
func TestToRGBRGBA(t *testing.T) {
	whole := image.NewRGBA(image.Rect(0, 0, 11, 7))
	for i := range whole.Pix {
		whole.Pix[i] = uint8(i * 37)
	}
	for i := 3; i < len(whole.Pix); i += 4 {
		if i%3 != 0 { // every third pixel translucent, the rest opaque
			whole.Pix[i] = 255
		}
		for k := 1; k <= 3; k++ { // premultiplied: no channel above alpha
			whole.Pix[i-k] = min(whole.Pix[i-k], whole.Pix[i])
		}
	}
	img := whole.SubImage(image.Rect(2, 1, 10, 6)).(*image.RGBA)
	p, b := toRGB(img).floats(), img.Bounds()
	translucent := 0
	for y := range b.Dy() {
		for x := range b.Dx() {
			at := img.RGBAAt(b.Min.X+x, b.Min.Y+y)
			if at.A < 255 {
				translucent++
			}
			want := color.NRGBAModel.Convert(at).(color.NRGBA)
			for k, v := range []uint8{want.R, want.G, want.B} {
				if got := p.pix[(k*b.Dy()+y)*b.Dx()+x]; got != float32(v) {
					t.Fatalf("pixel (%d, %d) channel %d is %v, want %v", x, y, k, got, v)
				}
			}
		}
	}
	if translucent == 0 {
		t.Fatal("no translucent pixel read")
	}
}

// A GIF whose first frame covers part of its logical screen decodes at
// the screen's size, which its header says and admission keys it by, the
// frame at its offset and the rest of the screen as PIL fills it: the
// transparent colour where the palette has one (black, as Go's decoder
// keeps it), else the palette's first colour.
func TestGIFFirstFrameOnItsScreen(t *testing.T) {
	for _, transparent := range []bool{false, true} {
		pal := color.Palette{color.RGBA{200, 10, 10, 255}, color.RGBA{10, 200, 10, 255}, color.RGBA{10, 10, 200, 255}, color.RGBA{90, 90, 90, 255}}
		if transparent {
			pal[3] = color.RGBA{}
		}
		frame := image.NewPaletted(image.Rect(2, 1, 6, 4), pal)
		for i := range frame.Pix {
			frame.Pix[i] = uint8(i % 3)
		}
		var buf bytes.Buffer
		if err := gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{frame}, Delay: []int{0}, Config: image.Config{ColorModel: pal, Width: 8, Height: 6}}); err != nil {
			t.Fatal(err)
		}
		p, err := decodeImage(buf.Bytes(), "", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		p = p.floats()
		if p.h != 6 || p.w != 8 {
			t.Fatalf("transparent %v: decoded %s, want the 6×8 screen", transparent, p.dims())
		}
		for y := range 6 {
			for x := range 8 {
				want := pal[0].(color.RGBA)
				if transparent {
					want = color.RGBA{}
				}
				if image.Pt(x, y).In(frame.Rect) {
					want = pal[frame.ColorIndexAt(x, y)].(color.RGBA)
				}
				got := [3]float32{p.pix[y*8+x], p.pix[48+y*8+x], p.pix[96+y*8+x]}
				if got != [3]float32{float32(want.R), float32(want.G), float32(want.B)} {
					t.Fatalf("transparent %v: the pixel at row %d, column %d is %v, want %v", transparent, y, x, got, want)
				}
			}
		}
	}
}

// A resize that makes only a center crop's window (resizeForCrop) gives
// the crop the values it cuts from the whole resize, for every filter,
// shrinking or enlarging, windows of every size and parity, within the
// image or beyond it (where the whole image is made).
func TestResizeForCropIsTheCrop(t *testing.T) {
	rng := rand.New(rand.NewSource(224))
	windows := 0
	for range 400 {
		c, h, w := 1+2*rng.Intn(2), 1+rng.Intn(30), 1+rng.Intn(30)
		p := newPlanar8(c, h, w)
		for i := range p.pix8 {
			p.pix8[i] = uint8(rng.Intn(256))
		}
		oh, ow := 1+rng.Intn(40), 1+rng.Intn(40)
		ch, cw := 1+rng.Intn(oh+2), 1+rng.Intn(ow+2)
		for name, f := range filters {
			want := centerCrop(resize(p, oh, ow, f), ch, cw)
			made := resizeForCrop(p, oh, ow, ch, cw, f)
			if made.h == ch && made.w == cw && (oh != ch || ow != cw) {
				windows++
			}
			got := centerCrop(made, ch, cw)
			if !slices.Equal(got.pix8, want.pix8) || got.h != want.h || got.w != want.w {
				t.Fatalf("%s, %s to %d×%d, crop %d×%d: the window differs from the crop", name, p.dims(), oh, ow, ch, cw)
			}
		}
	}
	if windows == 0 {
		t.Fatal("no window made alone")
	}
}

// A program that resizes and then center-crops gives the values it gives
// unplanned (without making only the window), and a resize whose result
// is also kept is made whole.
func TestPlannedCropAgrees(t *testing.T) {
	tr := []ir.Transform{
		op("decode", "", "d"),
		op("resize", "d", "r", "shortest_edge", "9", "interpolation", "bicubic"),
		op("center_crop", "r", "x", "height", "7", "width", "8"),
		op("normalize", "x", "n", "mean", "[0.5]", "std", "[0.25]"),
	}
	f := newFixture(tr, dims("images", 3, 7, 8))
	cp, _ := preprocess.Compile(f.prog, f.comp, preprocess.InvokedPorts(f.m, f.comp))
	if len(cp.Ops) != len(tr) {
		t.Fatalf("the program does not compile: %d of %d ops", len(cp.Ops), len(tr))
	}
	rng := rand.New(rand.NewSource(7))
	for _, keep := range [][]string{{"n"}, {"n", "r"}} {
		planned, plain := compileImage(cp), compileImage(cp)
		planned.plan(keep)
		for range 30 {
			img := image.NewNRGBA(image.Rect(0, 0, 5+rng.Intn(30), 5+rng.Intn(30)))
			for i := range img.Pix {
				img.Pix[i] = uint8(rng.Intn(256))
				if i%4 == 3 {
					img.Pix[i] = 255
				}
			}
			data := encodePNG(t, img)
			got, err := planned.run(data, 1<<20, keep)
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.run(data, 1<<20, keep)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keep {
				if extentOf(got[i]) != extentOf(want[i]) || !slices.Equal(got[i].floats().pix, want[i].floats().pix) {
					t.Fatalf("keeping %v, %v: %s planned is %s, unplanned %s, or their values differ", keep, img.Rect, keep[i], got[i].dims(), want[i].dims())
				}
			}
		}
	}
}

// BenchmarkResize resizes a 640×480 RGB image of 8-bit values to
// 341×256 (the shorter side to 256, as CLIP's and ViT's pipelines do),
// bilinear and bicubic, as an 8-bit image (as PIL resizes one) and as
// float values (after rescale or normalize), the ways taking turns.
//
//	go test ./vm/adapters -run '^$' -bench Resize -count 5
func BenchmarkResize(b *testing.B) {
	p := newPlanar8(3, 480, 640)
	for i := range p.pix8 {
		p.pix8[i] = uint8(128 + 100*math.Sin(float64(i)*0.013)) // smooth, as a photograph's rows
	}
	values := p.floats()
	for _, name := range []string{"bilinear", "bicubic"} {
		for _, in := range []*planar{p, values} {
			kind := map[bool]string{true: "8-bit", false: "float"}[in.is8()]
			b.Run(name+"/"+kind, func(b *testing.B) {
				for b.Loop() {
					resize(in, 256, 341, filters[name])
				}
			})
		}
	}
}

// BenchmarkImagePipeline runs the preprocessing genaic init --images
// writes (decode, RGB, the shorter side resized to 256, the centre
// 224×224, rescaled, normalized by ImageNet's mean and std) on one
// 640×480 photograph-like image, as a JPEG (4:2:0, quality 90) and as a
// PNG: what an image costs the adapter before the model runs.
//
//	go test ./vm/adapters -run '^$' -bench ImagePipeline -count 5
func BenchmarkImagePipeline(b *testing.B) {
	tr := []ir.Transform{
		op("decode", "", "d"),
		op("convert_color", "d", "c", "mode", "RGB"),
		op("resize", "c", "r", "shortest_edge", "256", "rounding", "floor"),
		op("center_crop", "r", "x", "height", "224", "width", "224"),
		op("rescale", "x", "s", "factor", "0.00392156862745098"),
		op("normalize", "s", "n", "mean", "[0.485, 0.456, 0.406]", "std", "[0.229, 0.224, 0.225]"),
	}
	f := newFixture(tr, dims("images", 3, 224, 224))
	cp, _ := preprocess.Compile(f.prog, f.comp, preprocess.InvokedPorts(f.m, f.comp))
	if len(cp.Ops) != len(tr) {
		b.Fatalf("the program does not compile: %d of %d ops", len(cp.Ops), len(tr))
	}
	p := compileImage(cp)
	p.plan([]string{cp.Last}) // as the adapter plans it
	img := image.NewNRGBA(image.Rect(0, 0, 640, 480))
	for y := range 480 {
		for x := range 640 {
			v := func(f float64) uint8 { return uint8(128 + 100*math.Sin(f)) }
			img.SetNRGBA(x, y, color.NRGBA{R: v(float64(x)/37 + float64(y)/91), G: v(float64(y) / 23), B: v(float64(x+y) / 51), A: 255})
		}
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"jpeg", jpg.Bytes()}, {"png", encodePNG(b, img)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.run(c.data, 1<<24, []string{cp.Last}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
