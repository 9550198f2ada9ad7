package codegen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
	"github.com/genaic/genaic/vm/jsonio"
	"github.com/genaic/genaic/vm/ort"
	"github.com/genaic/genaic/vm/ortlib"
)

// groupDelay is the max_delay of grouped runs: long enough that the
// concurrent requests of a document meet in groups.
const groupDelay = 40 * time.Millisecond

// tolerance bounds the float comparison of grouped runs: ONNX Runtime may
// sum a group of 8 rows in another order than a group of 3, and which
// requests meet in a group depends on timing. Solo runs are compared byte
// for byte.
const tolerance = fixtures.Tolerance

// ortOptions run ONNX Runtime on one thread in the test and in the
// executors, so that a solo result does not depend on how work is split.
var ortOptions = ort.Options{IntraOpThreads: 1, InterOpThreads: 1}

// oneThread is ortOptions for executors.
var oneThread = engine.Config{IntraOpThreads: 1, InterOpThreads: 1}

// job is one run of a generated executor by the driver.
type job struct {
	Name     string `json:"name"`     // the executor
	Dir      string `json:"dir"`      // its package folder
	Requests string `json:"requests"` // the requests document
	Out      string `json:"out"`      // where the responses document goes
}

// TestGeneratedInAnotherModule covers what the in-process table of
// vm/e2e, which links the committed executors into this module, cannot:
// for every end-to-end fixture it generates the executor afresh into a
// module outside the checkout, builds there a program that opens each
// executor through its public API (New, its options, RunJSON), and checks
// that each answers a requests document of random requests and of
// requests it must refuse byte for byte as the VM answers it solo, as
// `genaic run --solo` writes it.
func TestGeneratedInAnotherModule(t *testing.T) {
	mod := tempModule(t, "example.com/difftest")
	var jobs []job
	docs := map[string][]byte{}
	for i, fx := range fixtures.All {
		files := generate(t, fx.Path, "exec/"+fx.Exec, fx.Exec)
		if err := codegen.Write(filepath.Join(mod, "exec", fx.Exec), files); err != nil {
			t.Fatal(err)
		}
		reqs := append(fx.Requests(uint64(i+1), 8), fx.Refusals(rand.New(rand.NewPCG(uint64(i+1), 3)))...)
		docs[fx.Exec] = encodeRequests(t, reqs)
		reqPath := filepath.Join(mod, "data", fx.Exec+".json")
		writeFile(t, reqPath, docs[fx.Exec])
		_, dir := fixtures.Compile(t, fx)
		jobs = append(jobs, job{Name: fx.Exec, Dir: dir, Requests: reqPath, Out: filepath.Join(mod, "data", fx.Exec+".out.json")})
	}
	writeDriver(t, mod, fixtures.All)
	jobsJSON, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "jobs.json"), jobsJSON)
	bin := filepath.Join(mod, "driver")
	goCommand(t, mod, "build", "-o", bin, ".")
	runDriver(t, bin, filepath.Join(mod, "jobs.json"))
	for _, j := range jobs {
		t.Run(j.Name, func(t *testing.T) {
			got, err := os.ReadFile(j.Out)
			if err != nil {
				t.Fatal(err)
			}
			want := vmResponses(t, fixtures.Lookup(j.Name), docs[j.Name], true)
			if !bytes.Equal(got, want) {
				t.Errorf("the generated executor's responses differ from the VM's:\n got: %.2000s\nwant: %.2000s", got, want)
			}
			ok, failed := sameResponses(t, got, want, false)
			t.Logf("%d requests (%d refused alike) answered as the VM answers them", ok, failed)
		})
	}
}

