package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// writeLeakingPackage writes a package that check accepts and whose
// grouping changes its answers: its model takes x float32 [batch, steps]
// padded on steps with lengths (a graph input), yet sums every position
// plus one, as a convolution reads into the padding past an item's end,
// so that a short item grouped beside a long one gets more than alone.
// Its requests.json holds rows of 1 to 4 steps.
func writeLeakingPackage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "leak.onnx"), &onnxpb.GraphProto{Name: "leak",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "batch", "steps"), tensorInfo("lengths", 7, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("total", 1, "batch")},
		Initializer: []*onnxpb.TensorProto{{Name: "one", DataType: 1, RawData: []byte{0, 0, 0x80, 0x3f}},
			{Name: "axis", DataType: 7, Dims: []int64{1}, RawData: []byte{1, 0, 0, 0, 0, 0, 0, 0}}},
		Node: []*onnxpb.NodeProto{
			{OpType: "Add", Input: []string{"x", "one"}, Output: []string{"x1"}},
			{OpType: "ReduceSum", Input: []string{"x1", "axis"}, Output: []string{"total"},
				Attribute: []*onnxpb.AttributeProto{{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}},
		}}, 17)
	doc := `schema_version: v1.1
model:
  name: leak
pipeline:
  workflow:
    inputs:
      x:
        contract:
          dtype: float32
          shape: [batch, steps]
          batch_layout: { kind: request_aligned, axis: 0 }
          padding: [{ dimension: steps, valid_lengths: lengths }]
        role: { kind: opaque }
        source: { kind: request }
      lengths:
        contract: { dtype: int64, shape: [batch] }
        role: { kind: opaque }
        source: { kind: request }
    outputs:
      total:
        contract:
          dtype: float32
          shape: [batch]
          batch_layout: { kind: request_aligned, axis: 0 }
        role: tensor
        stage: pre_adapter
    components:
      leak:
        implementation: { kind: onnx, artifact: leak.onnx }
        batch_capacity:
          budgets:
            - { dimensions: [batch], max_total: 8 }
        ports:
          inputs:
            x:
              dtype: float32
              shape: [batch, steps]
              batch_layout: { kind: request_aligned, axis: 0 }
              padding: [{ dimension: steps, valid_lengths: lengths }]
            lengths: { dtype: int64, shape: [batch], batch_layout: { kind: shared } }
          outputs:
            total:
              dtype: float32
              shape: [batch]
              batch_layout: { kind: request_aligned, axis: 0 }
    steps:
      - kind: invoke
        component: leak
        inputs: { x: x, lengths: lengths }
        outputs: { total: leak.total }
      - { kind: emit, value: leak.total, output: total, mode: replace }
`
	var reqs []string
	for n := 1; n <= 4; n++ {
		xs := strings.TrimSuffix(strings.Repeat("0.5,", n), ",")
		reqs = append(reqs, fmt.Sprintf(`{"id":"r%d","inputs":{"x":{"dtype":"float32","shape":[1,%d],"data":[%s]},"lengths":{"dtype":"int64","shape":[1],"data":[%d]}}}`, n, n, xs, n))
	}
	writePackage(t, dir, doc, reqs)
	if _, errOut, code := runCLI(t, "check", dir); code != exitOK {
		t.Fatalf("check: %s", errOut)
	}
	return dir
}

