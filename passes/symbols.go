package passes

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/genaic/genaic/ir"
)

// SymbolsPass classifies each component's shape symbols once, for the
// capacity checks and the planner.
var SymbolsPass = &Pass{
	Name:       "symbols",
	Doc:        "classify each component's shape symbols: packed, level unit count, offsets extent, request rows, padded, uniform, budgeted or free",
	Kind:       Check,
	Requires:   []*Pass{ScopesPass},
	ResultType: reflect.TypeFor[Symbols](),
	Run:        func(c *Context) (any, error) { return buildSymbols(c.Module, c.Result(ScopesPass).(*Scopes)), nil },
}

func buildSymbols(m *ir.Module, sc *Scopes) Symbols {
	out := make(Symbols, len(m.Components))
	for _, comp := range m.Components {
		if comp != nil {
			out[comp] = classifySymbols(sc, comp)
		}
	}
	return out
}

// Symbols is the result of the symbols pass: what each component's ports
// and batch_capacity say about its shape symbols.
type Symbols map[*ir.Component]*ComponentSymbols

// SymbolClass is a set of facts about one symbol of one component; a
// symbol may carry several (a packed axis symbol that a budget names).
type SymbolClass uint8

// Symbol classes.
const (
	SymPacked   SymbolClass = 1 << iota // the packed axis symbol of a port
	SymUnits                            // a level's unit count (an owner map's extent)
	SymOffsets                          // a level's offsets extent (units + 1)
	SymRows                             // the request axis symbol of a port
	SymPadded                           // padded on some port
	SymUniform                          // listed in uniform_dimensions
	SymBudgeted                         // named by some budget path
)

// counting are the classes of a symbol that counts the group rather than
// describing one item.
const counting = SymPacked | SymUnits | SymOffsets | SymRows

// Has reports whether every class of want is in c.
func (c SymbolClass) Has(want SymbolClass) bool { return c&want == want }

// Free reports whether nothing reconciles the symbol between co-batched
// items: it counts nothing, is neither padded nor uniform.
func (c SymbolClass) Free() bool { return c&(counting|SymPadded|SymUniform) == 0 }

// Classes returns the facts the component's ports and capacity state
// about sym; 0 for a symbol they never name.
func (f *ComponentSymbols) Classes(sym string) SymbolClass {
	var c SymbolClass
	for _, n := range f.counts[sym] {
		c |= SymPacked << n.Kind // the first four classes follow CountKind
	}
	if len(f.padded[sym]) > 0 {
		c |= SymPadded
	}
	if f.uniform[sym] {
		c |= SymUniform
	}
	if f.budgeted[sym] {
		c |= SymBudgeted
	}
	return c
}

// Known reports whether some port shape (or a payload level's unit count)
// of the component names sym.
func (f *ComponentSymbols) Known(sym string) bool { return f.known[sym] }

// Declared lists the symbols the component's ports name, in order.
func (f *ComponentSymbols) Declared() []string { return f.declared }

// PaddedOn lists the padding entries that pad sym, in port order.
func (f *ComponentSymbols) PaddedOn(sym string) []SymbolPad { return f.padded[sym] }

// Payload lists the input ports that carry items: neither shared nor a
// companion of another port.
func (f *ComponentSymbols) Payload() []*ir.Port { return f.payload }

// SymbolCount says why a symbol counts the group rather than describing
// one item: the packed axis of a port, the unit count of an ownership level,
// the extent of a level's offsets, or the request axis of a port.
type SymbolCount struct {
	Kind   CountKind
	Port   string // the port whose contract states it
	Input  bool   // an input port
	Rooted bool   // the scheduler chooses it when it assembles a group
	Level  int    // levels
	Ref    string // the level's owner or offsets
	Factor int64  // request axes: rows per request (1 for request_aligned)
	Loc    ir.Loc
}

// CountKind says what a symbol counts, in the order messages prefer.
type CountKind uint8

// What a symbol that counts the group counts.
const (
	CountPacked  CountKind = iota // the packed axis of a port
	CountUnits                    // a level's unit count (its owner's extent)
	CountOffsets                  // a level's offsets extent (units + 1)
	CountRows                     // a port's request axis
)

// GroupRooted reports whether a budget path may start at the count: the
// scheduler chooses it when it assembles a group of inputs. An output's
// request axis qualifies (its rows are the group's requests), and so does
// an output's packed axis or level unit count when the level is preserved,
// one unit per input unit.
func (k SymbolCount) GroupRooted() bool {
	return k.Rooted && k.Kind != CountOffsets
}

