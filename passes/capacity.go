package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// CapacityPass checks batch_capacity (§3.1 r1–r10): known, well-classified uniform symbols, group-rooted, distinct, feasible budgets, and outputs that split back per request.
var CapacityPass = &Pass{
	Name:     "capacity",
	Doc:      "check batch_capacity (rules capacity/*; see docs/authoring.md#batch_capacity): known, well-classified uniform symbols, group-rooted, distinct, feasible budgets, and outputs that split back per request",
	Kind:     Check,
	Requires: []*Pass{ScopesPass, SymbolsPass, BindingsPass},
	Rules: []diag.Rule{
		diag.CapacityUnknownSymbol, diag.CapacityUniformDuplicate, diag.CapacityUniformCount,
		diag.CapacityPaddedAndPinned, diag.CapacityBudgetRoot, diag.CapacityBudgetDuplicate,
		diag.CapacityLevelUnbudgeted, diag.CapacityFreeLiteral, diag.CapacityUnreconciled,
		diag.CapacityBudgetTooSmall, diag.CapacityRowScope, diag.CapacitySharedOutput,
	},
	Run: func(c *Context) (any, error) {
		syms := c.Result(SymbolsPass).(Symbols)
		sc, bind := c.Result(ScopesPass).(*Scopes), c.Result(BindingsPass).(*Bindings)
		for _, comp := range c.Module.Components {
			if comp == nil || comp.Capacity == nil {
				continue
			}
			f := &capacityFacts{syms[comp]}
			capacityUniform(c, f)
			capacityBudgets(c, f)
			capacityLevels(c, f)
			capacityLiterals(c, f)
			capacityFree(c, f)
			capacityRowScope(c, f)
			capacitySharedOutputs(c, f, sc, bind)
			capacityUnpaddedOutputs(c, f)
			capacityOutputCounts(c, f)
			capacitySharedInputs(c, f, bind)
		}
		return nil, nil
	},
}

// capacityFacts is a component's symbol facts with the wording the
// capacity messages use.
type capacityFacts struct{ *ComponentSymbols }

// name is how messages name the component's capacity.
func (f *capacityFacts) name() string {
	return fmt.Sprintf("batch_capacity of component `%s`", f.comp.Name)
}

// declaredText lists the declared symbols for a message.
func (f *capacityFacts) declaredText() string {
	if len(f.declared) == 0 {
		return "its ports declare no shape symbols"
	}
	return "declared symbols are " + strings.Join(f.declared, ", ")
}

// capacityUniform checks uniform_dimensions (r1, r2, r3): each entry names
// a declared, ordinary per-item symbol, once, that no port pads.
func capacityUniform(c *Context, f *capacityFacts) {
	first := map[string]ir.Loc{}
	for _, u := range f.comp.Capacity.Uniform {
		switch prev, dup := first[u.Name]; {
		case !f.known[u.Name]:
			c.ReportHelp(diag.CapacityUnknownSymbol, u.Loc, diag.DidYouMean(u.Name, f.declared), "%s lists uniform dimension `%s`, which no port of the component declares (%s)\nname a symbol of a port shape, or drop the entry",
				f.name(), u.Name, f.declaredText())
		case dup:
			c.ReportRelated(diag.CapacityUniformDuplicate, u.Loc, []Related{{prev, "first listed here"}},
				"%s lists uniform dimension `%s` twice; the list states which extents co-batched items must agree on, once each\ndrop the second entry", f.name(), u.Name)
		default:
			first[u.Name] = u.Loc
			capacityUniformKind(c, f, u)
		}
	}
}

// capacityUniformKind reports a uniform symbol that counts the group (r2)
// or that a port pads (r3).
func capacityUniformKind(c *Context, f *capacityFacts, u ir.Ref) {
	if k, ok := f.Count(u.Name, false); ok && k.Kind != CountRows {
		c.ReportRelated(diag.CapacityUniformCount, u.Loc, []Related{{k.Loc, "declared here"}},
			"%s requires uniform dimension `%s`, which is %s: it counts the items the group holds rather than describing one item, so it cannot be pinned\nremove it from uniform_dimensions and bound it with a budget instead",
			f.name(), u.Name, k)
		return
	}
	if pads := f.padded[u.Name]; len(pads) > 0 {
		c.ReportRelated(diag.CapacityPaddedAndPinned, u.Loc, []Related{{pads[0].Loc, "padded here"}},
			"%s pins `%s` in uniform_dimensions, but port `%s` pads it; a dimension is padded (items differ, lengths say how) or pinned (items agree), never both\ndrop one of the two",
			f.name(), u.Name, pads[0].Port)
	}
}

