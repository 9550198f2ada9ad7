package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/serve/oippb"
)

// getJSON reads a GET answer's status and JSON body into v.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

type statsAnswer struct {
	ModelStats []modelStatJSON `json:"model_stats"`
}

// TestTritonStats: the statistics extension counts what the server did
// since its models became ready, in Triton's schema. Its invocations are
// the engine's (less the warm-up's), its batch sizes account for every
// request invoked, and its successes and failures for every request sent.
func TestTritonStats(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed", "image_padded"), Defaults: ModelConfig{MaxDelay: delay(20 * time.Millisecond)}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	var meta struct {
		Extensions []string `json:"extensions"`
	}
	getJSON(t, ts.URL+"/v2", &meta)
	for _, ext := range []string{"statistics", "model_configuration"} {
		if !slices.Contains(meta.Extensions, ext) {
			t.Errorf("server metadata's extensions %v lack %s", meta.Extensions, ext)
		}
	}
	var before statsAnswer
	if code := getJSON(t, ts.URL+"/v2/models/text_packed/stats", &before); code != 200 || len(before.ModelStats) != 1 {
		t.Fatalf("stats before any request: %d %+v", code, before)
	}
	if st := before.ModelStats[0]; st.ExecutionCount != 0 || st.InferenceCount != 0 || len(st.BatchStats) != 0 {
		t.Errorf("the warm-up is counted: %+v", st)
	}
	eng := s.model("text_packed").eng
	invoked := eng.Stats().Components["text_encoder"].Invocations

	reqs, err := readRequests(s.model("text_packed").Dir)
	if err != nil {
		t.Fatal(err)
	}
	url := ts.URL + "/v2/models/text_packed/infer"
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			body, _ := oipJSON(t, reqs[i], nil, false)
			if a := post(http.DefaultClient, url, body, 0); a.status != http.StatusOK {
				t.Errorf("%s: %d %v", reqs[i].ID, a.status, a.err)
			}
		})
	}
	wg.Wait()
	for _, bad := range []string{`{`, `{"inputs":[]}`} {
		resp, err := http.Post(url, "application/json", strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("%s was answered", bad)
		}
	}

	var after statsAnswer
	if code := getJSON(t, ts.URL+"/v2/models/text_packed/versions/1/stats", &after); code != 200 || len(after.ModelStats) != 1 {
		t.Fatalf("stats: %d %+v", code, after)
	}
	st := after.ModelStats[0]
	is := st.InferenceStats
	n := uint64(len(reqs))
	if st.Name != "text_packed" || st.Version != "1" || st.InferenceCount != n || is.Success.Count != n || is.Fail.Count != 2 {
		t.Errorf("%s version %s: %d inferences, %d successes, %d failures; want %d, %d and 2", st.Name, st.Version, st.InferenceCount, is.Success.Count, is.Fail.Count, n, n)
	}
	if is.Success.NS == 0 || is.Fail.NS == 0 || is.Queue.Count < n || is.Queue.NS == 0 || st.LastInference < time.Now().Add(-time.Minute).UnixMilli() {
		t.Errorf("durations or last inference missing: %+v, last %d", is, st.LastInference)
	}
	if got := uint64(eng.Stats().Components["text_encoder"].Invocations - invoked); st.ExecutionCount != got {
		t.Errorf("execution_count %d, but the engine invoked %d times", st.ExecutionCount, got)
	}
	var executions, requests, ns uint64
	for _, b := range st.BatchStats {
		executions += b.ComputeInfer.Count
		requests += uint64(b.BatchSize) * b.ComputeInfer.Count
		ns += uint64(b.BatchSize) * b.ComputeInfer.NS
		if b.ComputeInput.Count != b.ComputeInfer.Count || b.ComputeInput.NS != 0 {
			t.Errorf("batch size %d: compute_input %+v beside compute_infer %+v", b.BatchSize, b.ComputeInput, b.ComputeInfer)
		}
	}
	if executions != st.ExecutionCount || requests != is.ComputeInfer.Count || requests < n || ns != is.ComputeInfer.NS {
		t.Errorf("batch_stats count %d executions of %d requests (%d ns), beside execution_count %d and compute_infer %+v (%d requests)",
			executions, requests, ns, st.ExecutionCount, is.ComputeInfer, n)
	}

	var all statsAnswer
	getJSON(t, ts.URL+"/v2/models/stats", &all)
	if len(all.ModelStats) != 2 || all.ModelStats[0].Name != "image_padded" || all.ModelStats[1].Name != "text_packed" || all.ModelStats[0].InferenceCount != 0 {
		t.Errorf("every model's stats: %+v", all)
	}
	var e map[string]string
	for _, u := range []string{"/v2/models/nope/stats", "/v2/models/text_packed/versions/2/stats", "/v2/models/nope/config"} {
		if code := getJSON(t, ts.URL+u, &e); code != http.StatusNotFound || e["error"] == "" {
			t.Errorf("%s: %d %v", u, code, e)
		}
	}
}

