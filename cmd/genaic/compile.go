package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
)

func init() {
	register(command{
		name:    "compile",
		usage:   "compile PATH [-o plan.json] [--emit ir|plan] [--locs] [--dump PASS|all]",
		summary: "validate, plan, and write the plan (or print the IR or the plan)",
		run:     runCompile,
	})
}

func runCompile(e *env, args []string) int {
	c := commands["compile"]
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	emit := fs.String("emit", "", "print instead of writing a plan file: ir or plan")
	output := fs.String("o", "", "where to write the plan (default: plan.json beside the metadata document, where serve loads it while it is fresh)")
	dump := fs.String("dump", "", "print the IR after the named pass (or all passes) to stderr")
	checkIR := fs.Bool("check", false, "verify the IR after every pass (for genaic developers)")
	locs := fs.Bool("locs", false, "with --emit ir: keep the source locations (#n references and the locs table)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	if *emit != "" && *emit != "ir" && *emit != "plan" {
		e.errorf("--emit %s is not something genaic compile emits; use ir or plan", *emit)
		return exitUsage
	}
	if paths[0] == stdinArg && *output == "" && *emit == "" {
		e.errorf("compile -: a document read from standard input has no folder to write plan.json beside; give -o FILE or --emit ir|plan")
		return exitUsage
	}
	if !noStdin(e, "compile", "-o", *output, "use --emit plan to print the plan") {
		return exitUsage
	}
	if *dump != "" && *dump != "all" && passes.Lookup(*dump) == nil {
		e.errorf("--dump %s names no pass; run `genaic passes` for the list", *dump)
		return exitUsage
	}
	opts := passes.Options{Check: *checkIR, DumpPass: *dump, ModelsRequired: true}
	if *dump != "" {
		opts.Dump = func(pass string, m *ir.Module) {
			fmt.Fprintf(e.stderr, "// IR after pass %s\n", pass)
			ir.Print(e.stderr, m)
		}
	}
	d, err := checkDocument(e, paths[0], opts)
	if err != nil {
		return ioError(e, err)
	}
	if !d.Valid() {
		renderDiags(e, d)
		return exitDiags
	}
	if *emit == "ir" {
		if !*locs {
			ir.StripLocations(d.Module)
		}
		if err := ir.Print(e.stdout, d.Module); err != nil {
			e.errorf("printing the IR: %v", err)
			return exitUsage
		}
		return exitOK
	}
	return writePlan(e, d, *output, *emit == "plan")
}

// writePlan builds the plan and writes it to path (or stdout).
func writePlan(e *env, d *passes.Document, path string, toStdout bool) int {
	if path == "" {
		path = filepath.Join(filepath.Dir(d.File), "plan.json")
	}
	f, err := passes.BuildPlan(d, filepath.Dir(path))
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	for _, a := range f.Artifacts {
		if a.SHA256 == "" {
			fmt.Fprintf(e.stderr, "genaic: warning: artifact %s of component `%s` is missing; the plan can be inspected but not run\n", a.Path, a.Component)
		}
	}
	b, err := f.Marshal()
	if err != nil {
		return ioError(e, err)
	}
	if toStdout {
		_, err = e.stdout.Write(b)
	} else {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		return ioError(e, err)
	}
	if !toStdout {
		fmt.Fprintf(e.stdout, "wrote %s (%d %s, %d grouped)\n", path, len(f.Components), plural(len(f.Components), "component"), grouped(f))
	}
	return exitOK
}

func grouped(f *plan.File) int {
	n := 0
	for _, g := range f.Components {
		if g.Grouped {
			n++
		}
	}
	return n
}

// renderDiags prints a document's diagnostics to stderr with excerpts.
func renderDiags(e *env, d *passes.Document) {
	rd := diag.Renderer{Source: func(string) []byte { return d.Source }}
	rd.Render(e.stderr, d.Diags())
	n := len(d.Diags())
	fmt.Fprintf(e.stderr, "%s: invalid (%d %s)\n", d.File, n, plural(n, "diagnostic"))
}
