package onnx

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// MaskRewrite says what MaskToLengths rewrites.
type MaskRewrite struct {
	Mask string // the graph input that is the mask, [batch, sequence]
	// Like is the graph input whose axis 1 is the mask's sequence, read
	// for its extent; "" picks the first input of the mask's leading
	// dimensions.
	Like    string
	Lengths string // the name of the lengths input that replaces the mask
	// OnesMarkPadding says the mask's ones mark the padding (a key padding
	// mask), not the real positions (an attention mask).
	OnesMarkPadding bool
}

// MaskToLengths rewrites a model whose graph takes a mask of its rows'
// real positions (a [batch, sequence] input of ones then zeros per row, as
// transformer encoders take an attention mask, or zeros then ones, a key
// padding mask) to take the lengths of its rows instead: an int64 [batch]
// input, from which the graph computes the mask itself (position < length,
// or its negation, cast to the mask's element type), under the mask's
// name, so that every node that read the mask reads the same values.
// genaic pads by lengths, never by masks (a padded port's lengths must be
// a graph input): the rewritten graph can be padded.
//
// The weights are kept as they are (external data included: the rewritten
// model refers to the same files). The graph must import the default
// operator set at version 11 or later (Range).
func MaskToLengths(m *onnxpb.ModelProto, r MaskRewrite) error {
	mask, like, lengths := r.Mask, r.Like, r.Lengths
	g := m.GetGraph()
	if g == nil {
		return fmt.Errorf("the model has no graph")
	}
	at := slices.IndexFunc(g.Input, func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == mask })
	if at < 0 {
		return fmt.Errorf("the graph has no input %q; its inputs are %v", mask, inputNames(g))
	}
	if slices.ContainsFunc(g.Input[at+1:], func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == mask }) {
		return fmt.Errorf("the graph lists input %q twice", mask)
	}
	mv := value(g.Input[at])
	if mv.ElemType == 0 || !mv.HasShape || len(mv.Dims) != 2 {
		return fmt.Errorf("input %q is %s %s, not a mask [batch, sequence]", mask, orUnknown(mv.DType()), mv.ShapeText())
	}
	if slices.ContainsFunc(g.Initializer, func(t *onnxpb.TensorProto) bool { return t.GetName() == mask }) {
		return fmt.Errorf("input %q is backed by an initializer: it is a constant, not the caller's mask", mask)
	}
	src, err := sequenceSource(g, mv, like)
	if err != nil {
		return err
	}
	version := int64(0)
	for _, o := range m.OpsetImport {
		if o.GetDomain() == "" || o.GetDomain() == "ai.onnx" {
			version = o.GetVersion()
		}
	}
	if version < 11 {
		return fmt.Errorf("the graph imports the default operator set at version %d; computing the mask takes Range, from version 11: export the model at opset 11 or later", version)
	}
	if used := valueNames(g); used[lengths] {
		return fmt.Errorf("the graph already has a value called %q: name the lengths input otherwise (genaic mask-lengths --lengths)", lengths)
	}

	// The nodes that compute the mask, named under a prefix no graph
	// value's name starts with.
	prefix := "genaic_mask"
	used := valueNames(g)
	for taken := true; taken; {
		taken = false
		for n := range used {
			if strings.HasPrefix(n, prefix+"/") {
				taken, prefix = true, prefix+"_"
				break
			}
		}
	}
	name := func(s string) string { return prefix + "/" + s }
	var nodes []*onnxpb.NodeProto
	op := func(opType, out string, ins []string, attrs ...*onnxpb.AttributeProto) string {
		nodes = append(nodes, &onnxpb.NodeProto{OpType: opType, Name: out, Input: ins, Output: []string{out}, Attribute: attrs})
		return out
	}
	constant := func(out string, dims []int64, vs ...int64) string {
		raw := make([]byte, 0, 8*len(vs))
		for _, v := range vs {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
		t := &onnxpb.TensorProto{Name: out, DataType: int32(onnxpb.TensorProto_INT64), Dims: dims, RawData: raw}
		return op("Constant", out, nil, &onnxpb.AttributeProto{Name: "value", Type: onnxpb.AttributeProto_TENSOR, T: t})
	}
	unsqueeze := func(out, in string, axis int64) string {
		if version >= 13 {
			return op("Unsqueeze", out, []string{in, constant(out+"_axes", []int64{1}, axis)})
		}
		return op("Unsqueeze", out, []string{in}, &onnxpb.AttributeProto{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: []int64{axis}})
	}
	zero, one := constant(name("zero"), nil, 0), constant(name("one"), nil, 1)
	seq := op("Gather", name("seq"), []string{op("Shape", name("shape"), []string{src}), one},
		&onnxpb.AttributeProto{Name: "axis", Type: onnxpb.AttributeProto_INT, I: 0})
	pos := unsqueeze(name("pos_row"), op("Range", name("pos"), []string{zero, seq, one}), 0)
	marked := op("Less", name("valid"), []string{pos, unsqueeze(name("length_col"), lengths, 1)})
	if r.OnesMarkPadding {
		marked = op("Not", name("padding"), []string{marked})
	}
	op("Cast", mask, []string{marked}, &onnxpb.AttributeProto{Name: "to", Type: onnxpb.AttributeProto_INT, I: int64(mv.ElemType)})
	g.Node = append(nodes, g.Node...)

	batch := proto2Dim(g.Input[at].GetType().GetTensorType().GetShape().GetDim()[0])
	g.Input[at] = &onnxpb.ValueInfoProto{Name: lengths, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_INT64),
			Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{batch}}}}}}
	return nil
}

