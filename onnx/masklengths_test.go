package onnx

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// maskedModel is a graph taking ids and mask, both int64 [batch, seq],
// that adds them, at the given default opset.
func maskedModel(opset int64, inputs ...*onnxpb.ValueInfoProto) *onnxpb.ModelProto {
	if inputs == nil {
		inputs = []*onnxpb.ValueInfoProto{valueInfo("ids", 7, "batch", "seq"), valueInfo("mask", 7, "batch", "seq")}
	}
	return &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: "ai.onnx.ml", Version: 3}, {Version: opset}},
		Graph: &onnxpb.GraphProto{Name: "g", Input: inputs,
			Output: []*onnxpb.ValueInfoProto{valueInfo("sum", 7, "batch", "seq")},
			Node:   []*onnxpb.NodeProto{{OpType: "Add", Input: []string{"ids", "mask"}, Output: []string{"sum"}}}}}
}

// TestMaskToLengths: the mask input becomes lengths int64 [batch], and the
// nodes that compute the mask under its name come first; at opset 13 and
// later Unsqueeze takes its axes as an input, before as an attribute.
func TestMaskToLengths(t *testing.T) {
	for _, opset := range []int64{12, 17} {
		m := maskedModel(opset)
		if err := MaskToLengths(m, MaskRewrite{Mask: "mask", Lengths: "lengths"}); err != nil {
			t.Fatal(err)
		}
		if ins, want := inputsOf(t, m), []string{"ids int64 [batch, seq]", "lengths int64 [batch]"}; !slices.Equal(ins, want) {
			t.Errorf("opset %d: inputs %q, want %q", opset, ins, want)
		}
		nodes := m.Graph.Node
		last := slices.IndexFunc(nodes, func(n *onnxpb.NodeProto) bool { return slices.Contains(n.Output, "mask") })
		if last < 0 || nodes[last].OpType != "Cast" || nodes[last].Attribute[0].I != 7 || nodes[len(nodes)-1].OpType != "Add" {
			t.Errorf("opset %d: the mask is not cast to int64 before the graph's own nodes", opset)
		}
		for _, n := range nodes[:last] {
			if !strings.HasPrefix(n.Output[0], "genaic_mask/") {
				t.Errorf("opset %d: node output %q is not under the rewrite's prefix", opset, n.Output[0])
			}
		}
		for _, n := range nodes {
			if n.OpType == "Unsqueeze" && (len(n.Input) == 2) != (opset >= 13) {
				t.Errorf("opset %d: Unsqueeze with inputs %v, attributes %v", opset, n.Input, n.Attribute)
			}
		}
	}
}

// TestMaskToLengthsPaddingMask: a mask whose ones mark the padding is
// computed as the negation of position < length.
func TestMaskToLengthsPaddingMask(t *testing.T) {
	m := maskedModel(17)
	if err := MaskToLengths(m, MaskRewrite{Mask: "mask", Lengths: "lengths", OnesMarkPadding: true}); err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(m.Graph.Node, func(n *onnxpb.NodeProto) bool { return n.Output[0] == "mask" })
	if at < 1 || m.Graph.Node[at-1].OpType != "Not" || m.Graph.Node[at-2].OpType != "Less" || m.Graph.Node[at].Input[0] != m.Graph.Node[at-1].Output[0] {
		t.Errorf("the mask is not cast from Not(Less(position, length)): %v", m.Graph.Node[:at+1])
	}
}

// TestMaskToLengthsPrefix: the rewrite's nodes take a prefix no value of
// the graph starts with.
func TestMaskToLengthsPrefix(t *testing.T) {
	m := maskedModel(17)
	m.Graph.Node = append(m.Graph.Node, &onnxpb.NodeProto{OpType: "Identity", Input: []string{"sum"}, Output: []string{"genaic_mask/valid"}})
	if err := MaskToLengths(m, MaskRewrite{Mask: "mask", Lengths: "lengths"}); err != nil {
		t.Fatal(err)
	}
	outs := map[string]int{}
	for _, n := range m.Graph.Node {
		outs[n.Output[0]]++
	}
	for name, n := range outs {
		if n > 1 {
			t.Errorf("%d nodes write %q", n, name)
		}
	}
	if outs["genaic_mask_/valid"] != 1 {
		t.Errorf("the rewrite's nodes are not under genaic_mask_/: %v", outs)
	}
}

