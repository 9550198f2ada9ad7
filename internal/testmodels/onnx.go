package testmodels

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The ONNX format fixed by the generator: IR version 8 and the default
// operator set at version 17, both read by every ONNX Runtime since 1.13.
const (
	irVersion       = 8
	opsetVersion    = 17
	producerName    = "genaic-testmodels"
	producerVersion = "1"
)

// ONNX TensorProto.DataType values.
const (
	onnxFloat = 1
	onnxInt64 = 7
)

// Field numbers of the onnx.proto messages the generator writes. Fields are
// written in ascending number, as protobuf's own serializer does, so the
// bytes are canonical as well as deterministic.
const (
	modelIRVersion       = 1
	modelProducerName    = 2
	modelProducerVersion = 3
	modelDocString       = 6
	modelGraph           = 7
	modelOpsetImport     = 8

	opsetVersionField = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphDocString   = 10
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName = 1
	attrI    = 3
	attrInts = 8
	attrType = 20
	attrINT  = 2
	attrINTS = 7

	tensorDims     = 1
	tensorDataType = 2
	tensorName     = 8
	tensorRawData  = 9

	valueInfoName = 1
	valueInfoType = 2

	typeTensorType  = 1
	tensorElemType  = 1
	tensorShape     = 2
	shapeDim        = 1
	dimValue        = 1
	dimParam        = 2
	varint          = protowire.VarintType
	lengthDelimited = protowire.BytesType
)

// graph is an ONNX graph under construction. Nodes are kept in the order
// they are added, which must be topological.
type graph struct {
	name    string
	doc     string
	inputs  []Port
	outputs []Port
	nodes   [][]byte // encoded NodeProto messages
	inits   [][]byte // encoded TensorProto messages
	names   map[string]bool
}

// attribute is an encoded AttributeProto.
type attribute []byte

func newGraph(name, doc string, inputs, outputs []Port) *graph {
	g := &graph{name: name, doc: doc, inputs: inputs, outputs: outputs, names: map[string]bool{}}
	for _, p := range inputs {
		g.define(p.Name)
	}
	return g
}

// define records a value name and panics on a second definition: the graphs
// are fixed at build time, so a clash is a bug in this package.
func (g *graph) define(name string) string {
	if g.names[name] {
		panic(fmt.Sprintf("testmodels: graph %s defines %s twice", g.name, name))
	}
	g.names[name] = true
	return name
}

// op appends a node with one output and returns the output's name.
func (g *graph) op(opType, out string, inputs []string, attrs ...attribute) string {
	for _, in := range inputs {
		if !g.names[in] {
			panic(fmt.Sprintf("testmodels: graph %s: %s reads %s before it is defined", g.name, out, in))
		}
	}
	g.define(out)
	var b []byte
	for _, in := range inputs {
		b = appendString(b, nodeInput, in)
	}
	b = appendString(b, nodeOutput, out)
	b = appendString(b, nodeName, out)
	b = appendString(b, nodeOpType, opType)
	for _, a := range attrs {
		b = appendBytes(b, nodeAttribute, a)
	}
	g.nodes = append(g.nodes, b)
	return out
}

// floats adds a float32 initializer and returns its name.
func (g *graph) floats(name string, dims []int64, v []float32) string {
	raw := make([]byte, 0, 4*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	return g.initializer(name, onnxFloat, dims, raw, len(v))
}

// ints adds an int64 initializer and returns its name.
func (g *graph) ints(name string, dims []int64, v []int64) string {
	raw := make([]byte, 0, 8*len(v))
	for _, x := range v {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(x))
	}
	return g.initializer(name, onnxInt64, dims, raw, len(v))
}

func (g *graph) initializer(name string, dtype int, dims []int64, raw []byte, n int) string {
	count := int64(1)
	for _, d := range dims {
		count *= d
	}
	if count != int64(n) {
		panic(fmt.Sprintf("testmodels: initializer %s has %d values for dims %v", name, n, dims))
	}
	g.define(name)
	var b []byte
	for _, d := range dims {
		b = appendVarint(b, tensorDims, uint64(d))
	}
	b = appendVarint(b, tensorDataType, uint64(dtype))
	b = appendString(b, tensorName, name)
	b = appendBytes(b, tensorRawData, raw)
	g.inits = append(g.inits, b)
	return name
}

func attrInt(name string, v int64) attribute {
	b := appendString(nil, attrName, name)
	b = appendVarint(b, attrI, uint64(v))
	return appendVarint(b, attrType, attrINT)
}

func attrIntList(name string, vs ...int64) attribute {
	b := appendString(nil, attrName, name)
	for _, v := range vs {
		b = appendVarint(b, attrInts, uint64(v))
	}
	return appendVarint(b, attrType, attrINTS)
}

// encode returns the ModelProto bytes of the graph.
func (g *graph) encode() []byte {
	for _, p := range g.outputs {
		if !g.names[p.Name] {
			panic(fmt.Sprintf("testmodels: graph %s never defines its output %s", g.name, p.Name))
		}
	}
	var gb []byte
	for _, n := range g.nodes {
		gb = appendBytes(gb, graphNode, n)
	}
	gb = appendString(gb, graphName, g.name)
	for _, t := range g.inits {
		gb = appendBytes(gb, graphInitializer, t)
	}
	gb = appendString(gb, graphDocString, g.doc)
	for _, p := range g.inputs {
		gb = appendBytes(gb, graphInput, valueInfo(p))
	}
	for _, p := range g.outputs {
		gb = appendBytes(gb, graphOutput, valueInfo(p))
	}

	var mb []byte
	mb = appendVarint(mb, modelIRVersion, irVersion)
	mb = appendString(mb, modelProducerName, producerName)
	mb = appendString(mb, modelProducerVersion, producerVersion)
	mb = appendString(mb, modelDocString, g.doc)
	mb = appendBytes(mb, modelGraph, gb)
	opset := appendVarint(nil, opsetVersionField, opsetVersion) // domain "" is the default operator set
	return appendBytes(mb, modelOpsetImport, opset)
}

// valueInfo encodes a graph input or output: its element type and its
// dimensions, a fixed extent where the model fixes one and the metadata's
// shape symbol otherwise.
func valueInfo(p Port) []byte {
	var shape []byte
	for _, d := range p.Dims {
		var db []byte
		if d.Size > 0 {
			db = appendVarint(nil, dimValue, uint64(d.Size))
		} else {
			db = appendString(nil, dimParam, d.Sym)
		}
		shape = appendBytes(shape, shapeDim, db)
	}
	tt := appendVarint(nil, tensorElemType, uint64(p.onnxType()))
	tt = appendBytes(tt, tensorShape, shape)
	typ := appendBytes(nil, typeTensorType, tt)
	b := appendString(nil, valueInfoName, p.Name)
	return appendBytes(b, valueInfoType, typ)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, varint)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, lengthDelimited)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, lengthDelimited)
	return protowire.AppendBytes(b, v)
}
