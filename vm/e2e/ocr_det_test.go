package e2e

import (
	"context"
	"fmt"
	"image"
	"math"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
)

// testdata/packages/ocr_det end to end: PNG pages through the documented
// PaddleOCR detector program (docs/preprocessing.md, "A PaddleOCR
// detector program": the longer side at most 960, each side to a multiple
// of 32) into PaddleOCR's PP-OCRv4 text detector, the pages of one size
// once resized sharing a call.

// detPixelTolerance bounds the absolute difference between the adapter's
// pixels of a page and PaddleOCR's own (paddleDet), where both enlarge it:
// as for the recognizer (pixelTolerance), cv2 and the adapter each round
// a resized pixel to 8 bits, from weights rounded apart, so a pixel lands
// at most one step from cv2's, here divided by standard deviations of
// 0.229 to 0.225, so that one 8-bit step is 0.0175. The tolerance is one
// step and a half.
const detPixelTolerance = 1.5 / 255 / 0.224

// detTolerance bounds the absolute difference between a page's text
// probabilities through the package and the detector run on PaddleOCR's
// own pre-processing of it, where both enlarge it, and between the mean
// probabilities over its lines where the resize shrinks it (PIL's filter
// against cv2's, as TestOCRRecTallLines says: its pixels and its maps
// then differ by some 0.2 at the glyphs' edges). The largest differences
// seen on the pages of the tests are 0.012 and 0.002; the tolerance is
// four times the first.
const detTolerance = 0.05

// detPage is a page of the detector's tests: its lines of text, the
// scale they are drawn at, and the page's size.
type detPage struct {
	texts       []string
	scale, w, h int
	enlarged    bool // both sides grow to their multiples of 32
	png         []byte
	boxes       []image.Rectangle // each line's box, in the page's pixels
}

func page(texts []string, scale, w, h int) detPage {
	p := detPage{texts: texts, scale: scale, w: w, h: h}
	p.png, p.boxes = fixtures.TextPage(texts, scale, w, h)
	rw, rh := paddleDetSize(w, h)
	p.enlarged = rw >= w && rh >= h
	return p
}

func (p detPage) String() string {
	return fmt.Sprintf("%q on %d×%d at scale %d", p.texts, p.w, p.h, p.scale)
}

// detPages are pages of the sizes of fixtures.OCRDetSizes: two enlarged
// on both sides, one shrunk on both (200×130 to 192×128).
func detPages() []detPage {
	return []detPage{
		page([]string{"genaic", "text 2026"}, 2, 185, 120),
		page([]string{"detector"}, 1, 250, 90),
		page([]string{"lines of text", "on a page"}, 1, 200, 130),
	}
}

// paddleDetSize is the size PaddleOCR's DetResizeForTest (limit_type max,
// limit_side_len 960) makes of a w×h image: the ratio that brings the
// longer side to 960 where it is longer, in float64, each side int(side ×
// ratio), then round(side / 32) × 32 with Python's round (halves to
// even), at least 32.
func paddleDetSize(w, h int) (int, int) {
	ratio := 1.0
	if long := max(w, h); long > 960 {
		ratio = 960 / float64(long)
	}
	side := func(n int) int {
		return max(int(math.RoundToEven(float64(int(float64(n)*ratio))/32))*32, 32)
	}
	return side(w), side(h)
}

// paddleDet is PaddleOCR's pre-processing of one page for its detector
// (DetResizeForTest, then NormalizeImage and ToCHWImage of
// tools/infer/predict_det.py): the image as cv2.imread reads it (BGR, 8
// bits), cv2.resize to paddleDetSize, then x/255, less ImageNet's means,
// over their standard deviations, in the order of the BGR channels (as
// PaddleOCR does), channels first.
func paddleDet(t *testing.T, encoded []byte) *backend.Tensor {
	t.Helper()
	planes, h, w := cv2Planes(t, encoded, true)
	ow, oh := paddleDetSize(w, h)
	mean, std := [3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225}
	data := make([]float32, 0, 3*oh*ow)
	for k, p := range planes {
		for _, v := range cv2ResizeLinear(p, h, w, oh, ow) {
			data = append(data, (float32(v)*(1.0/255)-mean[k])/std[k])
		}
	}
	return fixtures.F32([]int64{1, 3, int64(oh), int64(ow)}, data)
}

// newDetectorRef is ocr_det's line reference: its maps are [pages, 1,
// height, width], the probability of text at each pixel.
func newDetectorRef(t *testing.T) lineRef {
	t.Helper()
	return newLineRef(t, "ocr_det", "detector", "pages", "sigmoid_0.tmp_0")
}

// textScores are the mean of a page's text probabilities (its map, [1, 1,
// h, w] for a page of pw×ph) over the middle half of the height of each of
// its lines' boxes, where the glyphs are, and their largest more than 6
// pixels away from every box.
func textScores(m *backend.Tensor, p detPage) (inside, outside float64) {
	h, w := int(m.Shape[2]), int(m.Shape[3])
	v := m.Float32s()
	sx, sy := float64(w)/float64(p.w), float64(h)/float64(p.h)
	var sum float64
	var n int
	for y := range h {
		for x := range w {
			px, py := int(float64(x)/sx), int(float64(y)/sy)
			near, in := false, false
			for _, b := range p.boxes {
				q := b.Dy() / 4
				in = in || image.Pt(px, py).In(image.Rect(b.Min.X, b.Min.Y+q, b.Max.X, b.Max.Y-q))
				near = near || image.Pt(px, py).In(b.Inset(-6))
			}
			switch {
			case in:
				sum += float64(v[y*w+x])
				n++
			case !near:
				outside = max(outside, float64(v[y*w+x]))
			}
		}
	}
	return sum / float64(n), outside
}