// sequenceSource returns the input the sequence extent is read from: like,
// or the first other input whose leading dimensions are the mask's.
func sequenceSource(g *onnxpb.GraphProto, mask Value, like string) (string, error) {
	initialized := map[string]bool{}
	for _, t := range g.Initializer {
		initialized[t.GetName()] = true
	}
	var alike []string // inputs of the mask's shape but for the symbols' names
	for _, in := range g.Input {
		v := value(in)
		if v.Name == mask.Name || initialized[v.Name] {
			continue
		}
		if like != "" {
			if v.Name != like {
				continue
			}
			if v.HasShape && len(v.Dims) < 2 {
				return "", fmt.Errorf("input %q has shape %s: it has no axis 1 to read the sequence extent from", like, v.ShapeText())
			}
			return like, nil
		}
		if v.HasShape && len(v.Dims) >= 2 && v.Dims[0].Same(mask.Dims[0]) && v.Dims[1].Same(mask.Dims[1]) {
			return v.Name, nil
		}
		if v.HasShape && len(v.Dims) == len(mask.Dims) && slices.EqualFunc(v.Dims, mask.Dims, Dim.SameButNamed) &&
			!slices.ContainsFunc(v.Dims, func(d Dim) bool { return slices.ContainsFunc(mask.Dims, d.Same) }) {
			alike = append(alike, v.Name)
		}
	}
	// A graph that names each input's axes apart (tf2onnx's unk__N):
	// the one input shaped as the mask up to its symbols' names, none of
	// which is the mask's (an input that shares one is named as the
	// graph means it).
	if like == "" && len(alike) == 1 {
		return alike[0], nil
	}
	if like != "" {
		return "", fmt.Errorf("the graph has no input %q (other than the mask) to read the sequence extent from; its inputs are %v", like, inputNames(g))
	}
	return "", fmt.Errorf("no other input of the graph has the mask's shape %s to read the sequence extent from: name one whose axis 1 is the sequence (genaic mask-lengths --like)", mask.ShapeText())
}

// proto2Dim copies a shape dimension.
func proto2Dim(d *onnxpb.TensorShapeProto_Dimension) *onnxpb.TensorShapeProto_Dimension {
	switch x := d.GetValue().(type) {
	case *onnxpb.TensorShapeProto_Dimension_DimValue:
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: x.DimValue}}
	case *onnxpb.TensorShapeProto_Dimension_DimParam:
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: x.DimParam}}
	}
	return &onnxpb.TensorShapeProto_Dimension{}
}

// valueNames are the names of the graph's values: inputs, outputs,
// initializers and node outputs.
func valueNames(g *onnxpb.GraphProto) map[string]bool {
	names := map[string]bool{}
	for _, v := range slices.Concat(g.Input, g.Output) {
		names[v.GetName()] = true
	}
	for _, t := range g.Initializer {
		names[t.GetName()] = true
	}
	for _, n := range g.Node {
		for _, o := range n.Output {
			names[o] = true
		}
	}
	return names
}

func inputNames(g *onnxpb.GraphProto) []string {
	var names []string
	for _, v := range g.Input {
		names = append(names, v.GetName())
	}
	return names
}

func orUnknown(s string) string {
	if s == "" {
		return "a value of no tensor type"
	}
	return s
}
