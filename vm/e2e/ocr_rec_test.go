package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
	"github.com/genaic/genaic/vm/ortlib"
)

// testdata/packages/ocr_rec end to end: PNG text lines through the
// documented PaddleOCR recognizer program (docs/preprocessing.md, "A
// PaddleOCR recognizer program") into PaddleOCR's PP-OCRv4 recognizer,
// the lines of several requests grouped by the width the program makes.

// ocrRecDictionary is the recognizer's character dictionary in the cache
// of make setup.
const ocrRecDictionary = "ppocr_keys_v1.txt"

// pixelTolerance bounds the absolute difference between the adapter's
// pixels of a line and PaddleOCR's own (paddleLine), on [-1, 1]. Both
// resize with the same bilinear weights where they enlarge (every line of
// the tests is at most 48 rows high) and round each pixel to 8 bits, as an
// 8-bit image's resize does, but cv2 rounds its weights to 11 bits and PIL
// (which the adapter follows) to 22, so a pixel near a half step lands one
// step apart (2/255 on [-1, 1]), the largest difference seen. The
// tolerance is one step and a half. A line read as RGB rather than BGR
// differs by 0.39 on its ink.
const pixelTolerance = 3.0 / 255

// paddleTolerance bounds the absolute difference between a line's
// probabilities through the package and the recognizer run on PaddleOCR's
// own pre-processing of the line: what the recognizer makes of pixels
// within pixelTolerance, on probabilities in [0, 1]. The largest
// difference seen on the lines of the tests is 0.0018, and 0.0097 on
// lines of other texts and margins (the step where a character gives way
// to the blank is the most sensitive); the tolerance is three times the
// latter. Both read the same text.
const paddleTolerance = 3e-2

// textLine is one text line of the tests: its text, how it is drawn
// (fixtures.TextLine) and its PNG.
type textLine struct {
	text          string
	margin, scale int
	png           []byte
}

func line(text string, margin, scale int) textLine {
	return textLine{text, margin, scale, fixtures.TextLine(text, margin, scale)}
}

func (l textLine) String() string {
	return fmt.Sprintf("%q at scale %d", l.text, l.scale)
}

// ocrItemsRequests are the requests of the package's requests.json, of
// lines given as items: the first of lines of three widths once resized
// (96, 119 and 164 columns, from 4, 5 and 7 characters:
// fixtures.OCRRecLengths), in no order of width, of heights from 15 to 45
// rows; the others of lines of the same widths, so that the recognizer
// groups lines of several requests.
func ocrItemsRequests() (ids []string, lines [][]textLine) {
	return []string{"three-widths", "two-widths", "one-width"}, [][]textLine{
		{line("lines", 1, 2), line("2026", 1, 1), line("genaic2", 1, 3), line("text", 1, 3), line("width", 1, 1)},
		{line("grouped", 1, 1), line("line", 1, 2)},
		{line("items", 1, 3)},
	}
}

// lineRef runs an image alone (a line, a page): through an OCR package's
// image adapter and straight through its model on ONNX Runtime.
type lineRef struct {
	adapter, model backend.Session
	pixelsPort     string // the adapter's output the model reads as x
	output         string // the model's output
}

