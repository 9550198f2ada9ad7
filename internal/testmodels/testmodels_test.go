package testmodels_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
)

const regenerate = "go run ./testdata/models/gen"

// TestCommittedModelsAreCurrent: every committed model is byte for byte
// what the generator writes today, and the generator is deterministic.
func TestCommittedModelsAreCurrent(t *testing.T) {
	root := testenv.Root(t)
	for _, m := range testmodels.Models() {
		want := m.Bytes()
		if again := m.Bytes(); !bytes.Equal(want, again) {
			t.Errorf("%s: two generations differ; the generator must be deterministic", m.Path())
		}
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Path())))
		switch {
		case err != nil:
			t.Errorf("%s is missing (%v); run: %s", m.Path(), err, regenerate)
		case !bytes.Equal(got, want):
			t.Errorf("%s is stale: the committed %d bytes differ from the %d the generator writes; run: %s",
				m.Path(), len(got), len(want), regenerate)
		}
	}
}

// TestCommittedDocumentsAreCurrent: every committed benchmark requests
// document is byte for byte what the generator writes today, and each holds
// requests the package's model accepts.
func TestCommittedDocumentsAreCurrent(t *testing.T) {
	root := testenv.Root(t)
	for _, d := range testmodels.Documents() {
		want := d.Bytes()
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(d.Path())))
		switch {
		case err != nil:
			t.Errorf("%s is missing (%v); run: %s", d.Path(), err, regenerate)
		case !bytes.Equal(got, want):
			t.Errorf("%s is stale; run: %s", d.Path(), regenerate)
		}
		m := testmodels.Lookup(d.Package)
		for _, r := range d.Requests() {
			in := map[string]testmodels.Tensor{}
			for _, x := range r.Inputs {
				in[x.Name] = x.Tensor
			}
			if _, err := m.Reference(in); err != nil {
				t.Errorf("%s: request %s: %v", d.Path(), r.ID, err)
				break
			}
		}
	}
}

// TestGeneratorCheck runs the generator's own -check. The go command skips
// testdata folders in ./... patterns, so this is what builds the generator
// in CI.
func TestGeneratorCheck(t *testing.T) {
	cmd := exec.Command("go", "run", "./testdata/models/gen", "-check")
	cmd.Dir = testenv.Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./testdata/models/gen -check: %v\n%s", err, out)
	}
}

// TestPackagesValid: every fixture package passes genaic check without a
// single diagnostic.
func TestPackagesValid(t *testing.T) {
	for _, m := range testmodels.Models() {
		t.Run(m.Package, func(t *testing.T) {
			doc := check(t, m.Package)
			for _, d := range doc.Diags() {
				t.Errorf("%s:%d:%d: %s[%s]: %s", d.File, d.Line, d.Column, d.Severity, d.Rule, d.Message)
			}
		})
	}
}

func check(t *testing.T, pkg string) *passes.Document {
	t.Helper()
	doc, err := passes.CheckPath(filepath.Join(testenv.Root(t), "testdata", "packages", pkg), passes.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Module == nil {
		t.Fatalf("%s: the front end refused the document: %v", pkg, doc.Diags())
	}
	return doc
}

// realModels are the packages whose model is a real network that make setup
// fetches and links in, not a generated fixture.
var realModels = map[string]bool{"wakeword": true, "wakeword_audio": true, "ocr_rec": true, "ocr_cls": true, "ocr_det": true, "silero_vad": true}

// TestEveryONNXComponentHasAModel: each ONNX component of each fixture
// package is one of the generated models (or a real model set-up fetches),
// so no package ships a model the generator does not write.
func TestEveryONNXComponentHasAModel(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(testenv.Root(t), "testdata", "packages"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if !dir.IsDir() || realModels[dir.Name()] {
			continue
		}
		for _, c := range check(t, dir.Name()).Module.Components {
			if c.Impl != ir.ImplONNX {
				continue
			}
			m := testmodels.Lookup(dir.Name())
			if m == nil || m.Component != c.Name || m.Artifact != c.Artifact {
				t.Errorf("testdata/packages/%s: ONNX component %s (artifact %s) is not a generated model; add it to testmodels.Models",
					dir.Name(), c.Name, c.Artifact)
			}
		}
	}
}

// TestPortsMatchMetadata: the model's inputs and outputs are the
// component's ports, with the same dtypes, ranks, symbols and fixed extents.
func TestPortsMatchMetadata(t *testing.T) {
	for _, m := range testmodels.Models() {
		t.Run(m.Package, func(t *testing.T) {
			mod := check(t, m.Package).Module
			i := slices.IndexFunc(mod.Components, func(c *ir.Component) bool { return c.Name == m.Component })
			if i < 0 {
				t.Fatalf("the package declares no component %s", m.Component)
			}
			c := mod.Components[i]
			if c.Impl != ir.ImplONNX || c.Artifact != m.Artifact {
				t.Errorf("component %s is %s with artifact %q, the model is onnx %s", c.Name, c.Impl, c.Artifact, m.Artifact)
			}
			matchPorts(t, "input", c.Inputs, m.Inputs)
			matchPorts(t, "output", c.Outputs, m.Outputs)
		})
	}
}

func matchPorts(t *testing.T, kind string, declared []*ir.Port, model []testmodels.Port) {
	t.Helper()
	if len(declared) != len(model) {
		t.Errorf("the component declares %d %s ports, the model has %d", len(declared), kind, len(model))
	}
	for _, p := range model {
		i := slices.IndexFunc(declared, func(d *ir.Port) bool { return d.Name == p.Name })
		if i < 0 {
			t.Errorf("model %s %s is no port of the component", kind, p.Name)
			continue
		}
		c := declared[i].Contract
		if c.DType != p.DType || len(c.Shape) != len(p.Dims) {
			t.Errorf("%s port %s is %s rank %d, the model's is %s rank %d", kind, p.Name, c.DType, len(c.Shape), p.DType, len(p.Dims))
			continue
		}
		for j, d := range c.Shape {
			md := p.Dims[j]
			if d.Sym != md.Sym || (!d.IsSym() && d.Size != md.Size) {
				t.Errorf("%s port %s axis %d: the metadata says %s, the model %+v", kind, p.Name, j, describeDim(d), md)
			}
		}
	}
}

func describeDim(d ir.Dim) string {
	if d.IsSym() {
		return "symbol " + d.Sym
	}
	return fmt.Sprintf("fixed extent %d", d.Size)
}
