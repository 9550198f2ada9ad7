package main

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/serve/oippb"
)

// A bench's gRPC client spends its time on what the server is measured
// by, not on protobuf: each request is encoded once, before the rounds,
// and sent as those bytes every time; of an answer only what the bench
// looks at is read (a stream's id and error message), the rest walked
// over to check that it is protobuf. The server sees the messages
// genaic's own client sends: the codec is the proto codec on the wire.

// wireRequest is a ModelInferRequest encoded once, without its id; id,
// where set, is its id field, encoded per send and sent after it
// (protobuf reads the fields of a message in any order).
type wireRequest struct {
	body, id []byte
}

// newWireRequest encodes m without its id.
func newWireRequest(m *oippb.ModelInferRequest) (*wireRequest, error) {
	noID := proto.Clone(m).(*oippb.ModelInferRequest)
	noID.Id = ""
	body, err := proto.Marshal(noID)
	if err != nil {
		return nil, err
	}
	return &wireRequest{body: body}, nil
}

// withID is the request with the id given in place of its own.
func (w *wireRequest) withID(id string) *wireRequest {
	if id == "" {
		return &wireRequest{body: w.body}
	}
	return &wireRequest{body: w.body, id: protowire.AppendString(protowire.AppendTag(nil, idField, protowire.BytesType), id)}
}

// The field numbers the bench reads: ModelInferRequest's and
// ModelInferResponse's id, ModelStreamInferResponse's error_message and
// infer_response.
const (
	idField            = 3
	errorMessageField  = 1
	inferResponseField = 2
)

// unaryAnswer is a ModelInferResponse the bench only checks is one.
type unaryAnswer struct{}

// streamAnswer is what the bench reads of a ModelStreamInferResponse.
type streamAnswer struct {
	id, errorMessage string
}

// wireCodec writes wireRequests as they are and reads unaryAnswers and
// streamAnswers; other messages (the bench's ModelReady, statistics) go
// through the proto codec.
type wireCodec struct{ proto encoding.CodecV2 }

func newWireCodec() wireCodec { return wireCodec{proto: encoding.GetCodecV2("proto")} }

// Name is the proto codec's: the content type the server reads.
func (wireCodec) Name() string { return "proto" }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	w, ok := v.(*wireRequest)
	if !ok {
		return c.proto.Marshal(v)
	}
	if w.id == nil {
		return mem.BufferSlice{mem.SliceBuffer(w.body)}, nil
	}
	return mem.BufferSlice{mem.SliceBuffer(w.body), mem.SliceBuffer(w.id)}, nil
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch a := v.(type) {
	case *unaryAnswer:
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		return walkFields(buf.ReadOnlyData(), nil)
	case *streamAnswer:
		*a = streamAnswer{}
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		return walkFields(buf.ReadOnlyData(), func(num protowire.Number, value []byte) error {
			switch num {
			case errorMessageField:
				a.errorMessage = string(value)
			case inferResponseField:
				return walkFields(value, func(num protowire.Number, value []byte) error {
					if num == idField {
						a.id = string(value)
					}
					return nil
				})
			}
			return nil
		})
	}
	return c.proto.Unmarshal(data, v)
}

// errNotProtobuf is an answer that is not a protobuf message.
var errNotProtobuf = errors.New("the answer is no protobuf message")

// walkFields walks a message's fields, calling bytesField (where not nil)
// with the number and value of each of the length-delimited ones, and
// fails where b is not a protobuf message.
func walkFields(b []byte, bytesField func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errNotProtobuf
		}
		b = b[n:]
		if typ == protowire.BytesType && bytesField != nil {
			value, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errNotProtobuf
			}
			if err := bytesField(num, value); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("%w: field %d", errNotProtobuf, num)
		}
		b = b[m:]
	}
	return nil
}
