package serve

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodeHTTP feeds the HTTP inference decoder hostile bodies and
// binary-length headers: it must refuse them with an error, never panic,
// and whatever it accepts holds tensors (items too) whose data matches
// their shape;
// decoding the JSON with the inputs' data split off (httpsplit.go) or
// whole decodes the same request, or fails both ways.
func FuzzDecodeHTTP(f *testing.F) {
	s := newServer(f, Config{Repo: repo(f, "image_padded"), NoWarmup: true})
	md := s.model("image_padded")
	seeds := []struct{ hlen, body string }{
		{"", `{"id":"a","inputs":[{"name":"pixel_patches","shape":[1,1,8],"datatype":"FP32","data":[1,2,3,4,5,6,7,8]},` +
			`{"name":"patch_lengths","shape":[1],"datatype":"INT64","data":[1]},{"name":"image_offsets","shape":[2],"datatype":"INT64","data":[0,1]},` +
			`{"name":"image_owner","shape":[1],"datatype":"INT64","data":[[0]]}],"parameters":{"timeout":"50ms","priority":3},"outputs":[{"name":"embeddings","parameters":{"binary_data":true}}]}`},
		{"95", `{"inputs":[{"name":"patch_lengths","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16}}]}` + "\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"},
		{"", `{"inputs":[{"name":"pixel_patches","shape":[1000000000000,1000000000000],"datatype":"FP32","data":[1]}]}`},
		{"-1", `{}`},
		{"", `{"inputs":[{"name":"image_owner","shape":[1],"datatype":"BOOL","data":[true]}]}`},
		// Forms the split decoding leaves to the whole one, or must agree with it on.
		{"117", `{"inputs":[{"name":"patch_lengths","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16},"data":[1,]}]}` + "\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"},
		{"", `{"inputs":[{"name":"patch_lengths","shape":[1],"datatype":"INT64","data":[1]}],"inputs":[{"name":"image_owner"}]}`},
		{"", `{"INPUTS":[{"name":"patch_lengths","shape":[1],"datatype":"INT64","DATA":[1],"d\u0061ta":[2]}]}`},
		{"", `{"id":"[{\"","parameters":{"x":["]}",{"y":"\\"}]},"inputs":[{"name":"image_owner","shape":[2],"datatype":"INT64","data":[[0],[1]]},null]} trailing`},
		{"", `{"ID":"é","Parameters":{"timeout":250,"p":[1,{"q":null}],"b":true},"inputs":[{"name":"image_owner","shape":[1],"datatype":"INT64","data":[0],"x":{"y":[]}}],"outputs":[{"name":"embeddings","parameters":{"binary_data":false}},{"name":"image_owner"}]}`},
		{"", `{"inputs":[{"name":"image_owner","shape":[1.0],"datatype":"INT64","data":[0]}],"outputs":[]}`},
		{"", `{"inputs":[{"name":"image_owner","shape":[1],"datatype":"INT64","data":[0],"name":"patch_lengths"}]}`},
		// The items form: extents, shapes (units among them), shapes as JSON text.
		{"", `{"inputs":[{"name":"pixel_patches","shape":[2,8],"datatype":"FP32","parameters":{"items":[1,1]},"data":[0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1]}]}`},
		{"", `{"inputs":[{"name":"pixel_patches","shape":[16],"datatype":"FP32","parameters":{"items":[[1,8],{"items":[[1,8],[0,8]]},{"items":[]},[]]},"data":[0,0,0,0,0,0,0,0,1,1,1,1,1,1,1]}]}`},
		{"", `{"inputs":[{"name":"pixel_patches","shape":[16],"datatype":"FP32","parameters":{"items":"[[2,8]]"},"data":[0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1]}]}`},
	}
	for _, sd := range seeds {
		f.Add(sd.hlen, []byte(sd.body))
	}
	f.Fuzz(func(t *testing.T, hlen string, body []byte) {
		req, asked, binaryOut, timeout, err := s.decodeHTTP(md, hlen, body)
		// Decoding the JSON whole, data included, decodes the same.
		s.wholeJSON = true
		wreq, wasked, wbinaryOut, wtimeout, werr := s.decodeHTTP(md, hlen, body)
		s.wholeJSON = false
		if (err == nil) != (werr == nil) {
			t.Fatalf("split: %v; whole: %v", err, werr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(req, wreq) || !slices.Equal(asked, wasked) || !maps.Equal(binaryOut, wbinaryOut) || timeout != wtimeout {
			t.Fatalf("split: %+v %v %v %v; whole: %+v %v %v %v", req, asked, binaryOut, timeout, wreq, wasked, wbinaryOut, wtimeout)
		}
		checkData(t, req)
	})
}

// checkData fails the test where an accepted request's tensors, its
// items' among them, hold other than their shapes' elements.
func checkData(t *testing.T, req vm.Request) {
	t.Helper()
	for name, tn := range req.Inputs {
		if n := backend.DataLen(tn.Data); n != tn.Len() {
			t.Fatalf("accepted input %s of shape %v with %d elements", name, tn.Shape, n)
		}
	}
	var walk func(name string, items []vm.Item)
	walk = func(name string, items []vm.Item) {
		for _, it := range items {
			if it.Tensor == nil {
				walk(name, it.Items)
			} else if n := backend.DataLen(it.Tensor.Data); n != it.Tensor.Len() {
				t.Fatalf("accepted an item of input %s of shape %v with %d elements", name, it.Tensor.Shape, n)
			}
		}
	}
	for name, items := range req.Items {
		walk(name, items)
	}
}

// FuzzDecodeGRPC does the same for gRPC requests, from their wire bytes.
func FuzzDecodeGRPC(f *testing.F) {
	s := newServer(f, Config{Repo: repo(f, "image_padded"), NoWarmup: true})
	md := s.model("image_padded")
	seed := &oippb.ModelInferRequest{ModelName: "image_padded", Id: "a", Inputs: []*oippb.ModelInferRequest_InferInputTensor{
		{Name: "patch_lengths", Datatype: "INT64", Shape: []int64{1}, Contents: &oippb.InferTensorContents{Int64Contents: []int64{1}}},
		{Name: "pixel_patches", Datatype: "FP32", Shape: []int64{1, 1, 8}},
	}, RawInputContents: [][]byte{nil, make([]byte, 32)}}
	b, err := proto.Marshal(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	seed = &oippb.ModelInferRequest{ModelName: "image_padded", Inputs: []*oippb.ModelInferRequest_InferInputTensor{
		{Name: "pixel_patches", Datatype: "FP32", Shape: []int64{16}, Parameters: itemsParams(itemsLayout{shapes: []itemShape{{shape: []int64{1, 8}}, {unit: true, items: []itemShape{{shape: []int64{1, 8}}}}}})},
	}, RawInputContents: [][]byte{make([]byte, 64)}}
	if b, err = proto.Marshal(seed); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, wire []byte) {
		var r oippb.ModelInferRequest
		if proto.Unmarshal(wire, &r) != nil {
			return
		}
		req, _, err := decodeGRPC(md, &r)
		if err != nil {
			return
		}
		checkData(t, req)
	})
}

// FuzzParseConfig: a --config document is parsed or refused, never a
// panic, and what is accepted passes its own checks again.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("defaults: { max_delay: 5ms, queue: 1024, workers: 1, threads: 0, provider: cpu }\nmodels:\n  image_padded: { max_delay: 10ms, queue: 256 }\n"))
	f.Add([]byte("models: { a: { queue: -1 } }"))
	f.Add([]byte("defaults: [1, 2]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("fuzz.yaml", b)
		if err != nil {
			return
		}
		if err := c.Defaults.check("defaults"); err != nil {
			t.Fatalf("accepted defaults fail their check: %v", err)
		}
	})
}

