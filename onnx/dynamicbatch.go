package onnx

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// BatchRewrite is what DynamicBatch rewrote.
type BatchRewrite struct {
	Inputs, Outputs []string // the values whose first axis is now the symbol
	// Reshapes are the Reshape nodes (by name, or by output where the
	// node has none) whose constant target shape now copies its input's
	// first axis.
	Reshapes []string
	// Scaled are the shape nodes ("Reshape /x", "Expand /y") an entry of
	// whose shape the batch multiplies (ScaleShape, as dynamic-batch's
	// third try chose them).
	Scaled []string
}

// DynamicBatch rewrites a model whose graph fixes a batch of one (the
// first axis of its inputs and outputs at 1, as torch.onnx.export writes
// them when given no dynamic_axes) to declare that axis as symbol, so that
// one call may hold the rows of several requests. An input whose first
// axis is not a literal 1 (a scalar threshold, a table) is left as it is:
// every row shares it. Every output must have a first axis of 1, or its
// rows could not be told apart. The graph's value_info, shapes the
// exporter inferred at a batch of one, is dropped for ONNX Runtime to
// infer anew.
//
// With reshapes, every Reshape whose target shape is a constant that
// starts at 1 takes 0 there instead, which copies its input's first axis:
// where that axis is the batch (a flatten's [1, -1]), the node keeps each
// row apart as it kept the one. Whether the rewritten graph computes each
// row as the graph computed it alone, only running both can tell: genaic
// dynamic-batch probes it.
func DynamicBatch(m *onnxpb.ModelProto, symbol string, reshapes bool) (BatchRewrite, error) {
	var r BatchRewrite
	g := m.GetGraph()
	if g == nil {
		return r, fmt.Errorf("the model has no graph")
	}
	initialized := map[string]bool{}
	for _, t := range g.Initializer {
		initialized[t.GetName()] = true
	}
	var firsts []*onnxpb.TensorShapeProto_Dimension
	for _, v := range g.Input {
		if initialized[v.GetName()] {
			continue
		}
		d, val := firstDim(v), value(v)
		switch {
		case d == nil:
			continue // a scalar, or a value of no shape: shared by the rows
		case d.GetDimValue() == 1:
			firsts = append(firsts, d)
			r.Inputs = append(r.Inputs, v.GetName())
		case !val.Dims[0].Literal:
			return r, fmt.Errorf("input %q is %s: its first axis is already dynamic; `genaic init` the model as it is", v.GetName(), val.ShapeText())
		}
	}
	if len(r.Inputs) == 0 {
		return r, fmt.Errorf("no input of the graph has a first axis fixed at 1 (its inputs are %s): there is no batch of one to open", shapesOf(g.Input, initialized))
	}
	for _, v := range g.Output {
		d := firstDim(v)
		if d == nil || d.GetDimValue() != 1 {
			val := value(v)
			return r, fmt.Errorf("output %q is %s %s, not a batch of one: where the rows of several requests share a call, its rows could not be told apart", v.GetName(), orUnknown(val.DType()), val.ShapeText())
		}
		firsts = append(firsts, d)
		r.Outputs = append(r.Outputs, v.GetName())
	}
	for _, v := range slices.Concat(g.Input, g.Output) {
		for _, d := range v.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() == symbol {
				return r, fmt.Errorf("%q already names an axis of %s: give the batch another name", symbol, v.GetName())
			}
		}
	}
	for _, d := range firsts {
		d.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: symbol}
	}
	g.ValueInfo = nil
	if reshapes {
		r.Reshapes = openReshapes(g)
	}
	return r, nil
}

// firstDim is the first dimension of a tensor value's shape, nil where it
// has none (no shape, rank 0, not a tensor).
func firstDim(v *onnxpb.ValueInfoProto) *onnxpb.TensorShapeProto_Dimension {
	if dims := v.GetType().GetTensorType().GetShape().GetDim(); len(dims) > 0 {
		return dims[0]
	}
	return nil
}

