package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// sameAnswer compares an answer's outputs and per-item outputs with a
// reference response's, item by item (same's tolerance).
func sameAnswer(outs map[string]*backend.Tensor, items map[string][]vm.Item, want vm.Response) error {
	if err := same(outs, want.Outputs.Map()); err != nil {
		return err
	}
	if len(items) != len(want.Items) {
		return fmt.Errorf("per-item outputs %v, want %v", sortedKeys(items), sortedKeys(want.Items))
	}
	for name, w := range want.Items {
		if err := sameItems(items[name], w); err != nil {
			return fmt.Errorf("output %s: %v", name, err)
		}
	}
	return nil
}

// concat joins one request's items along their first axis, as a client
// of the items form sends them.
func concat(its []vm.Item) (*backend.Tensor, []int64) {
	var rows int64
	var ext []int64
	for _, it := range its {
		ext = append(ext, it.Tensor.Shape[0])
		rows += it.Tensor.Shape[0]
	}
	t, _ := backend.NewTensor(its[0].Tensor.DType, append([]int64{rows}, its[0].Tensor.Shape[1:]...))
	var at int64
	for _, it := range its {
		at += t.CopyElems(at, it.Tensor, 0, it.Tensor.Len())
	}
	return t, ext
}

// TestItemsForm: the ocr_lines requests (lines as items, one with
// line_widths given too) sent in the OIP items form over HTTP (JSON and
// binary) and gRPC are answered item by item as the VM answers the same
// items requests.
func TestItemsForm(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "ocr_lines")})
	ref, err := engine.Open(s.model("ocr_lines").plan, s.model("ocr_lines").Dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	reqs, err := readRequests(s.model("ocr_lines").Dir)
	if err != nil || len(reqs) == 0 {
		t.Fatalf("requests: %v", err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	for _, r := range reqs {
		if len(r.Items["line_images"]) == 0 {
			t.Fatalf("request %s gives no items", r.ID)
		}
		resp := ref.Run(context.Background(), r)
		if resp.Err != nil || len(resp.Items["line_scores"]) != len(r.Items["line_images"]) {
			t.Fatalf("%s: reference %v, items %d", r.ID, resp.Err, len(resp.Items["line_scores"]))
		}
		packed, ext := concat(r.Items["line_images"])
		for _, binary := range []bool{false, true} {
			a, err := postItems(hs.URL+"/v2/models/ocr_lines/infer", r, "line_images", packed, ext, binary)
			if err != nil {
				t.Fatalf("%s (HTTP, binary %v): %v", r.ID, binary, err)
			}
			if err := sameAnswer(a.outputs, a.items, resp); err != nil {
				t.Errorf("%s (HTTP, binary %v): %v", r.ID, binary, err)
			}
		}
		g := grpcRequest("ocr_lines", vm.Request{ID: r.ID, Inputs: r.Inputs}, true, nil)
		g.Inputs = append(g.Inputs, &oippb.ModelInferRequest_InferInputTensor{Name: "line_images", Datatype: "FP32", Shape: packed.Shape,
			Parameters: map[string]*oippb.InferParameter{"items": {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: commaList(ext)}}}})
		g.RawInputContents = append(g.RawInputContents, toBytes(packed))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		gr, err := gc.ModelInfer(ctx, g)
		cancel()
		if err != nil {
			t.Fatalf("%s (gRPC): %v", r.ID, err)
		}
		if p := gr.Outputs[0].Parameters["items"].GetStringParam(); gr.Outputs[0].Name != "line_scores" || p != strings.TrimSuffix(strings.Repeat("4,", len(ext)), ",") {
			t.Errorf("%s (gRPC): output %s has items %q, want the extents of %d items of 4 scores", r.ID, gr.Outputs[0].Name, p, len(ext))
		}
		got, err := DecodeGRPC(gr)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameAnswer(got.Outputs.Map(), got.Items, resp); err != nil {
			t.Errorf("%s (gRPC): %v", r.ID, err)
		}
	}

	// Wrong extents fail that request alone, as run/input.
	bad := []string{`[1, 2]`, `[-1, 6]`, `"x"`, `[]`, `[1.5, 3.5]`}
	for _, items := range bad {
		body := `{"inputs":[{"name":"line_images","datatype":"FP32","shape":[5,8],"parameters":{"items":` + items + `},"data":[` + strings.TrimSuffix(strings.Repeat("0,", 40), ",") + `]}]}`
		res, err := http.Post(hs.URL+"/v2/models/ocr_lines/infer", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "run/input") || !strings.Contains(string(b), "items") {
			t.Errorf("items %s: %d %s, want 400 run/input about items", items, res.StatusCode, b)
		}
	}
}

// commaList writes integers as a gRPC items parameter does: "12,24,5".
func commaList(ns []int64) string {
	var ss []string
	for _, n := range ns {
		ss = append(ss, fmt.Sprint(n))
	}
	return strings.Join(ss, ",")
}

// postItems sends a request over HTTP with the input name in the items
// form (the tensor packed, the parameter items) and its other inputs as
// tensors, and returns the answer.
func postItems(url string, r vm.Request, name string, packed *backend.Tensor, items any, binary bool) (httpAnswer, error) {
	var ins []map[string]any
	var blob []byte
	add := func(name string, t *backend.Tensor, params map[string]any) {
		in := map[string]any{"name": name, "shape": t.Shape, "datatype": Datatype(t.DType)}
		if binary {
			b := toBytes(t)
			params["binary_data_size"] = len(b)
			blob = append(blob, b...)
		} else {
			in["data"], _ = jsonData(t)
		}
		in["parameters"] = params
		ins = append(ins, in)
	}
	add(name, packed, map[string]any{"items": items})
	for _, n := range sortedKeys(r.Inputs) {
		add(n, r.Inputs[n], map[string]any{})
	}
	body := map[string]any{"id": r.ID, "inputs": ins, "parameters": map[string]any{"binary_data_output": binary}}
	hb, _ := json.Marshal(body)
	a := post(http.DefaultClient, url, append(hb, blob...), map[bool]int{true: len(hb)}[binary])
	if a.err != nil || a.status != http.StatusOK {
		return a, fmt.Errorf("status %d rule %s: %v", a.status, a.rule, a.err)
	}
	return a, nil
}

// shapesRequest builds an items request of tensor items and units of
// them (units holds, for unit i, its items' shapes; nil for a tensor item
// of shapes[i]), its values drawn from seed. It returns the request and,
// as a client sends it, the rank-1 tensor of every item's elements and the
// items parameter of their shapes ([SHAPE, {"items": [SHAPE, ...]}]).
func shapesRequest(id, name string, shapes [][]int64, units [][][]int64, seed int) (vm.Request, *backend.Tensor, []any) {
	var flat []float32
	x := float32(seed)
	tensor := func(shape []int64) *backend.Tensor {
		t, _ := backend.NewTensor("float32", shape)
		for i := range t.Float32s() {
			x = float32(math.Mod(float64(x)*1.37+0.11, 2)) - 0.5
			t.Float32s()[i] = x
		}
		flat = append(flat, t.Float32s()...)
		return t
	}
	var items []vm.Item
	var param []any
	for i, shape := range shapes {
		if units == nil || units[i] == nil {
			items = append(items, vm.Item{Tensor: tensor(shape)})
			param = append(param, shape)
			continue
		}
		unit := vm.Item{Items: []vm.Item{}}
		sub := []any{}
		for _, s := range units[i] {
			unit.Items = append(unit.Items, vm.Item{Tensor: tensor(s)})
			sub = append(sub, s)
		}
		items = append(items, unit)
		param = append(param, map[string]any{"items": sub})
	}
	return vm.Request{ID: id, Items: map[string][]vm.Item{name: items}},
		&backend.Tensor{DType: "float32", Shape: []int64{int64(len(flat))}, Data: flat}, param
}

// TestItemShapes: items of any shapes travel in one OIP request with
// their shapes in the items parameter: three text lines of three widths
// and two heights (ocr_lines), and clips of frames of different patch
// counts, one clip empty (video_frames, units of nested items), sent over
// HTTP (JSON data with the shapes as a JSON list; binary data with them
// as JSON text) and gRPC (raw and typed contents, the shapes as JSON
// text), are answered item by item as the VM answers the items request.
func TestItemShapes(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "ocr_lines", "video_frames"), NoWarmup: true})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	type tc struct {
		model, input string
		r            vm.Request
		flat         *backend.Tensor
		param        []any
	}
	var cases []tc
	r, flat, param := shapesRequest("lines", "line_images", [][]int64{{12, 8}, {24, 16}, {5, 8}}, nil, 1)
	cases = append(cases, tc{"ocr_lines", "line_images", r, flat, param})
	r, flat, param = shapesRequest("clips", "pixel_values", [][]int64{nil, nil, nil},
		[][][]int64{{{2, 8}, {3, 8}}, {}, {{1, 8}, {4, 8}, {2, 8}}}, 2)
	cases = append(cases, tc{"video_frames", "pixel_values", r, flat, param})
	for _, c := range cases {
		ref, err := engine.Open(s.model(c.model).plan, s.model(c.model).Dir, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		resp := ref.Run(context.Background(), c.r)
		ref.Close()
		if resp.Err != nil || len(resp.Items) == 0 {
			t.Fatalf("%s: reference %v, items %v", c.r.ID, resp.Err, resp.Items)
		}
		text, err := json.Marshal(c.param)
		if err != nil {
			t.Fatal(err)
		}
		url := hs.URL + "/v2/models/" + c.model + "/infer"
		for _, binary := range []bool{false, true} {
			var items any = c.param
			if binary {
				items = string(text)
			}
			a, err := postItems(url, vm.Request{ID: c.r.ID}, c.input, c.flat, items, binary)
			if err == nil {
				err = sameAnswer(a.outputs, a.items, resp)
			}
			if err != nil {
				t.Errorf("%s (HTTP, binary %v): %v", c.r.ID, binary, err)
			}
		}
		for _, raw := range []bool{true, false} {
			g := grpcRequest(c.model, vm.Request{ID: c.r.ID, Inputs: map[string]*backend.Tensor{c.input: c.flat}}, raw, nil)
			g.Inputs[0].Parameters = map[string]*oippb.InferParameter{"items": {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: string(text)}}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			gr, err := gc.ModelInfer(ctx, g)
			cancel()
			if err != nil {
				t.Fatalf("%s (gRPC, raw %v): %v", c.r.ID, raw, err)
			}
			got, err := DecodeGRPC(gr)
			if err == nil {
				err = sameAnswer(got.Outputs.Map(), got.Items, resp)
			}
			if err != nil {
				t.Errorf("%s (gRPC, raw %v): %v", c.r.ID, raw, err)
			}
		}
	}

	// Shapes that do not place the tensor's elements fail that request
	// alone, as run/input naming the items.
	data := strings.TrimSuffix(strings.Repeat("0,", 40), ",")
	for _, tc := range []struct{ shape, items string }{
		{"[40]", `[[5,8],[1,8]]`},                   // more elements than the tensor holds
		{"[40]", `[[4,8]]`},                         // fewer
		{"[5,8]", `[[5,8]]`},                        // not rank 1
		{"[40]", `[[5,8],3]`},                       // shapes and extents mixed
		{"[40]", `[{"items":[{"items":[[5,8]]}]}]`}, // nested three deep
		{"[40]", `[{"units":[[5,8]]}]`},             // no unit
		{"[40]", `[[5,-8]]`},                        // a negative extent
		{"[40]", `"[[5,8]"`},                        // JSON text that is no list
		{"[40]", `[[5.5,8]]`},                       // no integer
	} {
		body := `{"inputs":[{"name":"line_images","datatype":"FP32","shape":` + tc.shape + `,"parameters":{"items":` + tc.items + `},"data":[` + data + `]}]}`
		a := post(http.DefaultClient, hs.URL+"/v2/models/ocr_lines/infer", []byte(body), 0)
		if a.status != http.StatusBadRequest || a.rule != "run/input" || !strings.Contains(a.message, "items") {
			t.Errorf("shape %s items %s: %d %s %q, want 400 run/input about items", tc.shape, tc.items, a.status, a.rule, a.message)
		}
	}
}

