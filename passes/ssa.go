package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
)

// SSAPass checks workflow structure: every name read is visible, every name
// is defined once, and invokes and emits name declared components, ports and
// outputs.
var SSAPass = &Pass{
	Name:     "ssa",
	Doc:      "check workflow structure: every name read is visible, defined once, and names a declared component, port or output",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Rules: []diag.Rule{
		diag.SSAUndefined, diag.SSARedefined, diag.SSAUnknownComponent, diag.SSAUnknownPort,
		diag.SSAUnboundPort, diag.SSAUnknownOutput,
	},
	Run: func(c *Context) (any, error) {
		ssaRedefined(c)
		var unseen undefinedReads
		for _, cell := range c.Module.Cells {
			unseen.add(&cell.Initializer, fmt.Sprintf("the initializer of state cell `%s`", cell.Name))
		}
		c.Module.Body.Walk(func(s *ir.Step) bool {
			for _, u := range s.Uses() {
				unseen.add(u, "this "+s.Op.String()+" step")
			}
			ssaStep(c, s)
			return true
		})
		unseen.report(c)
		return nil, nil
	},
}

// ssaRedefined reports every definition of a name after its first.
func ssaRedefined(c *Context) {
	first := map[string]*ir.Value{}
	for _, v := range c.Module.Values {
		f, dup := first[v.Name]
		if !dup {
			first[v.Name] = v
			continue
		}
		c.ReportRelated(diag.SSARedefined, v.Loc, []Related{{f.Loc, fmt.Sprintf("`%s` is first defined here", v.Name)}},
			"the %s defines `%s`, which the %s already defines; every value name is defined once\nrename one of them",
			defWord(v.Def), v.Name, defWord(f.Def))
	}
}

func defWord(k ir.DefKind) string {
	switch k {
	case ir.DefInput:
		return "workflow input"
	case ir.DefCell:
		return "state cell"
	case ir.DefInvoke:
		return "invoke step"
	case ir.DefPhi:
		return "branch output"
	default:
		return "loop iteration"
	}
}

// undefinedReads are the reads of names that resolve to nothing, in
// document order, each with the words for the place that reads it.
type undefinedReads struct {
	uses  []*ir.Use
	where []string
}

func (r *undefinedReads) add(u *ir.Use, where string) {
	if u.ID == ir.NoValue && u.Name != "" {
		r.uses = append(r.uses, u)
		r.where = append(r.where, where)
	}
}

// report gives each undefined name one error, at its first read, with its
// other reads as notes: one missing declaration is one mistake. Its help
// depends on what the name is elsewhere: a workflow output only (an input
// left undeclared, since outputs are written, never read), a value defined
// out of this read's reach, or nothing at all.
func (r *undefinedReads) report(c *Context) {
	sc := c.Result(ScopesPass).(*Scopes)
	done := map[string]bool{}
	for i, u := range r.uses {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		var also []Related
		for _, v := range r.uses[i+1:] {
			if v.Name == u.Name {
				also = append(also, Related{v.Loc, fmt.Sprintf("`%s` is also read here", u.Name)})
			}
		}
		msg := fmt.Sprintf("%s reads `%s`, which is not visible here", r.where[i], u.Name)
		near := diag.DidYouMean(u.Name, valueNames(c.Module))
		fix := "declare it under `workflow.inputs`\nor define it as a state cell, or an invoke output before this step"
		_, isOutput := sc.outputs[u.Name]
		_, isStep := sc.stepValues[u.Name]
		switch {
		case isStep:
			msg += ": it is defined later, or inside a branch or loop that does not export it"
			fix = "declare it as a branch output or a carried cell"
		case isOutput:
			msg += ": it is a workflow output, which emits write and no step reads"
			near, fix = "", "declare it under `workflow.inputs`"
		}
		c.ReportRelated(diag.SSAUndefined, u.Loc, also, "%s", msg)
		d := &(*c.diags)[len(*c.diags)-1]
		d.Help = diag.JoinHelp(near, fix)
		d.Name = u.Name
	}
}

// readUndefined reports whether some step reads name where it resolves to
// nothing, which ssa/undefined reports.
func readUndefined(m *ir.Module, name string) bool {
	found := false
	m.Body.Walk(func(s *ir.Step) bool {
		for _, u := range s.Uses() {
			found = found || u.ID == ir.NoValue && u.Name == name
		}
		return !found
	})
	return found
}

func ssaStep(c *Context, s *ir.Step) {
	switch s.Op {
	case ir.OpInvoke:
		ssaInvoke(c, s)
	case ir.OpEmit:
		if s.Output.Name != "" && c.Module.Output(s.Output.Name) == nil {
			c.ReportName(diag.SSAUnknownOutput, s.Output.Loc, s.Output.Name, diag.DidYouMean(s.Output.Name, outputList(c.Module)), "this emit writes output `%s`, which the workflow does not declare (declared: %s)\ndeclare it under pipeline.workflow.outputs",
				s.Output.Name, outputNames(c.Module))
		}
	}
}

