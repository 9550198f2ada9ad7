package genrt

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/testdata/bindings"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

func scalar(data any) *backend.Tensor {
	return &backend.Tensor{DType: "", Shape: []int64{}, Data: data}
}

func TestKeyAndContinue(t *testing.T) {
	for _, c := range []struct {
		t    *backend.Tensor
		key  string
		more bool
	}{
		{scalar([]int64{7}), "7", true},
		{scalar([]int64{0}), "0", false},
		{scalar([]int32{-2}), "-2", true},
		{scalar([]bool{true}), "true", true},
		{scalar([]bool{false}), "false", false},
		{&backend.Tensor{DType: "int64", Shape: []int64{1}, Data: []int64{1}}, "1", true},
	} {
		key, err := Key(c.t)
		more, err2 := Continue(c.t)
		if err != nil || err2 != nil || key != c.key || more != c.more {
			t.Errorf("Key(%v) = %q, %v; Continue = %v, %v; want %q, %v", c.t.Data, key, err, more, err2, c.key, c.more)
		}
	}
	for _, bad := range []*backend.Tensor{nil, {DType: "int64", Shape: []int64{2}, Data: []int64{1, 2}}, {DType: "float32", Shape: []int64{}, Data: []float32{1}}} {
		if _, err := Key(bad); err == nil {
			t.Errorf("Key(%v) took a predicate that is no integer or boolean scalar", bad)
		}
		if _, err := Continue(bad); err == nil {
			t.Errorf("Continue(%v) took a value that is no integer or boolean scalar", bad)
		}
	}
}

func TestUnexpected(t *testing.T) {
	in := map[string]*backend.Tensor{"a": nil, "zz": nil, "b": nil, "c": nil}
	err := Unexpected(in, "a", "b")
	var re *backend.RunError
	if !errors.As(err, &re) || re.Rule != "run/input" || !strings.Contains(re.Message, "`c`") {
		t.Errorf("Unexpected = %v, want the first unknown name, c", err)
	}
	if err := Unexpected(in, "a", "b", "c", "zz"); err != nil {
		t.Errorf("Unexpected with every name known = %v", err)
	}
}

func planJSON(t *testing.T, pkg string) ([]byte, string) {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), filepath.FromSlash(pkg))
	d, err := passes.CheckPath(dir, passes.Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%s: %v %v", pkg, err, d.Diags())
	}
	f, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

// noORT points ONNX Runtime at a library that does not exist: Open fails
// if it loads ONNX Runtime at all.
var noORT = WithBackendConfig(engine.Config{LibraryPath: "/nonexistent/libonnxruntime.so.1"})

