package onnx

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// ErrNotONNX is wrapped by the error Read returns for a file that is not
// an ONNX model (not a protobuf ModelProto, or one without a graph).
var ErrNotONNX = errors.New("not an ONNX model")

// Limits of the reader. The messages it decodes whole are a graph's
// metadata, never its weights; one larger than maxMessage, or subgraphs
// nested deeper than maxDepth, mean a malformed or hostile file.
const (
	maxMessage = 16 << 20
	maxDepth   = 64
)

// Read reads the graph facts of the ONNX model at path without reading its
// weights. The error wraps ErrNotONNX when the file is readable but not an
// ONNX model, and is the I/O error otherwise.
func Read(path string) (*Graph, error) {
	f, info, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(f, info.Size())
}

// Decode reads the graph facts of the ONNX model of size bytes in rs, as
// Read does.
func Decode(rs io.ReadSeeker, size int64) (*Graph, error) {
	r := &reader{rs: rs, br: bufio.NewReaderSize(rs, 64<<10), inits: map[string]bool{}, ops: map[string]bool{}}
	g := &Graph{}
	if err := r.model(size, g); err != nil {
		return nil, err
	}
	for i := range g.Inputs {
		g.Inputs[i].Initialized = r.inits[g.Inputs[i].Name]
	}
	for op := range r.ops {
		g.Ops = append(g.Ops, op)
	}
	slices.Sort(g.Ops)
	return g, nil
}

// reader walks protobuf fields over a seekable stream, counting the bytes
// it consumed so that each message ends where its length says.
type reader struct {
	rs    io.ReadSeeker
	br    *bufio.Reader
	off   int64
	inits map[string]bool // names of the main graph's initializers
	ops   map[string]bool
}

// malformed is the error of a file that breaks the protobuf encoding.
func (r *reader) malformed(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d, %s", ErrNotONNX, r.off, fmt.Sprintf(format, args...))
}

// ioErr turns a short read into a malformed-file error: a length that runs
// past the end of the file is the file's defect.
func (r *reader) ioErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.malformed("the file ends inside a field")
	}
	return err
}

func (r *reader) ReadByte() (byte, error) {
	b, err := r.br.ReadByte()
	if err == nil {
		r.off++
	}
	return b, err
}

func (r *reader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, r.ioErr(err)
		}
		return 0, r.malformed("a varint is longer than 10 bytes")
	}
	return v, nil
}

// tag reads a field's tag.
func (r *reader) tag() (protowire.Number, protowire.Type, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		return 0, 0, r.malformed("field number %d is out of range", int64(v>>3))
	}
	return num, typ, nil
}

// length reads the length of a length-delimited field ending by end.
func (r *reader) length(end int64) (int64, error) {
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	// A field read past its message's end (a tag or length that spilled
	// over it) leaves no room at all.
	if rem := end - r.off; rem < 0 || v > uint64(rem) {
		return 0, r.malformed("a field of %d bytes runs past the end of its message", v)
	}
	return int64(v), nil
}

// skipN moves past n bytes without reading them when they are not
// buffered: weights are seeked over, never read.
func (r *reader) skipN(n int64) error {
	if n < 0 {
		return r.malformed("a negative length")
	}
	if b := int64(r.br.Buffered()); n <= b {
		_, err := r.br.Discard(int(n))
		r.off += n
		return err
	}
	b := r.br.Buffered()
	if _, err := r.br.Discard(b); err != nil {
		return err
	}
	if _, err := r.rs.Seek(n-int64(b), io.SeekCurrent); err != nil {
		return err
	}
	r.br.Reset(r.rs)
	r.off += n
	return nil
}

// skip moves past the value of a field of wire type typ.
func (r *reader) skip(typ protowire.Type, end int64) error {
	switch typ {
	case protowire.VarintType:
		_, err := r.uvarint()
		return err
	case protowire.Fixed32Type, protowire.Fixed64Type:
		n := int64(4)
		if typ == protowire.Fixed64Type {
			n = 8
		}
		if n > end-r.off {
			return r.malformed("a fixed-size field runs past the end of its message")
		}
		return r.skipN(n)
	case protowire.BytesType:
		n, err := r.length(end)
		if err != nil {
			return err
		}
		return r.skipN(n)
	}
	return r.malformed("wire type %d, which ONNX does not use", typ)
}

// collect appends a field (tag and value) to buf, so that the fields of a
// message that matter can be decoded by its generated type while the
// others are skipped.
func (r *reader) collect(buf []byte, num protowire.Number, typ protowire.Type, end int64) ([]byte, error) {
	switch typ {
	case protowire.VarintType:
		v, err := r.uvarint()
		if err != nil {
			return buf, err
		}
		buf = protowire.AppendTag(buf, num, typ)
		return protowire.AppendVarint(buf, v), nil
	case protowire.BytesType:
		n, err := r.length(end)
		if err != nil {
			return buf, err
		}
		if int64(len(buf))+n > maxMessage {
			return buf, r.malformed("a message's metadata exceeds %d bytes", maxMessage)
		}
		buf = protowire.AppendTag(buf, num, typ)
		buf = protowire.AppendVarint(buf, uint64(n))
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(r.br, buf[start:]); err != nil {
			return buf, r.ioErr(err)
		}
		r.off += n
		return buf, nil
	}
	return buf, r.skip(typ, end)
}

