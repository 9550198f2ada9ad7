package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

func TestRegistry(t *testing.T) {
	var names []string
	for _, f := range Registered() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"go", "onnxruntime", "preprocess"}) {
		t.Errorf("registered %v", names)
	}
	for kind, name := range Defaults {
		f, ok := Lookup(name)
		if !ok || !slices.Contains(f.Kinds, kind) {
			t.Errorf("the default backend of %s, %q, is not registered for it", kind, name)
		}
	}
	if err := Register(Factory{Name: "onnxruntime", Kinds: []ir.ImplKind{ir.ImplONNX}, New: func(*ir.Module, Config) (backend.Backend, error) { return nil, nil }}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("a second onnxruntime: %v", err)
	}
	if err := Register(Factory{Name: "incomplete"}); err == nil {
		t.Error("a backend without kinds or New was registered")
	}
}

// compile builds the plan of a fixture package in memory.
func compile(t *testing.T, rel string) (*plan.File, string) {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), rel)
	d, err := passes.CheckPath(dir, passes.Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%s: %v %v", rel, err, d.Diags())
	}
	f, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// TestOpenByName: the onnx components of a package run on the backend
// named for them (here Go functions), ONNX Runtime is never started for a
// workflow that does not need it, and a declined component still answers.
func TestOpenByName(t *testing.T) {
	f, dir := compile(t, "testdata/packages/solo")
	calls := 0
	fns := &backend.Bindings{}
	fns.Register("scorer", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		calls++
		return map[string]*backend.Tensor{"scores": {DType: "float32", Shape: []int64{1, 1}, Data: []float32{1}}}, nil
	})
	opts := Options{
		Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"},
		Config:   Config{Bindings: fns, LibraryPath: "/nonexistent/libonnxruntime.so.1"},
	}
	e, err := Open(f, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	resp := e.Run(context.Background(), vm.Request{ID: "r", Inputs: map[string]*backend.Tensor{
		"features": {DType: "float32", Shape: []int64{1, 1}, Data: []float32{3}}}})
	if resp.Err != nil || calls != 1 || resp.Outputs.Get("scores").Float32s()[0] != 1 {
		t.Errorf("a request on the go backend: %+v after %d calls", resp, calls)
	}
	if got := Invoked(f.IR); !slices.Equal(got, []ir.ImplKind{ir.ImplONNX}) {
		t.Errorf("Invoked = %v", got)
	}
	if _, err := Open(f, dir, Options{Config: Config{LibraryPath: "/nonexistent/libonnxruntime.so.1"}}); err == nil || !strings.Contains(err.Error(), "/nonexistent/") {
		t.Errorf("the default onnx backend with a missing library: %v", err)
	}
	if _, err := Open(f, dir, Options{Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"}}); err == nil || !strings.Contains(err.Error(), "Config.Bindings") {
		t.Errorf("the go backend without functions: %v", err)
	}
}
