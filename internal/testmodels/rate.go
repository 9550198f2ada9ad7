package testmodels

const (
	rateWidth = 4
	// rateUnit divides the sample rate before it shifts the frames: a
	// power of two, so that the rates the requests send (8000, 16000)
	// scale exactly in float32.
	rateUnit = 8192
	// rateHops is the number of hops per second: hop is the samples of
	// one 10 ms hop at the request's rate.
	rateHops = 100
)

// sampleRate is the voice-activity scorer of testdata/packages/sample_rate,
// shaped as Silero VAD is: besides its rows of audio (request_aligned), it
// takes the sample rate as a rank-0 int64 (shared: a group's requests send
// the same rate, passed once), and it returns, besides a row per request,
// a rank-0 int64 derived from the rate alone (shared as well).
func sampleRate() *Model {
	return &Model{
		Package:   "sample_rate",
		Component: "vad",
		Artifact:  "vad.onnx",
		Summary:   "speech[r] = audio[r,:]·W + b + (sr / 8192)·V; hop = sr / 100 (sr and hop rank 0)",
		Inputs: []Port{
			f32("audio", sym("batch"), fixed("samples", rateWidth)),
			i64("sr"),
		},
		Outputs: []Port{
			f32("speech", sym("batch"), fixed("hidden", rateWidth)),
			i64("hop"),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "frame", "audio", rateWidth, rateWidth)
			srF := g.op("Cast", "rate.f32", []string{"sr"}, attrInt("to", onnxFloat))
			rate := g.op("Div", "rate.scaled", []string{srF, g.constFloat(rateUnit)})
			shift := g.op("Mul", "rate.shift", []string{rate, g.weights(m, "rate.weight", rateWidth)})
			g.op("Add", "speech", []string{h, shift})
			g.op("Div", "hop", []string{"sr", g.constInt(rateHops)})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("frame.weight", rateWidth*rateWidth)
			b := m.Weights("frame.bias", rateWidth)
			v := m.Weights("rate.weight", rateWidth)
			sr := in["sr"].I64[0]
			rate := float64(float32(sr)) / rateUnit
			x := rowsOf(in["audio"])
			out := make([][]float64, x.rows)
			for r := range out {
				out[r] = linear(x.row(r), w, b)
				for j := range out[r] {
					out[r][j] += rate * float64(v[j])
				}
			}
			return map[string]Tensor{
				"speech": stack(out, rateWidth),
				"hop":    Int64([]int64{}, []int64{sr / rateHops}),
			}, nil
		},
	}
}
