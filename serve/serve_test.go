package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/examples/imagepadded"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// repo makes a model repository of the named example packages.
func repo(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		abs, err := filepath.Abs(filepath.Join("..", "testdata", "packages", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	// Planning the execution measures every model for a while at load:
	// the tests that do not test it run one worker (TestPlannedAtLoad
	// plans).
	if cfg.Defaults.Workers == 0 && cfg.Defaults.Threads == 0 {
		cfg.Defaults.Workers = 1
	}
	return newPlannedServer(t, cfg)
}

// newPlannedServer is newServer with the execution left as cfg says
// (planned at load where it leaves workers and threads 0).
func newPlannedServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func delay(d time.Duration) *time.Duration { return &d }

// solo answers requests as the reference: an engine of the same package
// run with Solo, one request per invocation.
func solo(t testing.TB, s *Server, model string, opts engine.Options) func(vm.Request) vm.Response {
	t.Helper()
	md := s.model(model)
	opts.Solo = true
	eng, err := engine.Open(md.plan, md.Dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return func(r vm.Request) vm.Response { return eng.Run(context.Background(), r) }
}

// references reads a model's requests.json and answers each request solo
// (the reference grouped answers must equal).
func references(t testing.TB, s *Server, model string) ([]vm.Request, []vm.Response) {
	t.Helper()
	reqs, err := readRequests(s.model(model).Dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := solo(t, s, model, engine.Options{})
	want := make([]vm.Response, len(reqs))
	for i, r := range reqs {
		if want[i] = ref(r); want[i].Err != nil {
			t.Fatalf("solo %s: %v", r.ID, want[i].Err)
		}
	}
	return reqs, want
}

// oipJSON writes a request as an OIP JSON inference request; binary puts
// every input's data behind the JSON (the binary tensor extension) and
// returns the header length.
func oipJSON(t testing.TB, r vm.Request, params map[string]any, binary bool) ([]byte, int) {
	t.Helper()
	var ins []map[string]any
	var blob []byte
	for _, name := range sortedKeys(r.Inputs) {
		tn := r.Inputs[name]
		in := map[string]any{"name": name, "shape": tn.Shape, "datatype": Datatype(tn.DType)}
		if binary {
			b := toBytes(tn)
			in["parameters"] = map[string]any{"binary_data_size": len(b)}
			blob = append(blob, b...)
		} else {
			data, err := jsonData(tn)
			if err != nil {
				t.Fatal(err)
			}
			in["data"] = data
		}
		ins = append(ins, in)
	}
	body := map[string]any{"id": r.ID, "inputs": ins}
	if params != nil {
		body["parameters"] = params
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, blob...), len(b)
}

type httpAnswer struct {
	status  int
	retry   string
	rule    string
	message string // an error's
	outputs map[string]*backend.Tensor
	items   map[string][]vm.Item // the outputs in the items form, cut into their items
	err     error
}

// post sends one inference request over HTTP and decodes the answer,
// binary parts included.
func post(c *http.Client, url string, body []byte, hlen int) httpAnswer {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	if hlen > 0 {
		req.Header.Set(HeaderLength, strconv.Itoa(hlen))
	}
	resp, err := c.Do(req)
	if err != nil {
		return httpAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpAnswer{err: err}
	}
	a := httpAnswer{status: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Rule string }
		if err := json.Unmarshal(b, &e); err != nil {
			a.err = fmt.Errorf("error body %q: %v", b, err)
		}
		a.rule, a.message = e.Rule, e.Error
		return a
	}
	r, err := DecodeHTTP(resp.Header.Get(HeaderLength), b)
	a.outputs, a.items, a.err = r.Outputs.Map(), r.Items, err
	return a
}

// same compares outputs with the reference's: equal names, dtypes, shapes
// and integers; floats within 1e-5 (ONNX Runtime may sum a padded group
// in another order).
func same(got, want map[string]*backend.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("outputs %v, want %v", sortedKeys(got), sortedKeys(want))
	}
	for name, w := range want {
		g := got[name]
		if g == nil || g.DType != w.DType || fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) {
			return fmt.Errorf("output %s is %v, want %v", name, g, w)
		}
		switch wd := w.Data.(type) {
		case []float32:
			gd := g.Data.([]float32)
			for i := range wd {
				if d := math.Abs(float64(gd[i] - wd[i])); d > 1e-5*(1+math.Abs(float64(wd[i]))) {
					return fmt.Errorf("output %s element %d is %v, want %v", name, i, gd[i], wd[i])
				}
			}
		default:
			if fmt.Sprint(g.Data) != fmt.Sprint(w.Data) {
				return fmt.Errorf("output %s is %v, want %v", name, g.Data, w.Data)
			}
		}
	}
	return nil
}

// metric returns the value of one sample line of /metrics.
func metric(t testing.TB, text, sample string) float64 {
	t.Helper()
	re := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(sample) + " (\\S+)$")
	m := re.FindStringSubmatch(text)
	if m == nil {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func scrape(t testing.TB, base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestHTTPLoad: 240 concurrent HTTP clients, three requests each (JSON and
// binary tensors alternating), all answered as the solo engine answers;
// /metrics scraped while they are in flight shows groups of more than one
// request.
func TestHTTPLoad(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed", "image_padded"), Defaults: ModelConfig{MaxDelay: delay(20 * time.Millisecond)}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	reqs, want := references(t, s, "text_packed")
	reusedBefore := s.Engine("text_packed").Stats().Components["text_encoder"].OutputsReused
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300}, Timeout: 2 * time.Minute}
	const clients, each = 240, 3
	var inflight atomic.Int64
	inflight.Store(clients)
	scraped := make(chan float64, 1)
	go func() {
		// Scrape while clients are in flight until groups show.
		best := 0.0
		for inflight.Load() > 0 {
			text := scrape(t, ts.URL)
			if g := metric(t, text, `genaic_component_max_group_requests{component="text_encoder",model="text_packed"}`); g > best && inflight.Load() > 0 {
				best = g
			}
			if best > 1 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		scraped <- best
	}()
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Go(func() {
			defer inflight.Add(-1)
			for k := range each {
				i := (c*each + k) % len(reqs)
				body, hlen := oipJSON(t, reqs[i], nil, k%2 == 1)
				if k%2 == 0 {
					hlen = 0
				}
				a := post(client, ts.URL+"/v2/models/text_packed/infer", body, hlen)
				if a.err != nil || a.status != http.StatusOK {
					errs <- fmt.Errorf("%s: status %d rule %q err %v", reqs[i].ID, a.status, a.rule, a.err)
					continue
				}
				if err := same(a.outputs, want[i].Outputs.Map()); err != nil {
					errs <- fmt.Errorf("%s: %v", reqs[i].ID, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if g := <-scraped; g <= 1 {
		t.Errorf("metrics scraped during the load showed no group of more than one request (max %v)", g)
	}
	text := scrape(t, ts.URL)
	if n := metric(t, text, `genaic_requests_total{model="text_packed",protocol="http"}`); n != clients*each {
		t.Errorf("genaic_requests_total counts %v requests, want %d", n, clients*each)
	}
	if n := metric(t, text, `genaic_component_group_size_count{component="text_encoder",model="text_packed"}`); !(n >= 1) {
		t.Errorf("no group-size histogram observations: %v", n)
	}
	if d := metric(t, text, `genaic_queue_depth{model="text_packed"}`); d != 0 {
		t.Errorf("queue depth %v after the load, want 0", d)
	}
	// Every answer was right while the groups' buffers were written
	// again, once their responses were written (release.go).
	if n := metric(t, text, `genaic_outputs_reused_groups_total{component="text_encoder",model="text_packed"}`); !(n > float64(reusedBefore)) {
		t.Errorf("no group's output buffers were reused after their responses were written (%v, %d before the load)", n, reusedBefore)
	}
}

// grpcRequest writes a request as a gRPC ModelInferRequest, its inputs
// in raw_input_contents or in typed contents.
func grpcRequest(model string, r vm.Request, raw bool, params map[string]*oippb.InferParameter) *oippb.ModelInferRequest {
	out := &oippb.ModelInferRequest{ModelName: model, Id: r.ID, Parameters: params}
	for _, name := range sortedKeys(r.Inputs) {
		tn := r.Inputs[name]
		in := &oippb.ModelInferRequest_InferInputTensor{Name: name, Datatype: Datatype(tn.DType), Shape: tn.Shape}
		if raw {
			out.RawInputContents = append(out.RawInputContents, toBytes(tn))
		} else {
			switch d := tn.Data.(type) {
			case []float32:
				in.Contents = &oippb.InferTensorContents{Fp32Contents: d}
			case []int64:
				in.Contents = &oippb.InferTensorContents{Int64Contents: d}
			}
		}
		out.Inputs = append(out.Inputs, in)
	}
	return out
}

func grpcOutputs(r *oippb.ModelInferResponse) (map[string]*backend.Tensor, error) {
	out := map[string]*backend.Tensor{}
	for i, o := range r.Outputs {
		dt, err := dtypeOf(o.Name, o.Datatype)
		if err != nil {
			return nil, err
		}
		t, err := fromBytes(o.Name, dt, o.Shape, r.RawOutputContents[i])
		if err != nil {
			return nil, err
		}
		out[o.Name] = t
	}
	return out, nil
}

func grpcClient(t testing.TB, s *Server, opts ...grpc.ServerOption) oippb.GRPCInferenceServiceClient {
	t.Helper()
	return oippb.NewGRPCInferenceServiceClient(grpcConn(t, s, opts...))
}

// grpcConn serves s's gRPC front on a local port and returns a client
// connection to it.
func grpcConn(t testing.TB, s *Server, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := localListener(t)
	g := s.NewGRPCServer(opts...)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// localListener listens on a free local port.
func localListener(t testing.TB) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// statusOf is the status a GET of url is answered with.
func statusOf(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestGRPCLoad: bursts of 200 concurrent gRPC clients on the image package,
// raw and typed contents alternating, all answered as the solo engine
// answers, with groups of more than one request.
func TestGRPCLoad(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded"), Defaults: ModelConfig{MaxDelay: delay(20 * time.Millisecond)}})
	c := grpcClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r, err := c.ServerReady(ctx, &oippb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Fatalf("ServerReady: %v %v", r, err)
	}
	if r, err := c.ModelReady(ctx, &oippb.ModelReadyRequest{Name: "image_padded"}); err != nil || !r.Ready {
		t.Fatalf("ModelReady: %v %v", r, err)
	}
	md, err := c.ModelMetadata(ctx, &oippb.ModelMetadataRequest{Name: "image_padded"})
	if err != nil || len(md.Inputs) != 4 || md.Inputs[0].Name != "pixel_patches" || md.Inputs[0].Datatype != "FP32" {
		t.Fatalf("ModelMetadata: %v %v", md, err)
	}
	if _, err := c.ModelReady(ctx, &oippb.ModelReadyRequest{Name: "nope"}); grpcstatus.Code(err) != codes.NotFound {
		t.Errorf("ModelReady of an unknown model: %v, want NotFound", err)
	}
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := solo(t, s, "image_padded", engine.Options{})
	reusedBefore := s.Engine("image_padded").Stats().Components["encoder"].OutputsReused
	const clients = 200
	burst := func() {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			wg.Go(func() {
				r := reqs[i%len(reqs)]
				resp, err := c.ModelInfer(ctx, grpcRequest("image_padded", r, i%2 == 0, nil))
				if err != nil {
					errs <- fmt.Errorf("%s: %v", r.ID, err)
					return
				}
				got, err := grpcOutputs(resp)
				if err == nil {
					err = same(got, ref(r).Outputs.Map())
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %v", r.ID, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	// One connection delivers the calls one after another, and the tiny
	// encoder may answer each before the next arrives when the machine is
	// busy (seen once in a make test of parallel packages): a burst that
	// formed no group is followed by another, up to five.
	maxGroup := func() int { return s.Engine("image_padded").Stats().Components["encoder"].MaxGroupRequests }
	for range 5 {
		if burst(); maxGroup() >= 2 || t.Failed() {
			break
		}
	}
	if g := maxGroup(); g < 2 {
		t.Errorf("five bursts of 200 concurrent gRPC requests formed no group of more than one (max %d)", g)
	}
	// Every answer was right while the groups' buffers were written
	// again, once their calls had ended (release.go).
	if n := s.Engine("image_padded").Stats().Components["encoder"].OutputsReused; n <= reusedBefore {
		t.Errorf("no group's output buffers were reused after their calls ended (%d, %d before the load)", n, reusedBefore)
	}
}

// gate is a Go binding of the image encoder that waits until the gate
// opens: the first request holds the component's only worker while others
// queue behind it.
type gate struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1024), open: make(chan struct{})} }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) encoder(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	g.entered <- struct{}{}
	<-g.open
	return sumPatches(ctx, in)
}

// sumPatches embeds an image as the sum of its valid patches.
func sumPatches(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x, lengths := in["pixel_patches"], in["patch_lengths"].Int64s()
	p, n, f := x.Shape[0], x.Shape[1], x.Shape[2]
	out := make([]float32, p*f)
	for i := range p {
		for j := range lengths[i] {
			for k := range f {
				out[i*f+k] += x.Float32s()[(i*n+j)*f+k]
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{p, f}, Data: out}}, nil
}

func gatedServer(t *testing.T, queue int) (*Server, *gate, func(vm.Request) vm.Response) {
	return gatedServerWith(t, ModelConfig{MaxDelay: delay(0), Queue: queue, Workers: 1})
}

// gatedServerWith is gatedServer with the model's settings cfg.
func gatedServerWith(t *testing.T, cfg ModelConfig) (*Server, *gate, func(vm.Request) vm.Response) {
	g := newGate()
	b := &backend.Bindings{}
	b.Register("encoder", g.encoder)
	s := newServer(t, Config{Repo: repo(t, "image_padded"), NoWarmup: true, Use: map[ir.ImplKind]backend.Backend{ir.ImplONNX: b}, Defaults: cfg})
	t.Cleanup(g.release)
	rb := &backend.Bindings{}
	rb.Register("encoder", sumPatches)
	return s, g, solo(t, s, "image_padded", engine.Options{Use: map[ir.ImplKind]backend.Backend{ir.ImplONNX: rb}})
}

// TestQueueFull: while the only worker is busy, a burst beyond the queue
// gets 429 with Retry-After (HTTP) or RESOURCE_EXHAUSTED (gRPC) and rule
// run/queue-full; every other request is answered correctly once the
// worker is free.
func TestQueueFull(t *testing.T) {
	s, g, ref := gatedServer(t, 2)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := grpcClient(t, s)
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	url := ts.URL + "/v2/models/image_padded/infer"
	first := make(chan httpAnswer, 1)
	go func() {
		body, _ := oipJSON(t, reqs[0], nil, false)
		first <- post(client, url, body, 0)
	}()
	<-g.entered // the worker now holds the first request
	const burst = 12
	type result struct {
		i    int
		a    httpAnswer
		gerr error
		gout map[string]*backend.Tensor
	}
	results := make(chan result, burst)
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range burst {
		wg.Go(func() {
			r := reqs[i%len(reqs)]
			var res result
			res.i = i % len(reqs)
			if i%2 == 0 {
				body, _ := oipJSON(t, r, nil, false)
				res.a = post(client, url, body, 0)
			} else {
				resp, err := c.ModelInfer(context.Background(), grpcRequest("image_padded", r, true, nil))
				res.gerr = err
				if err == nil {
					res.gout, res.gerr = grpcOutputs(resp)
				}
			}
			answered.Add(1)
			results <- res
		})
	}
	// The overflow is answered while the worker is still held: wait for
	// the rejections before opening the gate.
	deadline := time.Now().Add(time.Minute)
	for answered.Load() < burst-2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	g.release()
	wg.Wait()
	close(results)
	if a := <-first; a.status != http.StatusOK || same(a.outputs, ref(reqs[0]).Outputs.Map()) != nil {
		t.Errorf("the first request: status %d err %v", a.status, a.err)
	}
	full, ok := 0, 0
	for res := range results {
		want := ref(reqs[res.i]).Outputs
		switch {
		case res.a.status == http.StatusTooManyRequests:
			full++
			if res.a.rule != backend.RunQueueFull || res.a.retry == "" {
				t.Errorf("429 with rule %q, Retry-After %q", res.a.rule, res.a.retry)
			}
		case res.a.status == http.StatusOK:
			ok++
			if err := same(res.a.outputs, want.Map()); err != nil {
				t.Error(err)
			}
		case res.a.status != 0 || res.a.err != nil:
			t.Errorf("HTTP status %d rule %q err %v", res.a.status, res.a.rule, res.a.err)
		case grpcstatus.Code(res.gerr) == codes.ResourceExhausted:
			full++
			if !strings.Contains(res.gerr.Error(), backend.RunQueueFull) {
				t.Errorf("RESOURCE_EXHAUSTED without the rule: %v", res.gerr)
			}
		case res.gerr == nil:
			ok++
			if err := same(res.gout, want.Map()); err != nil {
				t.Error(err)
			}
		default:
			t.Errorf("gRPC: %v", res.gerr)
		}
	}
	if full == 0 || ok == 0 || full+ok != burst {
		t.Errorf("burst of %d: %d refused for a full queue, %d answered", burst, full, ok)
	}
	text := scrape(t, ts.URL)
	if n := metric(t, text, `genaic_request_errors_total{model="image_padded",rule="run/queue-full"}`); n != float64(full) {
		t.Errorf("genaic_request_errors_total{rule=run/queue-full} = %v, want %d", n, full)
	}
}

// TestDeadline: a request whose timeout is shorter than its wait in the
// queue fails with run/deadline (HTTP 504, gRPC DEADLINE_EXCEEDED), and
// the request ahead of it is still answered.
func TestDeadline(t *testing.T) {
	s, g, ref := gatedServer(t, 16)
	c := grpcClient(t, s)
	url, reqs, first := holdFirst(t, s, g, nil)
	body, _ := oipJSON(t, reqs[1], map[string]any{"timeout": "30ms"}, false)
	if a := post(http.DefaultClient, url, body, 0); a.status != http.StatusGatewayTimeout || a.rule != backend.RunDeadline {
		t.Errorf("timed-out HTTP request: status %d rule %q err %v, want 504 run/deadline", a.status, a.rule, a.err)
	}
	_, err := c.ModelInfer(context.Background(), grpcRequest("image_padded", reqs[1], true,
		map[string]*oippb.InferParameter{"timeout": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: 30}}}))
	if grpcstatus.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), backend.RunDeadline) {
		t.Errorf("timed-out gRPC request: %v, want DEADLINE_EXCEEDED run/deadline", err)
	}
	g.release()
	if a := <-first; a.status != http.StatusOK || same(a.outputs, ref(reqs[0]).Outputs.Map()) != nil {
		t.Errorf("the request ahead: status %d err %v", a.status, a.err)
	}
	if n := s.Engine("image_padded").Stats().Components["encoder"].Requests; n != 1 {
		t.Errorf("the encoder ran %d requests, want 1: the timed-out ones must be dropped from the queue", n)
	}
}

// TestDefaultTimeout: a model's default_timeout is the deadline of a
// request that names no timeout (run/deadline while it waits), and a
// request's own timeout wins over it.
func TestDefaultTimeout(t *testing.T) {
	s, g, _ := gatedServerWith(t, ModelConfig{MaxDelay: delay(0), Workers: 1, DefaultTimeout: 30 * time.Millisecond})
	url, reqs, first := holdFirst(t, s, g, map[string]any{"timeout": "1m"})
	body, _ := oipJSON(t, reqs[1], nil, false)
	// A client's bound (a hang guard): without the default the request
	// would wait for the gate.
	bounded := &http.Client{Timeout: 10 * time.Second}
	if a := post(bounded, url, body, 0); a.status != http.StatusGatewayTimeout || a.rule != backend.RunDeadline {
		t.Errorf("a request naming no timeout: status %d rule %q err %v, want 504 run/deadline", a.status, a.rule, a.err)
	}
	g.release() // the first request was held past the default: its own timeout won
	if a := <-first; a.status != http.StatusOK {
		t.Errorf("the request whose own timeout is a minute: status %d rule %q err %v", a.status, a.rule, a.err)
	}
}

// holdFirst serves s over HTTP and sends the package's first request, of
// parameters params, returning once the gate holds it in the encoder:
// the model's infer URL, the package's requests, and where the first
// request's answer comes once the gate opens.
func holdFirst(t *testing.T, s *Server, g *gate, params map[string]any) (url string, reqs []vm.Request, first chan httpAnswer) {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		g.release() // a test that fails early leaves no request held
		ts.Close()
	})
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	url = ts.URL + "/v2/models/image_padded/infer"
	first = make(chan httpAnswer, 1)
	go func() {
		body, _ := oipJSON(t, reqs[0], params, false)
		first <- post(&http.Client{Timeout: 2 * time.Minute}, url, body, 0)
	}()
	<-g.entered
	return url, reqs, first
}

// TestBadRequests: each malformed request fails alone with 400/404 and a
// message that says what is wrong; the model still answers after them.
func TestBadRequests(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded"), MaxRequestBytes: 1 << 16})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + "/v2/models/image_padded/infer"
	cases := []struct {
		body   string
		hlen   int
		status int
		says   string
	}{
		{`{`, 0, 400, "no inference request JSON"},
		{`{"inputs":[{"name":"nope","shape":[1],"datatype":"FP32","data":[1]}]}`, 0, 400, "no input `nope`"},
		{`{"inputs":[{"name":"patch_lengths","shape":[2],"datatype":"FP32","data":[1,2]}]}`, 0, 400, "is INT64"},
		{`{"inputs":[{"name":"patch_lengths","shape":[3],"datatype":"INT64","data":[1,2]}]}`, 0, 400, "data holds 2"},
		{`{"inputs":[{"name":"patch_lengths","shape":[1000000000,1000000000,1000000000],"datatype":"INT64","data":[1]}]}`, 0, 400, "more elements"},
		{`{"inputs":[{"name":"patch_lengths","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16}}]}xx`, -2, 400, "binary_data_size"},
		{`{"inputs":[],"parameters":{"timeout":"soon"}}`, 0, 400, "timeout"},
		{`{"inputs":[],"parameters":{"priority":1.5}}`, 0, 400, "`priority` 1.5"},
		{`{"inputs":[],"parameters":{"priority":"high"}}`, 0, 400, "`priority` is string"},
		{`{"inputs":[{"name":"patch_lengths","shape":[1],"datatype":"INT64","data":[1.5]}]}`, 0, 400, "element 0"},
		{`{"inputs":[{"name":"patch_lengths","shape":[1],"datatype":"BYTES","data":["a"]}]}`, 0, 400, "BYTES"},
		{`{"inputs":[` + strings.Repeat(" ", 1<<16) + `]}`, 0, 413, "larger than"},
		// The graph fixes the patches' features at 8: 5 is the caller's
		// mistake, told at admission, not a server error.
		{`{"inputs":[{"name":"pixel_patches","shape":[1,1,5],"datatype":"FP32","data":[1,2,3,4,5]},{"name":"patch_lengths","shape":[1],"datatype":"INT64","data":[1]},` +
			`{"name":"image_offsets","shape":[2],"datatype":"INT64","data":[0,1]},{"name":"image_owner","shape":[1],"datatype":"INT64","data":[0]}]}`, 0, 400,
			"input port `pixel_patches` has extent 5 on axis 2, but the component's graph fixes that axis at 8"},
	}
	for _, c := range cases {
		resp, err := http.Post(url, "application/json", strings.NewReader(c.body))
		if c.hlen < 0 {
			// The JSON part is all but the last -hlen bytes.
			req, _ := http.NewRequest("POST", url, strings.NewReader(c.body))
			req.Header.Set(HeaderLength, strconv.Itoa(len(c.body)+c.hlen))
			resp, err = http.DefaultClient.Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.says) {
			t.Errorf("%.60s: %d %s, want %d saying %q", c.body, resp.StatusCode, b, c.status, c.says)
		}
	}
	if resp, err := http.Get(ts.URL + "/v2/models/nope"); err != nil || resp.StatusCode != 404 {
		t.Errorf("unknown model: %v %v", resp, err)
	}
	reqs, _ := readRequests(s.model("image_padded").Dir)
	body, _ := oipJSON(t, reqs[0], nil, false)
	if a := post(http.DefaultClient, url, body, 0); a.status != 200 {
		t.Errorf("a good request after the bad ones: %d %v", a.status, a.err)
	}
}

func TestHalfFloats(t *testing.T) {
	for _, f := range []float32{0, 1, -2.5, 65504, 6.1035156e-05, 5.9604645e-08, 0.33325195} {
		if got := backend.HalfToFloat32(backend.Float32ToHalf(f)); got != f {
			t.Errorf("float16 round trip of %v gave %v", f, got)
		}
	}
	if h := backend.Float32ToHalf(1e6); h != 0x7c00 {
		t.Errorf("1e6 to float16: %#x, want +Inf", h)
	}
}

// TestPythonClient: a client written from the protocol's specification
// alone (testdata/oip_client.py, Python's standard library) infers with
// JSON and binary tensors; both answers equal the solo engine's.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the specification-only client: %v", err)
	}
	s := newServer(t, Config{Repo: repo(t, "image_padded")})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	reqs, err := readRequests(s.model("image_padded").Dir)
	if err != nil {
		t.Fatal(err)
	}
	r := reqs[1]
	var inputs []map[string]any
	for _, name := range sortedKeys(r.Inputs) {
		tn := r.Inputs[name]
		inputs = append(inputs, map[string]any{"name": name, "datatype": Datatype(tn.DType), "shape": tn.Shape, "data": tn.Data})
	}
	path := filepath.Join(t.TempDir(), "inputs.json")
	b, _ := json.Marshal(inputs)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "oip_client.py"), ts.URL, "image_padded", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Python client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		JSON, Binary map[string]jsonTensor
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := solo(t, s, "image_padded", engine.Options{})(r).Outputs
	for form, outs := range map[string]map[string]jsonTensor{"json": got.JSON, "binary": got.Binary} {
		ts := map[string]*backend.Tensor{}
		for name, o := range outs {
			dt, err := dtypeOf(name, o.Datatype)
			if err != nil {
				t.Fatal(err)
			}
			if ts[name], err = fromJSON(name, dt, o.Shape, o.Data); err != nil {
				t.Fatal(err)
			}
		}
		if err := same(ts, want.Map()); err != nil {
			t.Errorf("%s answer: %v", form, err)
		}
	}
}

func TestRepository(t *testing.T) {
	one, err := filepath.Abs(filepath.Join("..", "testdata", "packages", "image_padded"))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, Config{Repo: one, Name: "images", NoWarmup: true})
	if got := fmt.Sprint(s.Models()); got != "[images]" {
		t.Errorf("a package served as %s, want [images]", got)
	}
	for _, c := range []struct {
		cfg  Config
		says string
	}{
		{Config{Repo: repo(t, "image_padded"), Name: "x"}, "is no package"},
		{Config{Repo: t.TempDir()}, "holds no package"},
		{Config{Repo: repo(t, "image_padded"), Models: map[string]ModelConfig{"nope": {}}}, `names model "nope"`},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want an error saying %q", c.cfg, err, c.says)
		}
	}
	path := filepath.Join(t.TempDir(), "serve.yaml")
	os.WriteFile(path, []byte("defaults: {max_delay: 2ms, queue: 8}\nmodels:\n  image_padded: {workers: 2, queu: 3}\n"), 0o644)
	if _, err := ReadConfig(path); err == nil || !strings.Contains(err.Error(), "queu") {
		t.Errorf("a misspelt key: %v", err)
	}
	os.WriteFile(path, []byte("defaults: {max_delay: 2ms, queue: 8}\nmodels:\n  image_padded: {workers: 2}\n"), 0o644)
	f, err := ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Models["image_padded"].Over(f.Defaults)
	if *c.MaxDelay != 2*time.Millisecond || c.Queue != 8 || c.Workers != 2 {
		t.Errorf("merged config %+v", c)
	}
}