// String describes the count for messages.
func (k SymbolCount) String() string {
	side := "output"
	if k.Input {
		side = "input"
	}
	switch k.Kind {
	case CountPacked:
		return fmt.Sprintf("the packed axis symbol of %s port `%s`", side, k.Port)
	case CountUnits:
		return fmt.Sprintf("the unit count of ownership level %d of %s port `%s` (the extent of its owner `%s`)", k.Level, side, k.Port, k.Ref)
	case CountOffsets:
		return fmt.Sprintf("the extent of the level-%d offsets `%s` of %s port `%s` (units + 1)", k.Level, k.Ref, side, k.Port)
	default:
		return fmt.Sprintf("the request axis symbol of %s port `%s`", side, k.Port)
	}
}

// SymbolPad is one padding entry of a port of the component.
type SymbolPad struct {
	Port string
	Loc  ir.Loc
}

// ComponentSymbols is what one component's ports and batch_capacity say
// about its shape symbols.
type ComponentSymbols struct {
	comp     *ir.Component
	declared []string                 // every symbol of every port shape, in order
	known    map[string]bool          // the same, as a set
	counts   map[string][]SymbolCount // symbols that count the group
	padded   map[string][]SymbolPad   // symbols padded on some port
	payload  []*ir.Port               // participating input ports
	shared   []*ir.Port               // input ports passed once for a group, companions aside
	uniform  map[string]bool
	budgeted map[string]bool       // symbols any budget path names
	owners   map[*ir.Port][]string // packed port: each level's owner extent symbol
}

// classifySymbols reads the component's ports: which symbols they declare,
// which input ports are companions, and how each symbol relates to the
// group.
func classifySymbols(sc *Scopes, comp *ir.Component) *ComponentSymbols {
	f := &ComponentSymbols{
		comp: comp, known: map[string]bool{}, counts: map[string][]SymbolCount{},
		padded: map[string][]SymbolPad{}, uniform: map[string]bool{}, budgeted: map[string]bool{},
		owners: map[*ir.Port][]string{},
	}
	companions := map[string]bool{}
	for _, in := range []bool{true, false} {
		for _, p := range contractPorts(comp, in) {
			k := p.Contract
			for _, d := range k.Shape {
				if d.IsSym() && !f.known[d.Sym] {
					f.known[d.Sym] = true
					f.declared = append(f.declared, d.Sym)
				}
			}
			for _, pd := range k.Padding {
				// An entry on no axis, the request axis or the packed
				// axis is padding's or packed's to report; it pads nothing.
				if ax := k.Axis(pd.Dim.Name); ax >= 0 && ax != k.RequestAxis() && !(k.Packed() && ax == 0) {
					f.padded[pd.Dim.Name] = append(f.padded[pd.Dim.Name], SymbolPad{p.Name, pd.Dim.Loc})
				}
				symbolCompanion(sc, comp, p, in, pd.Lengths.Name, companions)
			}
			f.classifyLayout(sc, p, in, companions)
		}
	}
	for _, p := range contractPorts(comp, true) {
		switch {
		case companions[p.Name]:
		case p.Contract.Layout.Kind != ir.Shared:
			f.payload = append(f.payload, p)
		default:
			f.shared = append(f.shared, p)
		}
	}
	// A level's unit count is the component's to bound even when its owner
	// is a workflow value rather than a port: the port's levels name it, so
	// a budget may (and r5 says must) name it.
	for _, p := range f.payload {
		for i := range p.Contract.Layout.Levels {
			if sym := f.UnitCount(p, i); sym != "" && !f.known[sym] {
				f.known[sym] = true
				f.declared = append(f.declared, sym)
			}
		}
	}
	if comp.Capacity == nil {
		return f
	}
	for _, u := range comp.Capacity.Uniform {
		f.uniform[u.Name] = true
	}
	for _, b := range comp.Capacity.Budgets {
		for _, r := range b.Path {
			f.budgeted[r.Name] = true
		}
	}
	return f
}

// contractPorts returns the ports on one side that carry a contract.
func contractPorts(comp *ir.Component, inputs bool) []*ir.Port {
	ps := comp.Outputs
	if inputs {
		ps = comp.Inputs
	}
	var out []*ir.Port
	for _, p := range ps {
		if p != nil && p.Contract != nil {
			out = append(out, p)
		}
	}
	return out
}

// symbolCompanion resolves a companion name written on port p and, when
// it is an input port of the same component, marks that port a companion:
// its symbols count things and it carries no item payload.
func symbolCompanion(sc *Scopes, comp *ir.Component, p *ir.Port, input bool, name string, into map[string]bool) *ir.Contract {
	if name == "" {
		return nil
	}
	t, ok := sc.Lookup(ir.PortSite(comp, p, input), name)
	if !ok {
		return nil
	}
	if t.Site != nil && t.Site.Kind == ir.SitePortIn && t.Site.Component == comp {
		into[t.Site.Name] = true
	}
	return t.Contract
}

