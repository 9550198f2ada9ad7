package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// segmentJSON is a tensor of a segment's values, as a requests document
// gives it: [len(vs)], or [1, len(vs)] as one row.
func segmentJSON(vs []int64, row bool) string {
	shape := fmt.Sprint(len(vs))
	if row {
		shape = "1," + shape
	}
	data, _ := json.Marshal(vs)
	return fmt.Sprintf(`{"dtype":"int64","shape":[%s],"data":%s}`, shape, data)
}

// TestInitText is a newcomer's path with a transformer text encoder
// exported with an attention mask and token types: init --text refuses it,
// naming mask-lengths, whose rewrite names init --text next; the package
// it writes takes segments as items, pads the segments of many requests by
// their lengths in one call, and answers each segment what the exported
// model answers it alone, unpadded, with a mask of ones; grouped answers
// equal answers alone.
func TestInitText(t *testing.T) {
	dir := t.TempDir()
	masked := filepath.Join(dir, "masked.onnx")
	writeGraph(t, masked, maskedEncoderWithTypes(16), 17)
	if _, errOut, code := runCLI(t, "init", "--text", masked); code != exitUsage || !strings.Contains(errOut, "input attention_mask is a mask: rewrite the model to take each segment's length instead (`genaic mask-lengths masked.onnx -o masked_lengths.onnx`)") {
		t.Fatalf("init --text of a masked model: exit %d\n%s", code, errOut)
	}
	initPrints(t, masked, "# Its input attention_mask is an attention mask: `genaic mask-lengths masked.onnx -o masked_lengths.onnx`\n",
		"# init --text masked_lengths.onnx` then writes a package that pads segments of\n")
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(pkg, "encoder.onnx")
	if out, errOut, code := runCLI(t, "mask-lengths", masked, "-o", enc); code != exitOK || !strings.Contains(out, "next: `genaic init --text "+enc+"` writes a package that takes its items and groups them\n") {
		t.Fatalf("mask-lengths: exit %d\n%s%s", code, out, errOut)
	}
	initPrints(t, enc, "# Its input input_ids takes segments of token ids: `genaic init --text encoder.onnx`\n", "# padded by their lengths (lengths).\n")
	if out, errOut, code := runCLI(t, "init", "--text", enc); code != exitOK || errOut != "" || !strings.Contains(out, "segments of token ids in, encoder on many requests' segments at once") {
		t.Fatalf("init --text: exit %d\n%s%s", code, out, errOut)
	}
	checkClean(t, dir)
	if _, doc := initWritten(t, pkg); strings.Count(doc, "padding: [{ dimension: sequence, valid_lengths: lengths }]") != 6 {
		t.Fatalf("the ids and token types in and at the model, and the hidden states out and at the model, are padded by the lengths:\n%s", doc)
	}

	// The exported model as plain init writes it: one request per call,
	// a segment alone with its mask of ones.
	plain := filepath.Join(dir, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	writeGraph(t, filepath.Join(plain, "masked.onnx"), maskedEncoderWithTypes(16), 17)
	if _, errOut, code := runCLI(t, "init", filepath.Join(plain, "masked.onnx")); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, errOut)
	}

	rng := rand.New(rand.NewPCG(7, 7))
	var reqs, alone []string
	var segments [][]string // per request, each segment's id in alone
	tokens := map[string]int64{}
	for r := range 6 {
		var ids, types, keys []string
		for k := range 1 + rng.IntN(3) {
			n := 1 + rng.IntN(9)
			tokens[fmt.Sprintf("r%d.%d", r, k)] = int64(n)
			tok, typ, ones := make([]int64, n), make([]int64, n), make([]int64, n)
			for i := range n {
				tok[i], typ[i], ones[i] = 1+rng.Int64N(15), rng.Int64N(2), 1
			}
			ids, types = append(ids, segmentJSON(tok, false)), append(types, segmentJSON(typ, false))
			key := fmt.Sprintf("r%d.%d", r, k)
			keys = append(keys, key)
			alone = append(alone, fmt.Sprintf(`{"id":%q,"inputs":{"input_ids":%s,"attention_mask":%s,"token_type_ids":%s}}`,
				key, segmentJSON(tok, true), segmentJSON(ones, true), segmentJSON(typ, true)))
		}
		segments = append(segments, keys)
		reqs = append(reqs, fmt.Sprintf(`{"id":"r%d","inputs":{"input_ids":{"items":[%s]},"token_type_ids":{"items":[%s]}}}`,
			r, strings.Join(ids, ","), strings.Join(types, ",")))
	}
	_, out := runRequests(t, plain, alone)
	var want struct {
		Responses []struct {
			ID      string
			Outputs map[string]struct{ Data []float64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pooled := map[string][]float64{}
	for _, r := range want.Responses {
		pooled[r.ID] = r.Outputs["pooled"].Data
	}
	doc, out := runRequests(t, pkg, reqs)
	var got struct {
		Responses []struct {
			Outputs map[string]struct {
				Items []struct {
					Shape []int64
					Data  []float64
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Responses) != len(reqs) {
		t.Fatalf("%v\n%s", err, out)
	}
	for r, resp := range got.Responses {
		items, hidden := resp.Outputs["pooled"].Items, resp.Outputs["last_hidden_state"].Items
		if len(items) != len(segments[r]) || len(hidden) != len(segments[r]) {
			t.Fatalf("request %d: %d pooled and %d hidden items for %d segments", r, len(items), len(hidden), len(segments[r]))
		}
		for k, key := range segments[r] {
			// Padded in its group, the item comes back cut to its tokens.
			if !slices.Equal(hidden[k].Shape, []int64{tokens[key], 4}) || len(hidden[k].Data) != int(4*tokens[key]) {
				t.Errorf("%s: last_hidden_state %v, want [%d, 4]", key, hidden[k].Shape, tokens[key])
			}
			for i, v := range items[k].Data {
				if math.Abs(v-pooled[key][i]) > 1e-5 {
					t.Fatalf("%s: pooled %v grouped and padded, %v alone with its mask", key, items[k].Data, pooled[key])
				}
			}
		}
	}
	if _, errOut, code := runCLI(t, "run", pkg, "--verify", "--requests", doc); code != exitOK || !strings.Contains(errOut, "each of the 6 requests is answered alike grouped and alone") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}

// idsOnly is a text encoder of token ids alone (ids, dims): each token's
// id as a float, and their mean per segment.
func idsOnly(dims ...any) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: "ids",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("input_ids", 7, dims...)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("values", 1, dims...), tensorInfo("mean", 1, dims[0])},
		Node: []*onnxpb.NodeProto{
			{OpType: "Cast", Input: []string{"input_ids"}, Output: []string{"values"}, Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}},
			{OpType: "ReduceMean", Input: []string{"values"}, Output: []string{"mean"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: []int64{1}}, {Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}}}}
}

// TestInitTextUniform: a text encoder that takes no lengths cannot mask
// padding, so its package groups only segments of one length (the
// sequence uniform): segments of two lengths in one request come back in
// order, each its mean. Models that take no segments, or that fix what
// --text groups on, are refused, saying what to do.
func TestInitTextUniform(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "ids.onnx"), idsOnly("batch", "sequence"), 17)
	if out, errOut, code := runCLI(t, "init", "--text", filepath.Join(dir, "ids.onnx")); code != exitOK || errOut != "" {
		t.Fatalf("init --text: exit %d\n%s%s", code, out, errOut)
	}
	if _, doc := initWritten(t, dir); !strings.Contains(doc, "uniform_dimensions: [sequence]") || strings.Contains(doc, "padding: [") {
		t.Fatalf("a model without lengths is grouped uniform, unpadded:\n%s", doc)
	}
	segs := [][]int64{{2, 4}, {1, 2, 3}, {5, 7}, {9}}
	items := make([]string, len(segs))
	for i, s := range segs {
		items[i] = segmentJSON(s, false)
	}
	reqs := []string{fmt.Sprintf(`{"id":"r","inputs":{"input_ids":{"items":[%s]}}}`, strings.Join(items, ","))}
	_, out := runRequests(t, dir, reqs)
	var got struct {
		Responses []struct {
			Outputs map[string]struct{ Items []struct{ Data []float64 } }
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Responses) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	means := got.Responses[0].Outputs["mean"].Items
	for i, want := range []float64{3, 2, 6, 9} {
		if len(means) != len(segs) || len(means[i].Data) != 1 || means[i].Data[0] != want {
			t.Fatalf("means %v, want 3, 2, 6, 9 in order", means)
		}
	}

	// tf2onnx names each input's axes apart: the token types' and the
	// lengths' are the ids'.
	apart := idsOnly("unk__1", "unk__2")
	apart.Input = append(apart.Input, tensorInfo("token_type_ids", 7, "unk__3", "unk__4"), tensorInfo("lengths", 7, "unk__5"))
	writeGraph(t, filepath.Join(dir, "apart.onnx"), apart, 17)
	initPrints(t, filepath.Join(dir, "apart.onnx"), "# Its input input_ids takes segments of token ids: `genaic init --text apart.onnx`\n")
	if out, errOut, code := runCLI(t, "init", "--text", "--print", filepath.Join(dir, "apart.onnx")); code != exitOK ||
		!strings.Contains(out, "token_type_ids:\n              dtype: int64\n              shape: [unk__1, unk__2]\n") ||
		!strings.Contains(out, "lengths: { dtype: int64, shape: [unk__1], batch_layout: { kind: shared } }") {
		t.Errorf("init --text of axes named apart: exit %d\n%s%s", code, out, errOut)
	}

	lengths32 := idsOnly("batch", "sequence")
	lengths32.Input = append(lengths32.Input, tensorInfo("lengths", 6, "batch"))
	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		want string
	}{
		{"a batch of one", idsOnly(1, "sequence"), "whose first axis the graph fixes at 1: open it first (`genaic dynamic-batch ids.onnx -o ...`)"},
		{"a fixed sequence", idsOnly("batch", 128), "input input_ids is int64 [batch, 128], whose sequence the graph fixes"},
		{"int32 lengths", lengths32, "input lengths is int32 [batch], the lengths genaic pads by are int64: widen them first (`genaic widen ids.onnx -o ...`)"},
		{"images", meanPixels([]any{"batch", 3, 8, 8}, 2, 3), "input pixels is float32 [batch, 3, 8, 8], not token ids"},
	} {
		dir := t.TempDir()
		writeGraph(t, filepath.Join(dir, "ids.onnx"), c.g, 17)
		if _, errOut, code := runCLI(t, "init", "--text", filepath.Join(dir, "ids.onnx")); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d\n%s", c.name, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, metadataName)); err == nil {
			t.Errorf("%s: a refused init --text wrote a document", c.name)
		}
	}
}
