package passes

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/plan"
)

// GroupPlans is the result of the plan pass: one GroupPlan per component,
// in document order.
type GroupPlans []*plan.GroupPlan

// Get returns the plan of component name, or nil.
func (gs GroupPlans) Get(name string) *plan.GroupPlan {
	for _, g := range gs {
		if g.Component == name {
			return g
		}
	}
	return nil
}

// PlanPass decides, for every component, how a group is assembled and split
// (DESIGN §5). It runs only on a module every check accepted, so it may
// trust that names resolve and contracts are coherent.
var PlanPass = &Pass{
	Name:       "plan",
	Doc:        "decide each component's group plan: input roles, output splits, the compatibility key and budget footprints",
	Kind:       Plan,
	Requires:   []*Pass{ScopesPass, SymbolsPass, BindingsPass, ModelsPass, PreprocessPass},
	ResultType: reflect.TypeFor[GroupPlans](),
	Run: func(c *Context) (any, error) {
		sc, bind := c.Result(ScopesPass).(*Scopes), c.Result(BindingsPass).(*Bindings)
		syms, graphs := c.Result(SymbolsPass).(Symbols), c.Result(ModelsPass).(*ModelGraphs)
		keys := c.Result(PreprocessPass).(AdapterKeys)
		var out GroupPlans
		for _, comp := range c.Module.Components {
			gp := planComponent(sc, bind, syms[comp], comp)
			graphFixes(gp, graphs.Graph(comp.Name))
			if gp.Grouped {
				gp.KeyedBy = keys[comp.Name]
			}
			out = append(out, gp)
		}
		return out, nil
	},
}

// graphFixes adds to a grouped plan's reasons what the component's graph
// fixes and the runtime acts on when it loads the graph, so that a plan
// (and `genaic inspect`) says it: a request axis fixed at one request's
// rows (the models pass refused any other extent) lets no group form, and
// a padded axis it fixes is padded to that extent in every group, a
// request alone included. A plan compiled without the model says nothing
// of it; the runtime reads the graph all the same.
func graphFixes(gp *plan.GroupPlan, g *onnx.Graph) {
	if g == nil || !gp.Grouped {
		return
	}
	for i := range gp.Inputs {
		in := &gp.Inputs[i]
		v := g.Input(in.Name)
		if v == nil {
			continue
		}
		if n, ok := v.Fixed(in.Axis); ok && (in.Role == plan.RoleRows || in.Role == plan.RoleExpanded) {
			gp.Why = fmt.Sprintf("batch_capacity is declared, but the graph fixes axis %d of input `%s`, where a group stacks its requests' rows, at %d: one request per invocation (%s)", in.Axis, in.Name, n, plan.OpenAxis(in.Axis, n))
		}
		for _, pd := range in.Padded {
			if n, ok := v.Fixed(pd.Axis); ok {
				in.Why += fmt.Sprintf("; the graph fixes padded axis %d (`%s`) at %d: every group, and a request alone, is padded to %d", pd.Axis, pd.Dimension, n, n)
			}
		}
	}
}

// planner holds what one component's plan is derived from.
type planner struct {
	sc     *Scopes
	comp   *ir.Component
	serves map[string]*plan.Serves // input or output port → what it serves
	// bind says which port a value an invoke of the component binds stands
	// for: a contract naming that value names the port.
	bind *Bindings
	syms *ComponentSymbols // the level unit counts
}

func planComponent(sc *Scopes, bind *Bindings, syms *ComponentSymbols, comp *ir.Component) *plan.GroupPlan {
	p := &planner{sc: sc, comp: comp, serves: map[string]*plan.Serves{}, bind: bind, syms: syms}
	g := &plan.GroupPlan{Component: comp.Name, Grouped: comp.Capacity != nil}
	if g.Grouped {
		g.Why = "batch_capacity is declared: items from many requests may share one invocation (see docs/authoring.md#batch_capacity)"
	} else {
		g.Why = "no batch_capacity: one request row per invocation, never grouped (see docs/authoring.md#batch_capacity)"
	}
	p.markCompanions(comp.Inputs, ir.SitePortIn)
	p.markCompanions(comp.Outputs, ir.SitePortOut)
	for _, port := range comp.Inputs {
		g.Inputs = append(g.Inputs, p.input(port))
	}
	for _, port := range comp.Outputs {
		g.Outputs = append(g.Outputs, p.output(port, g))
	}
	if comp.Capacity != nil {
		g.Uniform = p.uniform(g)
		g.SharedEqual = p.sharedEqual(g)
		for _, b := range comp.Capacity.Budgets {
			g.Budgets = append(g.Budgets, p.budget(b, g))
		}
	}
	return g
}

