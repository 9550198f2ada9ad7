package serve

import (
	"math"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/genaic/genaic/serve/oippb"
)

// A ModelInferRequest has a fixed structure: names, datatypes, shapes,
// parameters and the inputs' bytes. protobuf's generic decoder reads it
// through its message tables, a message and a copy of the bytes at a time,
// which on a stream costs the server more than anything it does outside
// the engine. readInferRequest reads that structure directly: the inputs
// in one allocation, their bytes copied into one buffer. Anything it does
// not read exactly as proto.Unmarshal would (a field it does not know, a
// wire type a field does not have, tensor contents, a parameter that is
// not one value, text that is not UTF-8) makes it report false, and the
// message is decoded by protobuf as before. FuzzReadInferRequest compares
// the two.

// inferCodec is the server's codec: protobuf's, with ModelInferRequests
// read by readInferRequest where it can. Its name is protobuf's: clients
// send what they send to any server.
type inferCodec struct{ proto encoding.CodecV2 }

func newInferCodec() inferCodec { return inferCodec{proto: encoding.GetCodecV2("proto")} }

func (inferCodec) Name() string { return "proto" }

func (c inferCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c inferCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*oippb.ModelInferRequest); ok {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		read := readInferRequest(buf.ReadOnlyData(), m)
		buf.Free()
		if read {
			return nil
		}
		*m = oippb.ModelInferRequest{}
	}
	return c.proto.Unmarshal(data, v)
}

// readInferRequest reads b into m (a zero message), reporting false where
// it does not read b as proto.Unmarshal would.
func readInferRequest(b []byte, m *oippb.ModelInferRequest) bool {
	// A first pass counts the inputs and the raw contents' bytes, so that
	// each goes into one allocation.
	inputs, rawBytes, raws := 0, 0, 0
	ok := fields(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) bool {
		switch {
		case num == 5 && typ == protowire.BytesType:
			inputs++
		case num == 7 && typ == protowire.BytesType:
			// Each one 8-byte aligned: a tensor may view it (fromBytes).
			rawBytes += (len(value) + 7) &^ 7
			raws++
		}
		return true
	})
	if !ok {
		return false
	}
	tensors := make([]oippb.ModelInferRequest_InferInputTensor, 0, inputs)
	arena := memoryOf(make([]uint64, rawBytes/8)) // words: 8-byte aligned
	if inputs > 0 {
		m.Inputs = make([]*oippb.ModelInferRequest_InferInputTensor, 0, inputs)
	}
	if raws > 0 {
		m.RawInputContents = make([][]byte, 0, raws)
	}
	return fields(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) bool {
		if typ != protowire.BytesType {
			return false
		}
		switch num {
		case 1:
			return text(value, &m.ModelName)
		case 2:
			return text(value, &m.ModelVersion)
		case 3:
			return text(value, &m.Id)
		case 4:
			return paramEntry(value, &m.Parameters)
		case 5:
			// Within the capacity counted: the message is made in place.
			tensors = tensors[:len(tensors)+1]
			in := &tensors[len(tensors)-1]
			m.Inputs = append(m.Inputs, in)
			return readInput(value, in)
		case 6:
			out := &oippb.ModelInferRequest_InferRequestedOutputTensor{}
			m.Outputs = append(m.Outputs, out)
			return readOutput(value, out)
		case 7:
			n := copy(arena, value)
			m.RawInputContents = append(m.RawInputContents, arena[:n:n])
			arena = arena[(n+7)&^7:]
			return true
		}
		return false
	})
}

