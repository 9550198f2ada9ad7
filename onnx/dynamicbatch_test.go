package onnx

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// staticModel is a graph as torch.onnx.export writes it given no
// dynamic_axes: x [1, 2, 2] flattened by a Reshape to a constant [1, -1]
// (a Constant node's raw data), a second Reshape to an initializer
// [1, 2, 2] held as int64_data, a third with allowzero, a shared scalar
// scale, a weight listed among the inputs, and value_info at a batch of
// one.
func staticModel() *onnxpb.ModelProto {
	raw := binary.LittleEndian.AppendUint64(nil, 1)
	raw = binary.LittleEndian.AppendUint64(raw, ^uint64(0))
	packed := &onnxpb.TensorProto{Name: "back", DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{3}}
	var data []byte
	for _, v := range []uint64{1, 2, 2} {
		data = protowire.AppendVarint(data, v)
	}
	packed.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 7, protowire.BytesType), data))
	return &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}},
		Graph: &onnxpb.GraphProto{Name: "g",
			Input:       []*onnxpb.ValueInfoProto{valueInfo("x", 1, 1, 2, 2), valueInfo("scale", 1), valueInfo("w", 1, 1, 4)},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("y", 1, 1, 2, 2), valueInfo("flat", 1, 1, 4)},
			ValueInfo:   []*onnxpb.ValueInfoProto{valueInfo("flat", 1, 1, 4)},
			Initializer: []*onnxpb.TensorProto{packed, {Name: "w", DataType: 1, Dims: []int64{1, 4}, RawData: make([]byte, 16)}},
			Node: []*onnxpb.NodeProto{
				{OpType: "Constant", Output: []string{"flat_shape"}, Attribute: []*onnxpb.AttributeProto{{Name: "value", Type: onnxpb.AttributeProto_TENSOR,
					T: &onnxpb.TensorProto{DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{2}, RawData: raw}}}},
				{Name: "/flatten", OpType: "Reshape", Input: []string{"x", "flat_shape"}, Output: []string{"flat"}},
				{OpType: "Reshape", Input: []string{"flat", "back"}, Output: []string{"y0"}},
				{Name: "/literal", OpType: "Reshape", Input: []string{"flat", "flat_shape"}, Output: []string{"kept"},
					Attribute: []*onnxpb.AttributeProto{{Name: "allowzero", Type: onnxpb.AttributeProto_INT, I: 1}}},
				{OpType: "Mul", Input: []string{"y0", "scale"}, Output: []string{"y"}},
			}}}
}

