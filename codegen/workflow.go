package codegen

import (
	"fmt"
	"maps"
	"sort"

	"github.com/dave/jennifer/jen"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// reserved are the identifiers the generated run function and its package
// use; a workflow value never gets one of them as its local.
var reserved = []string{"ex", "ctx", "req", "resp", "err", "r", "out", "planJSON", "ports", "run",
	"vm", "genrt", "ir", "ort", "context", "time", "embed"}

// The workflow as straight-line Go. Every workflow-level name (input,
// cell, step result, branch output, iteration counter) is one local of
// run, nil until the VM's environment would hold it, so that a step sees
// exactly the values the interpreter's environment gives it: a branch
// arm's values, a loop's last iteration, a cell's current value.
//
// A local is declared only when the code reads it; a result nobody reads
// is assigned to _. Reading depends on what is generated (a cell's
// initializer is read only when the cell is), so the body is generated
// until the set of names it reads no longer shrinks.

// workflow writes run: the workflow's steps.
func (g *gen) workflow() ([]jen.Code, error) {
	locals := newNamer(reserved...)
	g.locals = map[string]string{}
	for _, v := range g.m.Values {
		if v != nil {
			if _, ok := g.locals[v.Name]; !ok {
				g.locals[v.Name] = locals.claim(identifier(v.Name, false))
			}
		}
	}
	var read map[string]bool
	for {
		p := &pass{g: g, read: read, reads: map[string]bool{}, names: &namer{taken: maps.Clone(locals.taken)}}
		body, err := p.run()
		if err != nil {
			return nil, err
		}
		if read != nil && maps.Equal(read, p.reads) {
			return g.runFunc(p, body), nil
		}
		read = p.reads
	}
}

// runFunc wraps the steps into run with the declarations of the locals.
func (g *gen) runFunc(p *pass, body []jen.Code) []jen.Code {
	var defs []jen.Code
	declared := map[string]bool{}
	for _, in := range g.m.Inputs {
		if p.reads[in.Name] && !declared[in.Name] {
			declared[in.Name] = true
			defs = append(defs, jen.Id(g.locals[in.Name]).Op("=").Id("req").Dot(g.inFields[in.Name]))
		}
	}
	for _, v := range g.m.Values {
		if v != nil && p.reads[v.Name] && !declared[v.Name] {
			declared[v.Name] = true
			defs = append(defs, jen.Id(g.locals[v.Name]).Op("*").Qual(backendPath, "Tensor"))
		}
	}
	// Its callers count the request while it runs (Begin and End, or
	// vm.Engine.RunBatchWith), so that a group may wait for it to arrive
	// rather than judge from arrival rates. A request that fails lets go
	// of the group outputs it holds (its result err is named for that).
	stmts := []jen.Code{
		jen.Id("resp").Op(":=").Op("&").Id("Response").Values(),
		jen.Defer().Add(genrtCall("ReleaseFailed", jen.Op("&").Err(), jen.Op("&").Id("resp").Dot("held"))),
	}
	if len(defs) > 0 {
		stmts = append(stmts, jen.Var().Defs(defs...))
	}
	stmts = append(stmts, body...)
	stmts = append(stmts, jen.Line(), jen.Return(jen.Id("resp"), jen.Nil()))
	var out []jen.Code
	for _, l := range wrap(0, "run is the workflow, step by step, as the VM's interpreter runs it. Each step's comment says where the document declares it.") {
		out = append(out, jen.Comment(l))
	}
	out = append(out, jen.Func().Id("run").
		Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("ex").Op("*").Id("Executor"), jen.Id("req").Op("*").Id("Request")).
		Params(jen.Id("_").Op("*").Id("Response"), jen.Err().Error()).Block(stmts...))
	return out
}

// pass is one generation of the workflow's body.
type pass struct {
	g *gen
	// read holds the names the previous pass read (nil: every name); a
	// definition of any other name is not kept.
	read map[string]bool
	// reads collects the names this pass's code reads.
	reads map[string]bool
	// names hands out the temporaries of this pass.
	names *namer
	// checked is set while nothing that takes time (an invoke) has run
	// since the last test of ctx: a second test would find the same.
	checked bool
}

func retErr() jen.Code { return jen.Return(jen.Nil(), jen.Err()) }

func failWith(err jen.Code) jen.Code { return jen.Return(jen.Nil(), err) }

func genrtCall(name string, args ...jen.Code) *jen.Statement {
	return jen.Qual(genrtPath, name).Call(args...)
}

