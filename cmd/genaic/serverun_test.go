package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// linesDocument writes a requests document of ocr_lines text lines given
// as items: three lines of three widths, then three of three widths and
// two heights (which no single tensor holds along the lines' first axis).
func linesDocument(t *testing.T, dir string) string {
	t.Helper()
	x := 0.3
	line := func(w, h int) map[string]any {
		data := make([]float64, w*h)
		for i := range data {
			x = math.Mod(x*3.7+0.19, 2)
			data[i] = math.Round((x-1)*1000) / 1000
		}
		return map[string]any{"dtype": "float32", "shape": []int{w, h}, "data": data}
	}
	doc := map[string]any{"requests": []any{
		map[string]any{"id": "three-widths", "inputs": map[string]any{"line_images": map[string]any{"items": []any{line(5, 8), line(12, 8), line(24, 8)}}}},
		map[string]any{"id": "widths-and-heights", "inputs": map[string]any{"line_images": map[string]any{"items": []any{line(5, 8), line(12, 16), line(24, 8)}}}},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lines.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// applicationPackage copies ocr_lines into dir as ocr_app, its
// line_images coming from an application (`source: { kind: application
// }`) rather than the request.
func applicationPackage(t *testing.T, dir string) string {
	t.Helper()
	pkg := filepath.Join(dir, "ocr_app")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"inference_metadata.yaml", "recognizer.onnx"} {
		b, err := os.ReadFile(filepath.Join(ocrPkg, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "inference_metadata.yaml" {
			doc := string(b)
			at := strings.Index(doc, "\n      line_images:\n")
			src := strings.Index(doc[at:], "source: { kind: request }")
			if at < 0 || src < 0 {
				t.Fatalf("ocr_lines' document has no line_images from the request")
			}
			b = []byte(doc[:at+src] + "source: { kind: application, name: camera }" + doc[at+src+len("source: { kind: request }"):])
		}
		if err := os.WriteFile(filepath.Join(pkg, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return pkg
}

// flat names a response's outputs, and its per-item outputs as NAME#i
// (NAME#i.j for item j of unit i), so that answers compare value by value.
func flat(outs map[string]*backend.Tensor, items map[string][]vm.Item) map[string]*backend.Tensor {
	m := map[string]*backend.Tensor{}
	for n, x := range outs {
		m[n] = x
	}
	var add func(prefix string, its []vm.Item)
	add = func(prefix string, its []vm.Item) {
		for i, it := range its {
			if it.Tensor == nil {
				add(fmt.Sprintf("%s%d.", prefix, i), it.Items)
				continue
			}
			m[fmt.Sprintf("%s%d", prefix, i)] = it.Tensor
		}
	}
	for n, its := range items {
		add(n+"#", its)
	}
	return m
}

// runAnswers runs a requests document through `genaic run` and returns
// each response's outputs by id, flattened.
func runAnswers(t *testing.T, pkg, reqs string) map[string]map[string]*backend.Tensor {
	t.Helper()
	answers, _ := runAnswersWith(t, pkg, reqs)
	return answers
}

// runAnswersWith is runAnswers with extra flags for `genaic run`; it also
// returns the stats the run printed (nil without --stats).
func runAnswersWith(t *testing.T, pkg, reqs string, flags ...string) (map[string]map[string]*backend.Tensor, *vm.Stats) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"run", pkg, "--requests", reqs}, flags...)...)
	if code != exitOK {
		t.Fatalf("genaic run %s %v: exit %d: %s", pkg, flags, code, errOut)
	}
	answers := map[string]map[string]*backend.Tensor{}
	rf := decodeResponses(t, out)
	for _, r := range rf.Responses {
		outs, items := map[string]*backend.Tensor{}, map[string][]vm.Item{}
		for name, tj := range r.Outputs {
			var err error
			if tj.Items != nil {
				items[name], err = tj.ItemTensors()
			} else {
				outs[name], err = tj.Tensor()
			}
			if err != nil {
				t.Fatalf("run %s output %s: %v", r.ID, name, err)
			}
		}
		answers[r.ID] = flat(outs, items)
	}
	return answers, rf.Stats
}

// sameAnswer compares an answer with run's, value by value: equal names,
// dtypes and shapes, floats within fixtures.Tolerance (a group may sum
// padded rows in another order).
func sameAnswer(got, want map[string]*backend.Tensor) error {
	if !slices.Equal(fixtures.Names(got), fixtures.Names(want)) {
		return fmt.Errorf("outputs %v, want %v", fixtures.Names(got), fixtures.Names(want))
	}
	for name, w := range want {
		if d := fixtures.Diff(got[name], w, fixtures.Tolerance); d != "" {
			return fmt.Errorf("output %s: %s", name, d)
		}
	}
	return nil
}

// serveAnswers sends every request of a document to a running server as
// one OIP request each, over HTTP (binary and JSON tensors) and gRPC, and
// compares each answer with run's.
func serveAnswers(t *testing.T, p *serveProcess, model, reqs string, want map[string]map[string]*backend.Tensor) {
	t.Helper()
	f, err := os.Open(reqs)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := jsonio.ReadRequests(f, filepath.Dir(reqs))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(p.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	gc := oippb.NewGRPCInferenceServiceClient(conn)
	for _, r := range rs {
		for _, binary := range []bool{true, false} {
			body, hlen, err := serve.EncodeHTTP(r, binary)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("POST", "http://"+p.http+"/v2/models/"+model+"/infer", bytes.NewReader(body))
			if binary {
				req.Header.Set(serve.HeaderLength, strconv.Itoa(hlen))
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s %s (HTTP, binary %v): %d %s", model, r.ID, binary, res.StatusCode, b)
				continue
			}
			got, err := serve.DecodeHTTP(res.Header.Get(serve.HeaderLength), b)
			if err == nil {
				err = sameAnswer(flat(got.Outputs.Map(), got.Items), want[r.ID])
			}
			if err != nil {
				t.Errorf("%s %s (HTTP, binary %v): %v", model, r.ID, binary, err)
			}
		}
		m, err := serve.EncodeGRPC(model, r)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		gr, err := gc.ModelInfer(ctx, m)
		cancel()
		if err == nil {
			var got vm.Response
			if got, err = serve.DecodeGRPC(gr); err == nil {
				err = sameAnswer(flat(got.Outputs.Map(), got.Items), want[r.ID])
			}
		}
		if err != nil {
			t.Errorf("%s %s (gRPC): %v", model, r.ID, err)
		}
	}
}

// TestServeEqualsRun: `genaic serve testdata/packages` starts without a
// warm-up warning; a document of text lines of three widths (and one of
// three widths and two heights) is one OIP request per request, over
// HTTP and gRPC, answered as `genaic run` answers it; and so is a package
// whose input comes from an application, served as a repository of its
// own.
func TestServeEqualsRun(t *testing.T) {
	dir := t.TempDir()
	lines := linesDocument(t, dir)

	p := startServe(t, packagesDir)
	stop := func(p *serveProcess) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}
	for _, l := range p.log() {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			t.Errorf("genaic serve %s logged %v", packagesDir, l)
		}
	}
	ents, err := os.ReadDir(packagesDir)
	if err != nil {
		t.Fatal(err)
	}
	if models, _ := p.find("ready")["models"].([]any); len(models) != len(ents) {
		t.Errorf("genaic serve %s serves %v, want every package of %d", packagesDir, models, len(ents))
	}
	// The child's CPUs are this process's, and its environment is this
	// one's.
	_, envProcs := os.LookupEnv("GOMAXPROCS")
	want := cmp.Or(serveProcs(0, envProcs, engine.CPUs()), runtime.GOMAXPROCS(0))
	if got, _ := p.find("ready")["go_procs"].(float64); int(got) != want {
		t.Errorf("genaic serve runs on %v Go processors, want %d", p.find("ready")["go_procs"], want)
	}
	serveAnswers(t, p, "ocr_lines", lines, runAnswers(t, ocrPkg, lines))
	stop(p)

	repo := filepath.Join(dir, "repo")
	app := applicationPackage(t, repo)
	p = startServe(t, repo)
	defer stop(p)
	serveAnswers(t, p, "ocr_app", lines, runAnswers(t, app, lines))
	serveAnswers(t, p, "ocr_app", filepath.Join(ocrPkg, "requests.json"), runAnswers(t, app, filepath.Join(ocrPkg, "requests.json")))
}