// newLineRef is the line reference of the fixture fx, whose model is
// component (a real model make setup caches), reading the adapter's
// output port pixels.
func newLineRef(t *testing.T, fx, component, pixels, output string) lineRef {
	t.Helper()
	f := fixtures.Lookup(fx)
	p, _ := fixtures.Compile(t, f)
	file := p.IR.Component(component).Artifact
	if _, err := ortlib.Model(file); err != nil {
		t.Fatalf("%s needs the cached %s: %v: %s", fx, file, err, fixtures.FixSetup)
	}
	a, err := adapters.New(p.IR).Load(p.IR.Component("image_preprocess"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return lineRef{a, session(t, f, component, ortBackend(t)), pixels, output}
}

// pixels is the adapter's input to the model of one encoded image, [1, 3,
// height, width].
func (r lineRef) pixels(t *testing.T, encoded []byte) *backend.Tensor {
	t.Helper()
	out, err := r.adapter.Run(context.Background(), map[string]*backend.Tensor{
		"encoded":      {DType: "uint8", Shape: []int64{int64(len(encoded))}, Data: encoded},
		"byte_offsets": fixtures.I64(0, int64(len(encoded))),
		"rows":         fixtures.I64(0, 1),
	}, []string{r.pixelsPort})
	if err != nil {
		t.Fatal(err)
	}
	return out[r.pixelsPort]
}

// probabilities runs the model on x, [images, 3, height, width].
func (r lineRef) probabilities(t *testing.T, x *backend.Tensor) *backend.Tensor {
	t.Helper()
	out, err := r.model.Run(context.Background(), map[string]*backend.Tensor{"x": x}, []string{r.output})
	if err != nil {
		t.Fatal(err)
	}
	return out[r.output]
}

// recognizerRef is ocr_rec's line reference, with the recognizer's
// classes to read its text by.
type recognizerRef struct {
	lineRef
	// classes are the recognizer's classes after the CTC blank: the
	// characters of its dictionary, then a space.
	classes []string
}

func newRecognizerRef(t *testing.T) recognizerRef {
	t.Helper()
	ref := newLineRef(t, "ocr_rec", "recognizer", "lines", "softmax_11.tmp_0")
	path, err := ortlib.Model(ocrRecDictionary)
	if err != nil {
		t.Fatalf("ocr_rec's test decodes with the recognizer's dictionary: %v: %s", err, fixtures.FixSetup)
	}
	dict, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	classes := append(strings.Split(strings.TrimSuffix(string(dict), "\n"), "\n"), " ")
	return recognizerRef{ref, classes}
}

// text decodes a line's probabilities, [steps, classes], as PaddleOCR's
// CTCLabelDecode does: the most probable class of each step, repeats
// merged, blanks (class 0) dropped; and trims the spaces around it.
func (r recognizerRef) text(t *testing.T, p *backend.Tensor) string {
	t.Helper()
	if p.Rank() != 2 || p.Shape[1] != int64(len(r.classes)+1) {
		t.Fatalf("probabilities %v for %d classes and the blank", p.Shape, len(r.classes))
	}
	v, n := p.Float32s(), int(p.Shape[1])
	var b strings.Builder
	last := 0
	for s := range int(p.Shape[0]) {
		step := v[s*n : (s+1)*n]
		best := 0
		for k, x := range step {
			if x > step[best] {
				best = k
			}
		}
		if best != 0 && best != last {
			b.WriteString(r.classes[best-1])
		}
		last = best
	}
	return strings.TrimSpace(b.String())
}

// paddleLine is PaddleOCR's pre-processing of one line for PP-OCRv4's
// recognizer (TextRecognizer.resize_norm_img of tools/infer/predict_rec.py,
// rec_image_shape 3,48,320), without the padding to the batch's width:
// the image as cv2.imread reads it (BGR, 8 bits; RGB where bgr is false,
// to show that the comparison tells them apart), cv2.resize to 48 rows and
// ceil(48·w/h) columns, the ratio computed in float64 as Python does,
// then x/255, −0.5, /0.5 in float32, channels first.
func paddleLine(t *testing.T, l textLine, bgr bool) *backend.Tensor {
	t.Helper()
	return paddlePrep(t, l.png, bgr, 0, 0)
}

// paddlePrep is PaddleOCR's pre-processing of a line image at 48 rows
// (paddleLine), the width at most most columns where most > 0 (the line
// squeezed to it), then zeros appended to pad columns where pad > 0.
func paddlePrep(t *testing.T, encoded []byte, bgr bool, most, pad int) *backend.Tensor {
	t.Helper()
	planes, h, w := cv2Planes(t, encoded, bgr)
	const oh = 48
	ow := int(math.Ceil(oh * (float64(w) / float64(h))))
	if most > 0 {
		ow = min(ow, most)
	}
	cols := max(ow, pad)
	data := make([]float32, 0, 3*oh*cols)
	for _, p := range planes {
		resized := cv2ResizeLinear(p, h, w, oh, ow)
		for y := range oh {
			for _, v := range resized[y*ow : (y+1)*ow] {
				x := float32(v) / 255
				x -= 0.5
				x /= 0.5
				data = append(data, x)
			}
			data = append(data, make([]float32, cols-ow)...)
		}
	}
	return fixtures.F32([]int64{1, 3, oh, int64(cols)}, data)
}

// cv2Planes is a PNG as cv2.imread reads it: three 8-bit planes, BGR
// (RGB where bgr is false), of h×w pixels.
func cv2Planes(t *testing.T, encoded []byte, bgr bool) (planes [][]uint8, h, w int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(encoded))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	h, w = b.Dy(), b.Dx()
	planes = make([][]uint8, 3)
	for k := range planes {
		planes[k] = make([]uint8, h*w)
	}
	for y := range h {
		for x := range w {
			c := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			rgb := [3]uint8{c.R, c.G, c.B}
			for k := range 3 {
				if bgr {
					planes[k][y*w+x] = rgb[2-k]
				} else {
					planes[k][y*w+x] = rgb[k]
				}
			}
		}
	}
	return planes, h, w
}

// cv2Bits are the fraction bits of cv2.resize's interpolation weights on
// 8-bit images (INTER_RESIZE_COEF_BITS).
const cv2Bits = 11

// cv2Taps are cv2.resize's INTER_LINEAR source positions and fixed-point
// weights along one axis of n positions resized to out: the source
// position of output i is (i + 0.5)·n/out − 0.5 in float32, its two
// neighbours weighted by the fraction, rounded to cv2Bits; a position
// before the first pixel or at or after the last takes that pixel alone.
func cv2Taps(n, out int) (at []int, w [][2]int32) {
	scale := float64(n) / float64(out)
	at, w = make([]int, out), make([][2]int32, out)
	for i := range out {
		f := float32((float64(i)+0.5)*scale - 0.5)
		s := int(math.Floor(float64(f)))
		f -= float32(s)
		if s < 0 {
			s, f = 0, 0
		}
		if s >= n-1 {
			s, f = n-1, 0
		}
		at[i] = s
		w[i] = [2]int32{int32(math.RoundToEven(float64((1 - f) * (1 << cv2Bits)))), int32(math.RoundToEven(float64(f * (1 << cv2Bits))))}
	}
	return at, w
}

// cv2ResizeLinear resizes one 8-bit plane of h×w to oh×ow as cv2.resize
// with INTER_LINEAR does: rows first in integers scaled by 2^cv2Bits, then
// columns, the sum scaled back by 2^(2·cv2Bits) with rounding and
// saturated to 8 bits. (cv2's vectorised column pass rounds in two steps
// and may land one 8-bit step away; paddleTolerance covers a step.)
func cv2ResizeLinear(p []uint8, h, w, oh, ow int) []uint8 {
	xs, xw := cv2Taps(w, ow)
	ys, yw := cv2Taps(h, oh)
	rows := make([][]int32, h)
	for y := range h {
		rows[y] = make([]int32, ow)
		for x := range ow {
			s := xs[x]
			v := int32(p[y*w+s]) * xw[x][0]
			if s+1 < w {
				v += int32(p[y*w+s+1]) * xw[x][1]
			}
			rows[y][x] = v
		}
	}
	out := make([]uint8, oh*ow)
	for y := range oh {
		r0, r1 := rows[ys[y]], rows[min(ys[y]+1, h-1)]
		for x := range ow {
			v := (int64(r0[x])*int64(yw[y][0]) + int64(r1[x])*int64(yw[y][1]) + 1<<(2*cv2Bits-1)) >> (2 * cv2Bits)
			out[y*ow+x] = uint8(max(0, min(255, v)))
		}
	}
	return out
}

// only is the one line of a recognizer output of one line, [steps, classes].
func only(p *backend.Tensor) *backend.Tensor {
	return &backend.Tensor{DType: p.DType, Shape: p.Shape[1:], Data: p.Data}
}

// largestDiff is the largest absolute difference of two float32 tensors of
// one shape, or +Inf when their shapes differ.
func largestDiff(a, b *backend.Tensor) float64 {
	if !slices.Equal(a.Shape, b.Shape) {
		return math.Inf(1)
	}
	d, bs := 0.0, b.Float32s()
	for i, v := range a.Float32s() {
		d = max(d, math.Abs(float64(v)-float64(bs[i])))
	}
	return d
}

// TestOCRRecItems: the requests of the package's requests.json (rewritten
// by GENAIC_UPDATE=1 from ocrItemsRequests), text lines given as items of
// three widths once resized, read as `genaic run` reads them and run
// concurrently on both engines. Each line's probabilities equal the line
// run alone through the adapter and then straight through the recognizer
// on ONNX Runtime, and read as the line's text. Independently, the adapter's pixels of each line are within
// pixelTolerance of PaddleOCR's own pre-processing of it (paddleLine),
// which the same comparison with RGB for BGR fails, and the recognizer
// reads the same text from both, its probabilities within
// paddleTolerance. Every recognizer call holds lines of one width, some
// several lines of several requests; no call of the adapter or the
// recognizer failed, and no group ran again.
func TestOCRRecItems(t *testing.T) {
	ref := newRecognizerRef(t)
	f := fixtures.Lookup("ocr_rec")
	ids, lines := ocrItemsRequests()
	pngs := make([][][]byte, len(lines))
	total := int64(0)
	for i, ls := range lines {
		for _, l := range ls {
			pngs[i] = append(pngs[i], l.png)
		}
		total += int64(len(ls))
	}
	reqs := itemsFile(t, f.Path, "line_images", ids, pngs)
	alone := make([][]*backend.Tensor, len(lines))
	worstPixels, worstProbs, leastRGB := 0.0, 0.0, math.Inf(1)
	for i, ls := range lines {
		for _, l := range ls {
			x := ref.pixels(t, l.png)
			p := ref.probabilities(t, x)
			alone[i] = append(alone[i], only(p))
			px := paddleLine(t, l, true)
			pp := ref.probabilities(t, px)
			dx, dp := largestDiff(x, px), largestDiff(p, pp)
			if dx > pixelTolerance || dp > paddleTolerance {
				t.Errorf("%s: the adapter's pixels %v and PaddleOCR's %v differ by %.3g, the recognizer's probabilities by %.3g", l, x.Shape, px.Shape, dx, dp)
			}
			for _, got := range []*backend.Tensor{p, pp} {
				if text := ref.text(t, only(got)); text != l.text {
					t.Errorf("%s reads as %q", l, text)
				}
			}
			worstPixels, worstProbs = max(worstPixels, dx), max(worstProbs, dp)
			leastRGB = min(leastRGB, largestDiff(x, paddleLine(t, l, false)))
		}
	}
	t.Logf("against PaddleOCR's pre-processing: pixels differ by at most %.3g, probabilities by at most %.3g; read as RGB, pixels differ by at least %.3g", worstPixels, worstProbs, leastRGB)
	if leastRGB <= pixelTolerance {
		t.Errorf("a line read as RGB is within %.3g of the package's BGR: the comparison does not tell the channel order", leastRGB)
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rec := newRecorder(t, f)
		r := e.start(t, f, withRecorder(genrt.WithMaxDelay(200*time.Millisecond), rec)...)
		checkItemOutputs(t, runAll(context.Background(), r, reqs), "probabilities", alone, tolerance)
		checkShared(t, r.Stats(), rec.invocations(), "recognizer", total)
	})
}

