package testmodels

import "fmt"

const (
	textVocab  = 32
	textEmbed  = 8
	textHidden = 4
	mergeWidth = 4
)

// textSegments is the encoder of testdata/packages/text: token ids packed
// on axis 0 with two levels (tokens→segments, segments→rows); one
// embedding per segment, the mean of its tokens' embeddings. Gather refuses
// an id outside [-32, 32) and reads a negative id from the end of the
// table, as ONNX Gather does; the reference accepts ids in [0, 32) only.
func textSegments() *Model {
	return &Model{
		Package:   "text",
		Component: "segment_encoder",
		Artifact:  "segment_encoder.onnx",
		Summary: "segment_embeddings[s] = mean of E[token_ids[t]]·W + b over the tokens with token_owner[t] == s, " +
			"s < len(token_offsets)-1; zeros for a segment with no token (E is a 32×8 table)",
		Inputs: []Port{
			i64("token_ids", sym("tokens")),
			i64("token_offsets", sym("token_offsets_len")),
			i64("token_owner", sym("tokens")),
		},
		Outputs: []Port{
			f32("segment_embeddings", sym("segments"), fixed("hidden", textHidden)),
		},
		build: func(m *Model, g *graph) {
			table := g.weights(m, "token_embed.table", textVocab, textEmbed)
			e := g.op("Gather", "token_embed", []string{table, "token_ids"}, attrInt("axis", 0))
			h := linearLayer(m, g, "token_proj", e, textEmbed, textHidden)
			member := membership(g, "segment_member", "token_offsets", "token_owner")
			pooled := unitMean(g, "segment_pool", member, h)
			g.op("Identity", "segment_embeddings", []string{pooled})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			h, err := tokenProjections(m, in["token_ids"])
			if err != nil {
				return nil, err
			}
			pooled := poolMean(h, in["token_owner"], unitCount(in["token_offsets"]), textHidden)
			return map[string]Tensor{"segment_embeddings": stack(pooled, textHidden)}, nil
		},
	}
}

// tokenProjections is E[id]·W + b for every token id.
func tokenProjections(m *Model, ids Tensor) ([][]float64, error) {
	table := m.Weights("token_embed.table", textVocab*textEmbed)
	w := m.Weights("token_proj.weight", textEmbed*textHidden)
	b := m.Weights("token_proj.bias", textHidden)
	out := make([][]float64, len(ids.I64))
	for t, id := range ids.I64 {
		if id < 0 || id >= textVocab {
			return nil, fmt.Errorf("text: token_ids[%d] = %d is outside the vocabulary [0, %d)", t, id, textVocab)
		}
		e := make([]float64, textEmbed)
		for k := range e {
			e[k] = float64(table[int(id)*textEmbed+k])
		}
		out[t] = linear(e, w, b)
	}
	return out, nil
}

// tokenMerge is the component of testdata/packages/token_merge: it merges
// every two consecutive tokens of a segment into one, so the count of
// merged tokens is decided by the graph, which also computes their
// companions (level 0, extent produced); the segment level is preserved.
// The graph reads token_offsets only; it takes the segment level's pair as
// inputs it does not read, so that the component's ports declare the
// `segments` symbol its budget names.
func tokenMerge() *Model {
	return &Model{
		Package:   "token_merge",
		Component: "merger",
		Artifact:  "merger.onnx",
		Summary: "h = tokens·W + b; segment s (tokens [o[s], o[s+1]) of token_offsets o) yields ceil(n/2) merged tokens, " +
			"merged token j = (h[o[s]+2j] + h[min(o[s]+2j+1, o[s+1]-1)]) / 2; merged_offsets = [0, cumsum of ceil(n/2)], merged_owner[k] = its segment",
		Inputs: []Port{
			f32("tokens", sym("tokens"), fixed("hidden", mergeWidth)),
			i64("token_offsets", sym("token_offsets_len")),
			i64("segment_offsets", sym("segment_offsets_len")),
			i64("segment_owner", sym("segments")),
		},
		Outputs: []Port{
			f32("merged", sym("merged"), fixed("hidden", mergeWidth)),
			i64("merged_offsets", sym("merged_offsets_len")),
			i64("merged_owner", sym("merged")),
		},
		build:     buildTokenMerge,
		reference: referenceTokenMerge,
	}
}