// shapesOf lists values (but the initialized ones) as "x [1, 3]".
func shapesOf(vs []*onnxpb.ValueInfoProto, initialized map[string]bool) string {
	var out []string
	for _, v := range vs {
		if !initialized[v.GetName()] {
			out = append(out, v.GetName()+" "+value(v).ShapeText())
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return fmt.Sprint(out)
}

// openReshapes points every Reshape of g whose target shape is a constant
// (an initializer or a Constant node's value) of int64s starting at 1 at a
// copy starting at 0 instead, and returns the nodes it rewrote. A Reshape
// with allowzero set takes 0 literally and is left alone.
func openReshapes(g *onnxpb.GraphProto) []string {
	constants := map[string]*onnxpb.TensorProto{}
	for _, t := range g.Initializer {
		constants[t.GetName()] = t
	}
	for _, n := range g.Node {
		if n.GetOpType() != "Constant" || n.GetDomain() != "" || len(n.Output) != 1 {
			continue
		}
		for _, a := range n.Attribute {
			if a.GetName() == "value" && a.T != nil {
				constants[n.Output[0]] = a.T
			}
		}
	}
	names := valueNames(g)
	opened := map[string]string{} // a shape's name: its copy's
	var rewritten []string
	for _, n := range g.Node {
		if n.GetOpType() != "Reshape" || n.GetDomain() != "" || len(n.Input) != 2 ||
			slices.ContainsFunc(n.Attribute, func(a *onnxpb.AttributeProto) bool { return a.GetName() == "allowzero" && a.GetI() != 0 }) {
			continue
		}
		shape := n.Input[1]
		if _, done := opened[shape]; !done {
			vals, ok := int64s(constants[shape])
			if !ok || len(vals) == 0 || vals[0] != 1 {
				continue
			}
			vals[0] = 0
			name := shape + "_batch"
			for i := 2; names[name]; i++ {
				name = fmt.Sprintf("%s_batch_%d", shape, i)
			}
			names[name] = true
			g.Initializer = append(g.Initializer, int64Tensor(name, vals))
			opened[shape] = name
		}
		n.Input[1] = opened[shape]
		label := n.GetName()
		if label == "" && len(n.Output) > 0 {
			label = n.Output[0]
		}
		rewritten = append(rewritten, label)
	}
	return rewritten
}

// int64s are the values of a 1-D int64 tensor held in the model itself.
func int64s(t *onnxpb.TensorProto) ([]int64, bool) {
	if t == nil || t.GetDataType() != int32(onnxpb.TensorProto_INT64) || len(t.GetDims()) != 1 ||
		t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil, false
	}
	n := t.GetDims()[0]
	if raw := t.GetRawData(); len(raw) > 0 {
		if len(raw)%8 != 0 || int64(len(raw)/8) != n {
			return nil, false
		}
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		return vals, true
	}
	vals, ok := int64Data(t.ProtoReflect().GetUnknown())
	return vals, ok && int64(len(vals)) == n
}

// int64Data reads a TensorProto's int64_data (field 7, which onnxpb's
// subset of the schema leaves among the unknown fields), packed or not.
func int64Data(b []byte) ([]int64, bool) {
	var vals []int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 7 && typ == protowire.BytesType:
			var packed []byte
			packed, n = protowire.ConsumeBytes(b)
			for len(packed) > 0 {
				v, m := protowire.ConsumeVarint(packed)
				if m < 0 {
					return nil, false
				}
				vals = append(vals, int64(v))
				packed = packed[m:]
			}
		case num == 7 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			vals = append(vals, int64(v))
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	return vals, true
}

// int64Tensor is a 1-D int64 initializer.
func int64Tensor(name string, vals []int64) *onnxpb.TensorProto {
	raw := make([]byte, 0, 8*len(vals))
	for _, v := range vals {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	return &onnxpb.TensorProto{Name: name, DataType: int32(onnxpb.TensorProto_INT64), Dims: []int64{int64(len(vals))}, RawData: raw}
}

// ShapeNode is a Reshape or an Expand whose target shape the graph
// computes from constants alone (an initializer, a Constant node, or
// nodes of those): where the export fixed a batch of one, the batch may
// hide in any of its entries (a [T, batch×heads, D] attention reshape, a
// class token expanded to [1, 1, D]).
type ShapeNode struct {
	Label  string // its name, or its output where it has none
	Output string // its output
	Shape  string // the value it reads its target shape from
	Op     string // Reshape or Expand
}

// ShapeNodes are the graph's ShapeNodes, in graph order. A Reshape with
// allowzero set is left out (a 0 in its shape is literal).
func ShapeNodes(m *onnxpb.ModelProto) []ShapeNode {
	g := m.GetGraph()
	constant := map[string]bool{}
	for _, t := range g.GetInitializer() {
		constant[t.GetName()] = true
	}
	var out []ShapeNode
	for _, n := range g.GetNode() {
		// A node of constant inputs makes constants, but for those whose
		// values are drawn or that run subgraphs.
		if n.GetDomain() == "" && !strings.HasPrefix(n.GetOpType(), "Random") && !slices.ContainsFunc(n.Attribute, func(a *onnxpb.AttributeProto) bool { return a.G != nil || len(a.Graphs) > 0 }) &&
			!slices.ContainsFunc(n.Input, func(in string) bool { return in != "" && !constant[in] }) {
			for _, o := range n.Output {
				constant[o] = true
			}
		}
		if n.GetDomain() != "" || len(n.Input) != 2 || len(n.Output) != 1 || !constant[n.Input[1]] ||
			n.GetOpType() != "Reshape" && n.GetOpType() != "Expand" ||
			slices.ContainsFunc(n.Attribute, func(a *onnxpb.AttributeProto) bool { return a.GetName() == "allowzero" && a.GetI() != 0 }) {
			continue
		}
		label := n.GetName()
		if label == "" {
			label = n.Output[0]
		}
		out = append(out, ShapeNode{Label: label, Output: n.Output[0], Shape: n.Input[1], Op: n.GetOpType()})
	}
	return out
}

// AddOutputs lists values of the graph among its outputs, untyped (ONNX
// Runtime infers their types): a probe's window onto what the graph
// computes inside.
func AddOutputs(m *onnxpb.ModelProto, names ...string) {
	g := m.GetGraph()
	for _, name := range names {
		if !slices.ContainsFunc(g.Output, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) {
			g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: name})
		}
	}
}