// capacityBudgets checks each budget (r1, r4, r8).
func capacityBudgets(c *Context, f *capacityFacts) {
	paths := map[string]ir.Loc{}
	for _, b := range f.comp.Capacity.Budgets {
		text := capacityPathText(b.Path)
		repeated := capacityBudgetSymbols(c, f, b, text)
		if len(b.Path) == 0 {
			c.Report(diag.CapacityBudgetRoot, b.Loc, "%s declares a budget with no dimensions; a budget is a nesting path read outermost first that starts at a count of the group, such as %s",
				f.name(), f.rootsText())
		} else {
			capacityBudgetRoot(c, f, b, text)
		}
		key := strings.Join(capacityPathNames(b.Path), "\x00")
		if prev, dup := paths[key]; dup && !repeated && len(b.Path) > 0 {
			c.ReportRelated(diag.CapacityBudgetDuplicate, b.Loc, []Related{{prev, "first budgeted here"}},
				"%s budgets %s more than once; two bounds on one footprint are two numbers for one fact\nkeep one", f.name(), text)
		} else if !dup {
			paths[key] = b.Loc
		}
		capacityBudgetSize(c, f, b, text)
	}
}

// capacityBudgetSymbols reports a path symbol no port declares (r1) and a
// path that names one symbol twice (r4); it reports whether it did the
// latter.
func capacityBudgetSymbols(c *Context, f *capacityFacts, b ir.Budget, text string) bool {
	seen := map[string]bool{}
	repeated := false
	for _, r := range b.Path {
		if !f.known[r.Name] {
			c.ReportHelp(diag.CapacityUnknownSymbol, r.Loc, diag.DidYouMean(r.Name, f.declared), "%s budgets `%s` in %s, which no port of the component declares (%s)\nname a symbol of a port shape",
				f.name(), r.Name, text, f.declaredText())
		}
		if seen[r.Name] && !repeated {
			repeated = true
			c.Report(diag.CapacityBudgetDuplicate, r.Loc, "%s budgets %s, which names `%s` twice; a composed budget multiplies distinct extents along a nesting path\nname each symbol once",
				f.name(), text, r.Name)
		}
		seen[r.Name] = true
	}
	return repeated
}

// capacityBudgetRoot reports a path whose first symbol is declared but is
// not a count the scheduler chooses (r4).
func capacityBudgetRoot(c *Context, f *capacityFacts, b ir.Budget, text string) {
	r := b.Path[0]
	if !f.known[r.Name] {
		return
	}
	if _, ok := f.Count(r.Name, true); ok {
		return
	}
	why := "a property of one item rather than a count of them, the same for one item or a thousand"
	if _, ok := f.Count(r.Name, false); ok {
		why = "a count the scheduler does not choose when it assembles a group"
	}
	c.Report(diag.CapacityBudgetRoot, r.Loc, "%s budgets %s, whose outermost dimension `%s` is %s: %s, so it bounds nothing about the group\nstart the path at a group count (%s), for example %s",
		f.name(), text, r.Name, f.describe(r.Name), why, f.rootsText(), f.rerooted(b.Path))
}

// rerooted suggests a group-rooted spelling of path: its first
// group-rooted symbol moved to the front, or one prepended.
func (f *capacityFacts) rerooted(path []ir.Ref) string {
	names := capacityPathNames(path)
	for i, n := range names {
		if _, ok := f.Count(n, true); ok {
			names = append([]string{n}, slices.Delete(names, i, i+1)...)
			return "[" + strings.Join(names, ", ") + "]"
		}
	}
	return "[" + strings.Join(append([]string{f.someRoot()}, names...), ", ") + "]"
}

