// Package onnx reads what genaic checks a package against from an ONNX
// model: the graph's inputs, outputs and value infos with their element
// types and shapes, the opset imports and the operator types the graph and
// its subgraphs use. It never reads the weights: initializers and tensor
// attributes are skipped over (seeked past in a file), external data is
// never opened, so a model of any size is read in memory proportional to
// its graph's structure, not its parameters.
//
// The small messages are decoded with the types generated from the ONNX
// schema (package onnxpb); the large ones are walked field by field so that
// their tensor payloads can be skipped.
//
// One rewrite lives here too, on a model its caller decoded whole:
// MaskToLengths, which turns a graph's attention mask input into the
// lengths genaic pads by (genaic mask-lengths).
package onnx

import (
	"fmt"
	"slices"
	"strings"
)

// Graph is what genaic knows of a model's main graph.
type Graph struct {
	IRVersion int64
	Opsets    []Opset // the opset imports, as written
	Name      string
	Inputs    []Value // the graph's inputs, in order
	Outputs   []Value // the graph's outputs, in order
	ValueInfo []Value // the graph's value_info entries
	// Ops are the operator types the graph and its subgraphs (If, Loop,
	// Scan bodies) use, sorted and without duplicates: "Type" for the
	// default ONNX domain, "domain:Type" for any other.
	Ops []string
}

// Opset is one opset import.
type Opset struct {
	Domain  string // "" for the default ONNX domain
	Version int64
}

// Value is a graph input, output or value_info entry.
type Value struct {
	Name string
	// ElemType is the ONNX element type (TensorProto.DataType), 0 when the
	// value is not a tensor or its type is not given.
	ElemType int32
	// NotTensor is the kind of value a graph gives that is not a tensor
	// ("sequence", "map", "optional", "sparse tensor", "opaque"); "" for a
	// tensor, or where the type is not given.
	NotTensor string
	// HasShape is false when the graph gives no shape (any rank).
	HasShape bool
	Dims     []Dim
	// Initialized marks an input that an initializer of the same name
	// backs: a constant the caller may override, not a required input.
	Initialized bool
}

// DType is the element type in genaic's spelling (float32, int64, ...),
// the ONNX name in lower case for types genaic has no spelling of, or ""
// when the value's type is not given.
func (v Value) DType() string { return DTypeName(v.ElemType) }

// ShapeText is the shape as a person reads it, such as [batch, 3, ?].
func (v Value) ShapeText() string {
	if !v.HasShape {
		return "(any shape)"
	}
	parts := make([]string, len(v.Dims))
	for i, d := range v.Dims {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Fixed returns the extent the graph fixes on axis, and false where the
// axis is dynamic, unknown, or not one of the value's.
func (v Value) Fixed(axis int) (int64, bool) {
	if !v.HasShape || axis < 0 || axis >= len(v.Dims) || !v.Dims[axis].Literal {
		return 0, false
	}
	return v.Dims[axis].Value, true
}

// Dim is one dimension of a graph shape: a literal extent, a symbol, or
// unknown (neither).
type Dim struct {
	Value int64  // the literal extent when Literal is set
	Param string // the symbol (dim_param), when the graph names one
	// Literal is set when the graph fixes the extent (dim_value).
	Literal bool
}

// Same reports whether two dimensions are the same extent: the same
// symbol, or the same literal. Unknown extents are the same as none.
func (d Dim) Same(e Dim) bool {
	if d.Literal || e.Literal {
		return d.Literal && e.Literal && d.Value == e.Value
	}
	return d.Param != "" && d.Param == e.Param
}

// SameButNamed reports whether two dimensions are one extent but for the
// names of their symbols: the same literal, or both left open (a graph
// that names each input's axes apart, as tf2onnx's unk__N do).
func (d Dim) SameButNamed(e Dim) bool {
	if d.Literal || e.Literal {
		return d.Literal && e.Literal && d.Value == e.Value
	}
	return true
}

func (d Dim) String() string {
	switch {
	case d.Literal:
		return fmt.Sprint(d.Value)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// Input returns the graph input called name, or nil.
func (g *Graph) Input(name string) *Value { return find(g.Inputs, name) }

// Output returns the graph output called name, or nil.
func (g *Graph) Output(name string) *Value { return find(g.Outputs, name) }

func find(vs []Value, name string) *Value {
	if i := slices.IndexFunc(vs, func(v Value) bool { return v.Name == name }); i >= 0 {
		return &vs[i]
	}
	return nil
}

// dtypeNames are genaic's spellings of the ONNX element types
// (TensorProto.DataType).
var dtypeNames = map[int32]string{
	1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
	8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
	14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
	19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
}

// DTypeName names an ONNX element type; "" for 0 (not given), and
// "onnx type N" for a number this reader does not know.
func DTypeName(t int32) string {
	if t == 0 {
		return ""
	}
	if n, ok := dtypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("onnx type %d", t)
}