func ssaInvoke(c *Context, s *ir.Step) {
	comp := c.Module.Component(s.Component.Name)
	if comp == nil {
		if s.Component.Name != "" {
			c.ReportName(diag.SSAUnknownComponent, s.Component.Loc, s.Component.Name, diag.DidYouMean(s.Component.Name, componentList(c.Module)), "this invoke names component `%s`, which the workflow does not declare (declared: %s)",
				s.Component.Name, componentNames(c.Module))
		}
		return
	}
	bound := map[string]bool{}
	for _, a := range s.Args {
		bound[a.Port] = true
	}
	// A binding whose port name is a typo of an unbound port is one
	// mistake: it is reported once, as the unknown port, with the port it
	// likely meant, and that port is not also reported unbound.
	unbound := func(p *ir.Port) bool { return !bound[p.Name] && (p.Contract == nil || !p.Contract.Optional) }
	meant := map[string]bool{}
	for _, a := range s.Args {
		if comp.Input(a.Port) == nil && misdeclaredPort(c, comp, a.Port, true) {
			// The declared port the graph lacks is the binding's
			// misspelling: model/port reports it, not as unbound.
			g := graphOf(c, comp)
			for _, p := range comp.Inputs {
				if g.Input(p.Name) == nil {
					meant[p.Name] = true
				}
			}
			continue
		}
		if comp.Input(a.Port) == nil {
			near := diag.Nearest(a.Port, portList(comp.Inputs))
			if p := comp.Input(near); p != nil && unbound(p) {
				meant[near] = true
			}
			c.ReportHelp(diag.SSAUnknownPort, a.Loc, diag.DidYouMean(a.Port, portList(comp.Inputs)), "this invoke binds input port `%s`, which component `%s` does not declare (its input ports: %s)",
				a.Port, comp.Name, portNames(comp.Inputs))
		}
	}
	for _, r := range s.Results {
		if comp.Output(r.Port) == nil && !misdeclaredPort(c, comp, r.Port, false) {
			c.ReportHelp(diag.SSAUnknownPort, r.Loc, diag.DidYouMean(r.Port, portList(comp.Outputs)), "this invoke reads output port `%s`, which component `%s` does not declare (its output ports: %s)",
				r.Port, comp.Name, portNames(comp.Outputs))
		}
	}
	for _, p := range comp.Inputs {
		if unbound(p) && !meant[p.Name] {
			c.ReportRelated(diag.SSAUnboundPort, s.Component.Loc, []Related{{p.Loc, fmt.Sprintf("input port `%s` is declared here", p.Name)}},
				"this invoke of component `%s` leaves input port `%s` unbound\nbind it under `inputs`, or declare the port `optional: true`",
				comp.Name, p.Name)
		}
	}
}

// misdeclaredPort reports whether a binding of the undeclared port name
// is right and the component's declaration is the mistake: its graph has
// name on that side, and some declared port of that side is not in the
// graph, which model/port reports with the graph's name as its help.
// Reporting the binding as well would suggest the misspelt declaration.
func misdeclaredPort(c *Context, comp *ir.Component, name string, input bool) bool {
	g := graphOf(c, comp)
	if g == nil {
		return false
	}
	has, ports := g.Output, comp.Outputs
	if input {
		has, ports = g.Input, comp.Inputs
	}
	return has(name) != nil && slices.ContainsFunc(ports, func(p *ir.Port) bool { return has(p.Name) == nil })
}

// graphOf is the graph of an ONNX component when its model can be read,
// else nil (model/missing reports why).
func graphOf(c *Context, comp *ir.Component) *onnx.Graph {
	if c.opts.Models == nil || comp.Impl != ir.ImplONNX || comp.Artifact == "" {
		return nil
	}
	g, err := c.opts.Models.Graph(comp.Artifact)
	if err != nil {
		return nil
	}
	return g
}

func outputNames(m *ir.Module) string { return listOrNone(outputList(m)) }

func componentNames(m *ir.Module) string { return listOrNone(componentList(m)) }

func portNames(ps []*ir.Port) string { return listOrNone(portList(ps)) }

func outputList(m *ir.Module) []string {
	var ns []string
	for _, o := range m.Outputs {
		ns = append(ns, o.Name)
	}
	return ns
}

func componentList(m *ir.Module) []string {
	var ns []string
	for _, c := range m.Components {
		ns = append(ns, c.Name)
	}
	return ns
}

func portList(ps []*ir.Port) []string {
	var ns []string
	for _, p := range ps {
		ns = append(ns, p.Name)
	}
	return ns
}

// valueNames lists every value name the module defines.
func valueNames(m *ir.Module) []string {
	var ns []string
	for _, v := range m.Values {
		ns = append(ns, v.Name)
	}
	return ns
}

func listOrNone(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}