func buildTokenMerge(m *Model, g *graph) {
	h := linearLayer(m, g, "token_proj", "tokens", mergeWidth, mergeWidth)
	big := int64(1) << 62
	starts := g.op("Slice", "seg.starts", []string{"token_offsets", g.constInts(0), g.constInts(-1)})
	ends := g.op("Slice", "seg.ends", []string{"token_offsets", g.constInts(1), g.constInts(big)})
	n := g.op("Sub", "seg.tokens", []string{ends, starts})
	n1 := g.op("Add", "seg.tokens_plus_one", []string{n, g.constInt(1)})
	mcount := g.op("Div", "seg.merged", []string{n1, g.constInt(2)})
	mends := g.op("CumSum", "seg.merged_ends", []string{mcount, g.constInt(0)})
	g.op("Concat", "merged_offsets", []string{g.constInts(0), mends}, attrInt("axis", 0))
	total := g.op("Slice", "merge.total", []string{"merged_offsets", g.constInts(-1), g.constInts(big)})
	totalS := g.op("Squeeze", "merge.total_scalar", []string{total})
	k := g.op("Range", "merge.index", []string{g.constInt(0), totalS, g.constInt(1)})
	kcol := g.op("Unsqueeze", "merge.index_col", []string{k, g.constInts(1)})
	// A merged token's segment is the number of segments that end at or
	// before it: S less the segments whose merged range ends after it.
	after := g.op("Less", "merge.before_end", []string{kcol, mends})
	afterI := g.op("Cast", "merge.before_end_i64", []string{after}, attrInt("to", onnxInt64))
	open := g.op("ReduceSum", "merge.open", []string{afterI, g.constInts(1)}, attrInt("keepdims", 0))
	segs := g.op("Shape", "merge.segments", []string{starts})
	owner := g.op("Sub", "merged_owner", []string{segs, open})
	first := g.op("Gather", "merge.segment_first", []string{"merged_offsets", owner}, attrInt("axis", 0))
	j := g.op("Sub", "merge.local", []string{k, first})
	j2 := g.op("Mul", "merge.local_twice", []string{j, g.constInt(2)})
	tstart := g.op("Gather", "merge.token_first", []string{starts, owner}, attrInt("axis", 0))
	a := g.op("Add", "merge.left", []string{tstart, j2})
	tend := g.op("Gather", "merge.token_end", []string{ends, owner}, attrInt("axis", 0))
	last := g.op("Sub", "merge.token_last", []string{tend, g.constInt(1)})
	a1 := g.op("Add", "merge.left_next", []string{a, g.constInt(1)})
	b := g.op("Min", "merge.right", []string{a1, last})
	ha := g.op("Gather", "merge.left_rows", []string{h, a}, attrInt("axis", 0))
	hb := g.op("Gather", "merge.right_rows", []string{h, b}, attrInt("axis", 0))
	sum := g.op("Add", "merge.pair_sum", []string{ha, hb})
	g.op("Mul", "merged", []string{sum, g.constFloat(0.5)})
}

func referenceTokenMerge(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
	w := m.Weights("token_proj.weight", mergeWidth*mergeWidth)
	b := m.Weights("token_proj.bias", mergeWidth)
	x := rowsOf(in["tokens"])
	off := in["token_offsets"].I64
	if len(off) == 0 || off[0] != 0 || off[len(off)-1] != int64(x.rows) {
		return nil, fmt.Errorf("token_merge: token_offsets %v must start at 0 and end at the %d tokens", off, x.rows)
	}
	var rows [][]float64
	mOff := []int64{0}
	var owner []int64
	for s := 0; s+1 < len(off); s++ {
		lo, hi := off[s], off[s+1]
		if hi < lo {
			return nil, fmt.Errorf("token_merge: token_offsets %v decrease at %d", off, s+1)
		}
		for a := lo; a < hi; a += 2 {
			r := linear(x.row(int(a)), w, b)
			addTo(r, linear(x.row(int(min(a+1, hi-1))), w, b))
			rows = append(rows, scale(r, 2))
			owner = append(owner, int64(s))
		}
		mOff = append(mOff, int64(len(rows)))
	}
	return map[string]Tensor{
		"merged":         stack(rows, mergeWidth),
		"merged_offsets": Int64([]int64{int64(len(mOff))}, mOff),
		"merged_owner":   Int64([]int64{int64(len(owner))}, owner),
	}, nil
}
