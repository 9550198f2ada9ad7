package testmodels

import (
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// SequenceOutput is a graph x float32 [n, 4] → y (Identity) and scores
// (SequenceConstruct of x), as a classifier's sequence of maps beside its
// scores: an output genaic does not carry, for the tests of what it does
// with one. onnxpb models only tensor types, so the sequence_type
// (TypeProto field 4, of float tensors) is written as raw bytes.
func SequenceOutput() ([]byte, error) {
	tensor := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: onnxFloat, Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
				{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "n"}},
				{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 4}}}}}}}}
	}
	seq := &onnxpb.ValueInfoProto{Name: "scores", Type: &onnxpb.TypeProto{}}
	seq.Type.ProtoReflect().SetUnknown([]byte{0x22, 0x06, 0x0a, 0x04, 0x0a, 0x02, 0x08, onnxFloat})
	g := &onnxpb.GraphProto{Name: "sequence_output",
		Input:  []*onnxpb.ValueInfoProto{tensor("x")},
		Output: []*onnxpb.ValueInfoProto{tensor("y"), seq},
		Node: []*onnxpb.NodeProto{
			{OpType: "Identity", Input: []string{"x"}, Output: []string{"y"}},
			{OpType: "SequenceConstruct", Input: []string{"x"}, Output: []string{"scores"}},
		}}
	return onnx.Marshal(&onnxpb.ModelProto{IrVersion: irVersion, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: opsetVersion}}, Graph: g})
}
