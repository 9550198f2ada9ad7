package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// serveProcess starts `genaic serve` as a child process logging JSON, and
// returns it once it is ready, with its HTTP and gRPC addresses and its
// log lines as they come.
type serveProcess struct {
	cmd        *exec.Cmd
	http, grpc string
	mu         sync.Mutex
	lines      []map[string]any
	done       chan struct{}
}

func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServeProbing(t, nil, args...)
}

// startServeProbing is startServe calling probe with the HTTP address as
// soon as the server logs it, before it is ready.
func startServeProbing(t *testing.T, probe func(addr string), args ...string) *serveProcess {
	t.Helper()
	// Planning the execution measures every model for a while at load:
	// a test that does not say runs one worker.
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--workers") || strings.HasPrefix(a, "--threads") }) {
		args = append([]string{"--workers", "1"}, args...)
	}
	// A plan is kept in a folder of the test's unless it says where: a
	// test's plans are of no use to anything after it.
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--log-format", "json", "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--plan-cache", t.TempDir()}, args...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				line = map[string]any{"msg": sc.Text(), rawLine: true}
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			switch line["msg"] {
			case "listening":
				if line["protocol"] == "http" {
					p.http, _ = line["addr"].(string)
					if probe != nil {
						probe(p.http)
					}
				} else {
					p.grpc, _ = line["addr"].(string)
				}
			case "ready":
				close(ready)
			}
			p.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("genaic serve exited before it was ready: %v", p.log())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("genaic serve was not ready within 2 minutes: %v", p.log())
	}
	return p
}

// linkedRepo returns the absolute path of testdata's package name and a
// model repository that holds a link to it, as genaic serve loads one.
func linkedRepo(t *testing.T, name string) (pkg, repo string) {
	t.Helper()
	pkg, err := filepath.Abs(filepath.Join("..", "..", "testdata", "packages", name))
	if err != nil {
		t.Fatal(err)
	}
	repo = t.TempDir()
	if err := os.Symlink(pkg, filepath.Join(repo, name)); err != nil {
		t.Fatal(err)
	}
	return pkg, repo
}

// rawLine marks a line of a serveProcess's log that was not JSON.
const rawLine = "(not JSON)"

func (p *serveProcess) log() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.lines...)
}

// waitFor returns the last log line whose msg is msg, waiting up to a
// minute (a hang guard) for it: the process's standard error is read as it comes, so a line
// written before an answer the test already has may not be read yet.
func (p *serveProcess) waitFor(msg string) map[string]any {
	deadline := time.Now().Add(time.Minute)
	for {
		if l := p.find(msg); l != nil || time.Now().After(deadline) {
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// find returns the last log line whose msg is msg.
func (p *serveProcess) find(msg string) map[string]any {
	lines := p.log()
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i]["msg"] == msg {
			return lines[i]
		}
	}
	return nil
}

// oipBody writes a request as OIP JSON.
func oipBody(t *testing.T, r vm.Request) []byte {
	var ins []map[string]any
	for name, tn := range r.Inputs {
		ins = append(ins, map[string]any{"name": name, "shape": tn.Shape, "datatype": serve.Datatype(tn.DType), "data": tn.Data})
	}
	b, err := json.Marshal(map[string]any{"id": r.ID, "inputs": ins})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// closeToF32 compares an answer's float data with the reference's.
func closeToF32(got []float64, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if math.Abs(got[i]-float64(want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
			return false
		}
	}
	return true
}

// TestServePlansTheCPUs: with GOMAXPROCS=1 in its environment, genaic
// serve runs Go on one processor, as told, and still plans its models on
// the CPUs the process may use (engine.CPUs), not on its processors.
func TestServePlansTheCPUs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "1")
	p := startServe(t, imagePkg, "--workers=0")
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}()
	if got, _ := p.find("ready")["go_procs"].(float64); got != 1 {
		t.Errorf("genaic serve with GOMAXPROCS=1 runs on %v processors, want 1", p.find("ready")["go_procs"])
	}
	x, _ := p.find("model loaded")["execution"].(string)
	if want := fmt.Sprintf("planned on %d cores", engine.CPUs()); !strings.Contains(x, want) {
		t.Errorf("genaic serve with GOMAXPROCS=1: execution %q, want it %s", x, want)
	}
}

