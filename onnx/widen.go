package onnx

import (
	"fmt"
	"slices"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// WidenInput rewrites a model whose graph takes input name as int32 (the
// lengths a TensorFlow export takes, say) to take it as int64, the dtype
// genaic's lengths, offsets and owners have: the graph's first node casts
// it back to int32 under a name of its own, which every node that read the
// input (in subgraphs too) reads instead, so the graph computes what it
// computed before. A value beyond int32's range wraps in the cast; a
// length never reaches it.
func WidenInput(m *onnxpb.ModelProto, name string) error {
	g := m.GetGraph()
	if g == nil {
		return fmt.Errorf("the model has no graph")
	}
	at := slices.IndexFunc(g.Input, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name })
	if at < 0 {
		return fmt.Errorf("the graph has no input %q; its inputs are %v", name, inputNames(g))
	}
	if slices.ContainsFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { return t.GetName() == name }) {
		return fmt.Errorf("input %q is backed by an initializer: it is a constant, not the caller's", name)
	}
	tt := g.Input[at].GetType().GetTensorType()
	if tt == nil || tt.GetElemType() != int32(onnxpb.TensorProto_INT32) {
		return fmt.Errorf("input %q is %s, not int32", name, orUnknown(value(g.Input[at]).DType()))
	}
	if slices.ContainsFunc(g.Output, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) {
		return fmt.Errorf("the graph returns input %q as an output too, which would then be int64", name)
	}
	names := valueNames(g)
	inner := name + "_int32"
	for i := 2; names[inner]; i++ {
		inner = fmt.Sprintf("%s_int32_%d", name, i)
	}
	renameUses(g, name, inner)
	for _, v := range g.ValueInfo {
		if v.GetName() == name {
			v.Name = inner
		}
	}
	cast := &onnxpb.NodeProto{Name: inner, OpType: "Cast", Input: []string{name}, Output: []string{inner},
		Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: int64(onnxpb.TensorProto_INT32)}}}
	g.Node = append([]*onnxpb.NodeProto{cast}, g.Node...)
	tt.ElemType = int32(onnxpb.TensorProto_INT64)
	return nil
}

// renameUses makes every node of g, and of its subgraphs, that reads from
// read to instead; a subgraph that defines from itself (an input or an
// initializer of its own) reads its own.
func renameUses(g *onnxpb.GraphProto, from, to string) {
	for _, n := range g.Node {
		for i, in := range n.Input {
			if in == from {
				n.Input[i] = to
			}
		}
		for _, a := range n.Attribute {
			for _, sub := range append([]*onnxpb.GraphProto{a.G}, a.Graphs...) {
				if sub != nil && !defines(sub, from) {
					renameUses(sub, from, to)
				}
			}
		}
	}
}

// defines reports whether g defines name itself: an input or an
// initializer of its own.
func defines(g *onnxpb.GraphProto, name string) bool {
	return slices.ContainsFunc(g.Input, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) ||
		slices.ContainsFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { return t.GetName() == name })
}
