package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// postJSON posts body and decodes the JSON answer into v (nil: ignored).
func postJSON(t *testing.T, url, body string, v any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("POST %s: %d %s: %v", url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// copyRepo makes a model repository of copies of the named example
// packages, which a test may change.
func copyRepo(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.CopyFS(filepath.Join(dir, n), os.DirFS(filepath.Join("..", "testdata", "packages", n))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRepositoryIndex: the index lists the repository's packages and
// their state, under either model control; loads and unloads are refused
// unless model control is explicit, over both protocols.
func TestRepositoryIndex(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed", "image_padded")})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	var idx []indexEntry
	if code := postJSON(t, ts.URL+"/v2/repository/index", "", &idx); code != 200 || len(idx) != 2 ||
		idx[0] != (indexEntry{Name: "image_padded", Version: "1", State: "READY"}) || idx[1].Name != "text_packed" || idx[1].State != "READY" {
		t.Errorf("index: %d %+v", code, idx)
	}
	var e map[string]string
	if code := postJSON(t, ts.URL+"/v2/repository/models/text_packed/unload", "", &e); code != http.StatusBadRequest || !strings.Contains(e["error"], "--model-control explicit") {
		t.Errorf("unload without explicit model control: %d %v", code, e)
	}
	c := grpcClient(t, s)
	if _, err := c.RepositoryModelLoad(context.Background(), &oippb.RepositoryModelLoadRequest{ModelName: "text_packed"}); grpcstatus.Code(err) != codes.FailedPrecondition {
		t.Errorf("gRPC load without explicit model control: %v", err)
	}
	gi, err := c.RepositoryIndex(context.Background(), &oippb.RepositoryIndexRequest{Ready: true})
	if err != nil || len(gi.Models) != 2 || gi.Models[1].Name != "text_packed" || gi.Models[1].State != "READY" {
		t.Errorf("gRPC index: %v %v", gi, err)
	}
	if code := postJSON(t, ts.URL+"/v2/repository/index", `{"ready": 3}`, &e); code != http.StatusBadRequest {
		t.Errorf("a bad index body: %d %v", code, e)
	}
	if _, err := New(Config{Repo: repo(t, "text_packed"), ModelControl: "poll"}); err == nil || !strings.Contains(err.Error(), "explicit") {
		t.Errorf("model control poll: %v", err)
	}
}

// TestRepositoryUnloadUnderLoad: an unload while clients send loses no
// request: each is answered, equal to solo, or refused at once (run/closed
// while the model drains, 404 once it is gone); then the model is
// unavailable in the index and loading it again serves it as before.
func TestRepositoryUnloadUnderLoad(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed", "image_padded"), ModelControl: "explicit", Defaults: ModelConfig{MaxDelay: delay(2 * time.Millisecond)}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	reqs, want := references(t, s, "text_packed")
	url := ts.URL + "/v2/models/text_packed/infer"
	var answered, refused, gone atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 24 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (c*7 + k) % len(reqs)
				body, _ := oipJSON(t, reqs[i], nil, false)
				a := post(http.DefaultClient, url, body, 0)
				switch {
				case a.status == http.StatusOK:
					if err := same(a.outputs, want[i].Outputs.Map()); err != nil {
						t.Errorf("%s: %v", reqs[i].ID, err)
					}
					answered.Add(1)
				case a.status == http.StatusServiceUnavailable && a.rule == "run/closed" && strings.Contains(a.message, "is not accepting requests"):
					// Refused at admission, never failed once accepted.
					refused.Add(1)
				case a.status == http.StatusNotFound:
					gone.Add(1)
				default:
					t.Errorf("%s: %d %q %v", reqs[i].ID, a.status, a.rule, a.err)
				}
			}
		})
	}
	for answered.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	eng := s.Engine("text_packed")
	if code := postJSON(t, ts.URL+"/v2/repository/models/text_packed/unload", "", nil); code != 200 {
		t.Fatalf("unload: %d", code)
	}
	for gone.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("answered %d, refused while draining %d, after the unload %d", answered.Load(), refused.Load(), gone.Load())
	if s.Engine("text_packed") != nil || eng.Run(context.Background(), reqs[0]).Err == nil {
		t.Error("the unloaded model's engine is still served or open")
	}
	a, r := s.Counts()
	if a != r {
		t.Errorf("%d requests admitted, %d answered", a, r)
	}
	var idx []indexEntry
	postJSON(t, ts.URL+"/v2/repository/index", "", &idx)
	if len(idx) != 2 || idx[1] != (indexEntry{Name: "text_packed", State: "UNAVAILABLE", Reason: "unloaded"}) {
		t.Errorf("index after the unload: %+v", idx)
	}
	if resp, err := http.Get(ts.URL + "/v2/health/ready"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the server with one model unloaded is not ready: %v %v", resp, err)
	}

	if code := postJSON(t, ts.URL+"/v2/repository/models/text_packed/load", `{"parameters": {}}`, nil); code != 200 {
		t.Fatalf("load: %d", code)
	}
	for i, r := range reqs[:8] {
		body, hlen := oipJSON(t, r, nil, true)
		a := post(http.DefaultClient, url, body, hlen)
		if a.status != 200 {
			t.Fatalf("%s after the load: %d %v", r.ID, a.status, a.err)
		}
		if err := same(a.outputs, want[i].Outputs.Map()); err != nil {
			t.Errorf("%s after the load: %v", r.ID, err)
		}
	}
	var e map[string]string
	if code := postJSON(t, ts.URL+"/v2/repository/models/nope/load", "", &e); code != http.StatusNotFound || !strings.Contains(e["error"], "text_packed") {
		t.Errorf("load of an unknown package: %d %v", code, e)
	}
	if code := postJSON(t, ts.URL+"/v2/repository/models/text_packed/load", `{"parameters": {"config": "{}"}}`, &e); code != http.StatusBadRequest || !strings.Contains(e["error"], "config") {
		t.Errorf("load with a config: %d %v", code, e)
	}
}

