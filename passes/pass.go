// Package passes holds genaic's compiler passes over the IR: check passes
// that report diagnostics with rule ids from the public catalogue, and plan
// passes that decide how components group their items.
//
// A pass is a declared value (Name, Doc, Requires, ResultType, Rules, Run),
// in the manner of golang.org/x/tools/go/analysis. Pipeline is the one
// ordered list; PassOrder holds the constraints on its order that Requires
// does not, and CheckPipeline, run at start-up and by a test, keeps both.
// Facts several passes need (contract sites and name resolution, symbol
// classes, bindings) are the results of passes of their own.
package passes

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// Kind separates passes that only report from passes that decide.
type Kind uint8

const (
	// Check passes report diagnostics and keep going, so a user sees every
	// problem in one run.
	Check Kind = iota
	// Plan passes run only on a module without errors.
	Plan
)

// Pass is one compiler pass.
type Pass struct {
	Name     string
	Doc      string
	Kind     Kind
	Requires []*Pass
	// ResultType is the type of what Run returns for later passes, or nil
	// when the pass returns nothing.
	ResultType reflect.Type
	// Rules are the rule ids the pass may report. Reporting another is a
	// bug in the pass (Report panics, runOne turns it into an error), so
	// the list is a true account of what each pass checks.
	Rules []diag.Rule
	Run   func(*Context) (any, error)
}

// Context is what a running pass sees: the module, the results of the
// passes it requires, and a way to report.
type Context struct {
	Module  *ir.Module
	File    string
	opts    Options
	pass    *Pass
	results map[*Pass]any
	diags   *diag.List
}

// Result returns the result of a required pass.
func (c *Context) Result(p *Pass) any {
	r, ok := c.results[p]
	if !ok {
		panic(fmt.Sprintf("pass %s reads the result of %s, which it does not require or which has not run", c.pass.Name, p.Name))
	}
	return r
}

// Report adds an error diagnostic at loc.
func (c *Context) Report(rule diag.Rule, loc ir.Loc, format string, args ...any) {
	c.ReportRelated(rule, loc, nil, format, args...)
}

// ReportHelp adds an error diagnostic at loc whose fix, help, is printed
// on a help line of its own; an empty help is none.
func (c *Context) ReportHelp(rule diag.Rule, loc ir.Loc, help string, format string, args ...any) {
	c.ReportRelated(rule, loc, nil, format, args...)
	d := &(*c.diags)[len(*c.diags)-1]
	d.Help = diag.JoinHelp(help, d.Help)
}

// ReportName adds an error diagnostic about name, a name read at loc that
// resolves to nothing: the caret goes on the name itself where loc is the
// key that introduces it, and help is printed on a help line of its own.
func (c *Context) ReportName(rule diag.Rule, loc ir.Loc, name, help string, format string, args ...any) {
	c.ReportHelp(rule, loc, help, format, args...)
	(*c.diags)[len(*c.diags)-1].Name = name
}

// Related is a second location that takes part in a diagnostic.
type Related struct {
	Loc     ir.Loc
	Message string
}

// ReportRelated adds an error diagnostic at loc with related locations.
func (c *Context) ReportRelated(rule diag.Rule, loc ir.Loc, related []Related, format string, args ...any) {
	c.report(diag.Error, rule, loc, related, format, args...)
}

// Warn adds a warning diagnostic at loc: reported, but the document stays
// valid.
func (c *Context) Warn(rule diag.Rule, loc ir.Loc, format string, args ...any) {
	c.report(diag.Warning, rule, loc, nil, format, args...)
}

func (c *Context) report(sev diag.Severity, rule diag.Rule, loc ir.Loc, related []Related, format string, args ...any) {
	if !slices.Contains(c.pass.Rules, rule) {
		panic(fmt.Sprintf("pass %s reports rule %s, which it does not declare in Rules", c.pass.Name, rule))
	}
	l := c.Module.Location(loc)
	d := diag.Errorf(rule, diag.Pos{Line: l.Line, Column: l.Col}, l.Path, format, args...)
	d.Severity = sev
	d.File = c.File
	for _, r := range related {
		rl := c.Module.Location(r.Loc)
		d = d.With(diag.Pos{Line: rl.Line, Column: rl.Col}, rl.Path, "%s", r.Message)
	}
	c.diags.Add(d)
}

// Options control a pipeline run.
type Options struct {
	File string
	// Check runs ir.Verify after every pass (always on in tests).
	Check bool
	// Dump, when set, is called with the module after each pass whose name
	// it accepts.
	Dump func(pass string, m *ir.Module)
	// DumpPass selects which passes Dump sees: a pass name or "all".
	DumpPass string
	// Models gives the graphs of the ONNX components, for the models
	// pass; nil leaves the components unchecked against their models.
	// CheckPath reads them from the document's folder when it is nil.
	Models Models
	// Adapters makes the backend that loads the document's adapter
	// components as the runtime loads them (the command line gives
	// vm/adapters.New): the preprocess pass loads each adapter with it
	// once every other check has accepted the document, so that a port
	// layout the adapter would refuse at load is refused at check. nil
	// leaves the adapters unloaded.
	Adapters func(*ir.Module) backend.Backend
	// ModelsRequired makes a model that cannot be read an error rather
	// than a warning: a package folder and `compile` need their models, a
	// lone document may be checked without them (CheckPath sets it for a
	// folder).
	ModelsRequired bool
}

// Run runs the pipeline on m. Check passes always run; plan passes run only
// when no check reported an error. It returns the diagnostics (sorted) and
// the results of every pass that ran; the error is for broken invariants
// and pass panics, which are genaic's bugs, not the document's.
func Run(m *ir.Module, opts Options) (diag.List, map[*Pass]any, error) {
	var ds diag.List
	results := map[*Pass]any{}
	for _, p := range Pipeline {
		if p.Kind == Plan && ds.HasErrors() {
			break
		}
		res, err := runOne(p, &Context{Module: m, File: opts.File, opts: opts, pass: p, results: results, diags: &ds})
		if err != nil {
			return ds, results, err
		}
		results[p] = res
		if opts.Check {
			if err := ir.Verify(m); err != nil {
				return ds, results, fmt.Errorf("after pass %s: %w", p.Name, err)
			}
		}
		if opts.Dump != nil && (opts.DumpPass == "all" || opts.DumpPass == p.Name) {
			opts.Dump(p.Name, m)
		}
	}
	ds.Sort()
	return ds, results, nil
}

// runOne runs a pass, turning a panic into an error that names the pass.
func runOne(p *Pass, c *Context) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pass %s panicked: %v\n%s", p.Name, r, debug.Stack())
		}
	}()
	res, err = p.Run(c)
	if err != nil {
		return nil, fmt.Errorf("pass %s: %w", p.Name, err)
	}
	if p.ResultType != nil && (res == nil || reflect.TypeOf(res) != p.ResultType) {
		return nil, fmt.Errorf("pass %s returned %T, declared %v", p.Name, res, p.ResultType)
	}
	return res, nil
}

// Lookup returns the pass called name, or nil.
func Lookup(name string) *Pass {
	for _, p := range Pipeline {
		if p.Name == name {
			return p
		}
	}
	return nil
}