// checkShared checks the calls of a run of an OCR package whose model is
// component, of n images (lines, pages) in all: no call of the adapter or
// the model failed or ran again, every image reached the model once, and
// some call of the model held several images of several requests.
func checkShared(t *testing.T, st vm.Stats, calls []call, component string, n int64) {
	t.Helper()
	for _, name := range []string{"image_preprocess", component} {
		if s := st.Components[name]; s.Failed != 0 || s.Regrouped != 0 {
			t.Errorf("%s: %d failed calls, %d groups run again", name, s.Failed, s.Regrouped)
		}
	}
	invoked, most := int64(0), int64(0)
	var shapes []string
	for _, c := range calls {
		if c.component == component {
			x := c.inputs["x"]
			invoked += x.Shape[0]
			most = max(most, x.Shape[0])
			shapes = append(shapes, fmt.Sprint(x.Shape))
		}
	}
	t.Logf("%s calls: %s; the adapter's: %d", component, strings.Join(shapes, " "), st.Components["image_preprocess"].Invocations)
	if invoked != n {
		t.Errorf("the %s's calls held %d images, the requests %d", component, invoked, n)
	}
	if s := st.Components[component]; most < 2 || s.MaxGroupRequests < 2 {
		t.Errorf("no group of several images of several requests: at most %d images and %d requests a call", most, s.MaxGroupRequests)
	}
}