// TestDynamicBatch: the inputs and outputs fixed at a batch of one take
// the symbol; a scalar and a weight listed among the inputs are left; the
// value_info goes; with reshapes, the Reshapes to constants starting at 1
// read copies starting at 0 (raw data and int64_data alike), one
// with allowzero is left. The refusals name what is not a batch of one.
func TestDynamicBatch(t *testing.T) {
	m := staticModel()
	r, err := DynamicBatch(m, "batch", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Inputs, []string{"x"}) || !slices.Equal(r.Outputs, []string{"y", "flat"}) || r.Reshapes != nil {
		t.Errorf("rewrote %+v", r)
	}
	if ins, want := inputsOf(t, m), []string{"x float32 [batch, 2, 2]", "scale float32 (any shape)", "w float32 [1, 4]"}; !slices.Equal(ins, want) {
		t.Errorf("inputs %q, want %q", ins, want)
	}
	if m.Graph.ValueInfo != nil {
		t.Errorf("value_info kept: %v", m.Graph.ValueInfo)
	}
	if m.Graph.Node[1].Input[1] != "flat_shape" {
		t.Errorf("a Reshape rewritten without reshapes: %v", m.Graph.Node[1])
	}

	m = staticModel()
	if r, err = DynamicBatch(m, "n", true); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Reshapes, []string{"/flatten", "y0"}) {
		t.Errorf("reshapes %q, want the flatten and the one named by its output", r.Reshapes)
	}
	inits := map[string]*onnxpb.TensorProto{}
	for _, init := range m.Graph.Initializer {
		inits[init.Name] = init
	}
	for node, want := range map[int][]int64{1: {0, -1}, 2: {0, 2, 2}} {
		got, ok := int64s(inits[m.Graph.Node[node].Input[1]])
		if !ok || !slices.Equal(got, want) {
			t.Errorf("node %d reads %q = %v, want %v", node, m.Graph.Node[node].Input[1], got, want)
		}
	}
	if m.Graph.Node[3].Input[1] != "flat_shape" {
		t.Errorf("the Reshape with allowzero reads %q", m.Graph.Node[3].Input[1])
	}
	if g, err := DecodeBytes(mustMarshal(t, m)); err != nil || g.Output("flat").ShapeText() != "[n, 4]" {
		t.Errorf("the rewritten model reads %v, %v", g, err)
	}

	// A shape whose dims claim more values than its data holds (eight
	// bytes for 2^61+1 values, which times eight wraps to eight) is no
	// shape to open.
	liar := &onnxpb.TensorProto{DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{1<<61 + 1}, RawData: make([]byte, 8)}
	if vals, ok := int64s(liar); ok {
		t.Errorf("a shape of %d values read from 8 bytes: %d values", liar.Dims[0], len(vals))
	}

	for _, c := range []struct {
		name string
		edit func(g *onnxpb.GraphProto)
		want string
	}{
		{"dynamic already", func(g *onnxpb.GraphProto) { g.Input[0] = valueInfo("x", 1, "b", 2, 2) }, `input "x" is [b, 2, 2]: its first axis is already dynamic`},
		{"no batch of one", func(g *onnxpb.GraphProto) { g.Input[0] = valueInfo("x", 1, 3, 2, 2) }, "no input of the graph has a first axis fixed at 1 (its inputs are [x [3, 2, 2] scale (any shape)])"},
		{"an output of no batch", func(g *onnxpb.GraphProto) { g.Output[1] = valueInfo("flat", 1, 4) }, `output "flat" is float32 [4], not a batch of one`},
		{"a symbol taken", func(g *onnxpb.GraphProto) { g.Output[0] = valueInfo("y", 1, 1, "batch", 2) }, `"batch" already names an axis of y`},
		{"an output of no shape", func(g *onnxpb.GraphProto) { g.Output[1] = valueInfo("flat", 1) }, `output "flat" is float32 (any shape), not a batch of one`},
	} {
		m := staticModel()
		c.edit(m.Graph)
		if _, err := DynamicBatch(m, "batch", true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzDynamicBatch: any model that decodes is rewritten or refused with an
// error, never a panic; a rewritten one encodes and reads back with its
// opened inputs' first axis the symbol.
func FuzzDynamicBatch(f *testing.F) {
	f.Add(mustMarshal(f, staticModel()))
	f.Add(mustMarshal(f, sample()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m onnxpb.ModelProto
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		r, err := DynamicBatch(&m, "batch", true)
		if err != nil {
			return
		}
		out, err := Marshal(&m)
		if err != nil {
			t.Fatalf("the rewritten model does not encode: %v", err)
		}
		g, err := DecodeBytes(out)
		if err != nil {
			return // a graph the reader refuses before the rewrite as after
		}
		for _, name := range r.Inputs {
			if v := g.Input(name); v == nil || len(v.Dims) == 0 || v.Dims[0].Param != "batch" {
				t.Fatalf("input %s after the rewrite: %+v", name, v)
			}
		}
		// The third try's rewrites, on whatever shape nodes the graph has.
		nodes := ShapeNodes(&m)
		for i, n := range nodes {
			ScaleShape(&m, n, []int64{1, 2, 3}, i%3, r.Inputs[0])
		}
		if len(nodes) > 0 {
			KeepOutputs(&m, nodes[0].Output)
		}
		if _, err := Marshal(&m); err != nil {
			t.Fatalf("the scaled model does not encode: %v", err)
		}
	})
}

// TestShapeNodes: a Reshape or Expand whose shape the graph computes from
// constants alone (through other nodes too) is a shape node; one whose
// shape follows an input, or with allowzero, is not. KeepOutputs leaves
// only the nodes its outputs need.
func TestShapeNodes(t *testing.T) {
	m := &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}},
		Graph: &onnxpb.GraphProto{Name: "g",
			Input:       []*onnxpb.ValueInfoProto{valueInfo("x", 1, 1, 4), valueInfo("s", 7, 2)},
			Output:      []*onnxpb.ValueInfoProto{valueInfo("d", 1, 1, 4)},
			Initializer: []*onnxpb.TensorProto{int64Tensor("c", []int64{1, 4}), int64Tensor("two", []int64{2})},
			Node: []*onnxpb.NodeProto{
				{Name: "/direct", OpType: "Reshape", Input: []string{"x", "c"}, Output: []string{"a"}},
				{OpType: "Mul", Input: []string{"c", "two"}, Output: []string{"c2"}},
				{OpType: "Expand", Input: []string{"a", "c2"}, Output: []string{"b"}},
				{Name: "/input", OpType: "Reshape", Input: []string{"b", "s"}, Output: []string{"e"}},
				{Name: "/zero", OpType: "Reshape", Input: []string{"a", "c"}, Output: []string{"d"},
					Attribute: []*onnxpb.AttributeProto{{Name: "allowzero", Type: onnxpb.AttributeProto_INT, I: 1}}},
			}}}
	var got []string
	for _, n := range ShapeNodes(m) {
		got = append(got, n.Op+" "+n.Label+" "+n.Shape)
	}
	if want := []string{"Reshape /direct c", "Expand b c2"}; !slices.Equal(got, want) {
		t.Errorf("shape nodes %q, want %q", got, want)
	}
	// A derived copy rewritten leaves the model as it was.
	before := mustMarshal(t, m)
	d := Derive(m)
	for _, n := range ShapeNodes(d) {
		ScaleShape(d, n, []int64{1, 4}, 0, "x")
	}
	KeepOutputs(d, "a")
	if after := mustMarshal(t, m); !bytes.Equal(before, after) {
		t.Errorf("rewriting a derived copy changed the model")
	}
	if len(d.Graph.Node) != 5 || d.Graph.Node[4].Input[1] == "c" {
		t.Errorf("the derived copy's nodes: %v", d.Graph.Node)
	}
	KeepOutputs(m, "b")
	var ops []string
	for _, n := range m.Graph.Node {
		ops = append(ops, n.OpType)
	}
	if !slices.Equal(ops, []string{"Reshape", "Mul", "Expand"}) || len(m.Graph.Output) != 1 || m.Graph.Output[0].GetName() != "b" {
		t.Errorf("kept %v, outputs %v", ops, m.Graph.Output)
	}
	KeepOutputs(m, "a")
	if len(m.Graph.Node) != 1 || len(m.Graph.Initializer) != 1 || m.Graph.Initializer[0].GetName() != "c" {
		t.Errorf("kept %v and %v for a", m.Graph.Node, m.Graph.Initializer)
	}
}