// TestTritonConfig: the model configuration extension names the inputs
// and outputs the metadata does, with Triton's type names, no batch axis
// of its own, the max delay, the priorities and the default timeout.
func TestTritonConfig(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded"), Defaults: ModelConfig{MaxDelay: delay(3 * time.Millisecond),
		DefaultPriority: 3, DefaultTimeout: 250 * time.Millisecond}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	var cfg struct {
		Name         string             `json:"name"`
		MaxBatchSize *int               `json:"max_batch_size"`
		Input        []configTensorJSON `json:"input"`
		Output       []configTensorJSON `json:"output"`
		Dynamic      struct {
			Delay         int64 `json:"max_queue_delay_microseconds"`
			Levels        int64 `json:"priority_levels"`
			DefaultLevel  int64 `json:"default_priority_level"`
			DefaultPolicy struct {
				Action   string `json:"timeout_action"`
				Timeout  int64  `json:"default_timeout_microseconds"`
				Override bool   `json:"allow_timeout_override"`
			} `json:"default_queue_policy"`
		} `json:"dynamic_batching"`
	}
	if code := getJSON(t, ts.URL+"/v2/models/image_padded/config", &cfg); code != 200 {
		t.Fatalf("config: %d", code)
	}
	var meta struct {
		Inputs, Outputs []tensorMeta
	}
	getJSON(t, ts.URL+"/v2/models/image_padded", &meta)
	if cfg.Name != "image_padded" || cfg.MaxBatchSize == nil || *cfg.MaxBatchSize != 0 || cfg.Dynamic.Delay != 3000 {
		t.Errorf("config %+v", cfg)
	}
	if d := cfg.Dynamic; d.Levels != MaxPriority || d.DefaultLevel != 3 || d.DefaultPolicy.Action != "REJECT" || d.DefaultPolicy.Timeout != 250000 || !d.DefaultPolicy.Override {
		t.Errorf("dynamic_batching %+v; want %d priority levels, the default 3, and rejection past a default timeout of 250 ms that a request's own overrides", d, MaxPriority)
	}
	check := func(kind string, got []configTensorJSON, want []tensorMeta) {
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: config %+v, metadata %+v", kind, got, want)
		}
		for i, w := range want {
			if g := got[i]; g.Name != w.Name || g.DataType != "TYPE_"+w.Datatype || !slices.Equal(g.Dims, w.Shape) {
				t.Errorf("%s %d: config %+v, metadata %+v", kind, i, g, w)
			}
		}
	}
	check("input", cfg.Input, meta.Inputs)
	check("output", cfg.Output, meta.Outputs)
	// The graph fixes the patches' features (8) and the embeddings' width
	// (4), which the metadata leaves symbolic; the rest varies.
	if in, out := meta.Inputs[0], meta.Outputs[0]; !slices.Equal(in.Shape, []int64{-1, -1, 8}) || !slices.Equal(out.Shape, []int64{-1, 4}) {
		t.Errorf("metadata shapes %v and %v, want the graph's fixed extents", in, out)
	}
	if tritonType("BYTES") != "STRING" || tritonType("FP16") != "FP16" {
		t.Error("datatype names")
	}
}

