package passes

import (
	"fmt"
	"reflect"

	"github.com/genaic/genaic/ir"
)

// SiteKind says what declares a contract.
type SiteKind uint8

// Contract sites.
const (
	SiteInput   SiteKind = iota // a workflow input
	SiteOutput                  // a workflow output
	SiteCell                    // a workflow state cell
	SitePortIn                  // a component input port
	SitePortOut                 // a component output port
	SiteProgram                 // a preprocessing program output
)

// Site is one declared contract and who declares it.
type Site struct {
	Kind      SiteKind
	Component *ir.Component // ports
	Program   *ir.Program   // program outputs
	Name      string
	Contract  *ir.Contract
	Loc       ir.Loc
}

// IsPort reports whether the site is a component port.
func (s *Site) IsPort() bool { return s.Kind == SitePortIn || s.Kind == SitePortOut }

// String names the site the way a message should.
func (s *Site) String() string {
	switch s.Kind {
	case SiteInput:
		return fmt.Sprintf("workflow input `%s`", s.Name)
	case SiteOutput:
		return fmt.Sprintf("workflow output `%s`", s.Name)
	case SiteCell:
		return fmt.Sprintf("state cell `%s`", s.Name)
	case SitePortIn:
		return fmt.Sprintf("input port `%s` of component `%s`", s.Name, s.Component.Name)
	case SitePortOut:
		return fmt.Sprintf("output port `%s` of component `%s`", s.Name, s.Component.Name)
	default:
		return fmt.Sprintf("preprocessing.%s output `%s`", s.Program.Modality, s.Name)
	}
}

// Target is what a name in a contract (a level companion, a valid_lengths)
// refers to: a declared contract site, or a value a step defines.
type Target struct {
	Name     string
	Site     *Site     // a declared port, input, output, cell or program output
	Value    *ir.Value // a value defined by a step (Site is nil then)
	Contract *ir.Contract
	Loc      ir.Loc
}

// String names the target for messages.
func (t Target) String() string {
	if t.Site != nil {
		return t.Site.String()
	}
	return fmt.Sprintf("value `%s`", t.Name)
}

// Scopes is the result of the scopes pass: every contract site, and name
// resolution with the reference-scope rules of DESIGN §2.1.
type Scopes struct {
	Sites []*Site
	// Workflow-level names, in resolution order.
	inputs, cells, outputs map[string]*Site
	stepValues             map[string]*ir.Value
	programs               map[*ir.Program]map[string]*Site
}

// Lookup resolves a name written in the contract of site. A component
// port's names resolve among its component's ports first (input ports first
// for an input port, output ports first for an output port); a program
// output's names among its program's outputs first; then, for every site,
// among workflow inputs, state cells, values any step defines, and workflow
// outputs.
func (sc *Scopes) Lookup(site *Site, name string) (Target, bool) {
	switch site.Kind {
	case SitePortIn, SitePortOut:
		first, second := site.Component.Inputs, site.Component.Outputs
		fk, sk := SitePortIn, SitePortOut
		if site.Kind == SitePortOut {
			first, second, fk, sk = second, first, sk, fk
		}
		if t, ok := portTarget(site.Component, first, fk, name); ok {
			return t, true
		}
		if t, ok := portTarget(site.Component, second, sk, name); ok {
			return t, true
		}
	case SiteProgram:
		if s, ok := sc.programs[site.Program][name]; ok {
			return siteTarget(s), true
		}
	}
	return sc.LookupWorkflow(name)
}

// LookupWorkflow resolves a workflow-level name.
func (sc *Scopes) LookupWorkflow(name string) (Target, bool) {
	if s, ok := sc.inputs[name]; ok {
		return siteTarget(s), true
	}
	if s, ok := sc.cells[name]; ok {
		return siteTarget(s), true
	}
	if v, ok := sc.stepValues[name]; ok {
		return Target{Name: name, Value: v, Contract: v.Contract, Loc: v.Loc}, true
	}
	if s, ok := sc.outputs[name]; ok {
		return siteTarget(s), true
	}
	return Target{}, false
}

func portTarget(c *ir.Component, ports []*ir.Port, kind SiteKind, name string) (Target, bool) {
	for _, p := range ports {
		if p.Name == name {
			return siteTarget(&Site{Kind: kind, Component: c, Name: p.Name, Contract: p.Contract, Loc: p.Loc}), true
		}
	}
	return Target{}, false
}

func siteTarget(s *Site) Target {
	return Target{Name: s.Name, Site: s, Contract: s.Contract, Loc: s.Loc}
}

// ScopesPass lists the contract sites and builds name resolution.
var ScopesPass = &Pass{
	Name:       "scopes",
	Doc:        "list every contract site and resolve names with the reference-scope rules",
	Kind:       Check,
	ResultType: reflect.TypeFor[*Scopes](),
	Run:        func(c *Context) (any, error) { return buildScopes(c.Module), nil },
}

func buildScopes(m *ir.Module) *Scopes {
	sc := &Scopes{
		inputs: map[string]*Site{}, cells: map[string]*Site{}, outputs: map[string]*Site{},
		stepValues: map[string]*ir.Value{}, programs: map[*ir.Program]map[string]*Site{},
	}
	add := func(s *Site, into map[string]*Site) {
		if s.Contract == nil {
			return
		}
		sc.Sites = append(sc.Sites, s)
		if _, dup := into[s.Name]; !dup && into != nil {
			into[s.Name] = s
		}
	}
	for _, in := range m.Inputs {
		add(&Site{Kind: SiteInput, Name: in.Name, Contract: in.Contract, Loc: in.Loc}, sc.inputs)
	}
	for _, o := range m.Outputs {
		add(&Site{Kind: SiteOutput, Name: o.Name, Contract: o.Contract, Loc: o.Loc}, sc.outputs)
	}
	for _, c := range m.Cells {
		add(&Site{Kind: SiteCell, Name: c.Name, Contract: c.Contract, Loc: c.Loc}, sc.cells)
	}
	for _, c := range m.Components {
		for _, p := range c.Inputs {
			add(&Site{Kind: SitePortIn, Component: c, Name: p.Name, Contract: p.Contract, Loc: p.Loc}, nil)
		}
		for _, p := range c.Outputs {
			add(&Site{Kind: SitePortOut, Component: c, Name: p.Name, Contract: p.Contract, Loc: p.Loc}, nil)
		}
	}
	for _, p := range m.Programs {
		own := map[string]*Site{}
		sc.programs[p] = own
		for _, o := range p.Outputs {
			add(&Site{Kind: SiteProgram, Program: p, Name: o.Name, Contract: o.Contract, Loc: o.Loc}, own)
		}
	}
	for _, v := range m.Values {
		if v.Def == ir.DefInvoke || v.Def == ir.DefPhi || v.Def == ir.DefIteration {
			if _, dup := sc.stepValues[v.Name]; !dup {
				sc.stepValues[v.Name] = v
			}
		}
	}
	return sc
}

// ProgramOutput returns the program output declaration behind a site, or
// nil.
func ProgramOutput(s *Site) *ir.ProgramOutput {
	if s == nil || s.Kind != SiteProgram {
		return nil
	}
	for i := range s.Program.Outputs {
		if s.Program.Outputs[i].Name == s.Name {
			return &s.Program.Outputs[i]
		}
	}
	return nil
}
