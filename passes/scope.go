package passes

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/genaic/genaic/ir"
)

// Target is what a name in a contract (a level companion, a valid_lengths)
// refers to: a declared contract site, or a value a step defines.
type Target struct {
	Name     string
	Site     *ir.Site  // a declared port, input, output, cell or program output
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
	Sites []*ir.Site
	// Workflow-level names, in resolution order.
	inputs, cells, outputs map[string]*ir.Site
	stepValues             map[string]*ir.Value
	programs               map[*ir.Program]map[string]*ir.Site
}

// Lookup resolves a name written in the contract of site. A component
// port's names resolve among its component's ports first (input ports first
// for an input port, output ports first for an output port); a program
// output's names among its program's outputs first; then, for every site,
// among workflow inputs, state cells, values any step defines, and workflow
// outputs.
func (sc *Scopes) Lookup(site *ir.Site, name string) (Target, bool) {
	switch site.Kind {
	case ir.SitePortIn, ir.SitePortOut:
		first, second := site.Component.Inputs, site.Component.Outputs
		fk, sk := ir.SitePortIn, ir.SitePortOut
		if site.Kind == ir.SitePortOut {
			first, second, fk, sk = second, first, sk, fk
		}
		if t, ok := portTarget(site.Component, first, fk, name); ok {
			return t, true
		}
		if t, ok := portTarget(site.Component, second, sk, name); ok {
			return t, true
		}
	case ir.SiteProgram:
		if s, ok := sc.programs[site.Program][name]; ok {
			return siteTarget(s), true
		}
	}
	return sc.LookupWorkflow(name)
}

// Names lists the names a contract of site may name, in the order Lookup
// tries them, for a "did you mean" of one that resolves to nothing.
func (sc *Scopes) Names(site *ir.Site) []string {
	var out []string
	switch site.Kind {
	case ir.SitePortIn, ir.SitePortOut:
		out = append(portList(site.Component.Inputs), portList(site.Component.Outputs)...)
	case ir.SiteProgram:
		for n := range sc.programs[site.Program] {
			out = append(out, n)
		}
		slices.Sort(out)
	}
	for _, s := range sc.Sites {
		if s.Kind == ir.SiteInput || s.Kind == ir.SiteCell || s.Kind == ir.SiteOutput {
			out = append(out, s.Name)
		}
	}
	return append(out, slices.Sorted(maps.Keys(sc.stepValues))...)
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

func portTarget(c *ir.Component, ports []*ir.Port, kind ir.SiteKind, name string) (Target, bool) {
	for _, p := range ports {
		if p.Name == name {
			return siteTarget(ir.PortSite(c, p, kind == ir.SitePortIn)), true
		}
	}
	return Target{}, false
}

func siteTarget(s *ir.Site) Target {
	return Target{Name: s.Name, Site: s, Contract: s.Contract, Loc: s.Loc}
}

// names is the name table a site's name is looked up in, or nil for a
// port, which resolves through its component.
func (sc *Scopes) names(s *ir.Site) map[string]*ir.Site {
	switch s.Kind {
	case ir.SiteInput:
		return sc.inputs
	case ir.SiteOutput:
		return sc.outputs
	case ir.SiteCell:
		return sc.cells
	case ir.SiteProgram:
		if sc.programs[s.Program] == nil {
			sc.programs[s.Program] = map[string]*ir.Site{}
		}
		return sc.programs[s.Program]
	}
	return nil
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
	sc := &Scopes{Sites: m.Sites(),
		inputs: map[string]*ir.Site{}, cells: map[string]*ir.Site{}, outputs: map[string]*ir.Site{},
		stepValues: map[string]*ir.Value{}, programs: map[*ir.Program]map[string]*ir.Site{},
	}
	for _, s := range sc.Sites {
		if into := sc.names(s); into != nil {
			if _, dup := into[s.Name]; !dup {
				into[s.Name] = s
			}
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