func TestOpen(t *testing.T) {
	control, controlDir := planJSON(t, "codegen/testdata/control")
	solo, soloDir := planJSON(t, "testdata/packages/solo")
	t.Run("bindings only, no ONNX Runtime", func(t *testing.T) {
		e, err := Open(control, controlDir, []Option{WithBackend(ir.ImplBinding, bindings.Control()), noORT, WithSolo(), WithQueue(4)})
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
	})
	t.Run("an onnx backend given", func(t *testing.T) {
		stub := &backend.Bindings{}
		stub.Register("scorer", func(context.Context, map[string]*backend.Tensor) (map[string]*backend.Tensor, error) { return nil, nil })
		e, err := Open(solo, soloDir, []Option{WithBackend(ir.ImplONNX, stub), noORT})
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
	})
	t.Run("a backend chosen by name", func(t *testing.T) {
		stub := &backend.Bindings{}
		stub.Register("scorer", func(context.Context, map[string]*backend.Tensor) (map[string]*backend.Tensor, error) { return nil, nil })
		e, err := Open(solo, soloDir, []Option{WithBackendNamed(ir.ImplONNX, "go"), WithBackendConfig(engine.Config{Bindings: stub}), WithWorkers(2)})
		if err != nil {
			t.Fatal(err)
		}
		// Two workers share the cores (engine.Divide).
		if x := e.Stats().Execution; x == nil || x.Slots != 2 || x.Threads != max(1, engine.CPUs()/2) {
			t.Errorf("WithWorkers(2): execution %+v; want 2 slots of %d threads", x, max(1, engine.CPUs()/2))
		}
		e.Close()
		_, err = Open(solo, soloDir, []Option{WithBackendNamed(ir.ImplONNX, "tensorflow")})
		if err == nil || !strings.Contains(err.Error(), `no backend called "tensorflow" is registered; registered: go, onnxruntime, preprocess`) {
			t.Errorf("Open with an unregistered backend = %v", err)
		}
		_, err = Open(solo, soloDir, []Option{WithBackendNamed(ir.ImplONNX, "preprocess")})
		if err == nil || !strings.Contains(err.Error(), `backend "preprocess" runs adapter components, not onnx components`) {
			t.Errorf("Open with a backend of another kind = %v", err)
		}
	})
	t.Run("onnx components need ONNX Runtime", func(t *testing.T) {
		if _, err := Open(solo, soloDir, []Option{noORT}); err == nil || !strings.Contains(err.Error(), "/nonexistent/") {
			t.Errorf("Open with a missing library = %v", err)
		}
	})
	t.Run("another package folder", func(t *testing.T) {
		_, err := Open(solo, controlDir, []Option{noORT})
		if !errors.Is(err, plan.ErrStale) || !strings.Contains(err.Error(), "regenerate the executor with `genaic gen`") {
			t.Errorf("Open on the wrong folder = %v", err)
		}
	})
	t.Run("not a plan", func(t *testing.T) {
		if _, err := Open([]byte(`{"requests": []}`), soloDir, nil); err == nil || !strings.Contains(err.Error(), "not a genaic plan") {
			t.Errorf("Open on a foreign document = %v", err)
		}
	})
}

func TestRunJSON(t *testing.T) {
	echo := func(_ context.Context, reqs []vm.Request) []vm.Response {
		out := make([]vm.Response, len(reqs))
		for i, r := range reqs {
			out[i] = vm.Response{ID: r.ID, Outputs: vm.OutputsOf(r.Inputs)}
			if r.ID == "bad" {
				out[i] = vm.Response{ID: r.ID, Err: Missing("x")}
			}
		}
		return out
	}
	doc := `{"requests":[{"id":"a","inputs":{"x":{"dtype":"int64","shape":[2],"data":[1,2]}}},{"id":"bad","inputs":{}},{"inputs":{}},{"id":"malformed","inputs":{"x":{"dtype":"int64","shape":[3],"data":[1.5]}}}]}`
	out, err := RunJSON(context.Background(), []byte(doc), echo)
	if err != nil {
		t.Fatal(err)
	}
	var rf jsonio.ResponseFile
	if err := json.Unmarshal(out, &rf); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rf.Responses) != 4 || rf.Responses[0].ID != "a" || rf.Responses[2].ID != "2" || rf.Responses[3].ID != "malformed" {
		t.Fatalf("responses %s", out)
	}
	if x := rf.Responses[0].Outputs["x"]; string(x.Data) != "[1,2]" {
		t.Errorf("a's output x = %s", x.Data)
	}
	if e := rf.Responses[1].Error; e == nil || e.Rule != "run/input" {
		t.Errorf("bad's error = %+v", e)
	}
	if e := rf.Responses[3].Error; e == nil || e.Rule != "run/input" || !strings.Contains(e.Message, "int64") {
		t.Errorf("malformed's error = %+v", e)
	}
	if _, err := RunJSON(context.Background(), []byte(`{"requests": 3}`), echo); err == nil {
		t.Errorf("RunJSON read a document that is not a requests document")
	}
}

// request is a typed request of three inputs, as a generated executor's.
type request struct{ A, B, C *backend.Tensor }

