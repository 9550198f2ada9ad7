package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// batchOfOne is a graph exported with no dynamic axes: x [1, 2, 2]
// flattened by a Reshape to the constant [1, -1], scaled by a shared
// scalar gain, plus what extra computes from the values (nil: nothing).
func batchOfOne(extra ...*onnxpb.NodeProto) *onnxpb.GraphProto {
	shape := binary.LittleEndian.AppendUint64(nil, 1)
	shape = binary.LittleEndian.AppendUint64(shape, ^uint64(0))
	out := "y"
	if len(extra) > 0 {
		out = "scaled"
	}
	return &onnxpb.GraphProto{Name: "static",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, 1, 2, 2), tensorInfo("gain", 1)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, 1, 4)},
		Node: append([]*onnxpb.NodeProto{
			{OpType: "Constant", Output: []string{"flat_shape"}, Attribute: []*onnxpb.AttributeProto{{Name: "value", Type: onnxpb.AttributeProto_TENSOR,
				T: &onnxpb.TensorProto{DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{2}, RawData: shape}}}},
			{Name: "/flatten", OpType: "Reshape", Input: []string{"x", "flat_shape"}, Output: []string{"flat"}},
			{OpType: "Mul", Input: []string{"flat", "gain"}, Output: []string{out}},
		}, extra...)}
}

// TestDynamicBatch is a newcomer's path with a model exported at a batch
// of one: init says it cannot group and names dynamic-batch, which opens
// the inputs' and outputs' first axis and, the flatten's Reshape to
// [1, -1] failing two rows, that too; the package init writes from the
// rewritten model groups, each request alike alone. A graph that computes
// across its rows is refused (nothing written), as are a model already
// dynamic and a symbol the graph uses.
func TestDynamicBatch(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "static.onnx")
	writeGraph(t, model, batchOfOne(), 17)
	initPrints(t, model, "# its graph fixes the first axis of every input (x: [1, 2, 2]),",
		"# as each alone): `genaic dynamic-batch static.onnx -o static_batch.onnx`.\n")
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	opened := filepath.Join(pkg, "static.onnx")
	out, errOut, code := runCLI(t, "dynamic-batch", model, "-o", opened)
	if code != exitOK || !strings.Contains(out, "wrote "+opened+": input x takes any number of rows along axis 0 (batch), and output y gives one row each; "+
		"Reshape /flatten, whose constant shape fixed the batch at 1, copies it from its input; 2 rows run together answered as each alone\n"+
		"next: `genaic init "+opened+"` writes a starting document\n") {
		t.Fatalf("dynamic-batch: exit %d\n%s%s", code, out, errOut)
	}
	verifyOpened(t, pkg)

	// y = x * gain + the sum of every row's values: two rows together
	// answer otherwise than each alone.
	mixing := filepath.Join(dir, "mixing.onnx")
	writeGraph(t, mixing, batchOfOne(
		&onnxpb.NodeProto{OpType: "ReduceSum", Input: []string{"flat"}, Output: []string{"total"}},
		&onnxpb.NodeProto{OpType: "Add", Input: []string{"scaled", "total"}, Output: []string{"y"}}), 17)
	refused := filepath.Join(dir, "mixing_batch.onnx")
	if _, errOut, code := runCLI(t, "dynamic-batch", mixing, "-o", refused); code != exitDiags ||
		!strings.Contains(errOut, "with the constant shapes of Reshape /flatten opened too, output y of row 0 of 2 run together differs from the row alone") ||
		!strings.Contains(errOut, `export the model with that axis dynamic (torch.onnx.export: dynamic_axes={"x": {0: "batch"}, ...}`) {
		t.Errorf("a graph computing across its rows: exit %d\n%s", code, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*batch*")); len(left) != 0 {
		t.Errorf("a refused rewrite left %v", left)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{opened, "-o", filepath.Join(dir, "again.onnx")}, `input "x" is [batch, 2, 2]: its first axis is already dynamic`},
		{[]string{model, "-o", filepath.Join(dir, "again.onnx"), "--symbol", ""}, `--symbol "": name the axis`},
		{[]string{model, "-o", opened}, "exists; pass --force to replace it"},
	} {
		if _, errOut, code := runCLI(t, append([]string{"dynamic-batch"}, c.args...)...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
		}
	}
}