func readInput(b []byte, in *oippb.ModelInferRequest_InferInputTensor) bool {
	return fields(b, func(num protowire.Number, typ protowire.Type, value []byte, v uint64) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			return text(value, &in.Name)
		case num == 2 && typ == protowire.BytesType:
			return datatypeText(value, &in.Datatype)
		case num == 3 && typ == protowire.VarintType:
			in.Shape = append(in.Shape, int64(v))
			return true
		case num == 3 && typ == protowire.BytesType:
			// Packed: the varints one after another.
			if in.Shape == nil && len(value) > 0 {
				in.Shape = make([]int64, 0, len(value))
			}
			for len(value) > 0 {
				d, n := protowire.ConsumeVarint(value)
				if n < 0 {
					return false
				}
				in.Shape, value = append(in.Shape, int64(d)), value[n:]
			}
			return true
		case num == 4 && typ == protowire.BytesType:
			return paramEntry(value, &in.Parameters)
		}
		return false // contents, or a field or wire type protobuf keeps as unknown
	})
}

func readOutput(b []byte, out *oippb.ModelInferRequest_InferRequestedOutputTensor) bool {
	return fields(b, func(num protowire.Number, typ protowire.Type, value []byte, _ uint64) bool {
		switch {
		case num == 1 && typ == protowire.BytesType:
			return text(value, &out.Name)
		case num == 2 && typ == protowire.BytesType:
			return paramEntry(value, &out.Parameters)
		}
		return false
	})
}

// paramEntry reads an entry of a parameters map, its key and its value
// each given once.
func paramEntry(b []byte, params *map[string]*oippb.InferParameter) bool {
	var key string
	var value *oippb.InferParameter
	seen := 0
	ok := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if typ != protowire.BytesType || num < 1 || num > 2 || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		if num == 1 {
			return text(v, &key)
		}
		value = &oippb.InferParameter{}
		return readParam(v, value)
	})
	if !ok || seen != 1<<1|1<<2 {
		return false
	}
	if *params == nil {
		*params = map[string]*oippb.InferParameter{}
	}
	(*params)[key] = value
	return true
}

// readParam reads a parameter of one value.
func readParam(b []byte, p *oippb.InferParameter) bool {
	return fields(b, func(num protowire.Number, typ protowire.Type, value []byte, v uint64) bool {
		if p.ParameterChoice != nil {
			return false // protobuf keeps the last; a client sends one
		}
		switch {
		case num == 1 && typ == protowire.VarintType:
			p.ParameterChoice = &oippb.InferParameter_BoolParam{BoolParam: v != 0}
		case num == 2 && typ == protowire.VarintType:
			p.ParameterChoice = &oippb.InferParameter_Int64Param{Int64Param: int64(v)}
		case num == 3 && typ == protowire.BytesType:
			var s string
			if !text(value, &s) {
				return false
			}
			p.ParameterChoice = &oippb.InferParameter_StringParam{StringParam: s}
		case num == 4 && typ == protowire.Fixed64Type:
			p.ParameterChoice = &oippb.InferParameter_DoubleParam{DoubleParam: math.Float64frombits(v)}
		case num == 5 && typ == protowire.VarintType:
			p.ParameterChoice = &oippb.InferParameter_Uint64Param{Uint64Param: v}
		default:
			return false
		}
		return true
	})
}

// text sets *s to a string field's value, which protobuf requires to be
// UTF-8; the protocol's datatypes come without a string made for them.
func text(b []byte, s *string) bool {
	if !utf8.Valid(b) {
		return false
	}
	*s = string(b)
	return true
}

func datatypeText(b []byte, s *string) bool {
	if dt, known := datatypes[string(b)]; known {
		*s = dt
		return true
	}
	return text(b, s)
}

// fields walks a message's fields, calling field with each one's number,
// wire type, and value (bytes, or a varint's or fixed field's bits). It
// reports false where b is not a message, or field did.
func fields(b []byte, field func(num protowire.Number, typ protowire.Type, value []byte, v uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var value []byte
		var v uint64
		switch typ {
		case protowire.BytesType:
			value, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(b)
			v = uint64(v32)
		default:
			return false // groups: no field of these messages is one
		}
		if n < 0 || !field(num, typ, value, v) {
			return false
		}
		b = b[n:]
	}
	return true
}