// KeepOutputs makes names the graph's only outputs (AddOutputs for those
// it did not list) and drops the nodes they do not need, and their
// initializers: ONNX Runtime runs every node a graph holds, so a probe of
// a value inside the graph would be failed by a node after it.
func KeepOutputs(m *onnxpb.ModelProto, names ...string) {
	g := m.GetGraph()
	g.Output = slices.DeleteFunc(g.Output, func(v *onnxpb.ValueInfoProto) bool { return !slices.Contains(names, v.GetName()) })
	AddOutputs(m, names...)
	needed := map[string]bool{}
	for _, name := range names {
		needed[name] = true
	}
	keep := make([]bool, len(g.Node))
	for i := len(g.Node) - 1; i >= 0; i-- {
		n := g.Node[i]
		if !slices.ContainsFunc(n.Output, func(o string) bool { return needed[o] }) {
			continue
		}
		keep[i] = true
		for _, in := range n.Input {
			needed[in] = true
		}
		for _, a := range n.Attribute {
			for _, sub := range append([]*onnxpb.GraphProto{a.G}, a.Graphs...) {
				usedBy(sub, needed) // a subgraph reads values of the graph around it
			}
		}
	}
	kept := g.Node[:0]
	for i, n := range g.Node {
		if keep[i] {
			kept = append(kept, n)
		}
	}
	g.Node = kept
	// The weights of the dropped nodes go too: the probe writes the model
	// out for every run.
	g.Initializer = slices.DeleteFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { return !needed[t.GetName()] })
}