// message reads a whole length-delimited field and decodes it into m.
func (r *reader) message(end int64, m proto.Message) error {
	n, err := r.length(end)
	if err != nil {
		return err
	}
	if n > maxMessage {
		return r.malformed("a message of %d bytes, more than the %d a graph's metadata takes", n, maxMessage)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.br, body); err != nil {
		return r.ioErr(err)
	}
	r.off += n
	if err := proto.Unmarshal(body, m); err != nil {
		return r.malformed("%v", err)
	}
	return nil
}

// ModelProto fields.
const (
	modelIRVersion = 1
	modelGraph     = 7
	modelOpset     = 8
)

func (r *reader) model(end int64, g *Graph) error {
	var small []byte
	sawGraph := false
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		switch {
		case num == modelGraph && typ == protowire.BytesType:
			n, err := r.length(end)
			if err != nil {
				return err
			}
			if err := r.graph(r.off+n, g, 0); err != nil {
				return err
			}
			sawGraph = true
		case num == modelIRVersion || num == modelOpset:
			if small, err = r.collect(small, num, typ, end); err != nil {
				return err
			}
		default:
			if err := r.skip(typ, end); err != nil {
				return err
			}
		}
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(small, &m); err != nil {
		return r.malformed("%v", err)
	}
	if !sawGraph || m.GetIrVersion() <= 0 {
		return fmt.Errorf("%w: no graph and IR version (a protobuf ModelProto has both)", ErrNotONNX)
	}
	g.IRVersion = m.GetIrVersion()
	for _, o := range m.GetOpsetImport() {
		g.Opsets = append(g.Opsets, Opset{Domain: o.GetDomain(), Version: o.GetVersion()})
	}
	return nil
}

// GraphProto fields.
const (
	graphNode              = 1
	graphName              = 2
	graphInitializer       = 5
	graphInput             = 11
	graphOutput            = 12
	graphValueInfo         = 13
	graphSparseInitializer = 15
)

// graph walks a GraphProto. The main graph (depth 0) gives its inputs,
// outputs, value infos and initializer names; a subgraph gives only the
// operator types of its nodes.
func (r *reader) graph(end int64, g *Graph, depth int) error {
	if depth > maxDepth {
		return r.malformed("subgraphs are nested more than %d deep", maxDepth)
	}
	main := depth == 0
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		if typ != protowire.BytesType {
			if err := r.skip(typ, end); err != nil {
				return err
			}
			continue
		}
		switch {
		case num == graphNode:
			n, err := r.length(end)
			if err != nil {
				return err
			}
			err = r.node(r.off+n, g, depth)
			if err != nil {
				return err
			}
		case main && num == graphName:
			var name onnxpb.GraphProto
			buf, err := r.collect(nil, num, typ, end)
			if err != nil {
				return err
			}
			if err := proto.Unmarshal(buf, &name); err != nil {
				return r.malformed("%v", err)
			}
			g.Name = name.GetName()
		case main && (num == graphInput || num == graphOutput || num == graphValueInfo):
			var vi onnxpb.ValueInfoProto
			if err := r.message(end, &vi); err != nil {
				return err
			}
			v := value(&vi)
			switch num {
			case graphInput:
				g.Inputs = append(g.Inputs, v)
			case graphOutput:
				g.Outputs = append(g.Outputs, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
		case main && num == graphInitializer:
			n, err := r.length(end)
			if err != nil {
				return err
			}
			name, err := r.tensorName(r.off + n)
			if err != nil {
				return err
			}
			r.inits[name] = true
		case main && num == graphSparseInitializer:
			n, err := r.length(end)
			if err != nil {
				return err
			}
			if err := r.sparseName(r.off + n); err != nil {
				return err
			}
		default:
			if err := r.skip(typ, end); err != nil {
				return err
			}
		}
	}
	return nil
}

func value(vi *onnxpb.ValueInfoProto) Value {
	v := Value{Name: vi.GetName()}
	t := vi.GetType().GetTensorType()
	if t == nil {
		v.NotTensor = notTensor(vi.GetType())
		return v
	}
	v.ElemType = t.GetElemType()
	if s := t.GetShape(); s != nil {
		v.HasShape = true
		for _, d := range s.GetDim() {
			switch x := d.GetValue().(type) {
			case *onnxpb.TensorShapeProto_Dimension_DimValue:
				if x.DimValue < 0 {
					// Some exporters write a dynamic dimension as -1,
					// which ONNX Runtime reads as any extent: it fixes
					// nothing.
					v.Dims = append(v.Dims, Dim{})
					continue
				}
				v.Dims = append(v.Dims, Dim{Value: x.DimValue, Literal: true})
			case *onnxpb.TensorShapeProto_Dimension_DimParam:
				v.Dims = append(v.Dims, Dim{Param: x.DimParam})
			default:
				v.Dims = append(v.Dims, Dim{})
			}
		}
	}
	return v
}

// TypeProto's other kinds of value, by field number: onnxpb models only
// tensor_type, so they are read from the message's unknown fields.
var typeKinds = map[protowire.Number]string{
	4: "sequence", 5: "map", 7: "opaque", 8: "sparse tensor", 9: "optional",
}

// notTensor names the kind of value a type that is not a tensor gives,
// "" where it gives none.
func notTensor(t *onnxpb.TypeProto) string {
	if t == nil {
		return ""
	}
	b := t.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if kind, ok := typeKinds[num]; ok {
			return kind
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return ""
		}
		b = b[n:]
	}
	return ""
}