// TestEmbeddedExecutor: a service that embeds a generated executor exports
// the same metrics with NewEngineMetrics and NewStatsCollector.
func TestEmbeddedExecutor(t *testing.T) {
	reg := prometheus.NewRegistry()
	em := NewEngineMetrics(reg)
	dir := filepath.Join("..", "testdata", "packages", "image_padded")
	ex, err := imagepadded.New(dir, genrt.WithObserver(em.Observer("images")), genrt.WithMaxDelay(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	reg.MustRegister(NewStatsCollector("images", ex.Stats))
	reqs, err := readRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ex.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	inv := metric(t, text, `genaic_component_invocations_total{component="encoder",model="images"}`)
	// Two paths count the same invocations: the stats read at scrape
	// time, the observer's histogram as the groups ran.
	obs := metric(t, text, `genaic_invocation_seconds_count{component="encoder",model="images"}`)
	if !(inv >= 1) || inv != obs {
		t.Errorf("the stats count %v invocations, the histogram %v:\n%s", inv, obs, text)
	}
	n := metric(t, text, `genaic_component_requests_total{component="encoder",model="images"}`)
	if sum := metric(t, text, `genaic_component_group_size_sum{component="encoder",model="images"}`); !(n >= 1) || n > float64(len(reqs)) || n != sum {
		t.Errorf("requests_total %v, group_size_sum %v, for %d requests", n, sum, len(reqs))
	}
	// One caller's requests, one after another, run on its goroutine (once
	// they show a lone caller).
	for i := range 12 {
		r := reqs[i%len(reqs)]
		req := &imagepadded.Request{PixelPatches: r.Inputs["pixel_patches"], PatchLengths: r.Inputs["patch_lengths"],
			ImageOffsets: r.Inputs["image_offsets"], ImageOwner: r.Inputs["image_owner"]}
		if _, err := ex.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	rec = httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if inline := metric(t, rec.Body.String(), `genaic_inline_requests_total{component="encoder",model="images"}`); !(inline >= 1) {
		t.Errorf("a lone caller's 12 requests: %v ran inline", inline)
	}
}

// TestDrainAndClose: draining turns readiness false (HTTP and gRPC) while
// requests are still answered; after Close a request gets 503 run/closed
// (gRPC UNAVAILABLE).
func TestDrainAndClose(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded")})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := grpcClient(t, s)
	reqs, _ := readRequests(s.model("image_padded").Dir)
	body, _ := oipJSON(t, reqs[0], nil, false)
	url := ts.URL + "/v2/models/image_padded/infer"
	status := func(path string) int { return statusOf(t, ts.URL+path) }
	if status("/v2/health/ready") != 200 || status("/v2/models/image_padded/ready") != 200 {
		t.Fatalf("not ready after New")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if status("/v2/health/ready") != 503 || status("/v2/models/image_padded/ready") != 503 || status("/v2/health/live") != 200 {
		t.Errorf("draining: ready %d, model ready %d, live %d; want 503, 503, 200",
			status("/v2/health/ready"), status("/v2/models/image_padded/ready"), status("/v2/health/live"))
	}
	if r, err := c.ServerReady(ctx, &oippb.ServerReadyRequest{}); err != nil || r.Ready {
		t.Errorf("gRPC ServerReady while draining: %v %v", r, err)
	}
	if a := post(http.DefaultClient, url, body, 0); a.status != 200 {
		t.Errorf("a request that reached a draining server: %d %v, want it answered", a.status, a.err)
	}
	s.Close()
	if a := post(http.DefaultClient, url, body, 0); a.status != 503 || a.rule != backend.RunClosed {
		t.Errorf("after Close: %d %q, want 503 run/closed", a.status, a.rule)
	}
	if _, err := c.ModelInfer(ctx, grpcRequest("image_padded", reqs[0], true, nil)); grpcstatus.Code(err) != codes.Unavailable {
		t.Errorf("gRPC after Close: %v, want UNAVAILABLE", err)
	}
}

// TestFP16: FP16 inputs travel as JSON numbers and as binary halves alike.
func TestFP16(t *testing.T) {
	raw := json.RawMessage(`[[1, -2.5], [0.5, 65504]]`)
	a, err := fromJSON("x", "float16", []int64{2, 2}, raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fromBytes("x", "float16", []int64{2, 2}, toBytes(a))
	if err != nil {
		t.Fatal(err)
	}
	data, err := jsonData(b)
	if err != nil || fmt.Sprint(data) != "[1 -2.5 0.5 65504]" {
		t.Errorf("FP16 round trip: %v %v", data, err)
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