func (p *planner) site(port *ir.Port, kind ir.SiteKind) *ir.Site {
	return ir.PortSite(p.comp, port, kind == ir.SitePortIn)
}

// ref resolves a companion name written on a port: a port of the same
// component (its own side first), or a workflow-level value.
func (p *planner) ref(port *ir.Port, kind ir.SiteKind, name string) plan.Ref {
	if t, ok := p.sc.Lookup(p.site(port, kind), name); ok && t.Site != nil && t.Site.IsPort() && t.Site.Component == p.comp {
		return plan.Ref{Port: t.Site.Name}
	}
	if bp := p.bind.PortOf(p.comp.Name, kind, name); bp != "" {
		return plan.Ref{Port: bp}
	}
	return plan.Ref{Value: name}
}

// markCompanions records which ports of one side serve another port's
// ownership levels or padding.
func (p *planner) markCompanions(ports []*ir.Port, kind ir.SiteKind) {
	for _, port := range ports {
		c := port.Contract
		if c == nil {
			continue
		}
		for i, l := range c.Layout.Levels {
			p.serve(port, kind, l.Offsets.Name, &plan.Serves{Port: port.Name, Role: "offsets", Level: i})
			p.serve(port, kind, l.Owner.Name, &plan.Serves{Port: port.Name, Role: "owner", Level: i})
		}
		for _, pad := range c.Padding {
			p.serve(port, kind, pad.Lengths.Name, &plan.Serves{Port: port.Name, Role: "lengths", Dimension: pad.Dim.Name})
		}
	}
}

func (p *planner) serve(port *ir.Port, kind ir.SiteKind, name string, s *plan.Serves) {
	target := ""
	if t, ok := p.sc.Lookup(p.site(port, kind), name); ok && t.Site != nil && t.Site.IsPort() && t.Site.Component == p.comp {
		if t.Site.Kind != kind {
			return // a companion on the other side: a preserved level's input pair
		}
		target = t.Site.Name
	} else if target = p.bind.PortOf(p.comp.Name, kind, name); target == "" {
		return // a workflow-level value the component is not given
	}
	if key := sideKey(kind, target); p.serves[key] == nil {
		p.serves[key] = s
	}
}

func sideKey(kind ir.SiteKind, port string) string { return fmt.Sprintf("%d/%s", kind, port) }

func (p *planner) input(port *ir.Port) (out plan.Port) {
	out = plan.Port{Name: port.Name}
	c := port.Contract
	if s := p.serves[sideKey(ir.SitePortIn, port.Name)]; s != nil {
		out.Role, out.Serves = plan.RoleCompanion, s
		section := "token_packed"
		if s.Role == "lengths" {
			section = "padding"
		}
		out.Why = fmt.Sprintf("serves the %s of `%s`: recomputed for the group, never gathered (see docs/authoring.md#%s)", servesWhat(s), s.Port, section)
		return out
	}
	if c == nil {
		out.Role, out.Why = plan.RoleBroadcast, "declares no contract: passed as it is"
		return out
	}
	p.layout(&out, port, ir.SitePortIn)
	defer p.soloWhy(&out)
	switch c.Layout.Kind {
	case ir.Shared:
		out.Role, out.Why = plan.RoleBroadcast, "shared: passed once; co-batched items must bring equal values (see docs/authoring.md#shared)"
	case ir.RequestAligned:
		out.Role, out.Why = plan.RoleRows, fmt.Sprintf("request_aligned on axis %d: each request's rows are stacked (see docs/authoring.md#request_aligned)", c.Layout.Axis)
	case ir.RequestExpanded:
		out.Role = plan.RoleExpanded
		out.Why = fmt.Sprintf("request_expanded on axis %d: %d contiguous rows per request are stacked (see docs/authoring.md#request_expanded)", c.Layout.Axis, c.Layout.Factor)
	case ir.TokenPacked:
		out.Role = plan.RolePacked
		out.Why = fmt.Sprintf("token_packed on axis 0 with %d ownership level(s): items are concatenated and companions recomputed (see docs/authoring.md#token_packed)", len(c.Layout.Levels))
	}
	return out
}

// soloWhy rewords a decision for a component that never groups: its
// invocations carry one request, so nothing is stacked or shared.
func (p *planner) soloWhy(out *plan.Port) {
	if p.comp.Capacity == nil {
		out.Why = fmt.Sprintf("%s; no batch_capacity, so every invocation carries exactly one request's value", layoutWord(p.comp, out.Name))
	}
}

func layoutWord(c *ir.Component, port string) string {
	pt := c.Input(port)
	if pt == nil {
		pt = c.Output(port)
	}
	if pt == nil || pt.Contract == nil {
		return "no contract"
	}
	return pt.Contract.Layout.Kind.String()
}