// TensorProto fields genaic reads: the name and the small descriptors,
// never the data.
const (
	tensorDims         = 1
	tensorDataType     = 2
	tensorName         = 8
	tensorDataLocation = 14
	sparseValues       = 1
)

// tensorName walks a TensorProto and returns its name, skipping its data.
func (r *reader) tensorName(end int64) (string, error) {
	var small []byte
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return "", err
		}
		switch num {
		case tensorDims, tensorDataType, tensorName, tensorDataLocation:
			small, err = r.collect(small, num, typ, end)
		default:
			err = r.skip(typ, end)
		}
		if err != nil {
			return "", err
		}
	}
	var t onnxpb.TensorProto
	if err := proto.Unmarshal(small, &t); err != nil {
		return "", r.malformed("%v", err)
	}
	return t.GetName(), nil
}

// sparseName records the name of a sparse initializer (its values' name).
func (r *reader) sparseName(end int64) error {
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		if num == sparseValues && typ == protowire.BytesType {
			n, err := r.length(end)
			if err != nil {
				return err
			}
			name, err := r.tensorName(r.off + n)
			if err != nil {
				return err
			}
			r.inits[name] = true
			continue
		}
		if err := r.skip(typ, end); err != nil {
			return err
		}
	}
	return nil
}

// NodeProto and AttributeProto fields.
const (
	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5
	nodeDomain    = 7
	attrGraph     = 6
	attrGraphs    = 11
)

// node walks a NodeProto: its operator type is recorded, its attributes
// are searched for subgraphs, and their tensors are skipped.
func (r *reader) node(end int64, g *Graph, depth int) error {
	var small []byte
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		switch {
		case num == nodeAttribute && typ == protowire.BytesType:
			n, err := r.length(end)
			if err != nil {
				return err
			}
			err = r.attribute(r.off+n, g, depth)
			if err != nil {
				return err
			}
		case num == nodeInput || num == nodeOutput || num == nodeName || num == nodeOpType || num == nodeDomain:
			if small, err = r.collect(small, num, typ, end); err != nil {
				return err
			}
		default:
			if err := r.skip(typ, end); err != nil {
				return err
			}
		}
	}
	var n onnxpb.NodeProto
	if err := proto.Unmarshal(small, &n); err != nil {
		return r.malformed("%v", err)
	}
	if n.GetOpType() == "" {
		return r.malformed("a node without an operator type")
	}
	r.ops[opName(n.GetDomain(), n.GetOpType())] = true
	return nil
}

// opName spells an operator type: "Type" in the default domain,
// "domain:Type" in any other.
func opName(domain, op string) string {
	if domain == "" || domain == "ai.onnx" {
		return op
	}
	return domain + ":" + op
}

// attribute walks an AttributeProto, descending into its subgraphs and
// skipping everything else (tensors included).
func (r *reader) attribute(end int64, g *Graph, depth int) error {
	for r.off < end {
		num, typ, err := r.tag()
		if err != nil {
			return err
		}
		if (num == attrGraph || num == attrGraphs) && typ == protowire.BytesType {
			n, err := r.length(end)
			if err != nil {
				return err
			}
			if err := r.graph(r.off+n, g, depth+1); err != nil {
				return err
			}
			continue
		}
		if err := r.skip(typ, end); err != nil {
			return err
		}
	}
	return nil
}

// Marshal encodes a model built from the generated types; tests and the
// fixture generator use it to write small models.
func Marshal(m *onnxpb.ModelProto) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// DecodeBytes reads the graph facts of an ONNX model in memory.
func DecodeBytes(b []byte) (*Graph, error) {
	return Decode(bytes.NewReader(b), int64(len(b)))
}