// TestOCRDetAgainstPaddle: each page's pixels through the package are
// within detPixelTolerance of PaddleOCR's own pre-processing for its
// detector where both enlarge it, the same size always; the detector's
// text probabilities from the two within detTolerance (their means over
// the lines, where the resize shrinks the page); and from both, the
// probability is high over the page's lines, on average above 0.5, and
// below PaddleOCR's binarization threshold (0.3) away from them.
func TestOCRDetAgainstPaddle(t *testing.T) {
	ref := newDetectorRef(t)
	for _, p := range detPages() {
		x, px := ref.pixels(t, p.png), paddleDet(t, p.png)
		m, pm := ref.probabilities(t, x), ref.probabilities(t, px)
		dx, dm := largestDiff(x, px), largestDiff(m, pm)
		in, out := textScores(m, p)
		pin, pout := textScores(pm, p)
		t.Logf("%s: %v; pixels differ by %.3g, maps by %.3g; text %.3f and %.3f, away from it at most %.3f and %.3f", p, x.Shape, dx, dm, in, pin, out, pout)
		switch {
		case math.IsInf(dx, 1):
			t.Errorf("%s: the adapter makes %v, PaddleOCR %v", p, x.Shape, px.Shape)
		case p.enlarged && (dx > detPixelTolerance || dm > detTolerance):
			t.Errorf("%s: the adapter's pixels and PaddleOCR's differ by %.3g, the detector's maps by %.3g", p, dx, dm)
		case math.Abs(in-pin) > detTolerance:
			t.Errorf("%s: the detector's mean over the lines is %.3f from the adapter's pixels, %.3f from PaddleOCR's", p, in, pin)
		}
		if min(in, pin) < 0.5 || max(out, pout) >= 0.3 {
			t.Errorf("%s: the detector's mean over the lines is %.3f and %.3f, its most away from them %.3f and %.3f", p, in, pin, out, pout)
		}
	}
}

// TestOCRDetItems: the requests of the package's requests.json (rewritten
// by GENAIC_UPDATE=1 from detPages and one more page), pages of three
// sizes given as items, two sizes once resized, read as `genaic run` reads
// them and run concurrently. Each page's map equals the page run alone
// through the adapter and the detector; pages of one size once resized,
// of several requests, share a call, and no call failed or ran again.
func TestOCRDetItems(t *testing.T) {
	ref := newDetectorRef(t)
	f := fixtures.Lookup("ocr_det")
	ps := detPages()
	ps = append(ps, page([]string{"one more"}, 2, 250, 90))
	ids := []string{"two-sizes", "same-size", "one"}
	at := [][]int{{0, 1}, {2}, {3}} // the pages of each request
	pngs := make([][][]byte, len(ids))
	alone := make([][]*backend.Tensor, len(ids))
	for i, idx := range at {
		for _, k := range idx {
			pngs[i] = append(pngs[i], ps[k].png)
			alone[i] = append(alone[i], only(ref.probabilities(t, ref.pixels(t, ps[k].png))))
		}
	}
	reqs := itemsFile(t, f.Path, "page_images", ids, pngs)
	forEachEngineOf(t, []fixtures.Fixture{f}, func(t *testing.T, e engineKind) {
		rec := newRecorder(t, f)
		r := e.start(t, f, withRecorder(genrt.WithMaxDelay(200*time.Millisecond), rec)...)
		checkItemOutputs(t, runAll(context.Background(), r, reqs), "maps", alone, tolerance)
		st := r.Stats()
		checkShared(t, st, rec.invocations(), "detector", 4)
	})
}

// TestOCRDetSizes: the size the package's program makes of a page is the
// size PaddleOCR's DetResizeForTest makes of it (paddleDetSize), on pages
// the limit of 960 shrinks, of extreme aspect, smaller than one multiple
// of 32, and at the halves where Python's round goes to the even multiple.
func TestOCRDetSizes(t *testing.T) {
	ref := newDetectorRef(t)
	for _, wh := range [][2]int{{1000, 700}, {1600, 1200}, {2000, 30}, {31, 31}, {16, 48}, {80, 112}, {185, 120}} {
		w, h := wh[0], wh[1]
		encoded, _ := fixtures.TextPage(nil, 1, w, h)
		x := ref.pixels(t, encoded)
		pw, ph := paddleDetSize(w, h)
		if got := [2]int64{x.Shape[2], x.Shape[3]}; got != [2]int64{int64(ph), int64(pw)} {
			t.Errorf("a %d×%d page is %d×%d (width×height) once resized, PaddleOCR's %d×%d", w, h, got[1], got[0], pw, ph)
		}
	}
}