// usedBy marks every value the nodes of g, and of its subgraphs, read.
func usedBy(g *onnxpb.GraphProto, used map[string]bool) {
	for _, n := range g.GetNode() {
		for _, in := range n.Input {
			used[in] = true
		}
		for _, a := range n.Attribute {
			for _, sub := range append([]*onnxpb.GraphProto{a.G}, a.Graphs...) {
				usedBy(sub, used)
			}
		}
	}
}

// ScaleShape makes shape node n (found by its output) read values, the
// target it had at a batch of one, with entry j multiplied by the batch:
// the first axis of input batch, read when the graph runs.
func ScaleShape(m *onnxpb.ModelProto, n ShapeNode, values []int64, j int, batch string) {
	g := m.GetGraph()
	at := slices.IndexFunc(g.GetNode(), func(d *onnxpb.NodeProto) bool {
		return len(d.Output) == 1 && d.Output[0] == n.Output && len(d.Input) == 2
	})
	if at < 0 || j < 0 || j >= len(values) {
		return // not a node of this graph, or no entry of its shape
	}
	names := valueNames(g)
	fresh := func(base string) string {
		name := base
		for i := 2; names[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		names[name] = true
		return name
	}
	of := n.Shape + "_at_one"
	target, shape, first, factors, scaled := fresh(of), fresh(batch+"_shape"), fresh(batch+"_rows"), fresh(of+"_factors"), fresh(of+"_scaled")
	ones := func(k int) []int64 {
		v := make([]int64, k)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	before, after := fresh(of+"_before"), fresh(of+"_after")
	g.Initializer = append(g.Initializer, int64Tensor(target, values), int64Tensor(before, ones(j)), int64Tensor(after, ones(len(values)-j-1)))
	start, end := fresh(of+"_start"), fresh(of+"_end")
	g.Initializer = append(g.Initializer, int64Tensor(start, []int64{0}), int64Tensor(end, []int64{1}))
	nodes := []*onnxpb.NodeProto{
		{Name: shape, OpType: "Shape", Input: []string{batch}, Output: []string{shape}},
		{Name: first, OpType: "Slice", Input: []string{shape, start, end}, Output: []string{first}},
		{Name: factors, OpType: "Concat", Input: []string{before, first, after}, Output: []string{factors},
			Attribute: []*onnxpb.AttributeProto{{Name: "axis", Type: onnxpb.AttributeProto_INT, I: 0}}},
		{Name: scaled, OpType: "Mul", Input: []string{target, factors}, Output: []string{scaled}},
	}
	edited := proto.Clone(g.Node[at]).(*onnxpb.NodeProto) // a Derive'd graph shares its nodes
	edited.Input[1] = scaled
	g.Node[at] = edited
	g.Node = slices.Insert(g.Node, at, nodes...)
}

// Derive is a copy of m that shares its nodes, weights and value infos
// but holds lists of its own: ScaleShape, AddOutputs and KeepOutputs on
// the copy (which replace a node they edit, and edit only the lists)
// leave m as it was, and no weight is copied. Fields this package does
// not read (local functions, metadata) are kept.
func Derive(m *onnxpb.ModelProto) *onnxpb.ModelProto {
	g := m.GetGraph()
	d := &onnxpb.ModelProto{IrVersion: m.GetIrVersion(), OpsetImport: m.GetOpsetImport(), ProducerName: m.GetProducerName(),
		ProducerVersion: m.GetProducerVersion(), Domain: m.GetDomain(), ModelVersion: m.GetModelVersion(), DocString: m.GetDocString(),
		Graph: &onnxpb.GraphProto{Name: g.GetName(), DocString: g.GetDocString(),
			Node: slices.Clone(g.GetNode()), Initializer: slices.Clone(g.GetInitializer()), SparseInitializer: slices.Clone(g.GetSparseInitializer()),
			Input: slices.Clone(g.GetInput()), Output: slices.Clone(g.GetOutput()), ValueInfo: slices.Clone(g.GetValueInfo())}}
	d.ProtoReflect().SetUnknown(m.ProtoReflect().GetUnknown())
	d.Graph.ProtoReflect().SetUnknown(g.ProtoReflect().GetUnknown())
	return d
}
