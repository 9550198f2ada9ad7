package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// fromApplication rewrites a package's document so that the named
// workflow inputs come from an application (`source: { kind: application,
// name: host }`) rather than the request.
func fromApplication(t testing.TB, dir string, inputs ...string) {
	t.Helper()
	path := filepath.Join(dir, "inference_metadata.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const request = "source: { kind: request }"
	for _, in := range inputs {
		at := strings.Index(doc, "\n      "+in+":\n")
		if at < 0 {
			t.Fatalf("%s declares no workflow input %s", path, in)
		}
		src := strings.Index(doc[at:], request)
		if src < 0 {
			t.Fatalf("%s: input %s has no request source", path, in)
		}
		doc = doc[:at+src] + "source: { kind: application, name: host }" + doc[at+src+len(request):]
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestApplicationInputs: workflow inputs whose source is `application`
// come through requests (DESIGN §6), as `genaic run` takes them: the
// model metadata lists them (HTTP and gRPC, with their items parameters),
// and requests that bring them, as items (ocr_lines' lines) or as a
// plain tensor (solo's features), over HTTP (binary and JSON) and gRPC,
// are answered as the VM answers them.
func TestApplicationInputs(t *testing.T) {
	dir := t.TempDir()
	copyPackage(t, dir, "ocr_lines")
	copyPackage(t, dir, "solo", "requests.json")
	fromApplication(t, filepath.Join(dir, "ocr_lines"), "line_images")
	fromApplication(t, filepath.Join(dir, "solo"), "features")
	s := newServer(t, Config{Repo: dir})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	gc := grpcClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for model, input := range map[string]string{"ocr_lines": "line_images", "solo": "features"} {
		res, err := http.Get(hs.URL + "/v2/models/" + model)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Inputs []tensorMeta `json:"inputs"`
		}
		err = json.NewDecoder(res.Body).Decode(&meta)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(meta.Inputs) == 0 || meta.Inputs[0].Name != input || meta.Inputs[0].Datatype != "FP32" {
			t.Errorf("%s: HTTP metadata inputs %+v, want %s (FP32) first", model, meta.Inputs, input)
		}
		gm, err := gc.ModelMetadata(ctx, &oippb.ModelMetadataRequest{Name: model})
		if err != nil || len(gm.Inputs) == 0 || len(gm.Inputs) != len(meta.Inputs) || gm.Inputs[0].Name != input {
			t.Errorf("%s: gRPC metadata %v (%v), want %s first of %d inputs", model, gm, err, input, len(meta.Inputs))
		}
	}
	if in := s.model("ocr_lines").inputs; len(in) == 0 || in[0].Parameters[itemsParam] != int64(1) {
		t.Errorf("ocr_lines: metadata inputs %+v, want line_images with parameter items 1", in)
	}

	ref := map[string]*vm.Engine{}
	for _, model := range []string{"ocr_lines", "solo"} {
		eng, err := engine.Open(s.model(model).plan, s.model(model).Dir, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		ref[model] = eng
	}
	reqs, err := readRequests(s.model("ocr_lines").Dir)
	if err != nil {
		t.Fatal(err)
	}
	features := &backend.Tensor{DType: "float32", Shape: []int64{2, 4}, Data: []float32{0.5, -1, 2, 0.25, 3, 0.125, -0.5, 1}}
	type tc struct {
		model string
		r     vm.Request
	}
	cases := []tc{{"solo", vm.Request{ID: "features", Inputs: map[string]*backend.Tensor{"features": features}}}}
	for _, r := range reqs {
		cases = append(cases, tc{"ocr_lines", r})
	}
	for _, c := range cases {
		resp := ref[c.model].Run(context.Background(), c.r)
		if resp.Err != nil {
			t.Fatalf("%s %s: reference %v", c.model, c.r.ID, resp.Err)
		}
		for _, binary := range []bool{true, false} {
			body, hlen, err := EncodeHTTP(c.r, binary)
			if err != nil {
				t.Fatal(err)
			}
			if !binary {
				hlen = 0
			}
			a := post(http.DefaultClient, hs.URL+"/v2/models/"+c.model+"/infer", body, hlen)
			err = a.err
			if a.status != http.StatusOK {
				err = fmt.Errorf("status %d: %s", a.status, a.message)
			}
			if err == nil {
				err = sameAnswer(a.outputs, a.items, resp)
			}
			if err != nil {
				t.Errorf("%s %s (HTTP, binary %v): %v", c.model, c.r.ID, binary, err)
			}
		}
		m, err := EncodeGRPC(c.model, c.r)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := gc.ModelInfer(ctx, m)
		if err == nil {
			var got vm.Response
			if got, err = DecodeGRPC(gr); err == nil {
				err = sameAnswer(got.Outputs.Map(), got.Items, resp)
			}
		}
		if err != nil {
			t.Errorf("%s %s (gRPC): %v", c.model, c.r.ID, err)
		}
	}
}