func servesWhat(s *plan.Serves) string {
	if s.Role == "lengths" {
		return fmt.Sprintf("valid_lengths of dimension `%s`", s.Dimension)
	}
	return fmt.Sprintf("level %d %s", s.Level, s.Role)
}

// delivered says how a request receives its rows of an output whose
// request axis is axis: a view of the group's output on axis 0 (view says
// so), a copy on an inner axis, where the axes before it interleave the
// requests' rows.
func delivered(axis int64, view string) string {
	if axis == 0 {
		return view
	}
	return "copied out of the group output (on an inner axis the requests' rows interleave)"
}

// layout fills what every port plan states of its layout: axis, factor,
// levels and padded dimensions.
func (p *planner) layout(out *plan.Port, port *ir.Port, kind ir.SiteKind) {
	c := port.Contract
	out.Axis, out.Factor = int(c.Layout.Axis), c.Layout.Factor
	for i, l := range c.Layout.Levels {
		lv := plan.Level{Index: i, Offsets: p.ref(port, kind, l.Offsets.Name), Owner: p.ref(port, kind, l.Owner.Name),
			Units: p.units(port, i), Extent: l.Extent.String()}
		out.Levels = append(out.Levels, lv)
	}
	for _, pad := range c.Padding {
		out.Padded = append(out.Padded, plan.Pad{Dimension: pad.Dim.Name, Axis: c.Axis(pad.Dim.Name), Lengths: p.ref(port, kind, pad.Lengths.Name)})
	}
}

// units is the symbol that counts a level's units: the packed symbol for
// level 0 (none when the packed axis is a literal), the extent of the
// level's owner map above it.
func (p *planner) units(port *ir.Port, i int) string {
	if i == 0 {
		return port.Contract.PackedSym()
	}
	return p.syms.OwnerExtent(port, i)
}

func (p *planner) output(port *ir.Port, g *plan.GroupPlan) (out plan.Port) {
	out = plan.Port{Name: port.Name}
	c := port.Contract
	if s := p.serves[sideKey(ir.SitePortOut, port.Name)]; s != nil {
		out.Serves = s
		switch s.Role {
		case "owner":
			out.Split, out.Why = plan.SplitInternal, fmt.Sprintf("the level %d owner map of `%s` holds group positions: never delivered; a consumer derives it from rebased offsets (see docs/authoring.md#what-each-request-gets-back)", s.Level, s.Port)
		case "offsets":
			out.Split, out.Delivery = plan.SplitCompanion, "rebased"
			out.Why = fmt.Sprintf("the level %d offsets of `%s`: each request receives its own span rebased to start at 0 (see docs/authoring.md#what-each-request-gets-back)", s.Level, s.Port)
		default:
			out.Split, out.Delivery = plan.SplitCompanion, "sliced"
			out.Why = fmt.Sprintf("the valid_lengths of `%s` on `%s`: each request receives the lengths of its own items (see docs/authoring.md#what-each-request-gets-back)", s.Port, s.Dimension)
		}
		return out
	}
	if c == nil {
		out.Split, out.Why = plan.SplitBroadcast, "declares no contract: delivered as it is"
		return out
	}
	p.layout(&out, port, ir.SitePortOut)
	defer p.soloWhy(&out)
	switch c.Layout.Kind {
	case ir.Shared:
		out.Split, out.Why = plan.SplitBroadcast, "shared: every request of the group receives the same value"
	case ir.RequestAligned:
		out.Split, out.Why = plan.SplitRows, fmt.Sprintf("request_aligned on axis %d: each request's rows, %s", c.Layout.Axis, delivered(c.Layout.Axis, "as a view of the group output"))
	case ir.RequestExpanded:
		out.Split, out.Why = plan.SplitExpanded, fmt.Sprintf("request_expanded on axis %d: each request's %d rows, %s", c.Layout.Axis, c.Layout.Factor, delivered(c.Layout.Axis, "as a view"))
	case ir.TokenPacked:
		out.Split = plan.SplitPacked
		out.Why = "token_packed: each request's span of the packed axis, as a view, split level by level (see docs/authoring.md#what-each-request-gets-back)"
		for i := range out.Levels {
			p.levelSource(&out.Levels[i], g)
		}
	}
	return out
}

// levelSource finds, for a preserved output level, the input level carrying
// the same offsets/owner pair.
func (p *planner) levelSource(l *plan.Level, g *plan.GroupPlan) {
	if l.Extent != ir.ExtentPreserved.String() {
		return
	}
	for _, in := range g.Inputs {
		for _, il := range in.Levels {
			if il.Offsets.Name() == l.Offsets.Name() && il.Owner.Name() == l.Owner.Name() {
				l.From = &plan.LevelOf{Port: in.Name, Level: il.Index}
				return
			}
		}
	}
}