func TestMaskToLengthsRefusals(t *testing.T) {
	withInit := maskedModel(17)
	withInit.Graph.Initializer = []*onnxpb.TensorProto{{Name: "mask", DataType: 7, Dims: []int64{1, 1}, RawData: make([]byte, 8)}}
	for _, tt := range []struct {
		name              string
		m                 *onnxpb.ModelProto
		mask, like, lname string
		want              string
	}{
		{"old opset", maskedModel(10), "mask", "", "lengths", "version 10; computing the mask takes Range"},
		{"rank 1", maskedModel(17, valueInfo("ids", 7, "batch", "seq"), valueInfo("mask", 7, "batch")), "mask", "", "lengths", "int64 [batch], not a mask [batch, sequence]"},
		{"constant", withInit, "mask", "", "lengths", "backed by an initializer"},
		{"no sibling", maskedModel(17, valueInfo("ids", 7, "n", "seq"), valueInfo("mask", 7, "batch", "seq")), "mask", "", "lengths", "no other input of the graph has the mask's shape [batch, seq]"},
		{"like of rank 1", maskedModel(17, valueInfo("ids", 7, "seq"), valueInfo("mask", 7, "batch", "seq")), "mask", "ids", "lengths", "no axis 1"},
		{"taken", maskedModel(17), "mask", "", "sum", `already has a value called "sum"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := MaskToLengths(tt.m, MaskRewrite{Mask: tt.mask, Like: tt.like, Lengths: tt.lname})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzMaskToLengths: any model that decodes is rewritten or refused with
// an error, never a panic; a rewritten one that read before encodes, and
// reads back with lengths among its inputs and no input called mask.
func FuzzMaskToLengths(f *testing.F) {
	f.Add(mustMarshal(f, maskedModel(17)))
	f.Add(mustMarshal(f, maskedModel(12)))
	f.Add(mustMarshal(f, sample()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m onnxpb.ModelProto
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		_, readable := DecodeBytes(b)
		if err := MaskToLengths(&m, MaskRewrite{Mask: "mask", Lengths: "lengths"}); err != nil || readable != nil {
			return
		}
		out, err := Marshal(&m)
		if err != nil {
			t.Fatalf("the rewritten model does not encode: %v", err)
		}
		g, err := DecodeBytes(out)
		if err != nil {
			t.Fatalf("the rewritten model does not read: %v", err)
		}
		if g.Input("lengths") == nil || g.Input("mask") != nil {
			t.Fatalf("inputs after the rewrite: %+v", g.Inputs)
		}
	})
}

// TestMaskToLengthsAxesNamedApart: in a graph that names each input's
// axes apart (tf2onnx's unk__N), the sequence extent is read from the one
// input shaped as the mask but for its symbols' names; where two are, it
// asks which.
func TestMaskToLengthsAxesNamedApart(t *testing.T) {
	if err := MaskToLengths(maskedModel(17, valueInfo("ids", 7, "unk__1", "unk__2"), valueInfo("mask", 7, "unk__3", "unk__4")), MaskRewrite{Mask: "mask", Lengths: "lengths"}); err != nil {
		t.Errorf("one input alike: %v", err)
	}
	two := maskedModel(17, valueInfo("ids", 7, "unk__1", "unk__2"), valueInfo("mask", 7, "unk__3", "unk__4"), valueInfo("types", 7, "unk__5", "unk__6"))
	if err := MaskToLengths(two, MaskRewrite{Mask: "mask", Lengths: "lengths"}); err == nil || !strings.Contains(err.Error(), "--like") {
		t.Errorf("two inputs alike: got %v, want a question of --like", err)
	}
}

// inputsOf is each graph input of m, as its graph reads back: name, dtype
// and shape.
func inputsOf(t *testing.T, m *onnxpb.ModelProto) []string {
	t.Helper()
	g, err := DecodeBytes(mustMarshal(t, m))
	if err != nil {
		t.Fatal(err)
	}
	var ins []string
	for _, v := range g.Inputs {
		ins = append(ins, v.Name+" "+v.DType()+" "+v.ShapeText())
	}
	return ins
}
