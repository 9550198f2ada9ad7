package vm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
)

// TestLoopAndBranch: the loop doubles its carried cell until the sum passes
// 100 (at most 10 times), then mode 1 negates it and any other mode keeps it.
func TestLoopAndBranch(t *testing.T) {
	b := &backend.Bindings{}
	b.Register("double", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["a"].Float32s()
		out, sum := make([]float32, len(x)), float32(0)
		for i, v := range x {
			out[i], sum = 2*v, sum+2*v
		}
		return map[string]*backend.Tensor{"b": {DType: "float32", Shape: in["a"].Shape, Data: out},
			"more": {DType: "bool", Shape: []int64{1}, Data: []bool{sum <= 100}}}, nil
	})
	b.Register("negate", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["a"].Float32s()
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = -v
		}
		return map[string]*backend.Tensor{"b": {DType: "float32", Shape: in["a"].Shape, Data: out}}, nil
	})
	e := bindingEngine(t, "control.yaml", b, Options{})
	run := func(mode int64) []float32 {
		r := e.Run(context.Background(), Request{ID: "r", Inputs: map[string]*backend.Tensor{
			"x":    {DType: "float32", Shape: []int64{1, 2}, Data: []float32{1, 2}},
			"mode": {DType: "int64", Shape: []int64{1}, Data: []int64{mode}},
		}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r.Outputs.Get("y").Float32s()
	}
	// 1+2 = 3 doubles to 6, 12, 24, 48, 96, 192: six iterations, [64, 128].
	if got := run(1); got[0] != -64 || got[1] != -128 {
		t.Errorf("mode 1: %v, want [-64 -128]", got)
	}
	if got := run(0); got[0] != 64 || got[1] != 128 {
		t.Errorf("mode 0 (default): %v, want [64 128]", got)
	}
}

// TestServingIsRefusedAtLoad: a workflow with serving compiles, but the VM
// refuses it at load with run/unsupported, naming what it lacks.
func TestServingIsRefusedAtLoad(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "conformance", "upstream", "073_eb_packed_emit_workflow.yaml")
	d, err := passes.CheckPath(path, passes.Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	f, err := passes.BuildPlan(d, filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(f, filepath.Dir(path), map[ir.ImplKind]backend.Backend{ir.ImplONNX: &backend.Bindings{}}, Options{})
	var re *backend.RunError
	if !errors.As(err, &re) || re.Rule != "run/unsupported" || !strings.Contains(re.Message, "serving") {
		t.Fatalf("got %v", err)
	}
}