// TestOCRRecTallLines: lines taller than 48 rows, which the program
// shrinks. The adapter's bilinear filter is PIL's, which widens with the
// scale when it shrinks (each pixel the weighted mean of all the pixels
// it covers); cv2.resize's INTER_LINEAR does not (each pixel from the two
// nearest), so pixels differ by far more than pixelTolerance
// (docs/preprocessing.md gives how much). The recognizer still reads each
// line's text from both.
func TestOCRRecTallLines(t *testing.T) {
	ref := newRecognizerRef(t)
	worstPixels, worstProbs := 0.0, 0.0
	for _, l := range []textLine{line("lines", 3, 3), line("genaic2", 3, 3), line("text", 1, 4)} {
		x, px := ref.pixels(t, l.png), paddleLine(t, l, true)
		p, pp := ref.probabilities(t, x), ref.probabilities(t, px)
		for _, got := range []*backend.Tensor{p, pp} {
			if text := ref.text(t, only(got)); text != l.text {
				t.Errorf("%s reads as %q", l, text)
			}
		}
		worstPixels, worstProbs = max(worstPixels, largestDiff(x, px)), max(worstProbs, largestDiff(p, pp))
	}
	t.Logf("against PaddleOCR's pre-processing: pixels differ by at most %.3g, probabilities by at most %.3g", worstPixels, worstProbs)
}

