// Package codegen writes executors: Go packages that run the workflow of a
// compiled plan as straight-line Go, with typed request and response
// structs, on the VM's runtime (DESIGN §7). An executor embeds its plan and
// calls vm.Engine.InvokeHolding for every invoke, so grouping, admission
// and splitting are the VM's own; what it leaves out is the interpretation of
// the workflow at run time.
//
// The output is deterministic and gofmt-clean, and its header names the
// command that wrote it, so that a test (or `genaic gen -check`) can tell a
// stale executor from a fresh one.
package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dave/jennifer/jen"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// The files of a generated package.
const (
	GoFile   = "executor.go" // the executor
	PlanFile = "plan.json"   // the plan it embeds
)

// Import paths of the runtime a generated package uses.
const (
	vmPath      = "github.com/genaic/genaic/vm"
	backendPath = "github.com/genaic/genaic/backend"
	genrtPath   = "github.com/genaic/genaic/codegen/genrt"
	irPath      = "github.com/genaic/genaic/ir"
	ortPath     = "github.com/genaic/genaic/vm/ort"
)

// Config says what to generate.
type Config struct {
	// Package is the Go package name.
	Package string
	// Command is the command line that generates the package, written in
	// its header: `genaic gen PATH -o DIR -p NAME` ("genaic gen" when
	// empty).
	Command string
	// Source names the package or plan the executor was generated from, for
	// the package comment (the plan's metadata document when empty).
	Source string
}

// File is a generated file.
type File struct {
	Name string
	Data []byte
}

// Generate writes the executor of a plan: its Go file and the plan it
// embeds.
func Generate(f *plan.File, cfg Config) ([]File, error) {
	if !token.IsIdentifier(cfg.Package) || token.IsKeyword(cfg.Package) || cfg.Package == "_" {
		return nil, fmt.Errorf("package name %q is not a Go identifier; name the package with letters, digits and underscores, as in -p imagepadded", cfg.Package)
	}
	if cfg.Command == "" {
		cfg.Command = "genaic gen"
	}
	if cfg.Source == "" {
		cfg.Source = f.Source
	}
	planJSON, err := embeddedPlan(f)
	if err != nil {
		return nil, err
	}
	m := f.IR
	src, err := newGen(f, m, cfg).file()
	if err != nil {
		return nil, err
	}
	return []File{{Name: GoFile, Data: src}, {Name: PlanFile, Data: planJSON}}, nil
}

// embeddedPlan is the plan as the executor embeds it: its package folder is
// the one New is given, so the plan records none of its own.
func embeddedPlan(f *plan.File) ([]byte, error) {
	c := *f
	c.Package = "."
	return c.Marshal()
}

// Stale compares generated files with the files in dir and returns the
// names of those that differ or are missing.
func Stale(dir string, files []File) ([]string, error) {
	var stale []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			stale = append(stale, f.Name)
		case err != nil:
			return nil, err
		case !bytes.Equal(b, f.Data):
			stale = append(stale, f.Name)
		}
	}
	return stale, nil
}

// Write writes generated files into dir, creating it when needed.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gen holds what generating one executor needs.
type gen struct {
	f   *plan.File
	m   *ir.Module
	cfg Config
	// inFields and outFields name the Request and Response fields of
	// workflow inputs and outputs.
	inFields, outFields map[string]string
	// inItems and outItems name the items fields (items.go).
	inItems, outItems map[string]string
	// outProduced holds the items outputs on levels the workflow produces.
	outProduced map[string]bool
	// optional holds the inputs a request may leave out.
	optional map[string]bool
	// locals names the local of run that holds each workflow-level name.
	locals map[string]string
}

func newGen(f *plan.File, m *ir.Module, cfg Config) *gen {
	g := &gen{f: f, m: m, cfg: cfg, inFields: map[string]string{}, outFields: map[string]string{}, optional: map[string]bool{}}
	in := newNamer()
	for _, i := range m.Inputs {
		g.inFields[i.Name] = in.claim(identifier(i.Name, true))
		if i.Source != "literal" && i.Source != "artifact" && optionalInput(i) {
			g.optional[i.Name] = true
		}
	}
	out := newNamer("Release") // Response's method
	for _, o := range m.Outputs {
		g.outFields[o.Name] = out.claim(identifier(o.Name, true))
	}
	g.claimItems(in, out)
	return g
}

// optionalInput reports whether the VM lets a request leave an input out.
func optionalInput(in *ir.Input) bool {
	return in.Required != nil && !*in.Required || in.Contract != nil && in.Contract.Optional
}

// file renders the executor's Go file.
func (g *gen) file() ([]byte, error) {
	f := jen.NewFile(g.cfg.Package)
	f.HeaderComment("Code generated by " + g.cfg.Command + ". DO NOT EDIT.")
	for _, l := range wrap(0, fmt.Sprintf("Package %s is the executor `genaic gen` wrote for the workflow of %s (%s). It runs the workflow as straight-line Go on the runtime of the genaic VM: New opens the package's components, Run takes one typed request, and RunJSON takes the requests document of `genaic run` and returns its responses document.",
		g.cfg.Package, g.cfg.Source, g.f.Source)) {
		f.PackageComment(l)
	}
	f.ImportName(vmPath, "vm")
	f.ImportName(backendPath, "backend")
	f.ImportName(genrtPath, "genrt")
	f.ImportName(irPath, "ir")
	f.ImportName(ortPath, "ort")
	f.Anon("embed")
	f.Comment("//go:embed " + PlanFile)
	f.Var().Id("planJSON").Index().Byte()
	g.api(f)
	g.requests(f)
	body, err := g.workflow()
	if err != nil {
		return nil, err
	}
	for _, c := range body {
		f.Add(c)
	}
	var b bytes.Buffer
	if err := f.Render(&b); err != nil {
		return nil, fmt.Errorf("rendering the executor: %w", err)
	}
	return b.Bytes(), nil
}
