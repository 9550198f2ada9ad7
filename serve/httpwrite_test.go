package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
)

// FuzzEnvelope: wherever appendEnvelope writes an answer's JSON part, it
// writes the bytes json.Marshal writes of the response writeHTTP would
// otherwise build (outputs with binary_data_size, and items where given,
// as extents or as shapes); where it declines, a string needed escaping.
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
		// An output in the items form: extents, or (scalar) every item's
		// shape, a unit of nested items among them.
		var layout itemsLayout
		var value any
		switch {
		case items && !scalar:
			layout.extents = []int64{d1, d0}
			value = layout.extents
		case items:
			layout.shapes = []itemShape{{shape: []int64{d0, d1}}, {unit: true, items: []itemShape{{shape: []int64{d1}}, {shape: nil}}}, {unit: true}}
			value = []any{[]int64{d0, d1}, map[string]any{"items": []any{[]int64{d1}, []int64{}}}, map[string]any{"items": []any{}}}
		}
		outs := []binaryOutput{
			{name: name, datatype: datatype, shape: shape, items: layout, size: int(size)},
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
			if o.items.isSet() {
				ot.Parameters[itemsParam] = value
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

// TestBinaryAnswer: a text request answered with binary outputs carries
// a JSON part (appendEnvelope's) that decodes to the model, id and
// outputs, whose binary_data_size account for every byte after it, and
// bytes that read back as the engine's outputs; asked as JSON, the same
// answer carries the data inline and no binary part.
func TestBinaryAnswer(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed"), NoWarmup: true})
	md := s.model("text_packed")
	reqs, err := readRequests(md.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[:4] {
		resp := md.eng.Run(context.Background(), r)
		w := httptest.NewRecorder()
		s.writeHTTP(w, md, resp, nil, map[string]bool{"": true})
		hlen, err := strconv.Atoi(w.Header().Get(HeaderLength))
		if err != nil {
			t.Fatalf("%s: %s %q: %v", r.ID, HeaderLength, w.Header().Get(HeaderLength), err)
		}
		body := w.Body.Bytes()
		var env struct {
			ModelName string `json:"model_name"`
			ID        string `json:"id"`
			Outputs   []struct {
				Name       string
				Shape      []int64
				Datatype   string
				Parameters struct {
					Size int `json:"binary_data_size"`
				}
			}
		}
		if err := json.Unmarshal(body[:hlen], &env); err != nil || env.ID != r.ID || env.ModelName != "text_packed" || len(env.Outputs) == 0 {
			t.Fatalf("%s: %s: %v", r.ID, body[:hlen], err)
		}
		got := map[string]*backend.Tensor{}
		at := hlen
		for _, o := range env.Outputs {
			dt, err := dtypeOf(o.Name, o.Datatype)
			if err == nil && at+o.Parameters.Size <= len(body) {
				got[o.Name], err = fromBytes(o.Name, dt, o.Shape, body[at:at+o.Parameters.Size])
			}
			if err != nil {
				t.Fatalf("%s: output %s: %v", r.ID, o.Name, err)
			}
			at += o.Parameters.Size
		}
		if at != len(body) {
			t.Errorf("%s: the sizes account for %d of %d bytes", r.ID, at, len(body))
		}
		if err := same(got, resp.Outputs.Map()); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		w = httptest.NewRecorder()
		s.writeHTTP(w, md, resp, nil, map[string]bool{"": false})
		var asJSON jsonResponse
		if w.Header().Get(HeaderLength) != "" || json.Unmarshal(w.Body.Bytes(), &asJSON) != nil || len(asJSON.Outputs) != len(env.Outputs) || asJSON.Outputs[0].Data == nil {
			t.Errorf("%s: asked as JSON: %s", r.ID, w.Body.Bytes())
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
