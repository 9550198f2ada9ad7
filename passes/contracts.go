package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// ContractsPass checks contracts themselves (known dtypes, a rank that
// agrees with the shape) and every binding of a value to a port or an
// output (same dtype, rank and fixed extents).
var ContractsPass = &Pass{
	Name:     "contracts",
	Doc:      "check contracts: known dtypes, rank agreeing with shape, and values bound to ports and outputs whose dtype, rank and fixed extents agree",
	Kind:     Check,
	Requires: []*Pass{ScopesPass, BindingsPass},
	Rules: []diag.Rule{
		diag.ContractDType, diag.ContractShape, diag.ContractIncompatible,
	},
	Run: func(c *Context) (any, error) {
		for _, s := range c.Result(ScopesPass).(*Scopes).Sites {
			contractOwn(c, s.String(), s.Contract)
		}
		contractBindings(c, c.Result(BindingsPass).(*Bindings))
		return nil, nil
	},
}

// contractOwn checks one contract on its own.
func contractOwn(c *Context, site string, k *ir.Contract) {
	if _, ok := ir.LookupDType(k.DType); !ok && k.DType != "" {
		c.ReportName(diag.ContractDType, k.DTypeLoc, k.DType, diag.DidYouMean(k.DType, ir.DTypeSpellings()), "%s declares dtype `%s`, which genaic does not know\nuse one of %s",
			site, k.DType, strings.Join(ir.DTypeNames(), ", "))
	}
	if k.HasShape && k.RankLoc != 0 && k.Rank != len(k.Shape) {
		c.Report(diag.ContractShape, k.RankLoc, "%s declares rank %d but its shape %s has %d dimensions\ndrop `rank` or make it %d",
			site, k.Rank, shapeText(k.Shape), len(k.Shape), len(k.Shape))
	}
	// A request layout's axis must be one of the contract's (a packed
	// one's is packed/axis).
	if l := k.Layout; l.Kind == ir.RequestAligned || l.Kind == ir.RequestExpanded {
		rank := k.Rank
		if k.HasShape {
			rank = len(k.Shape)
		}
		switch {
		case rank == 0:
			c.Report(diag.ContractShape, packedLoc(l.AxisLoc, l.Loc, k.Loc), "%s puts the requests' rows on axis %d (%s), but it is a scalar, which has none\ngive it the rows' axis in its shape, or make it shared",
				site, l.Axis, l.Kind)
		case rank > 0 && l.Axis >= int64(rank):
			c.Report(diag.ContractShape, packedLoc(l.AxisLoc, l.Loc, k.Loc), "%s puts the requests' rows on axis %d (%s), but it has rank %d\nname one of its axes, 0 to %d",
				site, l.Axis, l.Kind, rank, rank-1)
		}
	}
}

// contractBindings checks every value an invoke binds to an input port
// and every value an emit writes into an output.
func contractBindings(c *Context, b *Bindings) {
	for _, x := range b.Invokes {
		comp := c.Module.Component(x.Component)
		if x.Side != ir.SitePortIn || comp == nil {
			continue
		}
		if p := comp.Input(x.Port); p != nil {
			contractBind(c, x.ID, p.Contract, fmt.Sprintf("input port `%s` of component `%s`", p.Name, comp.Name), x.Loc)
			if comp.Capacity != nil {
				contractRowsBind(c, x.ID, p, comp, x.Loc)
			}
		}
	}
	for _, s := range b.Emits {
		if o := c.Module.Output(s.Output.Name); o != nil {
			contractBind(c, s.Value.ID, o.Contract, fmt.Sprintf("workflow output `%s`", o.Name), s.Value.Loc)
			contractEmitPadding(c, b, s, o)
			contractEmitRows(c, s, o)
		}
	}
}

// contractEmitRows reports a packed value (any number of items a request)
// emitted into a workflow output that promises one row a request there
// (request_aligned), or factor rows: each response would hold another
// count than the output's contract, and the model metadata a server
// publishes from it, says.
func contractEmitRows(c *Context, s *ir.Step, o *ir.Output) {
	v := c.Module.Value(s.Value.ID)
	if v == nil || v.Contract == nil || o.Contract == nil || !v.Contract.Packed() || o.Contract.RequestAxis() != 0 {
		return
	}
	c.ReportRelated(diag.ContractIncompatible, s.Value.Loc, []Related{{v.Loc, fmt.Sprintf("`%s` is defined here", v.Name)}},
		"`%s` packs any number of items a request on axis 0 (token_packed), but workflow output `%s` promises %s a request there (%s): each response would hold another count than its contract says\ndeclare on workflow output `%s` the value's layout: batch_layout: { kind: token_packed, axis: 0, levels: [%s] }, and emit those companions as workflow outputs too",
		v.Name, o.Name, rowsWord(rowsPerRequest(o.Contract.Layout)), o.Contract.Layout.Kind, o.Name, levelsText(v.Contract.Layout.Levels, true))
}

// levelsText spells ownership levels as a document writes them, each
// extent: preserved where preserved (an output's).
func levelsText(levels []ir.Level, preserved bool) string {
	var lv []string
	for _, l := range levels {
		ext := ""
		if preserved {
			ext = ", extent: preserved"
		}
		lv = append(lv, fmt.Sprintf("{ offsets: %s, owner: %s%s }", l.Offsets.Name, l.Owner.Name, ext))
	}
	return strings.Join(lv, ", ")
}

