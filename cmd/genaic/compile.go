package main

import (
	"flag"
	"fmt"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
)

func init() {
	register(command{
		name:    "compile",
		usage:   "compile PATH [--emit ir] [--dump PASS|all] [--check]",
		summary: "validate a package and print its IR",
		run:     runCompile,
	})
}

func runCompile(e *env, args []string) int {
	c := commands["compile"]
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	emit := fs.String("emit", "ir", "what to print: ir")
	dump := fs.String("dump", "", "print the IR after the named pass (or all passes) to stderr")
	checkIR := fs.Bool("check", false, "verify the IR after every pass (for genaic developers)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	if *emit != "ir" {
		e.errorf("--emit %s is not supported; genaic compile emits: ir", *emit)
		return exitUsage
	}
	if *dump != "" && *dump != "all" && passes.Lookup(*dump) == nil {
		e.errorf("--dump %s names no pass; run `genaic passes` for the list", *dump)
		return exitUsage
	}
	opts := passes.Options{Check: *checkIR, DumpPass: *dump}
	if *dump != "" {
		opts.Dump = func(pass string, m *ir.Module) {
			fmt.Fprintf(e.stderr, "// IR after pass %s\n", pass)
			ir.Print(e.stderr, m)
		}
	}
	d, err := passes.CheckPath(paths[0], opts)
	if err != nil {
		return ioError(e, err)
	}
	if !d.Valid() {
		renderDiags(e, d)
		return exitDiags
	}
	if err := ir.Print(e.stdout, d.Module); err != nil {
		e.errorf("printing the IR: %v", err)
		return exitUsage
	}
	return exitOK
}

// renderDiags prints a document's diagnostics to stderr with excerpts.
func renderDiags(e *env, d *passes.Document) {
	rd := diag.Renderer{Source: func(string) []byte { return d.Source }}
	rd.Render(e.stderr, d.Diags())
	n := len(d.Diags())
	fmt.Fprintf(e.stderr, "%s: invalid (%d %s)\n", d.File, n, plural(n, "diagnostic"))
}
