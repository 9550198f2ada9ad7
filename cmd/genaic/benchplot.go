package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotFormat is the image format a --plot path asks for, or "".
func plotFormat(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:]
	}
	return ""
}

// writePlot draws throughput against p50 latency, one line per mode (and
// processor count, where --procs gives several) through its concurrency
// levels, each point labelled with its level.
func writePlot(path string, rs []modeResult) error {
	p := plot.New()
	p.Title.Text = "genaic bench: throughput and latency by concurrency"
	p.X.Label.Text = "requests/s (median)"
	p.Y.Label.Text = "latency p50 (ms)"
	p.Legend.Top = true
	p.Legend.Left = true
	var names []string
	for _, r := range rs {
		if name := lineName(r, rs); !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for i, name := range names {
		if err := addModeLine(p, i, name, rs); err != nil {
			return err
		}
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

func addModeLine(p *plot.Plot, i int, name string, rs []modeResult) error {
	var pts plotter.XYs
	var labels []string
	for _, r := range rs {
		if lineName(r, rs) == name {
			pts = append(pts, plotter.XY{X: r.RequestsPerSecond, Y: r.Latency.P50})
			labels = append(labels, fmt.Sprintf("c=%d", r.Concurrency))
		}
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color = plotutil.Color(i)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	tags, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return err
	}
	p.Add(line, points, tags)
	p.Legend.Add(name, line, points)
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
