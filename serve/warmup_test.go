package serve

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// copyPackage copies an example package into a repository folder, less
// the files named in drop.
func copyPackage(t testing.TB, dst, name string, drop ...string) {
	t.Helper()
	src := filepath.Join("..", "testdata", "packages", name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, name), 0o755); err != nil {
		t.Fatal(err)
	}
outer:
	for _, e := range ents {
		for _, d := range drop {
			if e.Name() == d {
				continue outer
			}
		}
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// warnings is a logger for a server and the warnings it logged.
func warnings() (*slog.Logger, func() []string) {
	var mu sync.Mutex
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return log, func() []string {
		mu.Lock()
		defer mu.Unlock()
		if b.Len() == 0 {
			return nil
		}
		return strings.Split(strings.TrimSpace(b.String()), "\n")
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// coldComponents lists the components of a server's models that never
// ran.
func coldComponents(s *Server) []string {
	var cold []string
	for _, n := range s.Models() {
		st := s.Engine(n).Stats()
		if len(st.Components) == 0 {
			cold = append(cold, n+": (no components in stats)")
		}
		for comp, cs := range st.Components {
			if cs.Invocations == 0 {
				cold = append(cold, n+"."+comp)
			}
		}
	}
	return cold
}

// writeSevens writes a package whose model refuses every request
// synthesized from its contracts: it reshapes x [batch, width] into rows
// of 7, and width is uniform, which synthesis makes 1 or a power of two.
func writeSevens(t *testing.T, dir string) {
	t.Helper()
	dim := func(d any) *onnxpb.TensorShapeProto_Dimension {
		if s, ok := d.(string); ok {
			return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: s}}
		}
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d.(int))}}
	}
	info := func(name string, dims ...any) *onnxpb.ValueInfoProto {
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			shape.Dim = append(shape.Dim, dim(d))
		}
		return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: 1, Shape: shape}}}}
	}
	var rows []byte
	for _, v := range []int64{-1, 7} {
		rows = binary.LittleEndian.AppendUint64(rows, uint64(v))
	}
	b, err := onnx.Marshal(&onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: &onnxpb.GraphProto{Name: "sevens",
		Input:       []*onnxpb.ValueInfoProto{info("x", "batch", "width")},
		Output:      []*onnxpb.ValueInfoProto{info("y", "rows", 7)},
		Initializer: []*onnxpb.TensorProto{{Name: "sevens", DataType: 7, Dims: []int64{2}, RawData: rows}},
		Node:        []*onnxpb.NodeProto{{OpType: "Reshape", Input: []string{"x", "sevens"}, Output: []string{"y"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sevens.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      x: { contract: { dtype: float32, shape: [batch, width] }, role: { kind: opaque }, source: { kind: request } }
    outputs:
      y: { contract: { dtype: float32, shape: [rows, 7] }, role: tensor, stage: pre_adapter }
    components:
      sevens:
        implementation: { kind: onnx, artifact: sevens.onnx }
        ports:
          inputs:
            x: { dtype: float32, shape: [batch, width] }
          outputs:
            y: { dtype: float32, shape: [rows, 7] }
    steps:
      - { kind: invoke, component: sevens, inputs: { x: x }, outputs: { y: y } }
      - { kind: emit, value: y, output: y, mode: replace }
`
	if err := os.WriteFile(filepath.Join(dir, "inference_metadata.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWarmupRefusedSaysWhatToGive: a package without requests.json whose
// model refuses every synthesized request is served unplanned and cold,
// and both warnings say what to give it.
func TestWarmupRefusedSaysWhatToGive(t *testing.T) {
	dir := t.TempDir()
	writeSevens(t, filepath.Join(dir, "sevens"))
	log, warned := warnings()
	s := newPlannedServer(t, Config{Repo: dir, Logger: log})
	if !s.Ready() {
		t.Fatal("the server is not ready after New")
	}
	for _, msg := range []string{"execution not planned", "warm-up left components cold", "grouped answers are not compared with answers alone"} {
		i := slices.IndexFunc(warned(), func(l string) bool { return strings.Contains(l, msg) })
		if i < 0 || !strings.Contains(warned()[i], "help=\"put a requests.json") {
			t.Errorf("no warning %q saying to give the package requests; warned:\n%s", msg, strings.Join(warned(), "\n"))
		}
	}
}

// TestWarmupWithoutRequests: packages copied without requests.json are
// warmed with a request synthesized from their contracts (a packed input
// as one item, a feature width the graph fixes, a request_expanded
// factor, an application's input, and for the adapter packages an image,
// a WAV clip, a clip of frames their programs take): every component has
// run before the first client request, and nothing is logged as a
// warning.
func TestWarmupWithoutRequests(t *testing.T) {
	dir := t.TempDir()
	var names []string
	ents, err := os.ReadDir(filepath.Join("..", "testdata", "packages"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		names = append(names, e.Name())
		copyPackage(t, dir, e.Name(), "requests.json", "requests64.json", "requests_long.json")
	}
	copyPackage(t, filepath.Join(dir, "app"), "ocr_lines", "requests.json")
	if err := os.Rename(filepath.Join(dir, "app", "ocr_lines"), filepath.Join(dir, "ocr_app")); err != nil {
		t.Fatal(err)
	}
	fromApplication(t, filepath.Join(dir, "ocr_app"), "line_images")
	log, warned := warnings()
	s := newServer(t, Config{Repo: dir, Logger: log})
	if !s.Ready() {
		t.Fatal("the server is not ready after New")
	}
	if len(s.Models()) != len(names)+1 {
		t.Fatalf("serving %v, want %v and ocr_app", s.Models(), names)
	}
	if cold := coldComponents(s); len(cold) > 0 {
		t.Errorf("components not warmed up (0 invocations): %v", cold)
	}
	if w := warned(); len(w) > 0 {
		t.Errorf("warm-up logged warnings:\n%s", strings.Join(w, "\n"))
	}
	if a, _ := s.Counts(); a != 0 {
		t.Errorf("warm-up counted as %d client requests", a)
	}
}

// TestWarmupRepository: serving the example packages as they are, each
// warmed with the first request of its requests.json, runs every
// component and logs no warning.
func TestWarmupRepository(t *testing.T) {
	log, warned := warnings()
	s := newServer(t, Config{Repo: filepath.Join("..", "testdata", "packages"), Logger: log})
	if cold := coldComponents(s); len(cold) > 0 {
		t.Errorf("components not warmed up (0 invocations): %v", cold)
	}
	if w := warned(); len(w) > 0 {
		t.Errorf("warm-up logged warnings:\n%s", strings.Join(w, "\n"))
	}
}
