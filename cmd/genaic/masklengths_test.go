package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// writeMaskedEncoder writes a transformer-like encoder as exporters write
// them: input_ids and an attention_mask, both int64 [batch, sequence];
// token embeddings (vocabulary 16, width 4) attend to each other with the
// mask's zeros as a -10000 bias, and the hidden states are mean-pooled
// over the mask. Outputs: last_hidden_state [batch, sequence, 4] and
// pooled [batch, 4].
func writeMaskedEncoder(t *testing.T, path string) {
	t.Helper()
	writeGraph(t, path, maskedEncoder(16, 4), 17)
}

// maskedEncoder is writeMaskedEncoder's graph, with a vocabulary and width
// of its own.
func maskedEncoder(vocab, width int64) *onnxpb.GraphProto {
	f32 := func(name string, dims []int64, vs ...float32) *onnxpb.TensorProto {
		raw := make([]byte, 0, 4*len(vs))
		for _, v := range vs {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
		return &onnxpb.TensorProto{Name: name, DataType: 1, Dims: dims, RawData: raw}
	}
	i64 := func(name string, vs ...int64) *onnxpb.TensorProto {
		raw := make([]byte, 0, 8*len(vs))
		for _, v := range vs {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
		return &onnxpb.TensorProto{Name: name, DataType: 7, Dims: []int64{int64(len(vs))}, RawData: raw}
	}
	emb := make([]float32, vocab*width)
	for i := range emb {
		emb[i] = float32(math.Sin(float64(i)*0.7)) * 0.5
	}
	node := func(op string, out string, ins []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{OpType: op, Input: ins, Output: []string{out}, Attribute: attrs}
	}
	intAttr := func(name string, v int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INT, I: v}
	}
	return &onnxpb.GraphProto{Name: "masked_encoder",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("input_ids", 7, "batch", "sequence"), tensorInfo("attention_mask", 7, "batch", "sequence")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("last_hidden_state", 1, "batch", "sequence", int(width)), tensorInfo("pooled", 1, "batch", int(width))},
		Initializer: []*onnxpb.TensorProto{f32("embeddings", []int64{vocab, width}, emb...), f32("one", nil, 1), f32("neg_big", nil, -10000),
			i64("axis1", 1), i64("axis2", 2)},
		Node: []*onnxpb.NodeProto{
			node("Gather", "x", []string{"embeddings", "input_ids"}),
			node("Transpose", "xt", []string{"x"}, &onnxpb.AttributeProto{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: []int64{0, 2, 1}}),
			node("MatMul", "scores", []string{"x", "xt"}),
			node("Cast", "mf", []string{"attention_mask"}, intAttr("to", 1)),
			node("Sub", "masked_out", []string{"one", "mf"}),
			node("Mul", "big", []string{"masked_out", "neg_big"}),
			node("Unsqueeze", "bias", []string{"big", "axis1"}),
			node("Add", "biased", []string{"scores", "bias"}),
			node("Softmax", "probs", []string{"biased"}, intAttr("axis", -1)),
			node("MatMul", "last_hidden_state", []string{"probs", "x"}),
			node("Unsqueeze", "m3", []string{"mf", "axis2"}),
			node("Mul", "kept", []string{"last_hidden_state", "m3"}),
			node("ReduceSum", "sum", []string{"kept", "axis1"}, intAttr("keepdims", 0)),
			node("ReduceSum", "count", []string{"mf", "axis1"}, intAttr("keepdims", 1)),
			node("Div", "pooled", []string{"sum", "count"}),
		}}
}