// TestServeLogIsJSONWhenTheModelFails: a request whose values the model
// refuses (a token id outside the embedding table, on which ONNX Runtime's
// Gather fails) is answered run/backend and logged once, as JSON, and
// ONNX Runtime writes nothing of its own to the server's standard error.
func TestServeLogIsJSONWhenTheModelFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	_, repo := linkedRepo(t, "text_packed")
	p := startServe(t, repo)
	defer p.cmd.Process.Kill()
	body := `{"id":"oov","inputs":[
		{"name":"token_ids","datatype":"INT64","shape":[3],"data":[5,1048576,1]},
		{"name":"token_offsets","datatype":"INT64","shape":[2],"data":[0,3]},
		{"name":"token_owner","datatype":"INT64","shape":[3],"data":[0,0,0]},
		{"name":"segment_offsets","datatype":"INT64","shape":[2],"data":[0,1]},
		{"name":"segment_owner","datatype":"INT64","shape":[1],"data":[0]}]}`
	resp, err := http.Post("http://"+p.http+"/v2/models/text_packed/infer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(answer), "run/backend") || !strings.Contains(string(answer), "Gather") {
		t.Fatalf("the request with a token outside the table: %s %s, want it refused run/backend with ONNX Runtime's reason", resp.Status, answer)
	}
	if l := p.waitFor("request failed"); l == nil || l["rule"] != "run/backend" || l["id"] != "oov" {
		t.Fatalf("the failed request was logged as %v, want one JSON line with its rule and id", l)
	}
	for _, l := range p.log() {
		if l[rawLine] == true {
			t.Errorf("the server wrote a line that is not JSON: %q", l["msg"])
		}
	}
}

// TestServeKeepsPlans: a model's execution planned at one start is kept
// in --plan-cache and taken at the next, the log saying it is and when it
// was measured; --replan measures it again.
func TestServeKeepsPlans(t *testing.T) {
	cache := t.TempDir()
	execution := func(args ...string) string {
		t.Helper()
		p := startServe(t, append([]string{imagePkg, "--workers=0", "--plan-cache", cache}, args...)...)
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		x, _ := p.find("model loaded")["execution"].(string)
		return x
	}
	first := execution()
	kept := execution()
	replanned := execution("--replan")
	if !strings.Contains(first, "planned on") || strings.Contains(first, "kept from") {
		t.Fatalf("first start: execution %q, want one planned", first)
	}
	if before, _, ok := strings.Cut(kept, ", kept from "); !ok || before != first {
		t.Errorf("second start: execution %q, want %q kept", kept, first)
	}
	if !strings.Contains(replanned, "planned on") || strings.Contains(replanned, "kept from") {
		t.Errorf("with --replan: execution %q, want one measured", replanned)
	}
}

// TestServePlanCacheNotAFolder: a --plan-cache that names a file is
// refused before anything loads.
func TestServePlanCacheNotAFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plans")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "serve", imagePkg, "--http", "127.0.0.1:0", "--grpc", "", "--plan-cache", file)
	if code != exitUsage || !strings.Contains(errOut, "--plan-cache "+file+": not a folder") {
		t.Errorf("--plan-cache naming a file: exit %d, %q", code, errOut)
	}
}

