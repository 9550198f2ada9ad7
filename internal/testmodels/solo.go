package testmodels

const soloWidth = 4

// solo is the scorer of testdata/packages/solo, a component without
// batch_capacity. Its rows are deliberately not independent: every row's
// score adds the mean of all rows of the invocation, so a runtime that
// grouped two requests into one call would change both results.
func solo() *Model {
	return &Model{
		Package:   "solo",
		Component: "scorer",
		Artifact:  "scorer.onnx",
		Summary:   "scores[r] = features[r,:]·W + b + (mean over all rows r' of features[r',:])·V; one request row per invocation",
		Inputs: []Port{
			f32("features", sym("batch"), fixed("width", soloWidth)),
		},
		Outputs: []Port{
			f32("scores", sym("batch"), fixed("width", soloWidth)),
		},
		build: func(m *Model, g *graph) {
			own := linearLayer(m, g, "score", "features", soloWidth, soloWidth)
			mean := g.op("ReduceMean", "context.mean", []string{"features"}, attrIntList("axes", 0), attrInt("keepdims", 1))
			v := g.weights(m, "context.weight", soloWidth, soloWidth)
			ctx := g.op("MatMul", "context", []string{mean, v})
			g.op("Add", "scores", []string{own, ctx})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("score.weight", soloWidth*soloWidth)
			b := m.Weights("score.bias", soloWidth)
			v := m.Weights("context.weight", soloWidth*soloWidth)
			x := rowsOf(in["features"])
			mean := make([]float64, soloWidth)
			for r := range x.rows {
				addTo(mean, x.row(r))
			}
			ctx := linear(scale(mean, x.rows), v, make([]float32, soloWidth))
			out := make([][]float64, x.rows)
			for r := range out {
				out[r] = linear(x.row(r), w, b)
				addTo(out[r], ctx)
			}
			return map[string]Tensor{"scores": stack(out, soloWidth)}, nil
		},
	}
}
