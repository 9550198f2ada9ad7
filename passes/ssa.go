package passes

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
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
		for _, cell := range c.Module.Cells {
			ssaUse(c, &cell.Initializer, fmt.Sprintf("the initializer of state cell `%s`", cell.Name))
		}
		c.Module.Body.Walk(func(s *ir.Step) bool {
			ssaStep(c, s)
			return true
		})
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

func ssaUse(c *Context, u *ir.Use, where string) {
	if u.ID != ir.NoValue || u.Name == "" {
		return
	}
	msg := fmt.Sprintf("%s reads `%s`, which is not visible here", where, u.Name)
	fix := "define it as a workflow input, a state cell or an invoke output before this step"
	if _, ok := c.Result(ScopesPass).(*Scopes).LookupWorkflow(u.Name); ok {
		msg += ": it is defined later, or inside a branch or loop that does not export it"
		fix = "declare it as a branch output or a carried cell"
	}
	c.ReportName(diag.SSAUndefined, u.Loc, u.Name, diag.JoinHelp(diag.DidYouMean(u.Name, valueNames(c.Module)), fix), "%s", msg)
}

func ssaStep(c *Context, s *ir.Step) {
	where := "this " + s.Op.String() + " step"
	for _, u := range s.Uses() {
		ssaUse(c, u, where)
	}
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
		if comp.Output(r.Port) == nil {
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