// TestDynamicBatchScalesShapes: an export whose constant shapes hide the
// batch inside (an attention's [T, batch×heads, D] reshape, a head split
// [1, H, T, D], a class token expanded to [1, 1, 24] and concatenated)
// opens neither as it is nor with its leading 1s read as 0; the third try
// finds, node by node, the entry the batch multiplies (the token's
// Expand, unchanged on the probe's rows, is taken back once the Concat
// after it fails), and the rewritten model groups, each request alike
// alone.
func TestDynamicBatchScalesShapes(t *testing.T) {
	dir := t.TempDir()
	shape := func(name string, vals ...int64) *onnxpb.TensorProto {
		var raw []byte
		for _, v := range vals {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
		return &onnxpb.TensorProto{Name: name, DataType: 7, Dims: []int64{int64(len(vals))}, RawData: raw}
	}
	perm := func(p ...int64) []*onnxpb.AttributeProto {
		return []*onnxpb.AttributeProto{{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: p}}
	}
	token := &onnxpb.TensorProto{Name: "token", DataType: 1, Dims: []int64{1, 1, 24}, RawData: make([]byte, 4*24)}
	model := filepath.Join(dir, "attn.onnx")
	writeGraph(t, model, &onnxpb.GraphProto{Name: "attn",
		Input:       []*onnxpb.ValueInfoProto{tensorInfo("x", 1, 1, 4, 6)},
		Output:      []*onnxpb.ValueInfoProto{tensorInfo("y", 1, 1, 2, 24)},
		Initializer: []*onnxpb.TensorProto{shape("heads", 4, 2, 3), shape("split", 1, 2, 4, 3), shape("flat", 1, 1, 24), shape("tokens", 1, 1, 24), token},
		Node: []*onnxpb.NodeProto{
			{OpType: "Transpose", Input: []string{"x"}, Output: []string{"time_major"}, Attribute: perm(1, 0, 2)},
			{Name: "/heads", OpType: "Reshape", Input: []string{"time_major", "heads"}, Output: []string{"by_head"}},
			{OpType: "Transpose", Input: []string{"by_head"}, Output: []string{"head_major"}, Attribute: perm(1, 0, 2)},
			{Name: "/split", OpType: "Reshape", Input: []string{"head_major", "split"}, Output: []string{"split_out"}},
			{Name: "/flat", OpType: "Reshape", Input: []string{"split_out", "flat"}, Output: []string{"flat_out"}},
			{Name: "/token", OpType: "Expand", Input: []string{"token", "tokens"}, Output: []string{"token_out"}},
			{OpType: "Concat", Input: []string{"token_out", "flat_out"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "axis", Type: onnxpb.AttributeProto_INT, I: 1}}},
		}}, 17)
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "dynamic-batch", model, "-o", filepath.Join(pkg, "attn.onnx"))
	if code != exitOK || !strings.Contains(out, "the batch multiplies an entry of the constant shapes of Reshape /heads, Reshape /split, Reshape /flat, Expand /token; 2 rows run together answered as each alone") ||
		!strings.Contains(errOut, "probing its 4 constant shapes one by one") {
		t.Fatalf("dynamic-batch: exit %d\n%s%s", code, out, errOut)
	}
	verifyOpened(t, pkg)
}

// verifyOpened follows init's comments on the opened model in pkg (its
// input and output one row per request) and wants the package grouped
// alike alone.
func verifyOpened(t *testing.T, pkg string) {
	t.Helper()
	path, doc := initAligned(t, pkg)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
    steps:`)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, pkg)
	if _, errOut, code := runCLI(t, "run", pkg, "--verify"); code != exitOK || !strings.Contains(errOut, "answered alike grouped and alone (groups of up to 8 requests)") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}
