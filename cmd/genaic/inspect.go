package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/genaic/genaic/compiler/plan"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/ir/irtext"
	"github.com/genaic/genaic/passes"
)

func init() {
	register(command{
		name:    "inspect",
		usage:   "inspect PATH|plan.json [--format text|json|dot|html]",
		summary: "show the plan: components, group plans, budgets, splits, and why",
		run:     runInspect,
	})
}

// inspectWriters are the views inspect writes, by --format.
var inspectWriters = map[string]func(w io.Writer, f *plan.File, m *ir.Module) error{
	"text": plan.WriteText,
	"json": func(w io.Writer, f *plan.File, _ *ir.Module) error { return plan.WriteJSON(w, f) },
	"dot":  plan.WriteDOT,
	"html": plan.WriteHTML,
}

func runInspect(e *env, args []string) int {
	c := commands["inspect"]
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	format := fs.String("format", "text", "the view to write: text, json, dot or html")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	write, ok := inspectWriters[*format]
	if !ok {
		e.errorf("--format %s is not a view genaic inspect writes; use text, json, dot or html", *format)
		return exitUsage
	}
	f, m, code := inspectPlan(e, paths[0])
	if f == nil {
		return code
	}
	if err := write(e.stdout, f, m); err != nil {
		return ioError(e, err)
	}
	return exitOK
}

// inspectPlan returns the plan at path: a plan file as it was written, or
// a document or package folder compiled in memory. When it returns no
// plan, it has reported why and returns the exit code.
func inspectPlan(e *env, path string) (*plan.File, *ir.Module, int) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, ioError(e, err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, ioError(e, err)
		}
		if plan.LooksLikePlan(b) {
			return loadPlanFile(e, path, b)
		}
	}
	d, err := passes.CheckPath(path, passes.Options{})
	if err != nil {
		return nil, nil, ioError(e, err)
	}
	if !d.Valid() {
		renderDiags(e, d)
		return nil, nil, exitDiags
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	// Show what a plan file would hold: the same bytes decoded, so a
	// document and its compiled plan inspect alike.
	b, err := f.Marshal()
	if err == nil {
		f, err = plan.Decode(d.File, b)
	}
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	return f, d.Module, exitOK
}

// loadPlanFile decodes a plan file and parses its IR. A plan whose package
// changed is still shown, with a warning: inspecting it is how a person
// finds out what it had decided.
func loadPlanFile(e *env, path string, b []byte) (*plan.File, *ir.Module, int) {
	f, err := plan.Decode(path, b)
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	if err := f.CheckPackage(f.PackageDir(path)); err != nil {
		fmt.Fprintf(e.stderr, "genaic: warning: %v\n", err)
	}
	m, err := irtext.Parse(path+" (ir)", []byte(f.IR))
	if err != nil {
		fmt.Fprintf(e.stderr, "genaic: warning: the plan's IR does not parse (%v); shapes and steps are left out\n", err)
		m = nil
	}
	return f, m, exitOK
}