// run generates the cells' initial values and the workflow's body.
func (p *pass) run() ([]jen.Code, error) {
	var code []jen.Code
	known := map[string]bool{}
	for _, in := range p.g.m.Inputs {
		known[in.Name] = true
	}
	for _, c := range p.g.m.Cells {
		// The VM starts a cell at its initializer's value in the request:
		// an input (or an earlier cell), nil when the request has none.
		if p.kept(c.Name) && known[c.Initializer.Name] {
			code = append(code, jen.Id(p.g.locals[c.Name]).Op("=").Add(p.ref(c.Initializer.Name)).
				Comment(fmt.Sprintf("cell %s starts at %s", c.Name, c.Initializer.Name)))
		}
		known[c.Name] = true
	}
	body, err := p.block(p.g.m.Body, false)
	return append(code, body...), err
}

// kept reports whether a definition of name is kept: some code reads it.
func (p *pass) kept(name string) bool { return p.read == nil || p.read[name] }

// ref reads the local of name.
func (p *pass) ref(name string) *jen.Statement {
	p.reads[name] = true
	return jen.Id(p.g.locals[name])
}

// def is the target of a definition of name: its local, or _.
func (p *pass) def(name string) *jen.Statement {
	if p.kept(name) {
		return jen.Id(p.g.locals[name])
	}
	return jen.Id("_")
}

// check tests, before a step reads u, that the request has it: only an
// optional input can be missing.
func (p *pass) check(u ir.Use) ([]jen.Code, error) {
	if _, ok := p.g.locals[u.Name]; !ok {
		return nil, fmt.Errorf("a step reads `%s`, which no input, cell or step defines", u.Name)
	}
	if !p.g.optional[u.Name] {
		return nil, nil
	}
	return []jen.Code{jen.If(p.ref(u.Name).Op("==").Nil()).Block(failWith(genrtCall("NoValue", jen.Lit(u.Name))))}, nil
}

// ctxCheck is the interpreter's test of ctx before a block's first step
// and before an invoke. A cancelled or expired context fails the request
// with run/cancelled or run/deadline, as the VM fails it, not with the
// context's bare error.
func (p *pass) ctxCheck() []jen.Code {
	if p.checked {
		return nil
	}
	p.checked = true
	return []jen.Code{jen.If(jen.Err().Op(":=").Id("ctx").Dot("Err").Call(), jen.Err().Op("!=").Nil()).Block(
		jen.Return(jen.Nil(), jen.Qual(backendPath, "ContextError").Call(jen.Err())))}
}

// block generates a block's steps in order. A loop body is entered many
// times, so its test of ctx is never left out.
func (p *pass) block(b *ir.Block, loopBody bool) ([]jen.Code, error) {
	if b == nil || len(b.Steps) == 0 {
		return nil, nil
	}
	if loopBody {
		p.checked = false
	}
	var code []jen.Code
	for i, s := range b.Steps {
		if i > 0 {
			code = append(code, jen.Line())
		}
		code = append(code, comments(8, p.where(s))...)
		if i == 0 || s.Op == ir.OpInvoke {
			code = append(code, p.ctxCheck()...)
		}
		sc, err := p.step(s)
		if err != nil {
			return nil, err
		}
		code = append(code, sc...)
	}
	return code, nil
}

// where names a step and the place the document declares it.
func (p *pass) where(s *ir.Step) string {
	what := s.Op.String()
	switch s.Op {
	case ir.OpInvoke:
		what += " " + s.Component.Name
	case ir.OpEmit:
		what += " " + s.Value.Name + " into " + s.Output.Name
	case ir.OpBranch:
		what += " on " + s.Predicate.Name
	}
	l := p.g.m.Location(s.Loc)
	if l.Line == 0 {
		return what
	}
	return fmt.Sprintf("%s (%s:%d:%d, %s)", what, p.g.f.Source, l.Line, l.Col, l.Path)
}

func (p *pass) step(s *ir.Step) ([]jen.Code, error) {
	switch s.Op {
	case ir.OpInvoke:
		return p.invoke(s)
	case ir.OpEmit:
		return p.emit(s)
	case ir.OpSequence:
		return p.block(s.Body, false)
	case ir.OpBranch:
		return p.branch(s)
	case ir.OpLoop:
		return p.loop(s)
	}
	return nil, fmt.Errorf("step op %s has no generated form", s.Op)
}

func (p *pass) valueName(id ir.ValueID) (string, error) {
	v := p.g.m.Value(id)
	if v == nil {
		return "", fmt.Errorf("a step defines value %%%d, which the plan's IR does not list", id)
	}
	return v.Name, nil
}

