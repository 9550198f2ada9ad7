package serve

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/genaic/genaic/serve/oippb"
)

// TestRepeatedOutputs: a request naming one output 10⁵ times is refused
// before it runs, over HTTP (400) and gRPC (InvalidArgument), with a short
// message naming the output; named once, the output is answered once.
func TestRepeatedOutputs(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded")})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	gc := grpcClient(t, s)
	url := ts.URL + "/v2/models/image_padded/infer"
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	const times = 100_000
	ran := func() int64 { return s.Engine("image_padded").Stats().Components["encoder"].Requests }
	before := ran()

	outputs := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"name": "embeddings"}
		}
		return out
	}
	httpBody := func(n int) []byte {
		body, _ := oipJSON(t, reqs[0], nil, false)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		m["outputs"] = outputs(n)
		b, _ := json.Marshal(m)
		return b
	}
	a := post(ts.Client(), url, httpBody(times), 0)
	if a.status != 400 || !strings.Contains(a.message, "output `embeddings` is asked for more than once") || len(a.message) > 200 {
		t.Errorf("HTTP, one output %d times: %d %q, want 400 naming the output", times, a.status, a.message)
	}
	g := grpcRequest("image_padded", reqs[0], true, nil)
	for range times {
		g.Outputs = append(g.Outputs, &oippb.ModelInferRequest_InferRequestedOutputTensor{Name: "embeddings"})
	}
	_, err = gc.ModelInfer(context.Background(), g)
	if st, _ := grpcstatus.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "output `embeddings` is asked for more than once") || len(st.Message()) > 200 {
		t.Errorf("gRPC, one output %d times: %v, want InvalidArgument naming the output", times, err)
	}
	if n := ran(); n != before {
		t.Errorf("the encoder ran %d requests for the refused ones, want none", n-before)
	}

	// An output the model lacks is refused before the request runs too.
	body := strings.Replace(string(httpBody(1)), `"name":"embeddings"`, `"name":"nope"`, 1)
	if a := post(ts.Client(), url, []byte(body), 0); a.status != 400 || !strings.Contains(a.message, "no output `nope`") {
		t.Errorf("HTTP, an unknown output: %d %q, want 400 naming it", a.status, a.message)
	}
	if n := ran(); n != before {
		t.Errorf("the encoder ran %d requests for the refused ones, want none", n-before)
	}

	if a := post(ts.Client(), url, httpBody(1), 0); a.status != 200 || len(a.outputs)+len(a.items) != 1 {
		t.Errorf("HTTP, the output once: %d %v, want 200 with it", a.status, a.err)
	}
	g.Outputs = g.Outputs[:1]
	resp, err := gc.ModelInfer(context.Background(), g)
	if err != nil || len(resp.Outputs) != 1 {
		t.Errorf("gRPC, the output once: %v, want it once", err)
	}
}
