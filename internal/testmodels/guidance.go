package testmodels

import (
	"fmt"
	"math"
)

const guidanceChannels = 4

// requestExpanded is the denoiser of testdata/packages/request_expanded, a
// classifier-free guidance step: each request brings two latent rows (row
// 2r conditional, row 2r+1 unconditional, request_expanded with factor 2),
// the graph denoises every row alone and mixes each request's pair into one
// guided row (request_aligned) with the group-wide guidance scale (shared).
func requestExpanded() *Model {
	return &Model{
		Package:   "request_expanded",
		Component: "denoiser",
		Artifact:  "denoiser.onnx",
		Summary: "noise[i] = tanh(latents[i,:]·W + b); " +
			"guided[r] = noise[2r+1] + guidance_scale[0]·(noise[2r] − noise[2r+1])",
		Inputs: []Port{
			f32("latents", sym("expanded_rows"), fixed("channels", guidanceChannels)),
			f32("guidance_scale", literal(1)),
		},
		Outputs: []Port{
			f32("noise", sym("expanded_rows"), fixed("channels", guidanceChannels)),
			f32("guided", sym("batch"), fixed("channels", guidanceChannels)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "denoise", "latents", guidanceChannels, guidanceChannels)
			noise := g.op("Tanh", "noise", []string{h})
			pairs := g.op("Reshape", "guide.pairs", []string{noise, g.constInts(-1, 2, guidanceChannels)})
			cond := g.op("Gather", "guide.cond", []string{pairs, g.constInt(0)}, attrInt("axis", 1))
			uncond := g.op("Gather", "guide.uncond", []string{pairs, g.constInt(1)}, attrInt("axis", 1))
			diff := g.op("Sub", "guide.diff", []string{cond, uncond})
			scaled := g.op("Mul", "guide.scaled", []string{diff, "guidance_scale"})
			g.op("Add", "guided", []string{uncond, scaled})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("denoise.weight", guidanceChannels*guidanceChannels)
			b := m.Weights("denoise.bias", guidanceChannels)
			x := rowsOf(in["latents"])
			if x.rows%2 != 0 {
				return nil, fmt.Errorf("request_expanded: latents has %d rows, not two per request", x.rows)
			}
			s := float64(in["guidance_scale"].F32[0])
			noise := make([][]float64, x.rows)
			for i := range noise {
				noise[i] = linear(x.row(i), w, b)
				for j, v := range noise[i] {
					noise[i][j] = math.Tanh(v)
				}
			}
			guided := make([][]float64, x.rows/2)
			for r := range guided {
				c, u := noise[2*r], noise[2*r+1]
				guided[r] = make([]float64, guidanceChannels)
				for j := range guided[r] {
					guided[r][j] = u[j] + s*(c[j]-u[j])
				}
			}
			return map[string]Tensor{
				"noise":  stack(noise, guidanceChannels),
				"guided": stack(guided, guidanceChannels),
			}, nil
		},
	}
}