// capacityBudgetSize reports a bound no single item fits (r8).
func capacityBudgetSize(c *Context, f *capacityFacts, b ir.Budget, text string) {
	if b.MaxTotal < 1 {
		c.Report(diag.CapacityBudgetTooSmall, b.Loc, "%s budgets %s at %d; every budget is an upper bound on an assembled group, and a bound below 1 forbids even the single-item invocation\nwrite a max_total of at least 1",
			f.name(), text, b.MaxTotal)
		return
	}
	least, why := int64(1), ""
	for _, r := range b.Path {
		k, ok := f.Count(r.Name, true)
		if !f.known[r.Name] {
			return
		}
		if ok && k.Kind == CountRows && k.Factor > 1 {
			least = capacitySaturatingMul(least, k.Factor)
			why = fmt.Sprintf("; `%s` is the request axis of request_expanded port `%s`, %d rows per request", r.Name, k.Port, k.Factor)
		}
	}
	if b.MaxTotal < least {
		c.Report(diag.CapacityBudgetTooSmall, b.Loc, "%s budgets %s at %d, but one item alone has a footprint of at least %d on that path%s\nraise max_total to at least %d",
			f.name(), text, b.MaxTotal, least, why, least)
	}
}

func capacitySaturatingMul(a, b int64) int64 {
	const limit = int64(1) << 62
	if a > limit/b {
		return limit
	}
	return a * b
}

// capacityLevels reports an input ownership level whose unit count no
// budget names (r5): nothing would bound how many units a group holds.
func capacityLevels(c *Context, f *capacityFacts) {
	done := map[string]bool{}
	for _, p := range f.payload {
		k := p.Contract
		if !k.Packed() {
			continue
		}
		for i, lv := range k.Layout.Levels {
			sym := f.UnitCount(p, i)
			if sym == "" || !f.known[sym] || f.budgeted[sym] || done[sym] {
				continue
			}
			done[sym] = true
			c.ReportRelated(diag.CapacityLevelUnbudgeted, lv.Loc, []Related{{f.comp.Capacity.Loc, "the batch_capacity"}},
				"%s declares no budget for `%s`, the units input port `%s` packs at ownership level %d, so nothing bounds how many of them one group holds\nadd a budget such as { dimensions: [%s], max_total: N }",
				f.name(), sym, p.Name, i, sym)
		}
	}
}

// capacityLiterals reports a packed axis or a request axis of a port of
// the component fixed at a literal (r6): the capacity makes both the sum
// over the group, which no literal states.
func capacityLiterals(c *Context, f *capacityFacts) {
	for _, in := range []bool{true, false} {
		for _, p := range contractPorts(f.comp, in) {
			capacityLiteral(c, f, p, in)
		}
	}
}

func capacityLiteral(c *Context, f *capacityFacts, p *ir.Port, input bool) {
	k := p.Contract
	side := "output"
	if input {
		side = "input"
	}
	if k.Packed() && len(k.Shape) > 0 && !k.Shape[0].IsSym() {
		d := k.Shape[0]
		c.Report(diag.CapacityFreeLiteral, d.Loc, "%s port `%s` of component `%s` packs items along axis 0 but fixes that axis at %d; with a batch_capacity a packed extent is the sum of the group's items and cannot be a literal\nwrite a shape symbol there",
			side, p.Name, f.comp.Name, d.Size)
	}
	if ax := k.RequestAxis(); ax >= 0 && ax < len(k.Shape) && !k.Shape[ax].IsSym() {
		d := k.Shape[ax]
		c.Report(diag.CapacityFreeLiteral, d.Loc, "%s port `%s` of component `%s` is %s on axis %d but fixes that axis at %d; with a batch_capacity the rows of every grouped request are stacked on it, so its extent is the group's row count and cannot be a literal\nwrite a shape symbol there",
			side, p.Name, f.comp.Name, k.Layout.Kind, ax, d.Size)
	}
}

// capacityFree reports a symbolic dimension of a participating input port
// that nothing reconciles between two items (r7): not uniform, not padded
// on that port, not its packed axis or request axis, and not a count of
// the group.
func capacityFree(c *Context, f *capacityFacts) {
	done := map[string]bool{}
	for _, p := range f.payload {
		k := p.Contract
		if slices.ContainsFunc(k.Padding, func(pd ir.Padding) bool { return k.Axis(pd.Dim.Name) < 0 }) {
			// padding/dimension: the entry meant to pad one of these
			// names none; saying which is free again would repeat it.
			continue
		}
		for i, d := range k.Shape {
			if !d.IsSym() || done[d.Sym] || f.Reconciled(p, i) || misspeltUniform(f, d.Sym) {
				continue
			}
			done[d.Sym] = true
			c.Report(diag.CapacityUnreconciled, d.Loc, "%s leaves `%s` free on input port `%s` (axis %d): it is neither uniform, padded on that port, packed, nor its request axis, so two co-batched items could differ on it with nothing to reconcile them\nadd `%s` to uniform_dimensions, or pad it with a padding entry and its valid_lengths",
				f.name(), d.Sym, p.Name, i, d.Sym)
		}
	}
}

