package testmodels

const (
	audioBins   = 6
	audioHidden = 4
)

// audioWindows is the encoder of testdata/packages/audio: spectrogram
// frames packed on axis 0 with two levels (frames→windows, windows→rows);
// one embedding per window, the element-wise maximum of its frames'
// embeddings. The graph reads the level-0 companions only; the level-1
// pair is a workflow value the component does not take as ports.
func audioWindows() *Model {
	return framePool("audio", "window_encoder", "window_encoder.onnx", poolSyms{"bins", "frame_offsets_len", "windows"})
}

// audioMel is the encoder of testdata/packages/audio_mel, the same
// function over the log-mel frames (6 bands) the audio adapter computes of
// each clip: one embedding per clip.
func audioMel() *Model {
	return framePool("audio_mel", "mel_encoder", "mel_encoder.onnx", poolSyms{"mels", "clips_plus_one", "clips"})
}

// poolSyms are the metadata's symbols of a frame pool's feature axis, its
// level-0 offsets and its units.
type poolSyms struct{ features, offsets, units string }

func framePool(pkg, component, artifact string, s poolSyms) *Model {
	return &Model{
		Package:   pkg,
		Component: component,
		Artifact:  artifact,
		Summary: "window_embeddings[w] = element-wise max of spectrogram[f,:]·W + b over the frames with frame_owner[f] == w, " +
			"w < len(frame_offsets)-1; zeros for a window with no frame",
		Inputs: []Port{
			f32("spectrogram", sym("frames"), fixed(s.features, audioBins)),
			i64("frame_offsets", sym(s.offsets)),
			i64("frame_owner", sym("frames")),
		},
		Outputs: []Port{
			f32("window_embeddings", sym(s.units), fixed("hidden", audioHidden)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "frame_embed", "spectrogram", audioBins, audioHidden)
			member := membership(g, "window_member", "frame_offsets", "frame_owner")
			member3 := g.op("Unsqueeze", "window_pool.member3", []string{member, g.constInts(2)})
			h3 := g.op("Unsqueeze", "window_pool.frames3", []string{h, g.constInts(0)})
			sel := g.op("Where", "window_pool.selected", []string{member3, h3, g.constFloat(float32(negInf))})
			mx := g.op("ReduceMax", "window_pool.max", []string{sel}, attrIntList("axes", 1), attrInt("keepdims", 0))
			mf := g.op("Cast", "window_pool.member_f32", []string{member}, attrInt("to", onnxFloat))
			count := g.op("ReduceSum", "window_pool.count", []string{mf, g.constInts(1)}, attrInt("keepdims", 1))
			some := g.op("Greater", "window_pool.nonempty", []string{count, g.constFloat(0)})
			g.op("Where", "window_embeddings", []string{some, mx, g.constFloat(0)})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("frame_embed.weight", audioBins*audioHidden)
			b := m.Weights("frame_embed.bias", audioHidden)
			x := rowsOf(in["spectrogram"])
			units := unitCount(in["frame_offsets"])
			out := make([][]float64, units)
			for u := range out {
				out[u] = make([]float64, audioHidden)
				for j := range out[u] {
					out[u][j] = negInf
				}
			}
			seen := make([]bool, units)
			for f, o := range in["frame_owner"].I64 {
				if o < 0 || o >= int64(units) || f >= x.rows {
					continue
				}
				seen[o] = true
				for j, v := range linear(x.row(f), w, b) {
					out[o][j] = max(out[o][j], v)
				}
			}
			for u := range out {
				if !seen[u] {
					clear(out[u])
				}
			}
			return map[string]Tensor{"window_embeddings": stack(out, audioHidden)}, nil
		},
	}
}