// TestOCRRecWideLine: a line wider than 53 times its height is more than
// 2560 columns once resized, the recognizer's budget on lines × width:
// its request fails with run/budget, before the recognizer runs it, and a
// request beside it is answered.
func TestOCRRecWideLine(t *testing.T) {
	f := fixtures.Lookup("ocr_rec")
	wide := line(strings.Repeat("wide ", 23), 1, 1) // 115 characters, 807×15: 2583 columns
	reqs := []vm.Request{
		{ID: "wide", Items: map[string][]vm.Item{"line_images": vm.ByteItems(line("text", 1, 1).png, wide.png)}},
		{ID: "beside", Items: map[string][]vm.Item{"line_images": vm.ByteItems(line("line", 1, 2).png)}},
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rec := newRecorder(t, f)
		r := e.start(t, f, withRecorder(genrt.WithMaxDelay(groupDelay), rec)...)
		res := runAll(context.Background(), r, reqs)
		var re *backend.RunError
		if !errors.As(res[0].Err, &re) || re.Rule != "run/budget" {
			t.Errorf("wide: got %v, want run/budget", res[0].Err)
		} else {
			t.Logf("wide: %v", re)
		}
		if res[1].Err != nil || len(res[1].Items["probabilities"]) != 1 {
			t.Errorf("beside: %v, %d items", res[1].Err, len(res[1].Items["probabilities"]))
		}
		for _, c := range rec.invocations() {
			if x := c.inputs["x"]; c.component == "recognizer" && x.Shape[3] > 2560 {
				t.Errorf("the recognizer ran a line %d columns wide", x.Shape[3])
			}
		}
	})
}