// contractEmitPadding reports an emit of a grouped component's padded
// output into a workflow output that does not declare that axis padded:
// the group allocates it at its longest item, so each request would
// receive its rows at the group's extent, not its own, with no lengths to
// say where its own end (grouped would differ from solo).
func contractEmitPadding(c *Context, b *Bindings, s *ir.Step, o *ir.Output) {
	v := c.Module.Value(s.Value.ID)
	if v == nil || v.Contract == nil || o.Contract == nil {
		return
	}
	var comp *ir.Component
	for _, x := range b.OfValue(v.Name) {
		if x.Side == ir.SitePortOut && x.ID == v.ID {
			comp = c.Module.Component(x.Component)
		}
	}
	if comp == nil || comp.Capacity == nil {
		return // one request per call pads nothing
	}
	for _, pd := range v.Contract.Padding {
		ax := v.Contract.Axis(pd.Dim.Name)
		if ax < 0 || ax >= len(o.Contract.Shape) ||
			slices.ContainsFunc(o.Contract.Padding, func(op ir.Padding) bool { return o.Contract.Axis(op.Dim.Name) == ax }) {
			continue
		}
		lengths := emittedLengths(b, comp.Name, pd.Lengths.Name)
		c.ReportRelated(diag.ContractIncompatible, s.Value.Loc, []Related{{v.Loc, fmt.Sprintf("`%s` is defined here", v.Name)}},
			"`%s` is padded on `%s` (axis %d) by component `%s`, which groups, but workflow output `%s` declares no padding there: each request would receive its rows at the group's longest extent, not its own, with no lengths to say where its own end\ndeclare on workflow output `%s`: padding: [{ dimension: %s, valid_lengths: %s }], and emit `%s` as a workflow output too",
			v.Name, pd.Dim.Name, ax, comp.Name, o.Name, o.Name, strings.Trim(shapeText(o.Contract.Shape[ax:ax+1]), "[]"), lengths, lengths)
		return
	}
}

// emittedLengths names, at the workflow's level, the lengths a padded
// output of component splits by, whose port is port: the value bound to
// that input port (a request's lengths), or the workflow output an output
// port's lengths are emitted to (a model's frame_lengths), else the port's
// name, for a workflow output to emit them to; LENGTHS where no binding
// says.
func emittedLengths(b *Bindings, component, port string) string {
	if in := b.ToPort(component, ir.SitePortIn, port); len(in) == 1 {
		return in[0].Value
	}
	out := b.ToPort(component, ir.SitePortOut, port)
	if len(out) != 1 {
		return "LENGTHS"
	}
	for _, s := range b.Emits {
		if s.Value.Name == out[0].Value {
			return s.Output.Name
		}
	}
	return port
}

// contractBind reports a value whose contract contradicts the contract it
// is bound to. Symbols never contradict: a symbol names an extent the
// binding site may fix.
func contractBind(c *Context, id ir.ValueID, want *ir.Contract, site string, loc ir.Loc) {
	v := c.Module.Value(id)
	if v == nil || v.Contract == nil || want == nil {
		return
	}
	got := v.Contract
	var facts []string
	// A dtype genaic does not know is contract/dtype's, on its own line.
	if known(got.DType) && known(want.DType) && !ir.SameDType(got.DType, want.DType) {
		facts = append(facts, fmt.Sprintf("dtype %s where %s wants %s", got.DType, site, want.DType))
	}
	if got.Rank >= 0 && want.Rank >= 0 && got.Rank != want.Rank {
		facts = append(facts, fmt.Sprintf("rank %d where %s wants rank %d", got.Rank, site, want.Rank))
	} else if got.HasShape && want.HasShape {
		for i := range min(len(got.Shape), len(want.Shape)) {
			g, w := got.Shape[i], want.Shape[i]
			if !g.IsSym() && !w.IsSym() && g.Size != w.Size {
				facts = append(facts, fmt.Sprintf("extent %d on axis %d where %s fixes %d", g.Size, i, site, w.Size))
			}
		}
	}
	if len(facts) == 0 {
		return
	}
	c.ReportRelated(diag.ContractIncompatible, loc, []Related{{v.Loc, fmt.Sprintf("`%s` is defined here", v.Name)}},
		"`%s` has %s\nbind a value whose contract agrees, or change one of the two contracts", v.Name, strings.Join(facts, ", and "))
}

// contractRowsBind reports a packed value (any number of items a
// request, concatenated on axis 0: an adapter's lines, a request's
// segments) bound to an input port of a grouped component that takes one
// row a request there (request_aligned), or factor rows
// (request_expanded): a request that brings another count fails at
// admission (run/input), alone or grouped. The help spells the value's
// layout for the port.
func contractRowsBind(c *Context, id ir.ValueID, p *ir.Port, comp *ir.Component, loc ir.Loc) {
	v := c.Module.Value(id)
	if v == nil || v.Contract == nil || p.Contract == nil || !v.Contract.Packed() || p.Contract.RequestAxis() != 0 {
		return
	}
	c.ReportRelated(diag.ContractIncompatible, loc, []Related{{v.Loc, fmt.Sprintf("`%s` is defined here", v.Name)}},
		"`%s` packs any number of items a request on axis 0 (token_packed), but input port `%s` of component `%s`, which groups, takes %s a request there (%s): a request that brings another count fails at admission (run/input), alone or grouped\ndeclare on input port `%s` the value's layout: batch_layout: { kind: token_packed, axis: 0, levels: [%s] }, and split its outputs by those levels (extent: preserved)",
		v.Name, p.Name, comp.Name, rowsWord(rowsPerRequest(p.Contract.Layout)), p.Contract.Layout.Kind, p.Name, levelsText(v.Contract.Layout.Levels, false))
}

func known(dtype string) bool {
	_, ok := ir.LookupDType(dtype)
	return ok
}

// shapeText writes a shape as a document would.
func shapeText(shape []ir.Dim) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d.IsSym() {
			parts[i] = d.Sym
		} else {
			parts[i] = fmt.Sprint(d.Size)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
