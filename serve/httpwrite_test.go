package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
)

// FuzzAnswer: wherever appendAnswer writes an answer's JSON, it writes
// the bytes json.Marshal writes of the response writeHTTP would otherwise
// build: outputs with binary_data_size, and items where given (as
// extents or as shapes), beside an output whose values go as JSON, of
// the dtype numbered kind, read from raw; where it declines, a string
// needed escaping, the values are strings or are not JSON (NaN).
func FuzzAnswer(f *testing.F) {
	f.Add("text_packed", "req-1", "segment_embeddings", "FP32", int64(3), int64(128), uint16(1536), true, false, uint8(0), []byte("\x00\x00\x80\x3f\xff\xff\x7f\x7f"))
	f.Add("m", "", "out", "INT64", int64(0), int64(-1), uint16(0), false, true, uint8(1), []byte{})
	f.Add("m<", "a\"b", "o\\", "FP16", int64(1), int64(2), uint16(7), true, true, uint8(2), []byte("\x01\x00\x00\x00\x00\x00\xf0\x3e"))
	f.Add("m", "é", "o\x00", "BOOL", int64(-5), int64(1<<40), uint16(65535), false, false, uint8(3), []byte{7, 0, 1})
	f.Fuzz(func(t *testing.T, model, id, name, datatype string, d0, d1 int64, size uint16, items, scalar bool, kind uint8, raw []byte) {
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
		data := fuzzData(kind, raw)
		outs := []answerOutput{
			{name: name, datatype: datatype, shape: shape, items: layout, size: int(size)},
			{name: name + "_b", datatype: "INT64", shape: []int64{d0}, size: 8},
			{name: name + "_j", datatype: datatype, shape: []int64{d1}, items: layout, size: -1, data: data},
		}
		got, ok := appendAnswer([]byte("prefix"), model, Version, id, outs)
		resp := jsonResponse{ModelName: model, ModelVersion: Version, ID: id, Outputs: []jsonDataTensor{}}
		for _, o := range outs {
			ot := jsonDataTensor{Name: o.name, Shape: o.shape, Datatype: o.datatype, Parameters: map[string]any{}}
			if o.size >= 0 {
				ot.Parameters["binary_data_size"] = o.size
			}
			if o.items.isSet() {
				ot.Parameters[itemsParam] = value
			}
			if o.size < 0 {
				ot.Data = o.data
			}
			resp.Outputs = append(resp.Outputs, ot)
		}
		want, err := json.Marshal(resp)
		if !ok {
			if !bytes.Equal(got, []byte("prefix")) {
				t.Fatalf("declined, yet appended %q", got)
			}
			_, strs := data.([]string) // strings are left to encoding/json
			if plainJSON(model) && plainJSON(id) && plainJSON(name) && plainJSON(datatype) && !strs && err == nil {
				t.Fatalf("declined plain strings %q %q %q %q and data %v", model, id, name, datatype, data)
			}
			return
		}
		if err != nil {
			t.Fatalf("appendAnswer wrote %s where json.Marshal fails: %v", got, err)
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("appendAnswer wrote\n%s\njson.Marshal writes\n%s", got[len("prefix"):], want)
		}
	})
}

// fuzzData is an output's values of the dtype numbered kind (the forms
// jsonData returns), read from raw's bytes; a nil slice where raw is
// empty.
func fuzzData(kind uint8, raw []byte) any {
	if len(raw) == 0 && kind%2 == 0 {
		return []float32(nil)
	}
	switch kind % 12 {
	case 0:
		return decodeAs[float32](raw)
	case 1:
		return decodeAs[float64](raw)
	case 2:
		return decodeAs[int64](raw)
	case 3:
		return decodeAs[int32](raw)
	case 4:
		return decodeAs[int16](raw)
	case 5:
		return decodeAs[int8](raw)
	case 6:
		return decodeAs[uint64](raw)
	case 7:
		return decodeAs[uint32](raw)
	case 8:
		return decodeAs[uint16](raw)
	case 9:
		ints := make([]int, len(raw))
		for i, c := range raw {
			ints[i] = int(c)
		}
		return ints
	case 10:
		bs := make([]bool, len(raw))
		for i, c := range raw {
			bs[i] = c&1 == 1
		}
		return bs
	}
	return []string{string(raw)} // a form appendData does not write
}

// decodeAs reads raw's little-endian elements of E (as many as fit).
func decodeAs[E float32 | float64 | int64 | int32 | int16 | int8 | uint64 | uint32 | uint16](raw []byte) []E {
	out := make([]E, len(raw)/binary.Size(E(0)))
	binary.Decode(raw, binary.LittleEndian, out)
	return out
}

// TestAppendFloat: appendFloat writes every float as encoding/json does,
// at the bounds of its two forms too (1e-6 and 1e21, as float32 and
// float64, and their neighbours), and declines NaN and the infinities.
func TestAppendFloat(t *testing.T) {
	var f32 []float32
	for _, v := range []float32{0, 1, -1, 1e-6, 1e21, 1e-7, 1e20, 123456789, 3.4028235e38, 1e-45, 0.1} {
		f32 = append(f32, v, -v, math.Nextafter32(v, 0), math.Nextafter32(v, float32(math.Inf(1))))
	}
	var f64 []float64
	for _, v := range []float64{0, 1, 1e-6, 1e21, 1e-7, 1e20, 1.7976931348623157e308, 5e-324, 0.1, 1e-100} {
		f64 = append(f64, v, -v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		f32 = append(f32, math.Float32frombits(rng.Uint32()))
		f64 = append(f64, math.Float64frombits(rng.Uint64()))
	}
	check := func(v any, got []byte, ok bool) {
		want, err := json.Marshal(v)
		if ok != (err == nil) || ok && !bytes.Equal(got, want) {
			t.Errorf("%v: appendFloat %q (%v), json.Marshal %q (%v)", v, got, ok, want, err)
		}
	}
	for _, v := range f32 {
		got, ok := appendFloat(nil, float64(v), 32)
		check(v, got, ok)
	}
	for _, v := range f64 {
		got, ok := appendFloat(nil, v, 64)
		check(v, got, ok)
	}
}

// TestBinaryAnswer: a text request answered with binary outputs carries
// a JSON part (appendAnswer's) that decodes to the model, id and
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