// TestTritonGRPC: the gRPC calls answer what the HTTP endpoints do, and
// list the extensions in the server's metadata.
func TestTritonGRPC(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed", "image_padded"), Defaults: ModelConfig{MaxDelay: delay(2 * time.Millisecond)}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := grpcClient(t, s)
	ctx := context.Background()
	reqs, err := readRequests(s.model("text_packed").Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[:5] {
		if _, err := c.ModelInfer(ctx, grpcRequest("text_packed", r, false, nil)); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := c.ServerMetadata(ctx, &oippb.ServerMetadataRequest{})
	if err != nil || !slices.Equal(meta.Extensions, tritonExtensions) {
		t.Errorf("server metadata %v, %v", meta, err)
	}

	var web statsAnswer
	getJSON(t, ts.URL+"/v2/models/stats", &web)
	all, err := c.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.ModelStats) != len(web.ModelStats) {
		t.Fatalf("%d models' stats over gRPC, %d over HTTP", len(all.ModelStats), len(web.ModelStats))
	}
	for i, ms := range web.ModelStats {
		if want := ms.proto(); !proto.Equal(all.ModelStats[i], want) {
			t.Errorf("gRPC %v\nHTTP %v", all.ModelStats[i], want)
		}
	}
	one, err := c.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: "text_packed", Version: "1"})
	if err != nil || len(one.ModelStats) != 1 || one.ModelStats[0].InferenceCount != 5 || one.ModelStats[0].InferenceStats.Success.Count != 5 {
		t.Errorf("text_packed's stats: %v %v", one, err)
	}
	if _, err := c.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: "nope"}); grpcstatus.Code(err) != codes.NotFound {
		t.Errorf("an unknown model's stats: %v", err)
	}

	var webCfg configJSON
	getJSON(t, ts.URL+"/v2/models/text_packed/config", &webCfg)
	cfg, err := c.ModelConfig(ctx, &oippb.ModelConfigRequest{Name: "text_packed"})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Config
	if !proto.Equal(got, webCfg.proto()) || got.MaxBatchSize != 0 || got.DynamicBatching.MaxQueueDelayMicroseconds != 2000 || len(got.Input) == 0 {
		t.Errorf("gRPC config %v, HTTP %+v", got, webCfg)
	}
	for i, in := range got.Input {
		if in.DataType == oippb.DataType_TYPE_INVALID || in.DataType.String() != webCfg.Input[i].DataType {
			t.Errorf("input %s: %v, HTTP says %s", in.Name, in.DataType, webCfg.Input[i].DataType)
		}
	}
	if _, err := c.ModelConfig(ctx, &oippb.ModelConfigRequest{Name: "text_packed", Version: "7"}); grpcstatus.Code(err) != codes.NotFound {
		t.Errorf("an unknown version's config: %v", err)
	}
}

// TestMetaShapes: metadata (and so the configuration) gives a request's
// shape: 1 row on a request_aligned axis, factor rows on a
// request_expanded one, the extent a graph fixes for a symbol, and -1 for
// every extent that varies (a rank without a shape included).
func TestMetaShapes(t *testing.T) {
	fixed := map[string]int64{"width": 8}
	rows := func(kind ir.LayoutKind, axis, factor int64, dims ...ir.Dim) *ir.Contract {
		return &ir.Contract{DType: "float32", Rank: len(dims), HasShape: true, Shape: dims,
			Layout: ir.Layout{Kind: kind, Axis: axis, Factor: factor}}
	}
	sym := func(s string) ir.Dim { return ir.Dim{Sym: s} }
	for _, c := range []struct {
		contract *ir.Contract
		want     []int64
	}{
		{&ir.Contract{DType: "float32", Rank: 3}, []int64{-1, -1, -1}},
		{&ir.Contract{DType: "int64", Rank: 2, HasShape: true, Shape: []ir.Dim{{Sym: "n"}, {Size: 4}}}, []int64{-1, 4}},
		{&ir.Contract{DType: "uint8", Rank: -1}, []int64{}},
		// a request brings one row on a request_aligned axis, factor rows
		// on a request_expanded one; a graph-fixed symbol is its extent
		{rows(ir.RequestAligned, 0, 0, sym("batch"), sym("width")), []int64{1, 8}},
		{rows(ir.RequestAligned, 1, 0, sym("steps"), sym("batch"), sym("width")), []int64{-1, 1, 8}},
		{rows(ir.RequestExpanded, 0, 2, sym("rows"), sym("n")), []int64{2, -1}},
		{rows(ir.TokenPacked, 0, 0, sym("tokens"), sym("width")), []int64{-1, 8}},
		// a padded axis varies, even where a graph fixes it
		{&ir.Contract{DType: "int64", Rank: 2, HasShape: true, Shape: []ir.Dim{sym("segments"), sym("width")},
			Layout: ir.Layout{Kind: ir.TokenPacked}, Padding: []ir.Padding{{Dim: ir.Ref{Name: "width"}}}}, []int64{-1, -1}},
	} {
		if got := meta("x", c.contract, fixed); !slices.Equal(got.Shape, c.want) || got.Shape == nil {
			t.Errorf("%+v: shape %v, want %v", c.contract, got.Shape, c.want)
		}
	}
}