// FuzzRepository sends the repository extension hostile bodies, to each
// of its endpoints, on a server under explicit model control: every
// answer is a status the extension documents with a JSON body, and the
// model is afterwards either served and ready or not served at all (a
// load that was accepted serves it again).
func FuzzRepository(f *testing.F) {
	s := newServer(f, Config{Repo: repo(f, "image_padded"), NoWarmup: true, ModelControl: "explicit"})
	h := s.Handler()
	for _, seed := range []string{``, `{}`, `{"ready":true}`, `{"ready":"yes"}`, `{"parameters":{}}`, `{"parameters":{"unload_dependents":true}}`,
		`{"parameters":{"config":"{}"}}`, `{"parameters":{"x":1}}`, `{"parameters":null}`, `[`, `{"parameters":{"unload_dependents":true},"parameters":{"config":1}}`} {
		for verb := range uint8(3) {
			f.Add(verb, "image_padded", []byte(seed))
		}
	}
	f.Add(uint8(1), "../image_padded", []byte(``))
	f.Fuzz(func(t *testing.T, verb uint8, model string, body []byte) {
		if model == "" || model == "." || model == ".." || strings.Contains(model, "/") {
			// Not one path segment: the mux answers such a path itself
			// (a redirect to its clean form, or its plain 404).
			return
		}
		path := "/v2/repository/index"
		switch verb % 3 {
		case 1:
			path = "/v2/repository/models/" + url.PathEscape(model) + "/load"
		case 2:
			path = "/v2/repository/models/" + url.PathEscape(model) + "/unload"
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		switch w.Code {
		case 200, 400, 404, 503:
		default:
			t.Fatalf("POST %s %q: status %d", path, body, w.Code)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("POST %s %q: %d, not JSON: %q", path, body, w.Code, w.Body.String())
		}
		if md := s.model("image_padded"); md != nil && !md.ready.Load() {
			t.Fatalf("after POST %s %q: the model is served but not ready", path, body)
		}
	})
}