// classifyLayout records the counts a port's batch layout states.
func (f *ComponentSymbols) classifyLayout(sc *Scopes, p *ir.Port, input bool, companions map[string]bool) {
	k := p.Contract
	add := func(sym string, c SymbolCount) {
		if sym != "" {
			c.Port, c.Input, c.Rooted = p.Name, input, input || c.Rooted
			f.counts[sym] = append(f.counts[sym], c)
		}
	}
	if ax := k.RequestAxis(); ax >= 0 && ax < len(k.Shape) {
		// Rows are the group's requests on every port, input or output.
		add(k.Shape[ax].Sym, SymbolCount{Kind: CountRows, Rooted: true, Factor: rowsPerRequest(k.Layout), Loc: k.Shape[ax].Loc})
	}
	if !k.Packed() {
		return
	}
	lvs := k.Layout.Levels
	if len(k.Shape) > 0 {
		preserved := len(lvs) > 0 && lvs[0].Extent == ir.ExtentPreserved
		add(k.PackedSym(), SymbolCount{Kind: CountPacked, Rooted: preserved, Loc: k.Shape[0].Loc})
	}
	for i, lv := range lvs {
		off := companionExtent(symbolCompanion(sc, f.comp, p, input, lv.Offsets.Name, companions))
		own := companionExtent(symbolCompanion(sc, f.comp, p, input, lv.Owner.Name, companions))
		if own == off {
			// packed/companion: a level whose owner counts what its
			// offsets count states no unit count.
			own = ""
		}
		add(off, SymbolCount{Kind: CountOffsets, Level: i, Ref: lv.Offsets.Name, Loc: lv.Offsets.Loc})
		add(own, SymbolCount{Kind: CountUnits, Level: i, Ref: lv.Owner.Name, Rooted: lv.Extent == ir.ExtentPreserved, Loc: lv.Owner.Loc})
		f.owners[p] = append(f.owners[p], own)
	}
}

// rowsPerRequest is the rows a request brings on the request axis of a
// request_aligned (1) or request_expanded (its factor) layout.
func rowsPerRequest(l ir.Layout) int64 {
	if l.Kind == ir.RequestExpanded && l.Factor > 1 {
		return l.Factor
	}
	return 1
}

// companionExtent is the extent symbol of a rank-1 companion, or "".
func companionExtent(k *ir.Contract) string {
	if k == nil || len(k.Shape) != 1 {
		return ""
	}
	return k.Shape[0].Sym
}

// Count returns the first count the symbol is, preferring the kinds a
// message should name first (packed, units, offsets, rows), or false.
func (f *ComponentSymbols) Count(sym string, rootedOnly bool) (SymbolCount, bool) {
	var best SymbolCount
	found := false
	for _, c := range f.counts[sym] {
		if rootedOnly && !c.GroupRooted() {
			continue
		}
		if !found || c.Input && !best.Input || c.Input == best.Input && c.Kind < best.Kind {
			best, found = c, true
		}
	}
	return best, found
}

// UnitCount is the unit count symbol of level i of packed port p: the
// packed axis symbol for level 0 (its owner has one entry per packed
// position), the owner's extent symbol otherwise.
func (f *ComponentSymbols) UnitCount(p *ir.Port, i int) string {
	if i == 0 {
		if s := p.Contract.PackedSym(); s != "" {
			return s
		}
	}
	return f.OwnerExtent(p, i)
}

// OwnerExtent is the extent symbol of the owner map of level i of packed
// port p, or "" when it has none (or shares its offsets' extent, which
// packed/companion refuses).
func (f *ComponentSymbols) OwnerExtent(p *ir.Port, i int) string {
	if os := f.owners[p]; i < len(os) {
		return os[i]
	}
	return ""
}

// Reconciled reports whether axis i of payload port p is accounted for
// between co-batched items: uniform, padded on that port, packed, its
// request axis, or a count of the group.
func (f *ComponentSymbols) Reconciled(p *ir.Port, i int) bool {
	k := p.Contract
	sym := k.Shape[i].Sym
	switch {
	case f.uniform[sym], k.Packed() && (i == 0 || int64(i) == k.Layout.Axis), k.RequestAxis() == i:
		return true
	case slices.ContainsFunc(f.padded[sym], func(pd SymbolPad) bool { return pd.Port == p.Name }):
		return true
	}
	_, counts := f.Count(sym, false)
	return counts
}
