package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotFormat is the image format a --plot path asks for, or "".
func plotFormat(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:]
	}
	return ""
}

// Plot sizes. The legend stands in a column right of the axes, never over
// a point; legendGap separates it from the plot.
const (
	plotW     = 8 * vg.Inch
	plotH     = 4.5 * vg.Inch
	legendGap = 12
)

// writePlot draws throughput against p50 latency, one line per mode (and
// processor count, where --procs gives several) through its concurrency
// levels, each point labelled with its level.
func writePlot(path string, rs []modeResult) (err error) {
	p := plot.New()
	p.Title.Text = "genaic bench: throughput and latency by concurrency"
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "requests/s (median)"
	p.Y.Label.Text = "latency p50 (ms)"
	legend := plot.NewLegend()
	labels := newPointLabels()
	var names []string
	for _, r := range rs {
		if name := lineName(r, rs); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for i, name := range names {
		if err := addModeLine(p, &legend, labels, i, name, rs); err != nil {
			return err
		}
	}
	p.Add(labels)

	c, err := draw.NewFormattedCanvas(plotW, plotH, plotFormat(path))
	if err != nil {
		return err
	}
	dc := draw.New(c)
	legendW := legend.Rectangle(dc).Size().X
	p.Draw(draw.Crop(dc, 0, -(legendW + 2*legendGap), 0, 0))
	// The legend's top is level with the top of the axes, under the title.
	title := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, dc.Size().X-legendW-legendGap, 0, 0, -title))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = c.WriteTo(f)
	return err
}

func addModeLine(p *plot.Plot, legend *plot.Legend, labels *pointLabels, i int, name string, rs []modeResult) error {
	var pts plotter.XYs
	for _, r := range rs {
		if lineName(r, rs) == name {
			pts = append(pts, plotter.XY{X: r.RequestsPerSecond, Y: r.Latency.P50})
			labels.add(pts[len(pts)-1], fmt.Sprintf("c=%d", r.Concurrency))
		}
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color = plotutil.Color(i)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	labels.radius = max(labels.radius, points.Radius)
	for k := 1; k < len(pts); k++ {
		labels.lines = append(labels.lines, [2]plotter.XY{pts[k-1], pts[k]})
	}
	p.Add(line, points)
	legend.Add(name, line, points)
	return nil
}

// lineName is the line a result belongs to: its mode, with its processor
// count where the results hold several.
func lineName(r modeResult, rs []modeResult) string {
	if slices.ContainsFunc(rs, func(o modeResult) bool { return o.Procs != r.Procs }) {
		return fmt.Sprintf("%s procs=%d", r.Name, r.Procs)
	}
	return r.Name
}

// pointLabels is a plotter that writes each point's label where it covers
// no other label and stays inside the axes. Candidate places ring the
// point at growing distances, eight directions on each ring; a place that
// also keeps clear of every marker and line is preferred, then one clear
// of the markers only. A label placed beyond the first ring is joined to
// its point by a thin line. A label with no free place within reach is
// left out rather than drawn over another: its point is still drawn, and
// its level is in the report.
type pointLabels struct {
	pts    plotter.XYs
	text   []string
	lines  [][2]plotter.XY // the segments the lines draw
	radius vg.Length       // the largest marker's
	face   font.Face
}

// labelRings is how many rings of candidate places a label may use.
const labelRings = 5

func newPointLabels() *pointLabels {
	return &pointLabels{face: font.DefaultCache.Lookup(font.Font{Typeface: "Liberation", Variant: "Serif"}, 10)}
}

func (l *pointLabels) add(pt plotter.XY, text string) {
	l.pts = append(l.pts, pt)
	l.text = append(l.text, text)
}

// box is the extent of text written with its baseline starting at at.
func (l *pointLabels) box(text string, at vg.Point) vg.Rectangle {
	e := l.face.Extents()
	return vg.Rectangle{Min: vg.Point{X: at.X, Y: at.Y - e.Descent}, Max: vg.Point{X: at.X + l.face.Width(text), Y: at.Y + e.Ascent}}
}

// gap is the distance from a point to its label on ring k.
func (l *pointLabels) gap(k int) vg.Length {
	e := l.face.Extents()
	return l.radius + 2 + vg.Length(k)*(e.Ascent+e.Descent)
}

// candidates are the boxes a label of size w×h may take at distance d
// from pt, in order of preference: right, above right, above, below right,
// left, above left, below, below left.
func candidates(pt vg.Point, w, h, d vg.Length) []vg.Rectangle {
	diag := d * 0.7
	mins := []vg.Point{
		{X: pt.X + d, Y: pt.Y - h/2},
		{X: pt.X + diag, Y: pt.Y + diag},
		{X: pt.X - w/2, Y: pt.Y + d},
		{X: pt.X + diag, Y: pt.Y - diag - h},
		{X: pt.X - d - w, Y: pt.Y - h/2},
		{X: pt.X - diag - w, Y: pt.Y + diag},
		{X: pt.X - w/2, Y: pt.Y - d - h},
		{X: pt.X - diag - w, Y: pt.Y - diag - h},
	}
	out := make([]vg.Rectangle, len(mins))
	for i, m := range mins {
		out[i] = vg.Rectangle{Min: m, Max: vg.Point{X: m.X + w, Y: m.Y + h}}
	}
	return out
}

// Plot places and writes the labels.
func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	at := func(xy plotter.XY) vg.Point { return vg.Point{X: trX(xy.X), Y: trY(xy.Y)} }
	// The axis lines frame the data canvas and the room GlyphBoxes
	// reserved left of and below it: labels stay inside that frame.
	area := c.Rectangle
	for _, b := range l.GlyphBoxes(p) {
		q := vg.Point{X: c.X(b.X), Y: c.Y(b.Y)}
		area.Min = vg.Point{X: min(area.Min.X, q.X+b.Min.X), Y: min(area.Min.Y, q.Y+b.Min.Y)}
		area.Max = vg.Point{X: max(area.Max.X, q.X+b.Max.X), Y: max(area.Max.Y, q.Y+b.Max.Y)}
	}
	var markers []vg.Rectangle
	for _, pt := range l.pts {
		q := at(pt)
		markers = append(markers, grow(vg.Rectangle{Min: q, Max: q}, l.radius))
	}
	var segs [][2]vg.Point
	for _, s := range l.lines {
		segs = append(segs, [2]vg.Point{at(s[0]), at(s[1])})
	}
	free := func(r vg.Rectangle, placed []vg.Rectangle, strict int) bool {
		if r.Min.X < area.Min.X || r.Min.Y < area.Min.Y || r.Max.X > area.Max.X || r.Max.Y > area.Max.Y {
			return false
		}
		if slices.ContainsFunc(placed, func(o vg.Rectangle) bool { return overlap(grow(r, 1), o) }) {
			return false
		}
		if strict >= 1 && slices.ContainsFunc(markers, func(o vg.Rectangle) bool { return overlap(r, o) }) {
			return false
		}
		return strict < 2 || !slices.ContainsFunc(segs, func(s [2]vg.Point) bool { return segmentHits(s[0], s[1], r) })
	}
	e := l.face.Extents()
	var placed []vg.Rectangle
	for i, pt := range l.pts {
		q := at(pt)
		w, h := l.face.Width(l.text[i]), e.Ascent+e.Descent
		r, ring, ok := l.place(q, w, h, func(r vg.Rectangle, strict int) bool { return free(r, placed, strict) })
		if !ok {
			continue
		}
		placed = append(placed, r)
		if ring > 0 {
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 150}, Width: vg.Points(0.5)}, q.X, q.Y, clamp(q.X, r.Min.X, r.Max.X), clamp(q.Y, r.Min.Y, r.Max.Y))
		}
		c.SetColor(color.Black)
		c.FillString(l.face, vg.Point{X: r.Min.X, Y: r.Min.Y + e.Descent}, l.text[i])
	}
}

