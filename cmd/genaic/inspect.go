package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/plan/view"
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
var inspectWriters = map[string]func(w io.Writer, f *plan.File) error{
	"text": view.WriteText,
	"json": view.WriteJSON,
	"dot":  view.WriteDOT,
	"html": view.WriteHTML,
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
	f, code := inspectPlan(e, paths[0])
	if f == nil {
		return code
	}
	if err := write(e.stdout, f); err != nil {
		return ioError(e, err)
	}
	return exitOK
}

// inspectPlan returns the plan at path: a plan file as it was written, or
// a document or package folder compiled in memory. When it returns no
// plan, it has reported why and returns the exit code.
func inspectPlan(e *env, path string) (*plan.File, int) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, ioError(e, err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, ioError(e, err)
		}
		if plan.LooksLikePlan(b) {
			return loadPlanFile(e, path, b)
		}
	}
	d, err := passes.CheckPath(path, passes.Options{})
	if err != nil {
		return nil, ioError(e, err)
	}
	if !d.Valid() {
		renderDiags(e, d)
		return nil, exitDiags
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	// Show what a plan file would hold: the same bytes decoded, so a
	// document and its compiled plan inspect alike.
	b, err := f.Marshal()
	if err == nil {
		f, err = plan.Decode(d.File, b)
	}
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	return f, exitOK
}

// loadPlanFile decodes a plan file. A plan whose package
// changed is still shown, with a warning: inspecting it is how a person
// finds out what it had decided.
func loadPlanFile(e *env, path string, b []byte) (*plan.File, int) {
	f, err := plan.Decode(path, b)
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	if err := f.CheckPackage(f.PackageDir(path)); err != nil {
		fmt.Fprintf(e.stderr, "genaic: warning: %v\n", err)
	}
	return f, exitOK
}
