package serve

import (
	"path/filepath"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/serve/oippb"
)

// inferRequestSeeds are encoded ModelInferRequests: the text example's
// requests as genaic's client sends them, one with every kind of
// parameter and outputs asked for, one whose shape is not packed, and
// forms readInferRequest leaves to protobuf (tensor contents, a field it
// does not know, a parameter given two values).
func inferRequestSeeds(t testing.TB) [][]byte {
	t.Helper()
	var seeds [][]byte
	add := func(m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	reqs, err := readRequests(filepath.Join("..", "testdata", "packages", "text_packed"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[:3] {
		m, err := EncodeGRPC("text_packed", r)
		if err != nil {
			t.Fatal(err)
		}
		add(m)
	}
	params := map[string]*oippb.InferParameter{
		"b": {ParameterChoice: &oippb.InferParameter_BoolParam{BoolParam: true}},
		"i": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: -5}},
		"s": {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: "3,4"}},
		"d": {ParameterChoice: &oippb.InferParameter_DoubleParam{DoubleParam: 2.5}},
		"u": {ParameterChoice: &oippb.InferParameter_Uint64Param{Uint64Param: 1 << 63}},
		"":  {},
	}
	add(&oippb.ModelInferRequest{ModelName: "m", ModelVersion: "1", Id: "é", Parameters: params,
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{1, 3}, Parameters: params},
			{Name: "y", Datatype: "INT64", Shape: []int64{}},
		},
		Outputs:          []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "z", Parameters: params}, {Name: "w"}},
		RawInputContents: [][]byte{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {}}})
	add(&oippb.ModelInferRequest{Inputs: []*oippb.ModelInferRequest_InferInputTensor{
		{Name: "x", Datatype: "FP32", Shape: []int64{2}, Contents: &oippb.InferTensorContents{Fp32Contents: []float32{1, 2}}}}})
	// An input whose shape's dimensions come one field each, then a field
	// the message does not have, then a parameter with two values.
	in := protowire.AppendTag(nil, 1, protowire.BytesType)
	in = protowire.AppendString(in, "x")
	for _, d := range []uint64{2, 3} {
		in = protowire.AppendVarint(protowire.AppendTag(in, 3, protowire.VarintType), d)
	}
	seeds = append(seeds, protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), in))
	seeds = append(seeds, protowire.AppendVarint(protowire.AppendTag(seeds[len(seeds)-1], 9, protowire.VarintType), 1))
	two := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	two = protowire.AppendVarint(protowire.AppendTag(two, 2, protowire.VarintType), 7)
	entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k")
	entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), two)
	seeds = append(seeds, protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), entry))
	return seeds
}

// FuzzReadInferRequest: wherever readInferRequest reads a message,
// protobuf reads it too, as the same message, and the raw contents lie
// on 8-byte boundaries (a tensor may view them).
func FuzzReadInferRequest(f *testing.F) {
	for _, s := range inferRequestSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want oippb.ModelInferRequest
		if !readInferRequest(b, &got) {
			return
		}
		if err := proto.Unmarshal(b, &want); err != nil {
			t.Fatalf("%x: read, where protobuf refuses it: %v", b, err)
		}
		if !proto.Equal(&got, &want) {
			t.Fatalf("%x:\nread     %v\nprotobuf %v", b, &got, &want)
		}
		for i, raw := range got.RawInputContents {
			if uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%8 != 0 {
				t.Fatalf("raw_input_contents[%d] is not 8-byte aligned", i)
			}
		}
	})
}

// TestInferCodec: the server's codec reads every seed as protobuf does,
// those readInferRequest leaves to protobuf included, and the seeds it
// reads itself are the usual ones.
func TestInferCodec(t *testing.T) {
	c := newInferCodec()
	read := 0
	for _, b := range inferRequestSeeds(t) {
		var got, want oippb.ModelInferRequest
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got); err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		if err := proto.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, &want) {
			t.Errorf("%x:\ncodec    %v\nprotobuf %v", b, &got, &want)
		}
		if readInferRequest(b, &oippb.ModelInferRequest{}) {
			read++
		}
	}
	if read != 5 {
		t.Errorf("readInferRequest read %d seeds; want the 3 requests, the one with parameters and the unpacked shape", read)
	}
}
