package testmodels

import (
	"fmt"
	"math"
)

// The benchmark text encoders: a small but not trivial network (an
// embedding table, two dense layers of width 128 with tanh, a mean pool per
// segment), so that a group's invocation costs something beside the
// runtime's own work. text_packed packs the segments' tokens on one axis;
// text_padded pads every segment to the group's longest.

const (
	encVocab  = 64
	encHidden = 128
	encLayers = 2
	// encScale keeps a dense layer's pre-activation small (a power of two,
	// exact in float32), so that tanh does not saturate.
	encScale = 1.0 / 16
)

// textPacked is the encoder of testdata/packages/text_packed: token ids
// packed on axis 0 with two levels (tokens→segments, segments→rows).
func textPacked() *Model {
	return &Model{
		Package:   "text_packed",
		Component: "text_encoder",
		Artifact:  "text_encoder.onnx",
		Summary:   "segment_embeddings[s] = mean over the tokens t with token_owner[t] == s of h(token_ids[t]), h = 2 × tanh(x·W/16 + b) over a 64×128 embedding",
		Inputs: []Port{
			i64("token_ids", sym("tokens")),
			i64("token_offsets", sym("token_offsets_len")),
			i64("token_owner", sym("tokens")),
		},
		Outputs: []Port{
			f32("segment_embeddings", sym("segments"), fixed("hidden", encHidden)),
		},
		build: func(m *Model, g *graph) {
			h := encoderLayers(m, g, "token_ids")
			member := membership(g, "segment_member", "token_offsets", "token_owner")
			g.op("Identity", "segment_embeddings", []string{unitMean(g, "segment_pool", member, h)})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			h, err := encodeTokens(m, in["token_ids"].I64)
			if err != nil {
				return nil, err
			}
			pooled := poolMean(h, in["token_owner"], unitCount(in["token_offsets"]), encHidden)
			return map[string]Tensor{"segment_embeddings": stack(pooled, encHidden)}, nil
		},
	}
}

// textPadded is the encoder of testdata/packages/text_padded: segments
// packed on axis 0 with one level (segments→rows), each segment's token ids
// right-padded to the group's longest, with per-segment token_lengths.
func textPadded() *Model {
	return &Model{
		Package:   "text_padded",
		Component: "text_encoder",
		Artifact:  "text_encoder.onnx",
		Summary:   "segment_embeddings[s] = mean over p < token_lengths[s] of h(token_ids[s,p]), h as in text_packed; padding is selected away",
		Inputs: []Port{
			i64("token_ids", sym("segments"), sym("positions")),
			i64("token_lengths", sym("segments")),
			i64("segment_offsets", sym("segment_offsets_len")),
			i64("segment_owner", sym("segments")),
		},
		Outputs: []Port{
			f32("segment_embeddings", sym("segments"), fixed("hidden", encHidden)),
		},
		build: func(m *Model, g *graph) {
			h := encoderLayers(m, g, "token_ids")
			g.op("Identity", "segment_embeddings", []string{maskedMean(g, "segment_pool", h, "token_lengths")})
		},
		reference: referenceTextPadded,
	}
}

func referenceTextPadded(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
	ids, lengths := in["token_ids"], in["token_lengths"]
	n, p := int(ids.Shape[0]), ids.Shape[1]
	if len(lengths.I64) != n {
		return nil, fmt.Errorf("text_padded: %d token_lengths for %d segments", len(lengths.I64), n)
	}
	out := make([][]float64, n)
	for s := range n {
		valid := clamp(lengths.I64[s], p)
		h, err := encodeTokens(m, ids.I64[s*int(p):s*int(p)+valid])
		if err != nil {
			return nil, err
		}
		sum := make([]float64, encHidden)
		for _, row := range h {
			addTo(sum, row)
		}
		out[s] = scale(sum, valid)
	}
	return map[string]Tensor{"segment_embeddings": stack(out, encHidden)}, nil
}

// encoderLayers is the per-token network: an embedding lookup, then
// encLayers dense layers tanh(x·W·encScale + b).
func encoderLayers(m *Model, g *graph, ids string) string {
	table := g.weights(m, "token_embed.table", encVocab, encHidden)
	x := g.op("Gather", "token_embed", []string{table, ids}, attrInt("axis", 0))
	for l := range encLayers {
		prefix := fmt.Sprintf("layer%d", l)
		w := g.weights(m, prefix+".weight", encHidden, encHidden)
		b := g.weights(m, prefix+".bias", encHidden)
		xw := g.op("MatMul", prefix+".matmul", []string{x, w})
		scaled := g.op("Mul", prefix+".scaled", []string{xw, g.constFloat(encScale)})
		pre := g.op("Add", prefix+".pre", []string{scaled, b})
		x = g.op("Tanh", prefix, []string{pre})
	}
	return x
}

// encodeTokens is the reference of encoderLayers for each id. The network
// acts on each token alone, so it is computed once per vocabulary entry.
func encodeTokens(m *Model, ids []int64) ([][]float64, error) {
	vocab := encodeVocabulary(m)
	out := make([][]float64, len(ids))
	for t, id := range ids {
		if id < 0 || id >= encVocab {
			return nil, fmt.Errorf("%s: token id %d is outside the vocabulary [0, %d)", m.Package, id, encVocab)
		}
		out[t] = vocab[id]
	}
	return out, nil
}

// encodeVocabulary is the per-token network applied to every id.
func encodeVocabulary(m *Model) [][]float64 {
	table := m.Weights("token_embed.table", encVocab*encHidden)
	rows := make([][]float64, encVocab)
	for id := range rows {
		x := make([]float64, encHidden)
		for k := range x {
			x[k] = float64(table[id*encHidden+k])
		}
		rows[id] = x
	}
	for l := range encLayers {
		prefix := fmt.Sprintf("layer%d", l)
		w := m.Weights(prefix+".weight", encHidden*encHidden)
		b := m.Weights(prefix+".bias", encHidden)
		zero := make([]float32, encHidden)
		for id, x := range rows {
			y := linear(x, w, zero)
			for j := range y {
				y[j] = math.Tanh(y[j]*encScale + float64(b[j]))
			}
			rows[id] = y
		}
	}
	return rows
}
