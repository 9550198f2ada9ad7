package passes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// Document is one document taken through the front end, lowering and the
// pipeline.
type Document struct {
	*compiler.Result
	Module  *ir.Module    // nil when the front end refused the document
	Results map[*Pass]any // the results of the passes that ran
}

// CheckSource runs the whole check pipeline on a document in memory. The
// front end's diagnostics and the passes' are merged into Result.Diags. The
// error is for genaic's own failures (a pass that panicked, an IR invariant
// broken), never for problems in the document.
func CheckSource(file string, src []byte, opts Options) (*Document, error) {
	return check(compiler.Load(file, src), opts)
}

// CheckPath reads a document or package folder and runs the pipeline. I/O
// problems are errors.
//
// The models of ONNX components are read from the document's folder unless
// opts.Models is set. A model that cannot be read is a warning for a lone
// document (one may be checked without its models) and an error for a
// package folder or when opts.ModelsRequired is set.
func CheckPath(path string, opts Options) (*Document, error) {
	r, err := compiler.LoadPath(path)
	if err != nil {
		return nil, err
	}
	if opts.Models == nil {
		opts.Models = NewDirModels(filepath.Dir(r.File))
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		opts.ModelsRequired = true
	}
	return check(r, opts)
}

func check(r *compiler.Result, opts Options) (*Document, error) {
	d := &Document{Result: r}
	if !r.Valid() {
		return d, nil
	}
	d.Module = compiler.Lower(r.Doc, r.Version)
	opts.File = r.File
	ds, results, err := Run(d.Module, opts)
	d.Results = results
	r.Diags = append(r.Diags, ds...)
	r.Diags.Sort()
	r.Diags.FillSpans(r.Source)
	return d, err
}

// Diags returns the document's diagnostics.
func (d *Document) Diags() diag.List { return d.Result.Diags }

// BuildPlan assembles the plan file of a document that every check
// accepted. planDir is the folder the plan will be written to: the package
// folder is recorded relative to it, and artifacts relative to the package.
func BuildPlan(d *Document, planDir string) (*plan.File, error) {
	gps, ok := d.Results[PlanPass].(GroupPlans)
	if !ok || !d.Valid() {
		return nil, fmt.Errorf("%s has diagnostics; a plan is only built for a valid document", d.File)
	}
	pkgDir := filepath.Dir(d.File)
	rel, err := relPath(planDir, pkgDir)
	if err != nil {
		return nil, err
	}
	f := &plan.File{
		Format:        plan.Format,
		PlanVersion:   plan.Version,
		SchemaVersion: d.Version.Spelling,
		Package:       rel,
		Source:        filepath.Base(d.File),
		SourceSHA256:  sha256Hex(d.Source),
		Components:    gps,
		IR:            d.Module,
	}
	graphs, _ := d.Results[ModelsPass].(*ModelGraphs)
	for _, c := range d.Module.Components {
		if c.Artifact == "" {
			continue
		}
		a, err := artifact(pkgDir, c)
		if err != nil {
			return nil, err
		}
		if g := graphs.Graph(c.Name); g != nil && c.Impl == ir.ImplONNX {
			a.Ops = slices.Clone(g.Ops)
		}
		f.Artifacts = append(f.Artifacts, a)
	}
	// The runtime validates every plan file it loads; a plan this compiler
	// builds must pass the same validation, or the checks above let
	// something through that they should have reported (genaic's bug, said
	// as such rather than found by the runtime).
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: genaic's checks accepted the document, but the plan built from it is not consistent (a genaic bug; please report it with the document): %v", d.File, err)
	}
	return f, nil
}

// artifact records a component's artifact, which must lie inside the
// package folder. A missing file is recorded without a hash: the plan can
// be inspected, but a runtime refuses to load it.
func artifact(pkgDir string, c *ir.Component) (plan.Artifact, error) {
	p := filepath.ToSlash(filepath.Clean(filepath.FromSlash(c.Artifact)))
	if filepath.IsAbs(c.Artifact) || p == ".." || strings.HasPrefix(p, "../") {
		return plan.Artifact{}, fmt.Errorf("component `%s` names artifact %q outside its package folder; artifacts are paths inside the package", c.Name, c.Artifact)
	}
	a := plan.Artifact{Component: c.Name, Path: p}
	if h, err := plan.HashFile(filepath.Join(pkgDir, filepath.FromSlash(p))); err == nil {
		a.SHA256 = h
	} else if !errors.Is(err, fs.ErrNotExist) {
		return a, err
	}
	return a, nil
}

func relPath(from, to string) (string, error) {
	absFrom, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	absTo, err := filepath.Abs(to)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absFrom, absTo)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
