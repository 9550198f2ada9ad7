package passes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/onnx"
)

// fixtureModels are the graphs of the model fixtures (testdata/models), by
// artifact: the models pass sees graphs only through Models, so these need
// no files.
type fixtureModels map[string]*onnx.Graph

func (m fixtureModels) Graph(artifact string) (*onnx.Graph, error) {
	if artifact == "garbage.onnx" {
		return nil, fmt.Errorf("%w: at byte 0, not a model", onnx.ErrNotONNX)
	}
	if g, ok := m[artifact]; ok {
		return g, nil
	}
	return nil, fmt.Errorf("open %s: %w", artifact, fs.ErrNotExist)
}

func sym(s string) onnx.Dim { return onnx.Dim{Param: s} }
func lit(n int64) onnx.Dim  { return onnx.Dim{Value: n, Literal: true} }
func val(name string, elem int32, dims ...onnx.Dim) onnx.Value {
	return onnx.Value{Name: name, ElemType: elem, HasShape: true, Dims: dims}
}

const (
	f32   = 1
	i64   = 7
	bool_ = 9
)

// readerGraph is the graph of the accepted fixture: pages f32 [batch,
// lines, 16], nl i64 [batch], an initialized input scale, and summary f32
// [batch, 4]; more inputs or outputs, or fewer, make the other fixtures.
func readerGraph(extraIn []onnx.Value, extraOut []onnx.Value, withLengths bool) *onnx.Graph {
	g := &onnx.Graph{IRVersion: 8, Ops: []string{"MatMul", "ReduceSum"}}
	g.Inputs = append(g.Inputs, val("pages", f32, sym("batch"), sym("lines"), lit(16)))
	if withLengths {
		g.Inputs = append(g.Inputs, val("nl", i64, sym("batch")))
	}
	scale := val("scale", f32, lit(1))
	scale.Initialized = true
	g.Inputs = append(g.Inputs, scale)
	g.Inputs = append(g.Inputs, extraIn...)
	g.Outputs = append([]onnx.Value{val("summary", f32, sym("batch"), lit(4))}, extraOut...)
	return g
}

var modelFixtures = fixtureModels{
	"reader.onnx":           readerGraph(nil, nil, true),
	"reader_mask.onnx":      readerGraph([]onnx.Value{val("mask", bool_, sym("batch"))}, nil, true),
	"reader_extra.onnx":     readerGraph(nil, []onnx.Value{val("aux", i64, sym("batch"))}, true),
	"reader_nolengths.onnx": readerGraph(nil, nil, false),
	"reader_batch8.onnx":    fixedBatch(8),
	"reader_batch1.onnx":    fixedBatch(1),
	"reader_lines40.onnx":   fixedLines(40),
	"reader_steps.onnx":     readerGraph(nil, []onnx.Value{val("states", f32, sym("batch"), sym("steps"), lit(4)), val("nsteps", i64, sym("batch"))}, true),
	"reader_kept.onnx":      readerGraph(nil, []onnx.Value{val("kept", i64, sym("kept"), lit(2))}, true),
}

// fixedLines is the reader's graph exported with its pages' lines (the
// padded axis) fixed at n.
func fixedLines(n int64) *onnx.Graph {
	g := readerGraph(nil, nil, true)
	g.Inputs[0] = val("pages", f32, sym("batch"), lit(n), lit(16))
	return g
}

// fixedBatch is the reader's graph exported with its batch fixed at n on
// the pages (its other values keep the symbol).
func fixedBatch(n int64) *onnx.Graph {
	g := readerGraph(nil, nil, true)
	g.Inputs[0] = val("pages", f32, lit(n), sym("lines"), lit(16))
	return g
}

// TestModelFixtures checks the documents of testdata/models against the
// fixture graphs, as a package folder is checked (a model that cannot be
// read is an error).
func TestModelFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "models", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/models (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(string(src)) {
			t.Run(fmt.Sprintf("%s#%d", filepath.Base(f), i), func(t *testing.T) {
				checkFixture(t, f, doc, Options{Check: true, Models: modelFixtures, ModelsRequired: true})
			})
		}
	}
}

// TestModelMissingSeverity: a model that cannot be read is a warning for a
// lone document, which stays valid, and an error when models are
// required; without Models nothing is checked.
func TestModelMissingSeverity(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "testdata", "packages", "solo", "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		want  diag.Severity
		valid bool
		none  bool
	}{
		{"lone document", Options{Models: fixtureModels{}}, diag.Warning, true, false},
		{"package", Options{Models: fixtureModels{}, ModelsRequired: true}, diag.Error, false, false},
		{"no models", Options{}, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := CheckSource("doc.yaml", src, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			ds := d.Diags()
			if tc.none {
				if len(ds) != 0 {
					t.Fatalf("got %v", ds)
				}
				return
			}
			if len(ds) != 1 || ds[0].Rule != diag.ModelMissing || ds[0].Severity != tc.want || d.Valid() != tc.valid {
				t.Fatalf("got %v (valid %v), want one model/missing %v", ds, d.Valid(), tc.want)
			}
		})
	}
}

// TestPlanSaysWhatTheGraphFixes: a plan compiled with its models says
// what the runtime will do with extents the graph fixes: a request axis
// fixed at one request's rows lets no group form (the component's
// reason), a fixed padded axis is padded to its extent (the port's
// reason). Compiled without the model, a plan says neither.
func TestPlanSaysWhatTheGraphFixes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "models", "models.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := splitDocuments(string(src))[0]
	for _, tc := range []struct {
		artifact  string
		models    Models
		component string // in the component's reason
		pages     string // in the pages port's reason
	}{
		{"reader_batch1.onnx", modelFixtures, "the graph fixes axis 0 of input `pages`, where a group stacks its requests' rows, at 1: one request per invocation", ""},
		{"reader_lines40.onnx", modelFixtures, "", "the graph fixes padded axis 1 (`lines`) at 40: every group, and a request alone, is padded to 40"},
		{"reader.onnx", modelFixtures, "", ""},
		{"reader_batch1.onnx", nil, "", ""},
	} {
		t.Run(fmt.Sprintf("%s/models=%v", tc.artifact, tc.models != nil), func(t *testing.T) {
			doc := strings.Replace(accepted, "artifact: reader.onnx", "artifact: "+tc.artifact, 1)
			d, err := CheckSource("models.yaml", []byte(doc), Options{Check: true, Models: tc.models})
			if err != nil || !d.Valid() {
				t.Fatalf("%v %v", err, d.Diags())
			}
			gp := d.Results[PlanPass].(GroupPlans).Get("reader")
			pages := gp.Input("pages").Why
			for _, c := range []struct{ what, got, want string }{{"component", gp.Why, tc.component}, {"pages", pages, tc.pages}} {
				switch {
				case c.want != "" && !strings.Contains(c.got, c.want):
					t.Errorf("the %s's reason %q does not say %q", c.what, c.got, c.want)
				case c.want == "" && strings.Contains(c.got, "the graph fixes"):
					t.Errorf("the %s's reason %q speaks of a fixed extent", c.what, c.got)
				}
			}
		})
	}
}
