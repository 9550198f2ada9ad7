package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// flatItems returns a response's outputs with each per-item output as
// "name#i", so that answers compare item by item.
func flatItems(outs map[string]*backend.Tensor, items map[string][]vm.Item) map[string]*backend.Tensor {
	m := map[string]*backend.Tensor{}
	for n, t := range outs {
		m[n] = t
	}
	for n, its := range items {
		for i, it := range its {
			m[fmt.Sprintf("%s#%d", n, i)] = it.Tensor
		}
	}
	return m
}

// cutItems splits an answered tensor by its items parameter, as a client
// does: item i is [items[i], shape[1:]...] along the first axis.
func cutItems(out map[string]*backend.Tensor, name string, t *backend.Tensor, extents []int64) error {
	var at int64
	for i, n := range extents {
		if at+n > t.Shape[0] {
			return fmt.Errorf("output %s: items %v exceed shape %v", name, extents, t.Shape)
		}
		out[fmt.Sprintf("%s#%d", name, i)] = t.View(at, at+n)
		at += n
	}
	if at != t.Shape[0] {
		return fmt.Errorf("output %s: items %v do not add up to shape %v", name, extents, t.Shape)
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
		want := flatItems(resp.Outputs.Map(), resp.Items)
		packed, ext := concat(r.Items["line_images"])
		for _, binary := range []bool{false, true} {
			got, err := postItems(hs.URL+"/v2/models/ocr_lines/infer", r, packed, ext, binary)
			if err != nil {
				t.Fatalf("%s (HTTP, binary %v): %v", r.ID, binary, err)
			}
			if err := same(got, want); err != nil {
				t.Errorf("%s (HTTP, binary %v): %v", r.ID, binary, err)
			}
		}
		g := grpcRequest("ocr_lines", vm.Request{ID: r.ID, Inputs: r.Inputs}, true, nil)
		g.Inputs = append(g.Inputs, &oippb.ModelInferRequest_InferInputTensor{Name: "line_images", Datatype: "FP32", Shape: packed.Shape,
			Parameters: map[string]*oippb.InferParameter{"items": {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: extentsString(ext)}}}})
		g.RawInputContents = append(g.RawInputContents, toBytes(packed))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		gr, err := gc.ModelInfer(ctx, g)
		cancel()
		if err != nil {
			t.Fatalf("%s (gRPC): %v", r.ID, err)
		}
		outs, err := grpcOutputs(gr)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*backend.Tensor{}
		for _, o := range gr.Outputs {
			p := o.Parameters["items"]
			if p == nil {
				got[o.Name] = outs[o.Name]
				continue
			}
			ext, err := parseExtents(o.Name, p.GetStringParam())
			if err != nil {
				t.Fatal(err)
			}
			if err := cutItems(got, o.Name, outs[o.Name], ext); err != nil {
				t.Fatal(err)
			}
		}
		if err := same(got, want); err != nil {
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

// postItems sends a request over HTTP with line_images in the items form
// and its other inputs as tensors, and returns the answer's outputs with
// per-item ones cut by their items parameter.
func postItems(url string, r vm.Request, packed *backend.Tensor, ext []int64, binary bool) (map[string]*backend.Tensor, error) {
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
	add("line_images", packed, map[string]any{"items": ext})
	for _, n := range sortedKeys(r.Inputs) {
		add(n, r.Inputs[n], map[string]any{})
	}
	body := map[string]any{"id": r.ID, "inputs": ins, "parameters": map[string]any{"binary_data_output": binary}}
	hb, _ := json.Marshal(body)
	a := post(http.DefaultClient, url, append(hb, blob...), map[bool]int{true: len(hb)}[binary])
	if a.err != nil || a.status != http.StatusOK {
		return nil, fmt.Errorf("status %d rule %s: %v", a.status, a.rule, a.err)
	}
	got := map[string]*backend.Tensor{}
	for n, t := range a.outputs {
		ext, ok := a.items[n]
		if !ok {
			got[n] = t
			continue
		}
		if err := cutItems(got, n, t, ext); err != nil {
			return nil, err
		}
	}
	return got, nil
}