// vmResponses runs a requests document through the VM as `genaic run`
// does and returns its responses document.
func vmResponses(t *testing.T, fx fixtures.Fixture, doc []byte, solo bool) []byte {
	t.Helper()
	f, dir := fixtures.Compile(t, fx)
	reqs, err := jsonio.ReadRequests(bytes.NewReader(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	var be map[ir.ImplKind]backend.Backend
	if fx.Bindings != nil {
		be = map[ir.ImplKind]backend.Backend{ir.ImplBinding: fx.Bindings()}
	} else {
		b, err := ort.New(ortOptions)
		if err != nil {
			t.Fatalf("ONNX Runtime is not available (%v): %s", err, fixtures.FixSetup)
		}
		be = map[ir.ImplKind]backend.Backend{ir.ImplONNX: b}
	}
	be[ir.ImplAdapter] = adapters.New(f.IR) // the built-in adapters, as genaic run gives them
	e, err := vm.Open(f, dir, be, vm.Options{Solo: solo, MaxDelay: groupDelay})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var b bytes.Buffer
	if err := jsonio.WriteResponses(&b, e.RunAll(context.Background(), reqs), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameResponses compares two responses documents: the same requests in
// the same order, failed alike, with the same outputs (floats within the
// tolerance). It returns how many requests it compared and how many of
// them failed. When requests were grouped, a failure found in a group
// (an output of the wrong extent, say) names the group, whose makeup
// depends on timing: then only the rules must agree, the messages having
// been compared in solo mode.
func sameResponses(t *testing.T, got, want []byte, grouped bool) (n, failed int) {
	t.Helper()
	var g, w jsonio.ResponseFile
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the executor wrote no responses document: %v\n%.500s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if len(g.Responses) != len(w.Responses) {
		t.Fatalf("%d responses, the VM gave %d", len(g.Responses), len(w.Responses))
	}
	for i, wr := range w.Responses {
		gr := g.Responses[i]
		switch {
		case gr.ID != wr.ID:
			t.Errorf("response %d is %q, the VM's is %q", i, gr.ID, wr.ID)
		case (gr.Error == nil) != (wr.Error == nil):
			t.Errorf("%s: error %+v, the VM's is %+v", wr.ID, gr.Error, wr.Error)
		case wr.Error != nil && (gr.Error.Rule != wr.Error.Rule || !grouped && gr.Error.Message != wr.Error.Message):
			t.Errorf("%s: error %+v, the VM's is %+v", wr.ID, *gr.Error, *wr.Error)
		case !slices.Equal(outputNames(gr.Outputs), outputNames(wr.Outputs)):
			t.Errorf("%s: outputs %v, the VM's are %v", wr.ID, outputNames(gr.Outputs), outputNames(wr.Outputs))
		default:
			for name, wt := range wr.Outputs {
				if d := tensorDiff(t, gr.Outputs[name], wt); d != "" {
					t.Errorf("%s: output %s: %s", wr.ID, name, d)
				}
			}
		}
		if wr.Error != nil {
			failed++
		}
	}
	return len(w.Responses), failed
}

func outputNames(m map[string]jsonio.TensorJSON) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// tensorDiff says how got differs from want beyond the tolerance. Two
// empty tensors of one dtype and rank are alike: a request with no items
// that meets no other in a group is answered without an invocation, and
// cannot know the extents only the graph decides (solo runs, compared
// byte for byte, still check them).
func tensorDiff(t *testing.T, gj, wj jsonio.TensorJSON) string {
	g, err := gj.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	w, err := wj.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	if g.DType == w.DType && g.Rank() == w.Rank() && g.Len() == 0 && w.Len() == 0 {
		return ""
	}
	if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) {
		return fmt.Sprintf("got %v, the VM's is %v", g, w)
	}
	gf, wf := g.Float32s(), w.Float32s()
	if gf == nil {
		if !reflect.DeepEqual(g.Data, w.Data) {
			return fmt.Sprintf("got %v, the VM's is %v", g.Data, w.Data)
		}
		return ""
	}
	for i := range wf {
		if d := math.Abs(float64(gf[i]) - float64(wf[i])); !(d <= tolerance*max(1, math.Abs(float64(wf[i])))) {
			return fmt.Sprintf("element %d is %v, the VM's is %v", i, gf[i], wf[i])
		}
	}
	return ""
}

func runDriver(t *testing.T, bin, jobs string) {
	t.Helper()
	cache, err := ortlib.CacheDir()
	if err != nil {
		t.Fatalf("%v: %s", err, fixtures.FixSetup)
	}
	cmd := exec.Command(bin, jobs)
	cmd.Env = append(os.Environ(), ortlib.EnvCache+"="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the driver of the generated executors failed: %v\n%s", err, out)
	}
}

// writeDriver writes the program that runs the generated executors: for
// each job, New on the package folder (solo, ONNX Runtime on one thread or
// the fixture's Go bindings), RunJSON on the requests document, and the
// responses written out.
func writeDriver(t *testing.T, mod string, fxs []fixtures.Fixture) {
	t.Helper()
	type entry struct {
		Name     string
		Bindings string
	}
	var data struct{ Executors []entry }
	for _, f := range fxs {
		data.Executors = append(data.Executors, entry{f.Exec, bindingsName(f)})
	}
	var b bytes.Buffer
	if err := driver.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "main.go"), b.Bytes())
}

// bindingsName is the name of the fixture's bindings constructor in
// package bindings, which the driver calls; "" when it has none.
func bindingsName(f fixtures.Fixture) string {
	if f.Bindings == nil {
		return ""
	}
	full := runtime.FuncForPC(reflect.ValueOf(f.Bindings).Pointer()).Name()
	return full[strings.LastIndex(full, ".")+1:]
}

var driver = template.Must(template.New("driver").Parse(`// The driver of TestGeneratedInAnotherModule of package codegen.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/codegen/testdata/bindings"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
{{range .Executors}}	exec{{.Name}} "example.com/difftest/exec/{{.Name}}"
{{end}})

type executor interface {
	RunJSON(ctx context.Context, requests []byte) ([]byte, error)
	Close() error
}

var (
	_ = ir.ImplONNX
	_ = bindings.Control
	_ engine.Config
)

var open = map[string]func(dir string) (executor, error){
{{range .Executors}}	"{{.Name}}": func(dir string) (executor, error) {
		x, err := exec{{.Name}}.New(dir, genrt.WithSolo(), {{if .Bindings}}genrt.WithBackend(ir.ImplBinding, bindings.{{.Bindings}}()){{else}}genrt.WithBackendConfig(engine.Config{IntraOpThreads: 1, InterOpThreads: 1}){{end}})
		if err != nil {
			return nil, err
		}
		return x, nil
	},
{{end}}}

type job struct {
	Name, Dir, Requests, Out string
}

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var jobs []job
	if err := json.Unmarshal(b, &jobs); err != nil {
		return err
	}
	for _, j := range jobs {
		if err := runJob(j); err != nil {
			return fmt.Errorf("%s: %w", j.Name, err)
		}
	}
	return nil
}

func runJob(j job) error {
	x, err := open[j.Name](j.Dir)
	if err != nil {
		return err
	}
	defer x.Close()
	reqs, err := os.ReadFile(j.Requests)
	if err != nil {
		return err
	}
	out, err := x.RunJSON(context.Background(), reqs)
	if err != nil {
		return err
	}
	return os.WriteFile(j.Out, out, 0o644)
}
`))

// tensorJSON is a request tensor as the requests document writes it.
type tensorJSON struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  any     `json:"data"`
}

// encodeRequests writes the requests document of `genaic run`.
func encodeRequests(t testing.TB, reqs []vm.Request) []byte {
	t.Helper()
	type reqJSON struct {
		ID     string                `json:"id"`
		Inputs map[string]tensorJSON `json:"inputs"`
	}
	doc := struct {
		Requests []reqJSON `json:"requests"`
	}{}
	for _, r := range reqs {
		rj := reqJSON{ID: r.ID, Inputs: map[string]tensorJSON{}}
		for k, in := range r.Inputs {
			rj.Inputs[k] = tensorJSON{DType: in.DType, Shape: in.Shape, Data: in.Data}
		}
		doc.Requests = append(doc.Requests, rj)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
