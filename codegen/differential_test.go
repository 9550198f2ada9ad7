package codegen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"text/template"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen"
	"github.com/genaic/genaic/codegen/testdata/bindings"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
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
const tolerance = 1e-5

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
	Solo     bool   `json:"solo"`
}

// TestGeneratedEqualsVM is the differential test of DESIGN §7: for every
// end-to-end fixture it generates the executor into a module outside the
// checkout, builds a program that runs the executors, and compares what
// they answer with what the VM answers on the same requests documents:
// byte for byte in solo mode, and within the float tolerance when
// requests are grouped. Refused requests must fail alike, rule and
// message.
func TestGeneratedEqualsVM(t *testing.T) {
	mod := tempModule(t, "example.com/difftest")
	fxs := runnable(t)
	var jobs []job
	docs := map[string][]byte{}
	for i, fx := range fxs {
		files := generate(t, fx.pkg, "exec/"+fx.name, fx.name)
		if err := codegen.Write(filepath.Join(mod, "exec", fx.name), files); err != nil {
			t.Fatal(err)
		}
		doc := encodeRequests(t, requests(fx, uint64(i+1), 16))
		docs[fx.name] = doc
		reqPath := filepath.Join(mod, "data", fx.name+".json")
		writeFile(t, reqPath, doc)
		_, dir := compile(t, fx.pkg)
		for _, solo := range []bool{true, false} {
			jobs = append(jobs, job{Name: fx.name, Dir: dir, Requests: reqPath,
				Out: filepath.Join(mod, "data", fmt.Sprintf("%s.solo=%v.out.json", fx.name, solo)), Solo: solo})
		}
	}
	writeDriver(t, mod, fxs)
	jobsJSON, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "jobs.json"), jobsJSON)
	bin := filepath.Join(mod, "driver")
	goCommand(t, mod, "build", "-o", bin, ".")
	runDriver(t, bin, filepath.Join(mod, "jobs.json"))
	for _, j := range jobs {
		t.Run(fmt.Sprintf("%s/solo=%v", j.Name, j.Solo), func(t *testing.T) {
			got, err := os.ReadFile(j.Out)
			if err != nil {
				t.Fatal(err)
			}
			want := vmResponses(t, fixtureNamed(j.Name), docs[j.Name], j.Solo)
			if j.Solo && !bytes.Equal(got, want) {
				t.Errorf("the generated executor's responses differ from the VM's:\n got: %.2000s\nwant: %.2000s", got, want)
			}
			ok, failed := sameResponses(t, got, want, !j.Solo)
			t.Logf("%d requests (%d refused alike) answered as the VM answers them", ok, failed)
		})
	}
	checkGrouped(t, filepath.Join(mod, "data", "imagepadded.solo=false.out.json.stats"))
}

// bindingSets are the Go components of the fixtures that have them, by
// the name of their constructor in package bindings.
var bindingSets = map[string]func() *backend.Bindings{
	"Control": bindings.Control, "VMControl": bindings.VMControl, "Multimodal": bindings.Multimodal,
}

func fixtureNamed(name string) fixture {
	for _, f := range fixtures {
		if f.name == name {
			return f
		}
	}
	panic("no fixture " + name)
}

// vmResponses runs a requests document through the VM as `genaic run`
// does and returns its responses document.
func vmResponses(t *testing.T, fx fixture, doc []byte, solo bool) []byte {
	t.Helper()
	f, dir := compile(t, fx.pkg)
	reqs, err := jsonio.ReadRequests(bytes.NewReader(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	var be map[ir.ImplKind]backend.Backend
	if fx.bindings != "" {
		be = map[ir.ImplKind]backend.Backend{ir.ImplBinding: bindingSets[fx.bindings]()}
	} else {
		b, err := ort.New(ortOptions)
		if err != nil {
			t.Fatalf("ONNX Runtime is not available (%v): %s", err, fixSetup)
		}
		be = map[ir.ImplKind]backend.Backend{ir.ImplONNX: b}
	}
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

// checkGrouped checks that the executor grouped requests: the stats the
// driver wrote for the grouped run of the padded image encoder show a
// group of more than one request.
func checkGrouped(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s vm.Stats
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if c := s.Components["encoder"]; c.MaxGroupRequests < 2 {
		t.Errorf("the generated image executor never grouped requests: %+v", c)
	}
}

func runDriver(t *testing.T, bin, jobs string) {
	t.Helper()
	cache, err := ortlib.CacheDir()
	if err != nil {
		t.Fatalf("%v: %s", err, fixSetup)
	}
	cmd := exec.Command(bin, jobs)
	cmd.Env = append(os.Environ(), ortlib.EnvCache+"="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the driver of the generated executors failed: %v\n%s", err, out)
	}
}

// writeDriver writes the program that runs the generated executors: for
// each job, New on the package folder, RunJSON on the requests document,
// and the responses and stats written out.
func writeDriver(t *testing.T, mod string, fxs []fixture) {
	t.Helper()
	type entry struct {
		Name     string
		Bindings string
	}
	data := struct {
		Executors []entry
		Delay     string
	}{Delay: fmt.Sprintf("%d * time.Millisecond", groupDelay.Milliseconds())}
	for _, f := range fxs {
		data.Executors = append(data.Executors, entry{f.name, f.bindings})
	}
	var b bytes.Buffer
	if err := driver.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "main.go"), b.Bytes())
}

var driver = template.Must(template.New("driver").Parse(`// The driver of the differential test of package codegen.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/genaic/genaic/codegen/testdata/bindings"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
{{range .Executors}}	exec{{.Name}} "example.com/difftest/exec/{{.Name}}"
{{end}})

type executor interface {
	RunJSON(ctx context.Context, requests []byte) ([]byte, error)
	Stats() vm.Stats
	Close() error
}

var (
	_ = ir.ImplONNX
	_ = bindings.Control
	_ engine.Config
)

var open = map[string]func(dir string, solo bool) (executor, error){
{{range .Executors}}	"{{.Name}}": func(dir string, solo bool) (executor, error) {
		opts := []exec{{.Name}}.Option{exec{{.Name}}.WithMaxDelay({{$.Delay}}), {{if .Bindings}}exec{{.Name}}.WithBackend(ir.ImplBinding, bindings.{{.Bindings}}()){{else}}exec{{.Name}}.WithBackendConfig(engine.Config{IntraOpThreads: 1, InterOpThreads: 1}){{end}}}
		if solo {
			opts = append(opts, exec{{.Name}}.WithSolo())
		}
		x, err := exec{{.Name}}.New(dir, opts...)
		if err != nil {
			return nil, err
		}
		return x, nil
	},
{{end}}}

type job struct {
	Name, Dir, Requests, Out string
	Solo                     bool
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
			return fmt.Errorf("%s (solo %v): %w", j.Name, j.Solo, err)
		}
	}
	return nil
}

func runJob(j job) error {
	x, err := open[j.Name](j.Dir, j.Solo)
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
	if err := os.WriteFile(j.Out, out, 0o644); err != nil {
		return err
	}
	stats, err := json.Marshal(x.Stats())
	if err != nil {
		return err
	}
	return os.WriteFile(j.Out+".stats", stats, 0o644)
}
`))