// misspeltUniform reports whether a uniform_dimensions entry no port
// declares is a likely typo of sym: capacity/unknown-symbol reported that
// entry with sym as its suggestion, and calling sym free would restate it.
func misspeltUniform(f *capacityFacts, sym string) bool {
	for _, u := range f.comp.Capacity.Uniform {
		if !f.known[u.Name] && diag.Nearest(u.Name, f.declared) == sym {
			return true
		}
	}
	return false
}

// capacityRowScope checks row_scope against the ports (r9): its axis is a
// request axis of some port, and no port packs items along it.
func capacityRowScope(c *Context, f *capacityFacts) {
	rs := f.comp.RowScope
	if rs == nil {
		return
	}
	var rowPort string
	for _, in := range []bool{true, false} {
		for _, p := range contractPorts(f.comp, in) {
			k := p.Contract
			if k.Packed() && k.Layout.Axis == rs.Axis {
				c.ReportRelated(diag.CapacityRowScope, rs.Loc, []Related{{p.Loc, "packed here"}},
					"component `%s` declares row_scope on axis %d, which port `%s` packs items along; items are not rows\nput row_scope on a request axis or drop it",
					f.comp.Name, rs.Axis, p.Name)
				return
			}
			if ax := k.RequestAxis(); ax >= 0 && int64(ax) == rs.Axis && rowPort == "" {
				rowPort = p.Name
			}
		}
	}
	if rowPort == "" {
		c.Report(diag.CapacityRowScope, rs.Loc, "component `%s` declares row_scope on axis %d, which no port of the component declares as its request axis (%s)\nput row_scope on the request-row axis",
			f.comp.Name, rs.Axis, f.requestAxesText())
	}
}

// requestAxesText lists the request axes the ports declare.
func (f *capacityFacts) requestAxesText() string {
	var parts []string
	for _, in := range []bool{true, false} {
		for _, p := range contractPorts(f.comp, in) {
			if ax := p.Contract.RequestAxis(); ax >= 0 {
				parts = append(parts, fmt.Sprintf("`%s` on axis %d", p.Name, ax))
			}
		}
	}
	if len(parts) == 0 {
		return "no port declares one"
	}
	return "request axes: " + strings.Join(parts, ", ")
}

// describe says what an ordinary symbol is, for messages.
func (f *capacityFacts) describe(sym string) string {
	if pads := f.padded[sym]; len(pads) > 0 {
		return fmt.Sprintf("padded on port `%s`", pads[0].Port)
	}
	if k, ok := f.Count(sym, false); ok {
		return k.String()
	}
	if f.uniform[sym] {
		return "pinned in uniform_dimensions"
	}
	return "an ordinary per-item dimension"
}

// roots lists the group-rooted symbols, in declaration order.
func (f *capacityFacts) roots() []string {
	var out []string
	for _, s := range f.declared {
		if _, ok := f.Count(s, true); ok {
			out = append(out, s)
		}
	}
	return out
}

func (f *capacityFacts) rootsText() string {
	rs := f.roots()
	if len(rs) == 0 {
		return "a packed axis symbol, a level unit count or a request axis symbol of an input port"
	}
	return "`" + strings.Join(rs, "`, `") + "`"
}

// someRoot is a group-rooted symbol to suggest, or a placeholder.
func (f *capacityFacts) someRoot() string {
	if rs := f.roots(); len(rs) > 0 {
		return rs[0]
	}
	return "<count>"
}

func capacityPathNames(path []ir.Ref) []string {
	out := make([]string, len(path))
	for i, r := range path {
		out[i] = r.Name
	}
	return out
}

func capacityPathText(path []ir.Ref) string {
	return "[" + strings.Join(capacityPathNames(path), ", ") + "]"
}
