package testmodels

import "math"

// A text-line recognizer in miniature: each line image is a sequence of
// pixel columns (CRNN-style, [width, height]); every column is reduced to
// its mean intensity, projected to class scores and squashed, and the
// scores of the line's valid columns are averaged.

const ocrClasses = 4

// ocrLines is the recognizer of testdata/packages/ocr_lines: lines of any
// width, packed one level deep and right-padded on width to the widest
// line of the group; height is any extent, uniform within a group.
func ocrLines() *Model {
	return &Model{
		Package:   "ocr_lines",
		Component: "recognizer",
		Artifact:  "recognizer.onnx",
		Summary:   "line_scores[i] = mean over w < line_widths[i] of tanh(mean_h(line_images[i,w,:])·W + b); padding is selected away, never read",
		Inputs: []Port{
			f32("line_images", sym("lines"), sym("width"), sym("height")),
			i64("line_widths", sym("lines")),
			i64("line_offsets", sym("line_offsets_len")),
			i64("line_owner", sym("lines")),
		},
		Outputs: []Port{
			f32("line_scores", sym("lines"), fixed("classes", ocrClasses)),
		},
		build: func(m *Model, g *graph) {
			cols := g.op("ReduceMean", "columns", []string{"line_images"}, attrIntList("axes", 2), attrInt("keepdims", 1))
			h := linearLayer(m, g, "classify", cols, 1, ocrClasses)
			act := g.op("Tanh", "column_scores", []string{h})
			pooled := maskedMean(g, "pool", act, "line_widths")
			g.op("Identity", "line_scores", []string{pooled})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			x, lengths := in["line_images"], in["line_widths"]
			w := m.Weights("classify.weight", ocrClasses)
			b := m.Weights("classify.bias", ocrClasses)
			n, width, height := int(x.Shape[0]), x.Shape[1], int(x.Shape[2])
			out := make([][]float64, n)
			for i := range n {
				valid := clamp(lengths.I64[i], width)
				sum := make([]float64, ocrClasses)
				for c := range valid {
					col := x.F32[(i*int(width)+c)*height : (i*int(width)+c+1)*height]
					mean := 0.0
					for _, v := range col {
						mean += float64(v)
					}
					mean /= float64(max(height, 1))
					y := linear([]float64{float32Round(mean)}, w, b)
					for k := range y {
						y[k] = math.Tanh(y[k])
					}
					addTo(sum, y)
				}
				out[i] = scale(sum, valid)
			}
			return map[string]Tensor{"line_scores": stack(out, ocrClasses)}, nil
		},
	}
}

// float32Round rounds v to float32, as the graph holds the column means.
func float32Round(v float64) float64 { return float64(float32(v)) }
