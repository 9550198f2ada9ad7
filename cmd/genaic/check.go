package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/vm/adapters"
)

func init() {
	register(command{
		name:    "check",
		usage:   "check [--json] [-v] PATH...",
		summary: "validate metadata documents (a file, or a package folder)",
		run:     runCheck,
	})
}

func runCheck(e *env, args []string) int {
	c := commands["check"]
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print a JSON report instead of text")
	verbose := fs.Bool("v", false, "also describe each valid document")
	checkIR := fs.Bool("check", false, "verify the IR after every pass (for genaic developers)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) == 0 {
		fs.Usage()
		return exitUsage
	}
	if n := count(paths, stdinArg); n > 1 {
		e.errorf("check: - (standard input) is given %d times; it can be read once", n)
		return exitUsage
	}
	// Every path is checked, whatever befell the ones before it: a path
	// that cannot be read is reported (an entry with its error in the
	// JSON report) and makes the exit code 2.
	var report checkReport
	status := exitOK
	for _, p := range repositoryPackages(paths) {
		d, err := checkDocument(e, p, passes.Options{Check: *checkIR})
		if err != nil {
			report.Files = append(report.Files, checkFile{FileReport: diag.FileReport{Path: p, Diagnostics: []diag.Diagnostic{}}, Error: ioErrorText(err)})
			status = exitUsage
			if !*asJSON {
				ioError(e, err)
			}
			continue
		}
		r := d.Result
		report.Files = append(report.Files, checkFile{FileReport: diag.FileReport{Path: r.File, Valid: r.Valid(), Diagnostics: r.Diags}})
		if !r.Valid() && status == exitOK {
			status = exitDiags
		}
		if !*asJSON {
			printCheck(e, r, *verbose)
		}
	}
	if *asJSON {
		if err := report.writeJSON(e.stdout); err != nil {
			return ioError(e, err)
		}
	}
	return status
}

// repositoryPackages replaces each path that is a repository folder (a
// folder of packages, as serve takes) by its packages in name order; every
// other path stays as given, and is reported as given when it is neither.
func repositoryPackages(paths []string) []string {
	var out []string
	for _, p := range paths {
		_, err := os.Stat(filepath.Join(p, compiler.MetadataFile))
		dirs, rerr := serve.RepositoryPackages(p)
		if p == stdinArg || err == nil || rerr != nil {
			out = append(out, p)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(dirs)) {
			out = append(out, dirs[name])
		}
	}
	return out
}

// checkReport is `genaic check --json`: diag.Report, whose entries add
// the I/O error of a path that could not be read.
type checkReport struct {
	Files []checkFile `json:"files"`
}

type checkFile struct {
	diag.FileReport
	Error string `json:"error,omitempty"`
}

func (r checkReport) writeJSON(w io.Writer) error {
	for i := range r.Files {
		if r.Files[i].Diagnostics == nil {
			r.Files[i].Diagnostics = []diag.Diagnostic{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// builtinAdapters is the backend the runtime loads adapter components
// with: check and compile load each adapter with it, to refuse what it
// would refuse at run time.
func builtinAdapters(m *ir.Module) backend.Backend { return adapters.New(m) }

// stdinName is the file name diagnostics give a document read from
// standard input.
const stdinName = "<stdin>"

// checkDocument checks the document or package at path, or the document
// on standard input when path is "-".
func checkDocument(e *env, path string, opts passes.Options) (*passes.Document, error) {
	opts.Adapters = builtinAdapters
	if path != stdinArg {
		return passes.CheckPath(path, opts)
	}
	src, err := readStdin(e, 4*compiler.MaxDocumentBytes, "metadata documents")
	if err != nil {
		return nil, err
	}
	return passes.CheckSource(stdinName, src, opts)
}

// readStdin reads standard input, refusing more than limit bytes without
// reading further.
func readStdin(e *env, limit int64, what string) ([]byte, error) {
	if e.stdin == nil {
		return nil, fmt.Errorf("%s: no standard input", stdinName)
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", stdinName, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes; genaic reads %s of at most %d bytes", stdinName, limit, what, limit)
	}
	return b, nil
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func printCheck(e *env, r *compiler.Result, verbose bool) {
	rd := diag.Renderer{Source: func(file string) []byte {
		if file == r.File {
			return r.Source
		}
		b, _ := os.ReadFile(file)
		return b
	}}
	rd.Render(e.stdout, r.Diags)
	if !r.Valid() {
		n := len(r.Diags)
		fmt.Fprintf(e.stdout, "%s: invalid (%d %s)\n", r.File, n, plural(n, "diagnostic"))
		return
	}
	fmt.Fprintf(e.stdout, "%s: valid\n", r.File)
	if verbose {
		describe(e, r)
	}
}

func describe(e *env, r *compiler.Result) {
	v := r.Version
	spelling := "absent"
	if v.Present {
		spelling = fmt.Sprintf("%q", v.Spelling)
	}
	fmt.Fprintf(e.stdout, "  schema_version: %s (normal form %s)\n", spelling, v.Version)
	doc := r.Doc
	if doc.Pipeline != nil && doc.Pipeline.Workflow != nil {
		w := doc.Pipeline.Workflow
		count := func(n int, what string) string { return fmt.Sprintf("%d %s", n, plural(n, what)) }
		fmt.Fprintf(e.stdout, "  workflow: %s, %s, %s, %s\n", count(len(w.Inputs.Entries), "input"), count(len(w.Outputs.Entries), "output"),
			count(len(w.Components.Entries), "component"), count(len(w.Steps.Items), "step"))
		for _, c := range w.Components.Entries {
			fmt.Fprintf(e.stdout, "    component %s: %s\n", c.Key.Value, componentSummary(c.Value))
		}
	}
	if opaque := doc.OpaqueSections(); len(opaque) > 0 {
		fmt.Fprintf(e.stdout, "  not checked: %s (genaic checks and plans schema_version, pipeline and preprocessing; other sections are read as YAML and left to other tools)\n",
			strings.Join(opaque, ", "))
	}
}

func componentSummary(c compiler.Component) string {
	impl := "?"
	if c.Implementation != nil {
		impl = c.Implementation.Kind.Value
	}
	bc := c.BatchCapacity
	if bc == nil {
		return impl + ", no batch_capacity: one request row per invocation"
	}
	var uniform []string
	for _, u := range bc.UniformDimensions.Items {
		uniform = append(uniform, u.Value)
	}
	var budgets []string
	for _, b := range bc.Budgets.Items {
		var path []string
		if b.Dimensions != nil {
			for _, s := range b.Dimensions.Items {
				path = append(path, s.Value)
			}
		}
		total := int64(0)
		if b.MaxTotal != nil {
			total = b.MaxTotal.Value
		}
		budgets = append(budgets, fmt.Sprintf("[%s] ≤ %d", strings.Join(path, "×"), total))
	}
	return fmt.Sprintf("%s, groups items: uniform [%s], budgets %s", impl, strings.Join(uniform, ", "), strings.Join(budgets, ", "))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
