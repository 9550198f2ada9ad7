package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// The bench plot is read back from the SVG it writes: its texts (where
// each starts, at what size) measured with the font the SVG names, and the
// two axis lines, which frame everything the plot draws as data.

var (
	svgText = regexp.MustCompile(`<text x="([^"]+)" y="([^"]+)" transform="scale\(1, -1\)"\s*style="font-family:Liberation Serif;[^"]*font-size:([0-9.]+)px">([^<]*)</text>`)
	svgLine = regexp.MustCompile(`<path d="M([-0-9.e+]+),([-0-9.e+]+)L([-0-9.e+]+),([-0-9.e+]+)" style="fill:none;stroke:#000000;[^"]*" />`)
	levelRE = regexp.MustCompile(`^c=\d+$`)
)

type svgBox struct {
	text string
	vg.Rectangle
}

func parseFloat(t *testing.T, s string) vg.Length {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("the plot's SVG holds the number %q: %v", s, err)
	}
	return vg.Length(f)
}

// svgTexts returns every upright text of the SVG with its box, in the
// plot's own coordinates (y upwards, as the SVG's outer flip undoes).
func svgTexts(t *testing.T, svg string) []svgBox {
	var out []svgBox
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		face := font.DefaultCache.Lookup(font.Font{Typeface: "Liberation", Variant: "Serif"}, parseFloat(t, m[3]))
		x, base := parseFloat(t, m[1]), -parseFloat(t, m[2])
		e := face.Extents()
		out = append(out, svgBox{text: m[4], Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: base - e.Descent}, Max: vg.Point{X: x + face.Width(m[4]), Y: base + e.Ascent}}})
	}
	return out
}

// svgAxes returns the rectangle the two axis lines frame: the longest
// horizontal and the longest vertical black line.
func svgAxes(t *testing.T, svg string) vg.Rectangle {
	var xAxis, yAxis [4]vg.Length
	for _, m := range svgLine.FindAllStringSubmatch(svg, -1) {
		x1, y1, x2, y2 := parseFloat(t, m[1]), parseFloat(t, m[2]), parseFloat(t, m[3]), parseFloat(t, m[4])
		if y1 == y2 && x2-x1 > xAxis[2]-xAxis[0] {
			xAxis = [4]vg.Length{x1, y1, x2, y2}
		}
		if x1 == x2 && y2-y1 > yAxis[3]-yAxis[1] {
			yAxis = [4]vg.Length{x1, y1, x2, y2}
		}
	}
	if xAxis[2] <= xAxis[0] || yAxis[3] <= yAxis[1] {
		t.Fatal("the plot's SVG has no axis lines")
	}
	return vg.Rectangle{Min: vg.Point{X: yAxis[0], Y: xAxis[1]}, Max: vg.Point{X: xAxis[2], Y: yAxis[3]}}
}

func inside(r, in vg.Rectangle) bool {
	return r.Min.X >= in.Min.X && r.Min.Y >= in.Min.Y && r.Max.X <= in.Max.X && r.Max.Y <= in.Max.Y
}

// TestBenchPlotLayout draws sweeps whose points crowd together (every mode
// at concurrency 1 serves alike; two processor counts double the lines)
// and checks the SVG: every point has its level's label, no two labels
// overlap, every label lies inside the axes, and the legend (its texts and
// the thumbnails left of them) lies wholly outside the axes, so it covers
// no data.
func TestBenchPlotLayout(t *testing.T) {
	result := func(name string, procs, c int, rps, p50 float64) modeResult {
		r := modeResult{Name: name, Procs: procs, Concurrency: c, RequestsPerSecond: rps}
		r.Latency.P50 = p50
		return r
	}
	sweep := []modeResult{
		result("grouped", 2, 1, 410, 2.4), result("one-at-a-time", 2, 1, 400, 2.5), result("sequential", 2, 1, 395, 2.5),
		result("grouped", 2, 4, 1300, 3.0), result("one-at-a-time", 2, 4, 700, 5.6),
		result("grouped", 2, 16, 2100, 7.5), result("one-at-a-time", 2, 16, 720, 22),
	}
	var procs []modeResult
	for _, p := range []int{1, 2} {
		for _, c := range []int{1, 2, 4, 8} {
			f := float64(c*p) / 2
			procs = append(procs, result("grouped", p, c, 400+300*f, 2.4+0.1*f), result("one-at-a-time", p, c, 400+20*f, 2.5+2*f))
		}
	}
	for name, rs := range map[string][]modeResult{"sweep": sweep, "procs": procs} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plot.svg")
			if err := writePlot(path, rs); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			svg := string(b)
			axes := svgAxes(t, svg)
			names := map[string]bool{}
			for _, r := range rs {
				names[lineName(r, rs)] = true
			}
			thumb := plot.NewLegend().ThumbnailWidth
			var labels []svgBox
			legend := 0
			for _, tx := range svgTexts(t, svg) {
				switch {
				case levelRE.MatchString(tx.text):
					labels = append(labels, tx)
					if !inside(tx.Rectangle, axes) {
						t.Errorf("the label %s at %v leaves the axes %v", tx.text, tx.Rectangle, axes)
					}
				case names[tx.text]:
					legend++
					// The thumbnail and a space stand left of the text:
					// a text's height is more than the space.
					entry := tx.Rectangle
					entry.Min.X -= thumb + tx.Size().Y
					if overlap(entry, axes) {
						t.Errorf("the legend entry %s at %v lies over the axes %v, where the data are drawn", tx.text, entry, axes)
					}
				}
			}
			if legend != len(names) {
				t.Errorf("the legend names %d lines, want %d", legend, len(names))
			}
			want := map[string]int{}
			for _, r := range rs {
				want[fmt.Sprintf("c=%d", r.Concurrency)]++
			}
			got := map[string]int{}
			for i, a := range labels {
				got[a.text]++
				for _, o := range labels[i+1:] {
					if overlap(a.Rectangle, o.Rectangle) {
						t.Errorf("the labels %s at %v and %s at %v overlap", a.text, a.Rectangle, o.text, o.Rectangle)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the plot labels its points %v, want one label per point: %v", got, want)
			}
			if !strings.Contains(svg, "requests/s (median)") {
				t.Error("the plot's x axis is not named")
			}
		})
	}
}

// TestSegmentHits: a segment through a box, ending in it, along its side
// or passing beside it.
func TestSegmentHits(t *testing.T) {
	r := vg.Rectangle{Min: vg.Point{X: 10, Y: 10}, Max: vg.Point{X: 20, Y: 20}}
	pt := func(x, y vg.Length) vg.Point { return vg.Point{X: x, Y: y} }
	for _, tc := range []struct {
		a, b vg.Point
		want bool
	}{
		{pt(0, 0), pt(30, 30), true},   // across the diagonal
		{pt(15, 0), pt(15, 30), true},  // vertical, through
		{pt(0, 15), pt(12, 15), true},  // ends inside
		{pt(0, 0), pt(30, 5), false},   // below
		{pt(0, 30), pt(30, 21), false}, // above
		{pt(0, 15), pt(15, 0), false},  // past the corner
		{pt(0, 25), pt(25, 0), true},   // across the corner
		{pt(21, 0), pt(21, 30), false}, // right of it
		{pt(0, 0), pt(9, 9), false},    // stops short
	} {
		if got := segmentHits(tc.a, tc.b, r); got != tc.want {
			t.Errorf("segment %v–%v through %v: %t, want %t", tc.a, tc.b, r, got, tc.want)
		}
	}
}
