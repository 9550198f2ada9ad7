package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/genaic/genaic/backend"
)

// FuzzEnvelope: wherever appendEnvelope writes an answer's JSON part, it
// writes the bytes json.Marshal writes of the response writeHTTP would
// otherwise build (outputs with binary_data_size, and items where given);
// where it declines, a string needed escaping.
func FuzzEnvelope(f *testing.F) {
	f.Add("text_packed", "req-1", "segment_embeddings", "FP32", int64(3), int64(128), uint16(1536), true, false)
	f.Add("m", "", "out", "INT64", int64(0), int64(-1), uint16(0), false, true)
	f.Add("m<", "a\"b", "o\\", "FP16", int64(1), int64(2), uint16(7), true, true)
	f.Add("m", "é", "o\x00", "BOOL", int64(-5), int64(1<<40), uint16(65535), false, false)
	f.Fuzz(func(t *testing.T, model, id, name, datatype string, d0, d1 int64, size uint16, items, scalar bool) {
		shape := []int64{d0, d1}
		if scalar {
			shape = nil
		}
		var extents []int64
		if items {
			extents = []int64{d1, d0}
		}
		outs := []binaryOutput{
			{name: name, datatype: datatype, shape: shape, extents: extents, size: int(size)},
			{name: name + "_b", datatype: "INT64", shape: []int64{d0}, size: 8},
		}
		got, ok := appendEnvelope([]byte("prefix"), model, Version, id, outs)
		if !ok {
			if !bytes.Equal(got, []byte("prefix")) {
				t.Fatalf("declined, yet appended %q", got)
			}
			if plainJSON(model) && plainJSON(id) && plainJSON(name) && plainJSON(datatype) {
				t.Fatalf("declined plain strings %q %q %q %q", model, id, name, datatype)
			}
			return
		}
		resp := jsonResponse{ModelName: model, ModelVersion: Version, ID: id, Outputs: []jsonDataTensor{}}
		for _, o := range outs {
			ot := jsonDataTensor{Name: o.name, Shape: o.shape, Datatype: o.datatype, Parameters: map[string]any{"binary_data_size": o.size}}
			if o.extents != nil {
				ot.Parameters[itemsParam] = o.extents
			}
			resp.Outputs = append(resp.Outputs, ot)
		}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("appendEnvelope wrote\n%s\njson.Marshal writes\n%s", got[len("prefix"):], want)
		}
	})
}

// TestBinaryAnswer: a text request answered with binary outputs through
// the Handler carries the JSON part appendEnvelope writes, the same that
// encoding/json writes of it, and outputs that decode to the engine's.
func TestBinaryAnswer(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed"), NoWarmup: true})
	md := s.models["text_packed"]
	reqs, err := readRequests(md.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[:4] {
		resp := md.eng.Run(context.Background(), r)
		names, err := md.outputOrder(resp, nil)
		if err != nil {
			t.Fatal(err)
		}
		blobs, header, ok := binaryAnswer(md, resp, names, map[string]bool{"": true})
		if !ok || len(blobs) != len(names) {
			t.Fatalf("%s: binaryAnswer declined a plain answer", r.ID)
		}
		var env jsonResponse
		if err := json.Unmarshal(header, &env); err != nil || env.ID != r.ID || len(env.Outputs) != len(names) {
			t.Fatalf("%s: %s: %v", r.ID, header, err)
		}
		w := httptest.NewRecorder()
		s.writeHTTP(w, md, resp, nil, map[string]bool{"": true})
		if !bytes.HasPrefix(w.Body.Bytes(), header) || w.Header().Get(HeaderLength) == "" {
			t.Errorf("%s: the Handler's answer does not start with %s", r.ID, header)
		}
		if _, _, ok := binaryAnswer(md, resp, names, map[string]bool{"": false}); ok {
			t.Errorf("%s: binaryAnswer took an answer of JSON outputs", r.ID)
		}
	}
}

// TestRawMemory: a tensor's bytes (its memory, on a little-endian host)
// are the bytes encoding/binary writes of its elements, little-endian, for
// every dtype, and read back into the same elements.
func TestRawMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dtype := range []string{"float32", "float64", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "float16", "bfloat16", "bool"} {
		x, err := backend.NewTensor(dtype, []int64{3, 5})
		if err != nil {
			t.Fatal(err)
		}
		raw := make([]byte, 15*size(dtype))
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		if dtype == "bool" {
			for i := range raw {
				raw[i] &= 1
			}
		}
		if _, err := binary.Decode(raw, binary.LittleEndian, x.Data); err != nil && dtype != "bool" {
			t.Fatal(err)
		}
		if dtype == "bool" {
			for i, c := range raw {
				x.Data.([]bool)[i] = c == 1
			}
		}
		if got := toBytes(x); !bytes.Equal(got, raw) {
			t.Errorf("%s: toBytes %v, encoding/binary %v", dtype, got, raw)
		}
		back, err := fromBytes("x", dtype, x.Shape, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Data, x.Data) {
			t.Errorf("%s: fromBytes %v, want %v", dtype, back.Data, x.Data)
		}
	}
}