// place finds the first free box for a w×h label of the point at q: the
// strictest test first, then each ring outwards.
func (l *pointLabels) place(q vg.Point, w, h vg.Length, free func(vg.Rectangle, int) bool) (vg.Rectangle, int, bool) {
	for strict := 2; strict >= 0; strict-- {
		for k := range labelRings {
			for _, r := range candidates(q, w, h, l.gap(k)) {
				if free(r, strict) {
					return r, k, true
				}
			}
		}
	}
	return vg.Rectangle{}, 0, false
}

// GlyphBoxes reserves room left of and below every point for a label on
// the first ring, which the plot leaves between the axis lines and the
// data. Right and above, the axis lines end at the outermost points, so a
// label there is placed inwards.
func (l *pointLabels) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	e := l.face.Extents()
	var out []plot.GlyphBox
	for i, pt := range l.pts {
		w, h := l.face.Width(l.text[i]), e.Ascent+e.Descent
		reach := vg.Rectangle{Min: vg.Point{X: -(l.gap(0) + w), Y: -(l.gap(0) + h)}}
		out = append(out, plot.GlyphBox{X: p.X.Norm(pt.X), Y: p.Y.Norm(pt.Y), Rectangle: reach})
	}
	return out
}

func overlap(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func grow(r vg.Rectangle, by vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: r.Min.X - by, Y: r.Min.Y - by}, Max: vg.Point{X: r.Max.X + by, Y: r.Max.Y + by}}
}

func clamp(v, lo, hi vg.Length) vg.Length { return min(max(v, lo), hi) }

// segmentHits reports whether the segment a–b passes through r: clipped
// to each of r's four sides in turn (Liang–Barsky), some of it remains.
func segmentHits(a, b vg.Point, r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	clip := func(p, q float64) bool { // p·t ≤ q must hold
		switch {
		case p == 0:
			return q >= 0
		case p < 0:
			t0 = max(t0, q/p)
		default:
			t1 = min(t1, q/p)
		}
		return t0 <= t1
	}
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	return clip(-dx, float64(a.X-r.Min.X)) && clip(dx, float64(r.Max.X-a.X)) &&
		clip(-dy, float64(a.Y-r.Min.Y)) && clip(dy, float64(r.Max.Y-a.Y))
}
