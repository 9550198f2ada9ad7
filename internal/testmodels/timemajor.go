package testmodels

import (
	"fmt"
	"math"
)

const timeMajorWidth = 4

// timeMajor is the encoder of testdata/packages/time_major, a time-major
// graph such as recurrent encoders export: its input is steps × requests
// × width, so a request's row is on axis 1 (request_aligned, axis 1), and
// so is its states output; the pooled output is one row per request on
// axis 0. Steps are a uniform dimension: a group's requests bring equally
// many.
func timeMajor() *Model {
	return &Model{
		Package:   "time_major",
		Component: "encoder",
		Artifact:  "encoder.onnx",
		Summary:   "states[t,b] = tanh(frames[t,b,:]·W + b); pooled[b] = mean over t of states[t,b]",
		Inputs: []Port{
			f32("frames", sym("steps"), sym("batch"), fixed("width", timeMajorWidth)),
		},
		Outputs: []Port{
			f32("states", sym("steps"), sym("batch"), fixed("hidden", timeMajorWidth)),
			f32("pooled", sym("batch"), fixed("hidden", timeMajorWidth)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "step", "frames", timeMajorWidth, timeMajorWidth)
			states := g.op("Tanh", "states", []string{h})
			g.op("ReduceMean", "pooled", []string{states}, attrIntList("axes", 0), attrInt("keepdims", 0))
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("step.weight", timeMajorWidth*timeMajorWidth)
			b := m.Weights("step.bias", timeMajorWidth)
			x := in["frames"]
			if len(x.Shape) != 3 {
				return nil, fmt.Errorf("time_major: frames has shape %v, not steps × batch × width", x.Shape)
			}
			steps, batch := int(x.Shape[0]), int(x.Shape[1])
			rows := rowsOf(x) // row t·batch + r: step t of request r
			states := make([][]float64, rows.rows)
			pooled := make([][]float64, batch)
			for r := range pooled {
				pooled[r] = make([]float64, timeMajorWidth)
			}
			for i := range states {
				states[i] = linear(rows.row(i), w, b)
				for j, v := range states[i] {
					states[i][j] = math.Tanh(v)
				}
				addTo(pooled[i%batch], states[i])
			}
			for r := range pooled {
				pooled[r] = scale(pooled[r], steps)
			}
			s := stack(states, timeMajorWidth)
			s.Shape = []int64{int64(steps), int64(batch), timeMajorWidth}
			return map[string]Tensor{"states": s, "pooled": stack(pooled, timeMajorWidth)}, nil
		},
	}
}