// TestMetadataParameters: the model metadata says, over HTTP and gRPC
// alike, which inputs take the items form (with their ownership levels),
// which take BYTES, and which are companions derived from which input;
// other inputs carry no parameters.
func TestMetadataParameters(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "ocr_lines", "video_fps", "text_packed", "solo"), NoWarmup: true})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	want := map[string]map[string]string{
		"ocr_lines": {"line_images": "items=1", "line_widths": "companion_of=line_images", "line_offsets": "companion_of=line_images", "line_owner": "companion_of=line_images"},
		"video_fps": {"video": "bytes=true items=2", "video_byte_offsets": "companion_of=video", "video_byte_owner": "companion_of=video",
			"video_clip_frames": "companion_of=video", "video_frame_clip": "companion_of=video", "video_times": ""},
		"text_packed": {"token_ids": "items=2", "token_offsets": "companion_of=token_ids", "token_owner": "companion_of=token_ids",
			"segment_offsets": "companion_of=token_ids", "segment_owner": "companion_of=token_ids"},
		"solo": {"features": ""},
	}
	text := func(params map[string]string) string {
		var kv []string
		for k, v := range params {
			kv = append(kv, k+"="+v)
		}
		slices.Sort(kv)
		return strings.Join(kv, " ")
	}
	for model, inputs := range want {
		res, err := http.Get(hs.URL + "/v2/models/" + model)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Inputs []struct {
				Name       string
				Parameters map[string]any
			}
		}
		err = json.NewDecoder(res.Body).Decode(&meta)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		gm, err := gc.ModelMetadata(context.Background(), &oippb.ModelMetadataRequest{Name: model})
		if err != nil {
			t.Fatal(err)
		}
		if len(meta.Inputs) != len(inputs) || len(gm.Inputs) != len(inputs) {
			t.Errorf("%s: %d inputs over HTTP and %d over gRPC, want %d", model, len(meta.Inputs), len(gm.Inputs), len(inputs))
		}
		for i, in := range meta.Inputs {
			hp := map[string]string{}
			for k, v := range in.Parameters {
				hp[k] = fmt.Sprint(v)
			}
			if got := text(hp); got != inputs[in.Name] {
				t.Errorf("%s input %s: HTTP parameters %q, want %q", model, in.Name, got, inputs[in.Name])
			}
			if i >= len(gm.Inputs) {
				continue
			}
			gp := map[string]string{}
			for k, v := range gm.Inputs[i].Parameters {
				gp[k] = fmt.Sprint(paramValue(v))
			}
			if got := text(gp); gm.Inputs[i].Name != in.Name || got != inputs[in.Name] {
				t.Errorf("%s input %s: gRPC input %s parameters %q, want %q", model, in.Name, gm.Inputs[i].Name, got, inputs[in.Name])
			}
		}
	}
}
