package e2e

import (
	"bytes"
	"context"
	"image/png"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
)

// testdata/packages/ocr_cls end to end: PNG text lines through the
// documented PaddleOCR angle classifier program (docs/preprocessing.md,
// "A PaddleOCR angle classifier program": a resize to 48 rows with the
// width capped, then a pad to 192 columns) into PaddleOCR's text-direction
// classifier, the lines of any widths of several requests in one call.

// clsWidth is the classifier's width: a line is squeezed to it where it is
// wider once resized, and padded to it.
const clsWidth = 192

// clsTolerance bounds the absolute difference between a line's
// probabilities through the package and the classifier run on PaddleOCR's
// own pre-processing of it. The largest difference seen on the lines of
// the tests is 0.0032 (on a line the resize shrinks, whose pixels differ
// by far more than pixelTolerance: the resize's filter is PIL's, as
// TestOCRRecTallLines says); the tolerance is some eight times that.
const clsTolerance = 0.025

// clsLine is a line of the classifier's tests: a text line, upright or
// turned by 180 degrees.
type clsLine struct {
	textLine
	turned bool
}

func (l clsLine) String() string {
	if l.turned {
		return l.textLine.String() + ", turned"
	}
	return l.textLine.String()
}

func (l clsLine) encoded() []byte {
	if l.turned {
		return fixtures.Turned(l.png)
	}
	return l.png
}

// clsLines are lines from 51 to 407 columns once resized, the wider ones
// squeezed to clsWidth (one of them, 258 columns to begin with, shrunk),
// each upright and turned. (The classifier takes some short lines of this
// bitmap font the wrong way up, from PaddleOCR's pre-processing as from
// the package's: "ab" at scale 2 is one; none of these.)
func clsLines() []clsLine {
	var out []clsLine
	for _, l := range []textLine{line("text", 1, 2), line("lines", 1, 1), line("grouped", 1, 1), line("2026", 1, 3), line("genaic text", 1, 2), line("direction classifier", 2, 1), line("x1", 2, 2), line("wide", 1, 3), line("turned lines", 1, 3)} {
		out = append(out, clsLine{l, false}, clsLine{l, true})
	}
	return out
}

// newClassifierRef is ocr_cls's line reference: its probabilities are
// [lines, 2], upright and turned.
func newClassifierRef(t *testing.T) lineRef {
	t.Helper()
	return newLineRef(t, "ocr_cls", "classifier", "lines", "softmax_0.tmp_0")
}

// TestOCRClsAgainstPaddle: each line's pixels through the package are
// within pixelTolerance of PaddleOCR's own pre-processing for its
// classifier (TextClassifier.resize_norm_img: cv2.resize to 48 rows and
// min(ceil(48·w/h), 192) columns, x/255, −0.5, /0.5, then zeros to 192
// columns), the classifier's probabilities from the two within
// clsTolerance, and both tell an upright line from a turned one. Where a
// line is wider than 192 columns before it is resized, the resize shrinks
// it, and only the probabilities are compared. The same comparison fails
// for a program that pads before it normalizes (its padding −1, not 0).
func TestOCRClsAgainstPaddle(t *testing.T) {
	ref := newClassifierRef(t)
	worstPixels, shrunkPixels, worstProbs := 0.0, 0.0, 0.0
	for _, l := range clsLines() {
		x := ref.pixels(t, l.encoded())
		px := paddlePrep(t, l.encoded(), true, clsWidth, clsWidth)
		p, pp := ref.probabilities(t, x), ref.probabilities(t, px)
		dx, dp := largestDiff(x, px), largestDiff(p, pp)
		cfg, err := png.DecodeConfig(bytes.NewReader(l.png))
		if err != nil {
			t.Fatal(err)
		}
		if shrunk := cfg.Width > clsWidth; shrunk {
			shrunkPixels = max(shrunkPixels, dx)
		} else if dx > pixelTolerance {
			t.Errorf("%s: the adapter's pixels %v and PaddleOCR's %v differ by %.3g", l, x.Shape, px.Shape, dx)
		}
		if dp > clsTolerance {
			t.Errorf("%s: the classifier's probabilities from the adapter's pixels and PaddleOCR's differ by %.3g", l, dp)
		}
		for _, got := range []*backend.Tensor{p, pp} {
			v := got.Float32s()
			if turned := v[1] > v[0]; turned != l.turned {
				t.Errorf("%s: the classifier says %v", l, v)
			}
		}
		if dx <= pixelTolerance {
			worstPixels = max(worstPixels, dx)
		}
		worstProbs = max(worstProbs, dp)
	}
	t.Logf("against PaddleOCR's pre-processing: pixels differ by at most %.3g (%.3g where a line is squeezed), probabilities by at most %.3g", worstPixels, shrunkPixels, worstProbs)
	if shrunkPixels == 0 {
		t.Error("no line of the test is squeezed")
	}
}

// TestOCRClsItems: the requests of the package's requests.json (rewritten
// by GENAIC_UPDATE=1 from clsLines), lines of many widths given as items,
// read as `genaic run` reads them and run concurrently. Each line's
// probabilities equal the line run alone through the adapter and the
// classifier; lines of several requests, whatever their widths, share a
// classifier call, and no call failed or ran again.
func TestOCRClsItems(t *testing.T) {
	ref := newClassifierRef(t)
	f := fixtures.Lookup("ocr_cls")
	lines := clsLines()
	ids := []string{"upright", "turned", "both"}
	var pngs [3][][]byte
	var alone [3][]*backend.Tensor
	for i, l := range lines {
		k := i % 2 // upright lines to the first request, turned ones to the second
		if i >= 6 {
			k = 2
		}
		pngs[k] = append(pngs[k], l.encoded())
		alone[k] = append(alone[k], only(ref.probabilities(t, ref.pixels(t, l.encoded()))))
	}
	reqs := itemsFile(t, f.Path, "line_images", ids, pngs[:])
	forEachEngineOf(t, []fixtures.Fixture{f}, func(t *testing.T, e engineKind) {
		rec := newRecorder(t, f)
		r := e.start(t, f, withRecorder(genrt.WithMaxDelay(200*time.Millisecond), rec)...)
		checkItemOutputs(t, runAll(context.Background(), r, reqs), "probabilities", alone[:], tolerance)
		st := r.Stats()
		checkShared(t, st, rec.invocations(), "classifier", int64(len(lines)))
	})
}