// TestMaskLengths: mask-lengths rewrites a masked encoder to take
// lengths, once a probe shows the mask masks; a package pads the
// rewritten model, and grouping requests of different lengths gives each
// what the masked model gives it alone, unpadded with a mask of ones (and
// what the rewritten model gives it run solo). Its refusals name what to
// do.
func TestMaskLengths(t *testing.T) {
	dir := t.TempDir()
	masked, encoder := filepath.Join(dir, "masked.onnx"), filepath.Join(dir, "encoder.onnx")
	writeMaskedEncoder(t, masked)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no output", []string{masked}, "usage: genaic mask-lengths"},
		{"itself", []string{masked, "-o", masked}, "-o names the model itself"},
		{"no such mask", []string{masked, "-o", encoder, "--mask", "mask"}, `no input "mask"; its inputs are [input_ids attention_mask]`},
		{"no such like", []string{masked, "-o", encoder, "--like", "ids"}, `no input "ids" (other than the mask)`},
		{"taken name", []string{masked, "-o", encoder, "--lengths", "x"}, `already has a value called "x"`},
		{"not a model", []string{filepath.Join("testdata", "multi_error.yaml"), "-o", encoder}, "is not an ONNX model"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, append([]string{"mask-lengths"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %q", code, errOut, tt.want)
			}
		})
	}
	// The probe: taken for a key padding mask, the attention mask would
	// leave each row attending to its padding alone.
	if _, errOut, code := runCLI(t, "mask-lengths", masked, "-o", encoder, "--ones", "padding"); code != exitDiags ||
		!strings.Contains(errOut, "not rewritten: output last_hidden_state of a row padded after 3 positions differs from the same row alone") || !strings.Contains(errOut, "(--ones valid)") {
		t.Errorf("a mask of the wrong kind: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(encoder); err == nil {
		t.Errorf("a refused rewrite wrote %s", encoder)
	}
	out, errOut, code := runCLI(t, "mask-lengths", masked, "-o", encoder)
	if code != exitOK || !strings.Contains(out, "input attention_mask is now lengths") || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "mask-lengths", masked, "-o", encoder); code != exitUsage || !strings.Contains(errOut, "pass --force") {
		t.Errorf("over an existing file: exit %d, %s", code, errOut)
	}

	// The masked model, one request per call, unpadded: the reference.
	lengths := []int{3, 1, 7, 2, 5, 4, 6, 2}
	var plain, padded []string
	for i, n := range lengths {
		ids, ones := make([]string, n), make([]string, n)
		for j := range n {
			ids[j], ones[j] = fmt.Sprint((i*7+j*3)%16), "1"
		}
		tensor := func(v []string) string {
			return fmt.Sprintf(`{"dtype":"int64","shape":[1,%d],"data":[%s]}`, n, strings.Join(v, ","))
		}
		plain = append(plain, fmt.Sprintf(`{"id":"r%d","inputs":{"input_ids":%s,"attention_mask":%s}}`, i, tensor(ids), tensor(ones)))
		padded = append(padded, fmt.Sprintf(`{"id":"r%d","inputs":{"input_ids":%s,"lengths":{"dtype":"int64","shape":[1],"data":[%d]}}}`, i, tensor(ids), n))
	}
	ref := t.TempDir()
	if err := os.Rename(masked, filepath.Join(ref, "masked.onnx")); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "init", filepath.Join(ref, "masked.onnx")); code != exitOK {
		t.Fatalf("init: %s", errOut)
	}
	want := pooledOf(t, ref, plain, "--solo")

	const doc = `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      input_ids:
        contract:
          dtype: int64
          shape: [batch, sequence]
          batch_layout: { kind: request_aligned, axis: 0 }
          padding: [{ dimension: sequence, valid_lengths: lengths }]
        role: { kind: opaque }
        source: { kind: request }
      lengths:
        contract: { dtype: int64, shape: [batch], batch_layout: { kind: shared } }
        role: { kind: opaque }
        source: { kind: request }
    outputs:
      pooled:
        contract: { dtype: float32, shape: [batch, 4], batch_layout: { kind: request_aligned, axis: 0 } }
        role: tensor
        stage: pre_adapter
    components:
      encoder:
        implementation: { kind: onnx, artifact: encoder.onnx }
        batch_capacity:
          budgets:
            - { dimensions: [batch], max_total: 8 }
            - { dimensions: [batch, sequence], max_total: 64 }
        ports:
          inputs:
            input_ids:
              dtype: int64
              shape: [batch, sequence]
              batch_layout: { kind: request_aligned, axis: 0 }
              padding: [{ dimension: sequence, valid_lengths: lengths }]
            lengths: { dtype: int64, shape: [batch], batch_layout: { kind: shared } }
          outputs:
            pooled: { dtype: float32, shape: [batch, 4], batch_layout: { kind: request_aligned, axis: 0 } }
    steps:
      - { kind: invoke, component: encoder, inputs: { input_ids: input_ids, lengths: lengths }, outputs: { pooled: pooled } }
      - { kind: emit, value: pooled, output: pooled, mode: replace }
`
	if err := os.WriteFile(filepath.Join(dir, metadataName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)

	// The same document over the masked model: check refuses the padding
	// and names the command that rewrites it.
	unwritten := t.TempDir()
	b, err := os.ReadFile(filepath.Join(ref, "masked.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"encoder.onnx": b, metadataName: []byte(doc)} {
		if err := os.WriteFile(filepath.Join(unwritten, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, code := checkJSONOf(t, unwritten)
	found := false
	for _, d := range rep.Files[0].Diagnostics {
		found = found || d.Rule == "model/lengths-unseen" && strings.Contains(d.Help, "`genaic mask-lengths encoder.onnx -o NEW.onnx` rewrites this one, which takes the mask `attention_mask`")
	}
	if code != exitDiags || !found {
		t.Errorf("check of the masked model padded: exit %d, %+v", code, rep.Files)
	}
	for _, mode := range []string{"--solo", "--stats"} {
		got := pooledOf(t, dir, padded, mode)
		for id, w := range want {
			g := got[id]
			if len(g) != len(w) {
				t.Fatalf("%s %s: pooled %v, want %v", mode, id, g, w)
			}
			for k := range w {
				if math.Abs(g[k]-w[k]) > 1e-5 {
					t.Errorf("%s %s: pooled %v, want the masked model's %v", mode, id, g, w)
					break
				}
			}
		}
	}
}

// pooledOf runs reqs through the package in dir with the extra flag and
// returns each request's pooled output by id; with --stats it wants the
// requests grouped (fewer invocations than requests).
func pooledOf(t *testing.T, dir string, reqs []string, flag string) map[string][]float64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(path, []byte(`{"requests":[`+strings.Join(reqs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "run", dir, "--requests", path, flag)
	if code != exitOK {
		t.Fatalf("run %s %s: exit %d\n%s%s", dir, flag, code, out, errOut)
	}
	var doc struct {
		Responses []struct {
			ID      string
			Outputs map[string]struct{ Data []float64 }
		}
		Stats struct {
			Components map[string]struct{ Invocations, Requests int }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if flag == "--stats" {
		if s := doc.Stats.Components["encoder"]; s.Requests != len(reqs) || s.Invocations >= s.Requests {
			t.Errorf("stats %+v: the requests were not grouped", s)
		}
	}
	pooled := map[string][]float64{}
	for _, r := range doc.Responses {
		pooled[r.ID] = r.Outputs["pooled"].Data
	}
	return pooled
}

// TestMaskLengthsOlderOpsetAndBoolMask: at opset 12 (Unsqueeze takes its
// axes as an attribute) a boolean mask is computed as the graph's
// exporter would have given it, in the mask's element type: ones below
// each row's length for an attention mask, ones from it on for a key
// padding mask, whose name mask-lengths will not guess from.
func TestMaskLengthsOlderOpsetAndBoolMask(t *testing.T) {
	for _, tt := range []struct {
		mask string
		ones []string // --ones, if any
		want string
	}{
		{"mask", nil, "[1,1,1,0,0,0,0,0]"},
		{"key_padding_mask", []string{"--ones", "padding"}, "[0,0,0,1,1,1,1,1]"},
	} {
		t.Run(tt.mask, func(t *testing.T) {
			dir := t.TempDir()
			writeGraph(t, filepath.Join(dir, "old.onnx"), &onnxpb.GraphProto{Name: "g",
				Input:  []*onnxpb.ValueInfoProto{tensorInfo("ids", 7, "b", "s"), tensorInfo(tt.mask, 9, "b", "s")},
				Output: []*onnxpb.ValueInfoProto{tensorInfo("seen", 1, "b", "s")},
				Node: []*onnxpb.NodeProto{{OpType: "Cast", Input: []string{tt.mask}, Output: []string{"seen"},
					Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}}}}, 12)
			args := []string{"mask-lengths", filepath.Join(dir, "old.onnx"), "-o", filepath.Join(dir, "m.onnx"), "--lengths", "n"}
			if tt.ones != nil {
				if _, errOut, code := runCLI(t, args...); code != exitUsage || !strings.Contains(errOut, "say what its ones mark with --ones padding or --ones valid") {
					t.Fatalf("without --ones: exit %d, %s", code, errOut)
				}
			}
			if out, errOut, code := runCLI(t, append(args, tt.ones...)...); code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if err := os.Remove(filepath.Join(dir, "old.onnx")); err != nil {
				t.Fatal(err)
			}
			if _, errOut, code := runCLI(t, "init", filepath.Join(dir, "m.onnx")); code != exitOK {
				t.Fatalf("init: %s", errOut)
			}
			reqs := filepath.Join(dir, "requests.json")
			if err := os.WriteFile(reqs, []byte(`{"requests":[{"id":"a","inputs":{"ids":{"dtype":"int64","shape":[2,4],"data":[5,6,7,8,5,6,7,8]},"n":{"dtype":"int64","shape":[2],"data":[3,0]}}}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, "run", dir, "--requests", reqs)
			if code != exitOK || !strings.Contains(out, `"seen":{"dtype":"float32","shape":[2,4],"data":`+tt.want+`}`) {
				t.Errorf("exit %d, want seen %s\n%s%s", code, tt.want, out, errOut)
			}
		})
	}
}

// maskedEncoderWithTypes is maskedEncoder with BERT's token types beside
// its ids: token_type_ids [batch, sequence], whose two embeddings are
// added to the tokens'.
func maskedEncoderWithTypes(vocab int64) *onnxpb.GraphProto {
	g := maskedEncoder(vocab, 4)
	g.Input = append(g.Input, tensorInfo("token_type_ids", 7, "batch", "sequence"))
	var raw []byte
	for _, v := range []float32{0.25, -0.5, 0.125, 1, -0.75, 0.5, 0.375, -0.25} {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: "type_embeddings", DataType: 1, Dims: []int64{2, 4}, RawData: raw})
	g.Node[0].Output = []string{"tokens"}
	g.Node = append([]*onnxpb.NodeProto{
		{OpType: "Gather", Input: []string{"type_embeddings", "token_type_ids"}, Output: []string{"types"}},
		{OpType: "Add", Input: []string{"tokens", "types"}, Output: []string{"x"}},
	}, g.Node...)
	return g
}

// TestMaskLengthsProbeTokenTypes: the probe's token values are ids; an
// encoder that also takes token types, of which it has two (BERT's
// token_type_ids), is probed with its token types zeros, not refused for
// the probe's own values. Where the model refuses every probe, mask-lengths
// says so and names --no-probe.
func TestMaskLengthsProbeTokenTypes(t *testing.T) {
	dir := t.TempDir()
	bert, small := filepath.Join(dir, "bert.onnx"), filepath.Join(dir, "small.onnx")
	writeGraph(t, bert, maskedEncoderWithTypes(16), 17)
	writeGraph(t, small, maskedEncoderWithTypes(3), 17)
	out, errOut, code := runCLI(t, "mask-lengths", bert, "-o", filepath.Join(dir, "bert_lengths.onnx"))
	if code != exitOK || errOut != "" {
		t.Errorf("token types: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "mask-lengths", bert, "-o", filepath.Join(dir, "wrong.onnx"), "--ones", "padding"); code != exitDiags || !strings.Contains(errOut, "differs from the same row alone") {
		t.Errorf("token types, a mask of the wrong kind: exit %d, %s", code, errOut)
	}
	// Ids 1 to 5 are past a vocabulary of 3, with or without token types.
	if _, errOut, code := runCLI(t, "mask-lengths", small, "-o", filepath.Join(dir, "small_lengths.onnx")); code != exitDiags ||
		!strings.Contains(errOut, "the model fails on the probe, rows of 6 positions holding 1 to 5 by position, then with only input_ids so, the other inputs zeros: ") ||
		!strings.Contains(errOut, "rewritten unprobed with --no-probe") {
		t.Errorf("a vocabulary of 3: exit %d, %s", code, errOut)
	}
	if out, errOut, code := runCLI(t, "mask-lengths", small, "-o", filepath.Join(dir, "small_lengths.onnx"), "--no-probe"); code != exitOK {
		t.Errorf("a vocabulary of 3, --no-probe: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMaskLengthsProbeOtherExtents: an input's own extent that neither
// the mask's axes nor the graph fix (a second sequence's, beside the one
// whose mask is probed) is chosen, the same in both runs, and the masking
// probed; where the model refuses the extent chosen, mask-lengths
// rewrites it, says the masking was not probed, and what to compare.
func TestMaskLengthsProbeOtherExtents(t *testing.T) {
	dir := t.TempDir()
	// extra goes to a second output: as it comes (passed on), or reshaped
	// into rows of 3, which the 2x4 the probe chooses is not.
	graph := func(op string, out *onnxpb.ValueInfoProto, ins ...string) *onnxpb.GraphProto {
		return &onnxpb.GraphProto{Name: "g",
			Input:       []*onnxpb.ValueInfoProto{tensorInfo("ids", 7, "b", "s"), tensorInfo("attention_mask", 7, "b", "s"), tensorInfo("extra", 1, "b", "f")},
			Output:      []*onnxpb.ValueInfoProto{tensorInfo("seen", 7, "b", "s"), out},
			Initializer: []*onnxpb.TensorProto{{Name: "by3", DataType: 7, Dims: []int64{2}, RawData: binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, ^uint64(0)), 3)}},
			Node: []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"attention_mask"}, Output: []string{"seen"}},
				{OpType: op, Input: ins, Output: []string{out.GetName()}}}}
	}
	writeGraph(t, filepath.Join(dir, "pass.onnx"), graph("Identity", tensorInfo("extra_seen", 1, "b", "f"), "extra"), 17)
	if out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "pass.onnx"), "-o", filepath.Join(dir, "pass_lengths.onnx")); code != exitOK || errOut != "" {
		t.Errorf("extra passed on: exit %d\n%s%s", code, out, errOut)
	}
	writeGraph(t, filepath.Join(dir, "m.onnx"), graph("Reshape", tensorInfo("thirds", 1, "t", 3), "extra", "by3"), 17)
	out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "m.onnx"), "-o", filepath.Join(dir, "n.onnx"))
	if code != exitOK || !strings.Contains(errOut, "the masking was not probed: the model fails on the probe with input extra's f (axis 1) at 4 (") ||
		!strings.Contains(errOut, "an extent the probe chose; compare `genaic run --verify`") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestMaskLengthsAttentionWeights: an encoder that also outputs its
// attention weights ([batch, sequence, sequence], two sequence axes) is
// probed with both axes padded, as its rows are, and rewritten.
func TestMaskLengthsAttentionWeights(t *testing.T) {
	dir := t.TempDir()
	g := maskedEncoder(16, 4)
	g.Output = append(g.Output, tensorInfo("probs", 1, "batch", "sequence", "sequence"))
	writeGraph(t, filepath.Join(dir, "masked.onnx"), g, 17)
	if out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "masked.onnx"), "-o", filepath.Join(dir, "encoder.onnx")); code != exitOK {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestMaskLengthsNamesLengthsAfterTheMask: the lengths that replace a
// PREFIX_mask are PREFIX_lengths, so that a model of two masks (a query's
// and a document's), rewritten once for each, takes two lengths; an
// attention or padding mask's are lengths.
func TestMaskLengthsNamesLengthsAfterTheMask(t *testing.T) {
	for mask, want := range map[string]string{"attention_mask": "lengths", "mask": "lengths", "src_key_padding_mask": "lengths",
		"query_mask": "query_lengths", "Doc_Mask": "Doc_lengths"} {
		if got := lengthsName(mask); got != want {
			t.Errorf("lengthsName(%q) = %q, want %q", mask, got, want)
		}
	}
	dir := t.TempDir()
	g := maskedEncoder(16, 4)
	for _, n := range g.Node {
		for i, in := range n.Input {
			if in == "attention_mask" {
				n.Input[i] = "query_mask"
			}
		}
	}
	g.Input[1].Name = "query_mask"
	writeGraph(t, filepath.Join(dir, "m.onnx"), g, 17)
	out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "m.onnx"), "-o", filepath.Join(dir, "n.onnx"), "--mask", "query_mask")
	if code != exitOK || !strings.Contains(out, "input query_mask is now query_lengths, int64 [batch]") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// TestMaskLengthsAxesNamedApart: a graph that names each value's axes
// apart (tf2onnx's unk__N: the ids' batch is not the mask's by name) is
// probed with the input shaped as the mask taken as its ids, and its
// outputs' open axes judged by the extents the runs give them: a masking
// encoder is rewritten, one that lets the padding through is refused.
// init then runs the rewritten model only with the lengths' axis and the
// ids' one, and says it wrote them as one.
func TestMaskLengthsAxesNamedApart(t *testing.T) {
	dir := t.TempDir()
	apart := func(g *onnxpb.GraphProto) *onnxpb.GraphProto {
		g.Input = []*onnxpb.ValueInfoProto{tensorInfo("input_ids:0", 7, "unk__1", "unk__2"), tensorInfo("attention_mask", 7, "unk__3", "unk__4")}
		g.Output = []*onnxpb.ValueInfoProto{tensorInfo("last_hidden_state", 1, "unk__5", "unk__6", 4), tensorInfo("pooled", 1, "unk__7", 4)}
		for _, n := range g.Node {
			for i, in := range n.Input {
				if in == "input_ids" {
					n.Input[i] = "input_ids:0"
				}
			}
		}
		return g
	}
	writeGraph(t, filepath.Join(dir, "masked.onnx"), apart(maskedEncoder(16, 4)), 17)
	out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "masked.onnx"), "-o", filepath.Join(dir, "encoder.onnx"))
	if code != exitOK || strings.Contains(errOut, "not probed") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	leaky := apart(maskedEncoder(16, 4))
	for _, n := range leaky.Node {
		if n.Output[0] == "kept" {
			n.Input[1] = "one" // pools the padded positions too
		}
	}
	writeGraph(t, filepath.Join(dir, "leaky.onnx"), leaky, 17)
	if out, errOut, code := runCLI(t, "mask-lengths", filepath.Join(dir, "leaky.onnx"), "-o", filepath.Join(dir, "leaky_lengths.onnx")); code == exitOK ||
		!strings.Contains(errOut, "not rewritten: output pooled of a row padded after") {
		t.Errorf("leaky: exit %d\n%s%s", code, out, errOut)
	}
	initPrints(t, filepath.Join(dir, "encoder.onnx"),
		"# they are equal: init wrote unk__3 as unk__1.\n",
		"            lengths:\n              dtype: int64\n              shape: [unk__1]\n",
		"              shape: [unk__1, unk__2, 4]\n")
}