// writePackage writes a package's document and a requests.json of reqs
// into dir.
func writePackage(t *testing.T, dir, doc string, reqs []string) {
	t.Helper()
	for name, body := range map[string]string{
		metadataName:    doc,
		"requests.json": `{"requests":[` + strings.Join(reqs, ",") + `]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunVerify: run --verify reports each request whose grouped answer
// is not its answer alone (exit 1), says so where every one agrees, and
// says when nothing was grouped to compare.
func TestRunVerify(t *testing.T) {
	leak := writeLeakingPackage(t)
	out, errOut, code := runCLI(t, "run", leak, "--requests", filepath.Join(leak, "requests.json"), "--verify")
	// r1 grouped with a longer request sums its padded positions too (with
	// r4, three: 4.5); the longest, r4, is padded nowhere.
	if code != exitDiags || !strings.Contains(errOut, "--verify: request r1: output total differs at [0]: ") || !strings.Contains(errOut, " grouped, 1.5 alone") ||
		!strings.Contains(errOut, " of 4 requests are answered otherwise grouped than alone") || strings.Contains(errOut, "request r4") {
		t.Errorf("a leaking package: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, `"id":"r1"`) {
		t.Errorf("--verify left out the responses:\n%s", out)
	}

	pkg := filepath.Join("..", "..", "testdata", "packages", "text_padded")
	_, errOut, code = runCLI(t, "run", pkg, "--requests", filepath.Join(pkg, "requests.json"), "--verify")
	if code != exitOK || !strings.Contains(errOut, "is answered alike grouped and alone (groups of up to") {
		t.Errorf("text_padded: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "run", leak, "--requests", filepath.Join(leak, "requests.json"), "--verify", "--solo")
	if code != exitOK || !strings.Contains(errOut, "no invocation held two requests") {
		t.Errorf("--solo: exit %d\n%s", code, errOut)
	}

	// Without --requests, on the requests serve synthesizes.
	_, errOut, code = runCLI(t, "run", leak, "--verify")
	if code != exitDiags || !strings.Contains(errOut, " of 12 requests synthesized from the workflow's inputs are answered otherwise grouped than alone") {
		t.Errorf("a leaking package, no requests: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, "run", pkg, "--verify")
	if code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike grouped and alone (groups of up to") {
		t.Errorf("text_padded, no requests: exit %d\n%s", code, errOut)
	}
	if _, errOut, code = runCLI(t, "run", pkg); code != exitUsage || !strings.Contains(errOut, "(--requests FILE | --verify)") {
		t.Errorf("neither --requests nor --verify: exit %d\n%s", code, errOut)
	}
}

// TestServeDeclinesGroupingThatChangesAnswers: genaic serve compares its
// package's requests.json grouped and alone at load; where they differ it
// logs which and serves the component one request per invocation, and
// where they agree it says so.
func TestServeDeclinesGroupingThatChangesAnswers(t *testing.T) {
	leak := writeLeakingPackage(t)
	p := startServe(t, leak)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}()
	line := p.find("grouped answers differ from answers alone on the package's requests.json: its grouping changes what it computes, so its components run one request per invocation")
	if first, _ := line["first"].(string); line == nil || !strings.HasPrefix(first, "request r1: output total differs at [0]: ") || !strings.HasSuffix(first, " grouped, 1.5 alone") || line["declined"] != "leak" {
		t.Fatalf("no such log line, or another: %v", line)
	}
	resp, err := http.Get("http://" + p.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `reason="cpu/onnx-graph: grouped answers differed from answers alone at load"`) {
		t.Errorf("/metrics counts no such decline:\n%s", b)
	}

	// A package whose requests agree says so, and what it compared.
	pkg, err := filepath.Abs(filepath.Join("..", "..", "testdata", "packages", "text_padded"))
	if err != nil {
		t.Fatal(err)
	}
	q := startServe(t, pkg)
	defer func() {
		q.cmd.Process.Signal(syscall.SIGTERM)
		<-q.done
	}()
	if l := q.find("grouped answers agree with answers alone on the package's requests.json"); l == nil || l["compared"] != 64.0 || l["largest_group"].(float64) < 2 {
		t.Errorf("text_padded: %v", l)
	}

	// Without requests.json, and its workflow input laid out on the port
	// alone (as init writes a document), the leak shows on requests
	// synthesized from the contracts: rows of 1 to 4 steps.
	doc, err := os.ReadFile(filepath.Join(leak, "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bare := strings.Replace(string(doc), `          shape: [batch, steps]
          batch_layout: { kind: request_aligned, axis: 0 }
          padding: [{ dimension: steps, valid_lengths: lengths }]
`, "          shape: [batch, steps]\n", 1)
	if bare == string(doc) {
		t.Fatal("the leaking package's workflow input is no longer laid out")
	}
	if err := os.WriteFile(filepath.Join(leak, "inference_metadata.yaml"), []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(leak, "requests.json")); err != nil {
		t.Fatal(err)
	}
	r := startServe(t, leak)
	defer func() {
		r.cmd.Process.Signal(syscall.SIGTERM)
		<-r.done
	}()
	if l := r.find("grouped answers differ from answers alone on requests synthesized from the workflow's inputs: its grouping changes what it computes, so its components run one request per invocation"); l == nil || l["declined"] != "leak" {
		t.Errorf("the leaking package without requests: %v", l)
	}
}

// TestBenchWarnsOfDivergence: genaic bench compares the document grouped
// and alone before it measures, and warns where answers differ (the
// throughput would be that of other answers); where they agree it says
// nothing of it.
func TestBenchWarnsOfDivergence(t *testing.T) {
	leak := writeLeakingPackage(t)
	quick := []string{"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "4", "--workers", "1", "--threads", "1"}
	_, errOut, code := runCLI(t, append([]string{"bench", leak, "--requests", filepath.Join(leak, "requests.json")}, quick...)...)
	if code != exitOK || !strings.Contains(errOut, " of the first 4 requests are answered otherwise than alone (request r1: output total differs at [0]: ") {
		t.Errorf("a leaking package: exit %d\n%s", code, errOut)
	}
	pkg := filepath.Join("..", "..", "testdata", "packages", "text_padded")
	_, errOut, code = runCLI(t, append([]string{"bench", pkg, "--requests", filepath.Join(pkg, "requests.json")}, quick...)...)
	if code != exitOK || strings.Contains(errOut, "warning") {
		t.Errorf("text_padded: exit %d\n%s", code, errOut)
	}
	// Without --requests, bench measures the package's requests.json, as
	// serve plans with it, and says so.
	_, errOut, code = runCLI(t, append([]string{"bench", leak}, quick...)...)
	if code != exitOK || !strings.Contains(errOut, "no --requests: measuring the package's "+filepath.Join(leak, "requests.json")) ||
		!strings.Contains(errOut, " of the first 4 requests are answered otherwise than alone (request r1: ") {
		t.Errorf("a leaking package, its own requests: exit %d\n%s", code, errOut)
	}
	// Without them too, it measures the requests serve synthesizes, and
	// says so; the leak shows on them too.
	if err := os.Remove(filepath.Join(leak, "requests.json")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCLI(t, append([]string{"bench", leak}, quick...)...)
	if code != exitOK || !strings.Contains(errOut, "no --requests: measuring the 12 requests synthesized from the workflow's inputs") ||
		!strings.Contains(errOut, " of the first 12 requests are answered otherwise than alone") {
		t.Errorf("a leaking package, no requests: exit %d\n%s", code, errOut)
	}
}

// writeQuantizedPackage writes a package of a dynamically quantized
// linear layer, as quantize_dynamic writes a transformer's MatMuls: its
// activations are quantized over the whole tensor a call gives it
// (DynamicQuantizeLinear), so a request's answer grouped depends on its
// group's range. Its requests.json holds rows of growing range.
func writeQuantizedPackage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	weights := []int8{12, -7, 3, 90, -45, 8, 27, -100}
	raw := make([]byte, len(weights))
	for i, w := range weights {
		raw[i] = byte(w)
	}
	writeGraph(t, filepath.Join(dir, "dq.onnx"), &onnxpb.GraphProto{Name: "dq",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "batch", 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, "batch", 2)},
		Initializer: []*onnxpb.TensorProto{{Name: "wq", DataType: 3, Dims: []int64{4, 2}, RawData: raw},
			{Name: "wz", DataType: 3, RawData: []byte{0}}, {Name: "ws", DataType: 1, RawData: []byte{0x0a, 0xd7, 0x23, 0x3c}}},
		Node: []*onnxpb.NodeProto{
			{OpType: "DynamicQuantizeLinear", Input: []string{"x"}, Output: []string{"xq", "xs", "xz"}},
			{OpType: "MatMulInteger", Input: []string{"xq", "wq", "xz", "wz"}, Output: []string{"acc"}},
			{OpType: "Cast", Input: []string{"acc"}, Output: []string{"accf"}, Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}},
			{OpType: "Mul", Input: []string{"xs", "ws"}, Output: []string{"s"}},
			{OpType: "Mul", Input: []string{"accf", "s"}, Output: []string{"y"}},
		}}, 14)
	doc := `schema_version: v1.1
model:
  name: dq
pipeline:
  workflow:
    inputs:
      x:
        contract: { dtype: float32, shape: [batch, 4], batch_layout: { kind: request_aligned, axis: 0 } }
        role: { kind: opaque }
        source: { kind: request }
    outputs:
      "y":
        contract: { dtype: float32, shape: [batch, 2], batch_layout: { kind: request_aligned, axis: 0 } }
        role: tensor
        stage: pre_adapter
    components:
      dq:
        implementation: { kind: onnx, artifact: dq.onnx }
        batch_capacity:
          budgets:
            - { dimensions: [batch], max_total: 8 }
        ports:
          inputs:
            x: { dtype: float32, shape: [batch, 4], batch_layout: { kind: request_aligned, axis: 0 } }
          outputs:
            "y": { dtype: float32, shape: [batch, 2], batch_layout: { kind: request_aligned, axis: 0 } }
    steps:
      - { kind: invoke, component: dq, inputs: { x: x }, outputs: { "y": dq.y } }
      - { kind: emit, value: dq.y, output: "y", mode: replace }
`
	var reqs []string
	for i := 1; i <= 4; i++ {
		reqs = append(reqs, fmt.Sprintf(`{"id":"q%d","inputs":{"x":{"dtype":"float32","shape":[1,4],"data":[%d.3,-0.7,%d.1,0.45]}}}`, i, i*i, i))
	}
	writePackage(t, dir, doc, reqs)
	return dir
}

// TestVerifyQuantizedPerCall: a model that quantizes its activations per
// call answers otherwise grouped than alone by its design; run --verify
// says so, and genaic serve warns and keeps grouping (where a model that
// does not quantize is served one request per invocation).
func TestVerifyQuantizedPerCall(t *testing.T) {
	dq := writeQuantizedPackage(t)
	_, errOut, code := runCLI(t, "run", dq, "--requests", filepath.Join(dq, "requests.json"), "--verify")
	if code != exitDiags || !strings.Contains(errOut, "the model quantizes its activations per call (dq (DynamicQuantizeLinear))") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
	p := startServe(t, dq)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}()
	if l := p.find("grouped answers differ from answers alone on the package's requests.json, as the model quantizes per call; grouping stays on"); l == nil ||
		p.find("grouped answers differ from answers alone on the package's requests.json: its grouping changes what it computes, so its components run one request per invocation") != nil {
		t.Errorf("serve's log: %v", p.log())
	}
}