// invoke runs a component through the engine: its grouper when it has a
// GroupPlan, else alone.
func (p *pass) invoke(s *ir.Step) ([]jen.Code, error) {
	comp := s.Component.Name
	var code []jen.Code
	args := jen.Dict{}
	for _, a := range s.Args {
		checks, err := p.check(a.Value)
		if err != nil {
			return nil, err
		}
		code = append(code, checks...)
		args[jen.Lit(a.Port)] = p.ref(a.Value.Name)
	}
	tensors := func(d jen.Dict) jen.Code {
		return jen.Map(jen.String()).Op("*").Qual(backendPath, "Tensor").Values(d)
	}
	var values jen.Code = jen.Nil()
	if d := p.companions(comp); len(d) > 0 {
		values = tensors(d)
	}
	// The step's location in the plan's IR locates the errors of this
	// invoke, as the interpreter locates them.
	// The response holds the group outputs the results view, until its
	// caller releases it.
	call := jen.Id("ex").Dot("Engine").Call().Dot("InvokeHolding").Call(jen.Id("ctx"), jen.Lit(int(s.Loc)), jen.Lit(comp), tensors(args), values,
		jen.Op("&").Id("resp").Dot("held"))
	p.checked = false
	if len(s.Results) == 0 {
		return append(code, jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(retErr())), nil
	}
	outs := p.names.claim("outs")
	code = append(code, jen.List(jen.Id(outs), jen.Err()).Op(":=").Add(call), jen.If(jen.Err().Op("!=").Nil()).Block(retErr()))
	for _, r := range s.Results {
		name, err := p.valueName(r.Value)
		if err != nil {
			return nil, err
		}
		code = append(code, jen.If(jen.List(p.def(name), jen.Err()).Op("=").Add(genrtCall("Result", jen.Id(outs), jen.Lit(comp), jen.Lit(r.Port))),
			jen.Err().Op("!=").Nil()).Block(retErr()))
	}
	return code, nil
}

// companions are the workflow-level values a component's contracts name
// for their companions (a level or lengths it does not take as a port):
// a grouped component's admission reads them from the request, and an
// ungrouped one's levels are checked against them, as the interpreter
// does.
func (p *pass) companions(comp string) jen.Dict {
	gp := p.g.f.Component(comp)
	if gp == nil {
		return nil
	}
	names := map[string]bool{}
	add := func(r plan.Ref) {
		if r.Port == "" && r.Value != "" {
			names[r.Value] = true
		}
	}
	for _, in := range gp.Inputs {
		for _, l := range in.Levels {
			add(l.Offsets)
			add(l.Owner)
		}
		for _, pd := range in.Padded {
			add(pd.Lengths)
		}
	}
	d := jen.Dict{}
	for _, n := range sortedKeys(names) {
		// A name that is no workflow value is never in the VM's
		// environment: admission finds nothing, as here.
		if _, ok := p.g.locals[n]; ok {
			d[jen.Lit(n)] = p.ref(n)
		}
	}
	return d
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// emit sets a response field: a plain replace assigns the value; any
// other emit (append, when, valid_length) goes through the runtime's Emit,
// as the interpreter's does.
func (p *pass) emit(s *ir.Step) ([]jen.Code, error) {
	field, ok := p.g.outFields[s.Output.Name]
	if !ok {
		return nil, fmt.Errorf("a step emits into `%s`, which is not a workflow output", s.Output.Name)
	}
	code, err := p.check(s.Value)
	if err != nil {
		return nil, err
	}
	target := jen.Id("resp").Dot(field)
	if s.When == nil && s.ValidLength == nil && s.Mode == "replace" {
		return append(code, target.Op("=").Add(p.ref(s.Value.Name))), nil
	}
	when, more, err := p.optionalUse(s.When)
	if err != nil {
		return nil, err
	}
	code = append(code, more...)
	vl, more, err := p.optionalUse(s.ValidLength)
	if err != nil {
		return nil, err
	}
	code = append(code, more...)
	axis := int64(-1)
	if s.Axis != nil {
		axis = *s.Axis
	}
	call := genrtCall("Emit", jen.Lit(s.Output.Name), jen.Id("resp").Dot(field), p.ref(s.Value.Name), jen.Lit(s.Mode), jen.Lit(axis), when, vl)
	return append(code, jen.If(jen.List(target.Clone(), jen.Err()).Op("=").Add(call), jen.Err().Op("!=").Nil()).Block(retErr())), nil
}

// optionalUse is the local of an optional use, checked, or nil.
func (p *pass) optionalUse(u *ir.Use) (jen.Code, []jen.Code, error) {
	if u == nil {
		return jen.Nil(), nil, nil
	}
	code, err := p.check(*u)
	if err != nil {
		return nil, nil, err
	}
	return p.ref(u.Name), code, nil
}