// portsOf are ports of the inputs named by fields of request.
func portsOf(ins ...In[request]) *Ports[request, struct{}] {
	field := map[string]func(*request) **backend.Tensor{
		"a": func(r *request) **backend.Tensor { return &r.A },
		"b": func(r *request) **backend.Tensor { return &r.B },
		"c": func(r *request) **backend.Tensor { return &r.C },
	}
	for i := range ins {
		ins[i].Field = field[ins[i].Name]
	}
	return &Ports[request, struct{}]{In: ins}
}

// TestPortsCheck: a left-out input is skipped when optional, else fails
// with the interpreter's rule, in the inputs' order, naming those the
// request gives; names a request supplies beyond the inputs fail as
// Unexpected says.
func TestPortsCheck(t *testing.T) {
	rule := func(err error) string {
		var re *backend.RunError
		if !errors.As(err, &re) {
			return ""
		}
		return re.Rule + " " + re.Message
	}
	// No value is checked against its contract, so no engine is needed.
	x := newExecutor(nil, portsOf(In[request]{Name: "a", Optional: true}, In[request]{Name: "b", Unloaded: "literal"}, In[request]{Name: "c"}))
	if got := rule(x.check(&request{})); !strings.HasPrefix(got, "run/unsupported") || !strings.Contains(got, "`b`") {
		t.Errorf("an unloaded input left out: %q, want run/unsupported on b", got)
	}
	y := newExecutor(nil, portsOf(In[request]{Name: "c"}, In[request]{Name: "a"}))
	if got := rule(y.check(&request{A: scalar([]int64{1})})); !strings.HasPrefix(got, "run/input") || !strings.Contains(got, "`c` (it gives `a`)") {
		t.Errorf("a required input left out: %q, want run/input on c, giving a", got)
	}
	z := newExecutor(nil, portsOf(In[request]{Name: "a", Optional: true}))
	if err := z.check(&request{}); err != nil {
		t.Errorf("an optional input left out: %v, want none", err)
	}
	if err := x.unexpected(map[string]*backend.Tensor{"a": nil, "c": nil}); err != nil {
		t.Errorf("unexpected of known names: %v", err)
	}
	if got := rule(x.unexpected(map[string]*backend.Tensor{"a": nil, "zz": nil, "d": nil})); !strings.Contains(got, "`d`") {
		t.Errorf("unexpected = %q, want the first unknown name, d", got)
	}
}

// TestItemsOfPorts: an input's items field makes the request's items,
// tensors or encoded bytes; a nil field gives none.
func TestItemsOfPorts(t *testing.T) {
	type itemsRequest struct {
		T []*backend.Tensor
		B [][]byte
	}
	tensors := In[itemsRequest]{Name: "t", Tensors: func(r *itemsRequest) []*backend.Tensor { return r.T }}
	bytes := In[itemsRequest]{Name: "b", Bytes: func(r *itemsRequest) [][]byte { return r.B }}
	plain := In[itemsRequest]{Name: "p"}
	none := &itemsRequest{}
	for _, in := range []In[itemsRequest]{tensors, bytes, plain} {
		if in.hasItems(none) || in.items(none) != nil {
			t.Errorf("%s: items of a request that gives none", in.Name)
		}
	}
	given := &itemsRequest{T: []*backend.Tensor{scalar([]int64{1}), scalar([]int64{2})}, B: [][]byte{{1, 2, 3}}}
	if its := tensors.items(given); !tensors.hasItems(given) || len(its) != 2 || its[1].Tensor != given.T[1] {
		t.Errorf("tensor items = %+v", its)
	}
	if its := bytes.items(given); !bytes.hasItems(given) || len(its) != 1 || its[0].Tensor.DType != "uint8" || its[0].Tensor.Shape[0] != 3 {
		t.Errorf("byte items = %+v", its)
	}
	if plain.hasItems(given) {
		t.Errorf("an input with no items field gives items")
	}
}