// TestRepositoryReload: loading a served model again serves the package
// as it is now, in place of the old engine, with no request lost; a
// reload that fails leaves the model served as it was; over gRPC too.
func TestRepositoryReload(t *testing.T) {
	dir := copyRepo(t, "text_packed")
	s := newServer(t, Config{Repo: dir, ModelControl: "explicit", Defaults: ModelConfig{MaxDelay: delay(2 * time.Millisecond)}})
	c := grpcClient(t, s)
	ctx := context.Background()
	reqs, err := readRequests(s.model("text_packed").Dir)
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range 16 {
		wg.Go(func() {
			for j := k; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.ModelInfer(ctx, grpcRequest("text_packed", reqs[j%len(reqs)], false, nil)); err != nil {
					// A request that found the old model as it was being
					// retired is refused at once, never lost.
					if grpcstatus.Code(err) != codes.Unavailable {
						t.Errorf("during the reload: %v", err)
					}
					failed.Add(1)
				}
			}
		})
	}
	old := s.Engine("text_packed")
	if _, err := c.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "text_packed"}); err != nil {
		t.Fatal(err)
	}
	if s.Engine("text_packed") == old || old.Run(ctx, reqs[0]).Err == nil {
		t.Error("the reload kept the old engine, or left it open")
	}

	meta := filepath.Join(dir, "text_packed", "inference_metadata.yaml")
	good, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, bytes.ReplaceAll(good, []byte("text_encoder.onnx"), []byte("missing.onnx")), 0o644); err != nil {
		t.Fatal(err)
	}
	served := s.Engine("text_packed")
	_, err = c.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "text_packed"})
	if grpcstatus.Code(err) != codes.InvalidArgument || s.Engine("text_packed") != served {
		t.Errorf("a reload of a broken package: %v; the model must stay served as it was", err)
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if r := s.Engine("text_packed").Run(ctx, reqs[0]); r.Err != nil {
		t.Errorf("after a failed reload: %v", r.Err)
	}
	if _, err := c.RepositoryModelUnload(ctx, &oippb.RepositoryModelUnloadRequest{ModelName: "text_packed", Parameters: map[string]*oippb.ModelRepositoryParameter{
		"unload_dependents": {ParameterChoice: &oippb.ModelRepositoryParameter_BoolParam{BoolParam: true}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "text_packed"})
	idx, _ := c.RepositoryIndex(ctx, &oippb.RepositoryIndexRequest{})
	if err == nil || len(idx.GetModels()) != 1 || !strings.HasPrefix(idx.Models[0].Reason, "load failed") || idx.Models[0].State != "UNAVAILABLE" {
		t.Errorf("a failed load of an unloaded model: %v, index %v", err, idx)
	}
	if err := os.WriteFile(meta, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "text_packed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModelInfer(ctx, grpcRequest("text_packed", reqs[1], false, nil)); err != nil {
		t.Errorf("after the package was mended and loaded: %v", err)
	}
	// The loads and unloads are counted: a reload, a failed reload, an
	// unload, a failed load, a load.
	text := gatherText(t, s)
	for series, want := range map[string]float64{
		`genaic_model_control_total{action="reload",model="text_packed",result="ok"}`:     1,
		`genaic_model_control_total{action="reload",model="text_packed",result="failed"}`: 1,
		`genaic_model_control_total{action="unload",model="text_packed",result="ok"}`:     1,
		`genaic_model_control_total{action="load",model="text_packed",result="failed"}`:   1,
		`genaic_model_control_total{action="load",model="text_packed",result="ok"}`:       1,
	} {
		if got := metric(t, text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	t.Logf("%d requests refused during the reloads", failed.Load())
}

// TestUnloadWaitsForAdmitted: a request admitted to a model but not yet
// taken by its engine when an unload starts is answered by that engine:
// the unload waits for it before closing the engine.
func TestUnloadWaitsForAdmitted(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed"), ModelControl: "explicit", NoWarmup: true})
	reqs, err := readRequests(s.model("text_packed").Dir)
	if err != nil {
		t.Fatal(err)
	}
	admitted, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookAdmitted = func(*Model) {
		once.Do(func() {
			close(admitted)
			<-release
		})
	}
	defer func() { testHookAdmitted = nil }()
	answer := make(chan vm.Response)
	go func() { answer <- s.infer(context.Background(), s.model("text_packed"), "http", reqs[0], callParams{}) }()
	<-admitted
	unloaded := make(chan error)
	go func() { unloaded <- s.UnloadModel("text_packed") }()
	select {
	case err := <-unloaded:
		t.Fatalf("the unload ended (%v) while an admitted request had not run", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if r := <-answer; r.Err != nil {
		t.Errorf("the admitted request failed: %v", r.Err)
	}
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	s.SetDraining()
	if err := s.LoadModel("text_packed"); !isClosed(err) || s.model("text_packed") != nil {
		t.Errorf("a load while draining: %v", err)
	}
}

// gatherText is the server's metrics in Prometheus's text form.
func gatherText(t *testing.T, s *Server) string {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// TestRepositoryStartsEmpty: under explicit model control a server may
// start on a repository with no package yet, ready, and serve one a
// client loads once it is there; without it, an empty repository is an
// error at start.
func TestRepositoryStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Config{Repo: dir}); err == nil || !strings.Contains(err.Error(), "holds no package") {
		t.Errorf("an empty repository without model control: %v", err)
	}
	s := newServer(t, Config{Repo: dir, ModelControl: "explicit", NoWarmup: true})
	if !s.Ready() || len(s.Models()) != 0 {
		t.Fatalf("ready %v with models %v", s.Ready(), s.Models())
	}
	if idx, err := s.index(false); err != nil || len(idx) != 0 {
		t.Errorf("index of an empty repository: %v %v", idx, err)
	}
	if err := s.LoadModel("text_packed"); !errors.Is(err, errNoModel) {
		t.Errorf("a load before the package is there: %v", err)
	}
	if err := os.CopyFS(filepath.Join(dir, "text_packed"), os.DirFS(filepath.Join("..", "testdata", "packages", "text_packed"))); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadModel("text_packed"); err != nil {
		t.Fatal(err)
	}
	reqs, want := references(t, s, "text_packed")
	if r := s.infer(context.Background(), s.model("text_packed"), "http", reqs[0], callParams{}); r.Err != nil || same(r.Outputs.Map(), want[0].Outputs.Map()) != nil {
		t.Errorf("the model loaded into the empty server: %v", r.Err)
	}
}

// TestCompileLoadsAdapters: a package compiled by the server is checked
// as `genaic check` checks it, its adapters loaded, so one that only an
// adapter's load refuses is refused at compile, not when its engine
// loads the adapter, and the refusal names the first error.
func TestCompileLoadsAdapters(t *testing.T) {
	_, err := compile(filepath.Join("testdata", "adapter_axis1"))
	if err == nil || !strings.Contains(err.Error(), "the package has diagnostics, the first inference_metadata.yaml:23:7: error[preprocess/op]") || !strings.Contains(err.Error(), "stacks images on axis 0") {
		t.Errorf("compile: %v", err)
	}
}