// TestServeSIGTERM: SIGTERM while 200 clients (150 HTTP, 50 gRPC) keep
// sending requests: the server stops accepting, answers every request it
// accepted (each answer correct), and exits 0; the requests it says it
// admitted and answered are exactly those the clients got answers for.
func TestServeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	pkg, repo := linkedRepo(t, "text_packed")
	f, err := os.Open(filepath.Join(pkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(f, pkg)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	plan, dir, _ := loadPlan(e, pkg)
	if plan == nil {
		t.Fatal("text_packed does not compile")
	}
	ref, err := engine.Open(plan, dir, engine.Options{Options: vm.Options{Solo: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want := make([][]float32, len(reqs))
	bodies := make([][]byte, len(reqs))
	for i, r := range reqs {
		resp := ref.Run(context.Background(), r)
		if resp.Err != nil {
			t.Fatal(resp.Err)
		}
		want[i] = resp.Outputs.Get("segment_embeddings").Float32s()
		bodies[i] = oipBody(t, r)
	}

	p := startServe(t, repo, "--max-delay", "10ms")
	defer p.cmd.Process.Kill()
	conn, err := grpc.NewClient(p.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gc := oippb.NewGRPCInferenceServiceClient(conn)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}, Timeout: 2 * time.Minute}
	var answered, refused atomic.Int64
	var signalled atomic.Bool
	errs := make(chan error, 1000)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	stopAt := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for c := range 200 {
		wg.Go(func() {
			for k := 0; time.Now().Before(stopAt); k++ {
				i := (c*7 + k) % len(reqs)
				var got []float64
				if c < 150 {
					resp, err := client.Post("http://"+p.http+"/v2/models/text_packed/infer", "application/json", bytes.NewReader(bodies[i]))
					if err != nil {
						refused.Add(1)
						if !signalled.Load() {
							report(fmt.Errorf("HTTP before the signal: %v", err))
						}
						return
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						report(fmt.Errorf("HTTP answer of %s cut off: %v", reqs[i].ID, err))
						return
					}
					answered.Add(1)
					var out struct {
						Outputs []struct {
							Name string
							Data []float64
						}
					}
					if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
						report(fmt.Errorf("HTTP %s: %d %s", reqs[i].ID, resp.StatusCode, b))
						continue
					}
					for _, o := range out.Outputs {
						if o.Name == "segment_embeddings" {
							got = o.Data
						}
					}
				} else {
					ins := &oippb.ModelInferRequest{ModelName: "text_packed", Id: reqs[i].ID}
					for name, tn := range reqs[i].Inputs {
						ins.Inputs = append(ins.Inputs, &oippb.ModelInferRequest_InferInputTensor{Name: name, Datatype: "INT64", Shape: tn.Shape,
							Contents: &oippb.InferTensorContents{Int64Contents: tn.Int64s()}})
					}
					resp, err := gc.ModelInfer(context.Background(), ins)
					if err != nil {
						// Not accepted: the server refuses new calls once
						// it drains; accepted calls are answered.
						refused.Add(1)
						if !signalled.Load() {
							report(fmt.Errorf("gRPC before the signal: %v", err))
						}
						return
					}
					answered.Add(1)
					for j, o := range resp.Outputs {
						if o.Name == "segment_embeddings" {
							raw := resp.RawOutputContents[j]
							for q := 0; q+4 <= len(raw); q += 4 {
								bits := uint32(raw[q]) | uint32(raw[q+1])<<8 | uint32(raw[q+2])<<16 | uint32(raw[q+3])<<24
								got = append(got, float64(math.Float32frombits(bits)))
							}
						}
					}
				}
				if !closeToF32(got, want[i]) {
					report(fmt.Errorf("%s answered %v, want %v", reqs[i].ID, got, want[i]))
				}
			}
		})
	}
	for answered.Load() < 600 && time.Now().Before(stopAt) {
		time.Sleep(5 * time.Millisecond)
	}
	signalled.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The log is read to its end before Wait, which closes the pipe: a
	// Wait first may drop the last lines the server wrote.
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		p.cmd.Process.Kill()
		t.Fatalf("genaic serve did not exit within 2 minutes of SIGTERM: %v", p.log())
	}
	code := waitExit(t, p.cmd, 2*time.Minute)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if code != 0 {
		t.Errorf("genaic serve exited %d after SIGTERM, want 0", code)
	}
	stopped := p.find("stopped")
	if stopped == nil {
		t.Fatalf("no stopped line in the log: %v", p.log())
	}
	admitted, done := stopped["admitted"].(float64), stopped["answered"].(float64)
	// The warm-up request is admitted to the engine directly, not counted.
	if int64(admitted) != answered.Load() || int64(done) != answered.Load() {
		t.Errorf("the server admitted %v and answered %v requests; the clients got %d answers", admitted, done, answered.Load())
	}
	if refused.Load() == 0 {
		t.Errorf("no client was refused after SIGTERM: the clients stopped before the server did")
	}
	t.Logf("%d answered, %d clients refused after SIGTERM", answered.Load(), refused.Load())
}

// TestServeModelControl: `--model-control explicit` lets a client unload
// and load a model of the running server (each logged); another mode is
// refused at start.
func TestServeModelControl(t *testing.T) {
	p := startServe(t, "--model-control", "explicit", "--no-warmup", textPkg)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}()
	base := "http://" + p.http
	post := func(path string) (int, string) {
		resp, err := http.Post(base+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/v2/repository/models/text_packed/unload"); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	if code, body := post("/v2/repository/index"); code != 200 || !strings.Contains(body, `"state":"UNAVAILABLE","reason":"unloaded"`) {
		t.Errorf("index after the unload: %d %s", code, body)
	}
	if code, body := post("/v2/repository/models/text_packed/load"); code != 200 {
		t.Fatalf("load: %d %s", code, body)
	}
	if resp, err := http.Get(base + "/v2/models/text_packed/ready"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the model loaded again is not ready: %v %v", resp, err)
	}
	if p.waitFor("model unloaded") == nil || p.waitFor("model now served") == nil {
		t.Errorf("the unload and load were not logged: %v", p.log())
	}
	_, errOut, code := runCLI(t, "serve", "--model-control", "poll", "--http", "127.0.0.1:0", "--grpc", "", textPkg)
	if code == exitOK || !strings.Contains(errOut, "explicit") {
		t.Errorf("--model-control poll: exit %d, %q", code, errOut)
	}
}

// TestServeLiveWhileLoading: genaic serve listens before it loads its
// models: the listening lines come before the first model is loaded, and
// a probe at that moment finds live 200 and, while the models still load,
// ready 503.
func TestServeLiveWhileLoading(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	repo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "packages"))
	if err != nil {
		t.Fatal(err)
	}
	var live, ready int
	get := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	p := startServeProbing(t, func(addr string) {
		live, ready = get("http://"+addr+"/v2/health/live"), get("http://"+addr+"/v2/health/ready")
	}, repo, "--no-warmup")
	defer p.cmd.Process.Kill()
	if live != 200 {
		t.Errorf("live answered %d as the server began listening, want 200", live)
	}
	lines := p.log()
	listening := slices.IndexFunc(lines, func(l map[string]any) bool { return l["msg"] == "listening" })
	loaded := slices.IndexFunc(lines, func(l map[string]any) bool { return l["msg"] == "model loaded" })
	if listening < 0 || loaded < 0 || listening > loaded {
		t.Errorf("the log has listening at line %d and the first model loaded at %d: want listening first", listening, loaded)
	}
	loadedBefore := 0
	for _, l := range lines {
		if l["msg"] == "model loaded" {
			loadedBefore++
		}
	}
	switch {
	case ready == 503:
	case ready == 200:
		t.Logf("every model (%d) was loaded before the probe: ready's 503 while loading is not seen here", loadedBefore)
	default:
		t.Errorf("ready answered %d while the models loaded, want 503", ready)
	}
	if got := get("http://" + p.http + "/v2/health/ready"); got != 200 {
		t.Errorf("ready answered %d once the server said ready, want 200", got)
	}
}
