package onnx

import (
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// TestWidenInput: an int32 input becomes int64, cast back to int32 first
// under a name of its own, which every node that read it reads, in a
// subgraph too, unless the subgraph defines that name itself.
func TestWidenInput(t *testing.T) {
	body := &onnxpb.GraphProto{Name: "then", Output: []*onnxpb.ValueInfoProto{valueInfo("then_out", 6, "batch")},
		Node: []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"lengths"}, Output: []string{"then_out"}}}}
	own := &onnxpb.GraphProto{Name: "else", Input: []*onnxpb.ValueInfoProto{valueInfo("lengths", 6, "batch")},
		Output: []*onnxpb.ValueInfoProto{valueInfo("else_out", 6, "batch")},
		Node:   []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"lengths"}, Output: []string{"else_out"}}}}
	m := &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}},
		Graph: &onnxpb.GraphProto{Name: "g",
			Input:  []*onnxpb.ValueInfoProto{valueInfo("ids", 6, "batch", "seq"), valueInfo("lengths", 6, "batch"), valueInfo("lengths_int32", 6, "batch")},
			Output: []*onnxpb.ValueInfoProto{valueInfo("out", 6, "batch")},
			Node: []*onnxpb.NodeProto{
				{OpType: "Add", Input: []string{"lengths", "lengths_int32"}, Output: []string{"sum"}},
				{OpType: "If", Input: []string{"cond"}, Output: []string{"out"}, Attribute: []*onnxpb.AttributeProto{
					{Name: "then_branch", Type: onnxpb.AttributeProto_GRAPH, G: body},
					{Name: "else_branch", Type: onnxpb.AttributeProto_GRAPH, G: own}}},
			}}}
	if err := WidenInput(m, "lengths"); err != nil {
		t.Fatal(err)
	}
	if ins, want := inputsOf(t, m), []string{"ids int32 [batch, seq]", "lengths int64 [batch]", "lengths_int32 int32 [batch]"}; !slices.Equal(ins, want) {
		t.Errorf("inputs %q, want %q", ins, want)
	}
	n := m.Graph.Node
	if n[0].OpType != "Cast" || n[0].Input[0] != "lengths" || n[0].Output[0] != "lengths_int32_2" || n[0].Attribute[0].I != 6 {
		t.Errorf("first node %v, want lengths cast to int32 as lengths_int32_2", n[0])
	}
	if got := n[1].Input; !slices.Equal(got, []string{"lengths_int32_2", "lengths_int32"}) {
		t.Errorf("the Add reads %v", got)
	}
	if body.Node[0].Input[0] != "lengths_int32_2" || own.Node[0].Input[0] != "lengths" {
		t.Errorf("subgraphs read %q and %q, want the cast and their own input", body.Node[0].Input[0], own.Node[0].Input[0])
	}
	for _, c := range []struct {
		name, input, want string
	}{
		{"no such input", "nope", `no input "nope"`},
		{"not int32", "lengths", "is int64, not int32"},
	} {
		if err := WidenInput(m, c.input); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	passed := &onnxpb.ModelProto{Graph: &onnxpb.GraphProto{Input: []*onnxpb.ValueInfoProto{valueInfo("n", 6, "batch")},
		Output: []*onnxpb.ValueInfoProto{valueInfo("n", 6, "batch")}}}
	if err := WidenInput(passed, "n"); err == nil || !strings.Contains(err.Error(), "returns input") {
		t.Errorf("an input returned as is: got %v", err)
	}
}