// payload lists the input ports that carry items (not companions).
func payload(g *plan.GroupPlan) []plan.Port {
	var out []plan.Port
	for _, in := range g.Inputs {
		if in.Role != plan.RoleCompanion {
			out = append(out, in)
		}
	}
	return out
}

func (p *planner) uniform(g *plan.GroupPlan) []plan.Uniform {
	var out []plan.Uniform
	for _, u := range p.comp.Capacity.Uniform {
		if port, axis, ok := p.symbolOn(g, u.Name); ok {
			out = append(out, plan.Uniform{Symbol: u.Name, Port: port, Axis: axis})
		}
	}
	return out
}

// symbolOn finds the first payload input port whose shape has sym.
func (p *planner) symbolOn(g *plan.GroupPlan, sym string) (string, int, bool) {
	for _, in := range payload(g) {
		if port := p.comp.Input(in.Name); port != nil && port.Contract != nil {
			if axis := port.Contract.Axis(sym); axis >= 0 {
				return in.Name, axis, true
			}
		}
	}
	return "", 0, false
}

func (p *planner) sharedEqual(g *plan.GroupPlan) []string {
	var out []string
	for _, in := range g.Inputs {
		if in.Role == plan.RoleBroadcast {
			out = append(out, in.Name)
		}
	}
	return out
}

// budget writes a budget path as terms measured on a candidate group.
func (p *planner) budget(b ir.Budget, g *plan.GroupPlan) plan.Budget {
	out := plan.Budget{MaxTotal: b.MaxTotal, MinItem: 1}
	for _, r := range b.Path {
		out.Dimensions = append(out.Dimensions, r.Name)
		t := p.term(r.Name, g)
		out.Terms = append(out.Terms, t)
		if t.Kind == plan.TermRows && t.Factor > 1 {
			out.MinItem *= t.Factor
		}
	}
	return out
}

// term classifies one budget symbol (§3.5), preferring the counts the
// scheduler chooses, then per-item extents.
func (p *planner) term(sym string, g *plan.GroupPlan) plan.Term {
	ins := payload(g)
	for _, in := range ins {
		for _, l := range in.Levels {
			if l.Units != sym {
				continue
			}
			if l.Index == 0 {
				return plan.Term{Symbol: sym, Kind: plan.TermPacked, Port: in.Name}
			}
			return plan.Term{Symbol: sym, Kind: plan.TermUnits, Port: in.Name, Level: l.Index}
		}
	}
	for _, in := range ins {
		port := p.comp.Input(in.Name)
		if (in.Role == plan.RoleRows || in.Role == plan.RoleExpanded) && port.Contract.Axis(sym) == in.Axis {
			return plan.Term{Symbol: sym, Kind: plan.TermRows, Port: in.Name, Axis: in.Axis, Factor: max(in.Factor, 1)}
		}
	}
	for _, in := range ins {
		for _, pad := range in.Padded {
			if pad.Dimension == sym {
				return plan.Term{Symbol: sym, Kind: plan.TermPadded, Port: in.Name, Axis: pad.Axis}
			}
		}
	}
	if port, axis, ok := p.symbolOn(g, sym); ok {
		return plan.Term{Symbol: sym, Kind: plan.TermPinned, Port: port, Axis: axis}
	}
	return p.outputTerm(sym, g)
}

// outputTerm classifies a symbol found only on an output port: its request
// axis counts the group's rows.
func (p *planner) outputTerm(sym string, g *plan.GroupPlan) plan.Term {
	for _, o := range g.Outputs {
		port := p.comp.Output(o.Name)
		if port == nil || port.Contract == nil {
			continue
		}
		if (o.Split == plan.SplitRows || o.Split == plan.SplitExpanded) && port.Contract.Axis(sym) == o.Axis {
			return plan.Term{Symbol: sym, Kind: plan.TermRows, Port: o.Name, Axis: o.Axis, Factor: max(o.Factor, 1)}
		}
		if i := slices.IndexFunc(o.Levels, func(l plan.Level) bool { return l.Units == sym && l.From != nil }); i >= 0 {
			from := o.Levels[i].From
			kind := plan.TermUnits
			if from.Level == 0 {
				kind = plan.TermPacked
			}
			return plan.Term{Symbol: sym, Kind: kind, Port: from.Port, Level: from.Level}
		}
	}
	return plan.Term{Symbol: sym, Kind: plan.TermPinned}
}
