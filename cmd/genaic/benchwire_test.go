package main

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/serve/oippb"
)

// TestWireCodec: a request encoded once reads back, on the server's side
// (proto.Unmarshal), as the message it was made of with the id given
// (none, the document's, or a stream's in its place); of a stream's
// answer the id and error message are read; an answer whose fields are
// not protobuf fails the request.
func TestWireCodec(t *testing.T) {
	c := newWireCodec()
	m := &oippb.ModelInferRequest{ModelName: "text_packed", Id: "r07",
		Inputs:           []*oippb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "INT64", Shape: []int64{2}}},
		RawInputContents: [][]byte{{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}}}
	w, err := newWireRequest(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "r07", "12345"} {
		bufs, err := c.Marshal(w.withID("r07").withID(id))
		if err != nil {
			t.Fatal(err)
		}
		var got oippb.ModelInferRequest
		if err := proto.Unmarshal(bufs.Materialize(), &got); err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		want := proto.Clone(m).(*oippb.ModelInferRequest)
		want.Id = id
		if !proto.Equal(&got, want) {
			t.Errorf("id %q: the server reads %v, want %v", id, &got, want)
		}
	}

	for _, a := range []*oippb.ModelStreamInferResponse{
		{InferResponse: &oippb.ModelInferResponse{ModelName: "m", Id: "42", RawOutputContents: [][]byte{{9}}}},
		{ErrorMessage: "run/input: no", InferResponse: &oippb.ModelInferResponse{Id: "7"}},
		{},
	} {
		b, err := proto.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var got streamAnswer
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got); err != nil {
			t.Fatal(err)
		}
		if want := (streamAnswer{id: a.GetInferResponse().GetId(), errorMessage: a.ErrorMessage}); got != want {
			t.Errorf("read %+v of %v, want %+v", got, a, want)
		}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &unaryAnswer{}); err != nil {
			t.Errorf("%v: %v", a, err)
		}
	}
	// Cut short: a length past the end, a varint, a group never closed.
	for _, bad := range [][]byte{{0x12, 0x05, 'a'}, {0x80}, {0x0b}} {
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &streamAnswer{}); err == nil {
			t.Errorf("%x read as a stream's answer", bad)
		}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &unaryAnswer{}); err == nil {
			t.Errorf("%x read as an answer", bad)
		}
	}
	// A stream's answer whose infer_response is cut short.
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x12, 0x02, 0x1a, 0x07})}, &streamAnswer{}); err == nil {
		t.Error("an infer_response cut short read as a stream's answer")
	}
}
