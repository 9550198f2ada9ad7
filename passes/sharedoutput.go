package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// groupDependent are the classes of a symbol whose extent the group
// decides: a count of the group (packed positions, units, offsets, rows),
// the longest item on a padded dimension, or a footprint a budget bounds.
const groupDependent = counting | SymPadded | SymBudgeted

// capacitySharedOutputs reports an output port of a grouped component
// whose layout is shared (declared or by default) but whose shape names a
// symbol the group decides (r10). A shared output is delivered whole to
// every request of the group, so such a port would hand each request the
// rows of all of them: grouped would differ from solo, silently. A symbol
// only outputs name is the graph's to decide from the whole group's
// inputs, so it counts as the group's too (a constant extent is written
// as a literal, or listed in uniform_dimensions). A port that serves
// another output's levels or padding is split as a companion, never
// delivered whole, and is not judged here. One that holds the lengths a
// computed dimension of another output lacks (a model's frame_lengths
// beside its frames, capacityUnpaddedOutputs) is told to become that
// companion first.
func capacitySharedOutputs(c *Context, f *capacityFacts, sc *Scopes, bind *Bindings) {
	pl := &planner{sc: sc, comp: f.comp, serves: map[string]*plan.Serves{}, bind: bind}
	pl.markCompanions(f.comp.Outputs, ir.SitePortOut)
	awaited := f.awaitedLengths(c)
	for _, p := range contractPorts(f.comp, false) {
		k := p.Contract
		if k.Layout.Kind != ir.Shared || pl.serves[sideKey(ir.SitePortOut, p.Name)] != nil {
			continue
		}
		for i, d := range k.Shape {
			if !d.IsSym() || !f.groupDecides(d.Sym) {
				continue
			}
			how, fix := sharedHow(k), f.splitting(p, i)
			if j, n, ok := f.crossedAxis(k, i); ok {
				fix = fmt.Sprintf("its axis %d is `%s` too, %s: %s", j, k.Shape[j].Sym, n, twoCounts(p.Name))
			}
			if f.rowsAligned() && !f.onInput(d.Sym) && graphDynamic(c, f.comp, p.Name, i) {
				fix += "; " + unsplittable(p.Name)
			}
			if a, ok := awaited[p.Name]; ok {
				fix = fmt.Sprintf("name it as the lengths of `%s` on output port `%s`, which then splits it per request as a companion: padding: [{ dimension: %s, valid_lengths: %s }] there; or %s", a.sym, a.port, a.sym, p.Name, fix)
			}
			c.ReportRelated(diag.CapacitySharedOutput, d.Loc, []Related{{f.comp.Capacity.Loc, "the batch_capacity"}},
				"output port `%s` of component `%s` %s, but axis %d is `%s`, %s: grouped, every request would receive the whole group's rows, not its own\n%s",
				p.Name, f.comp.Name, how, i, d.Sym, f.groupWord(d.Sym), fix)
			break
		}
	}
}

// capacitySharedInputs reports an input port of a grouped component that
// is shared (passed once for the whole group, which forms only of items
// that bring equal values) but whose shape names a dimension the group
// pads (r7, as for a participating port): one request's value cannot have
// the group's extent there, and items of different extents would never
// share a call (a transformer's token_type_ids left without the layout of
// its input_ids). So does one that names a count of the group (the
// request axis) and carries each request's data: a channels-first
// speech encoder's per-item length, left shared, groups only requests of
// equal lengths. One bound to a companion of the workflow's (the lengths
// of a padded workflow input) is that companion, and is left alone, as is
// one no invoke binds (ssa and model/port say why).
func capacitySharedInputs(c *Context, f *capacityFacts, bind *Bindings) {
	for _, p := range f.shared {
		k := p.Contract
		// The first padded axis, else the first that counts the group.
		at := slices.IndexFunc(k.Shape, func(d ir.Dim) bool { return d.IsSym() && !f.uniform[d.Sym] && f.Classes(d.Sym)&SymPadded != 0 })
		if bound := bind.ToPort(f.comp.Name, ir.SitePortIn, p.Name); at < 0 && len(bound) > 0 && !workflowCompanion(c.Module, bound) {
			at = slices.IndexFunc(k.Shape, func(d ir.Dim) bool {
				_, counts := f.Count(d.Sym, false)
				return d.IsSym() && !f.uniform[d.Sym] && counts
			})
		}
		if at >= 0 {
			i, d := at, k.Shape[at]
			how := sharedHow(k)
			c.ReportRelated(diag.CapacityUnreconciled, d.Loc, []Related{{f.comp.Capacity.Loc, "the batch_capacity"}},
				"input port `%s` of component `%s` %s, passed once for the whole group, but axis %d is `%s`, %s: one request's value cannot have the group's extent there, and items would share a call only where they bring equal values\n%s",
				p.Name, f.comp.Name, how, i, d.Sym, f.groupWord(d.Sym), f.likeInput(p, i))
		}
	}
}

// workflowCompanion reports whether a value bound to a port (bound) is
// one some workflow contract names as its lengths, offsets or owner.
func workflowCompanion(m *ir.Module, bound []Binding) bool {
	names := func(k *ir.Contract, v string) bool {
		if k == nil {
			return false
		}
		return slices.ContainsFunc(k.Padding, func(pd ir.Padding) bool { return pd.Lengths.Name == v }) ||
			slices.ContainsFunc(k.Layout.Levels, func(l ir.Level) bool { return l.Offsets.Name == v || l.Owner.Name == v })
	}
	for _, b := range bound {
		for _, x := range m.Values {
			if x != nil && names(x.Contract, b.Value) {
				return true
			}
		}
		for _, o := range m.Outputs {
			if o != nil && names(o.Contract, b.Value) {
				return true
			}
		}
	}
	return false
}

// likeInput is the help line for shared input p, whose axis i the group
// decides: the layout and padding of a participating input port of the
// same shape, one row per request where axis i is the request axis, or
// what to consider.
func (f *capacityFacts) likeInput(p *ir.Port, i int) string {
	for _, q := range f.payload {
		if len(q.Contract.Shape) != len(p.Contract.Shape) || slices.ContainsFunc(q.Contract.Shape, func(d ir.Dim) bool {
			return p.Contract.Axis(d.Sym) != q.Contract.Axis(d.Sym)
		}) {
			continue
		}
		decl := []string{"batch_layout: " + layoutYAML(q.Contract.Layout)}
		for _, pd := range q.Contract.Padding {
			decl = append(decl, fmt.Sprintf("padding: [{ dimension: %s, valid_lengths: %s }]", pd.Dim.Name, pd.Lengths.Name))
		}
		return fmt.Sprintf("declare on port `%s`, as on port `%s`: %s", p.Name, q.Name, strings.Join(decl, "; "))
	}
	if k, ok := f.Count(p.Contract.Shape[i].Sym, false); ok && k.Kind == CountRows && k.Factor == 1 {
		return fmt.Sprintf("declare on port `%s`: batch_layout: { kind: request_aligned, axis: %d } (one row per request)", p.Name, i)
	}
	return fmt.Sprintf("give port `%s` a batch_layout and padding as its rows are laid out, or list the symbol in uniform_dimensions", p.Name)
}

// capacityUnpaddedOutputs reports an output port of a grouped component
// that splits back per request (not shared) but leaves unpadded a symbol
// whose extent the group decides, as r7 does for an input port: one an
// input port pads, which a group allocates at its longest item; or, where
// the component's items differ in extent (an input padded), one
// no input port names and the graph leaves dynamic, which the graph
// computes from the whole group's inputs (a convolution's frame count
// over padded samples). Each request would receive its rows at the
// group's extent, different grouped and solo, with no lengths to say
// where its own end. An output-only symbol is judged only against the
// model: a document writes constant extents as symbols too (hidden), and
// without the graph nothing says which they are.
func capacityUnpaddedOutputs(c *Context, f *capacityFacts) {
	for _, p := range contractPorts(f.comp, false) {
		k := p.Contract
		if k.Layout.Kind == ir.Shared {
			continue // capacitySharedOutputs judges it
		}
		if f.computedRows(c, p) {
			ra := k.RequestAxis()
			// A warning, as below: the export may have named the batch
			// axis of its outputs apart from its inputs'.
			d := k.Shape[ra]
			c.Warn(diag.CapacityUnreconciled, d.Loc,
				"output port `%s` of component `%s` is split per request on axis %d, `%s`, which no input port names and the graph leaves dynamic: the runtime takes that axis as the group's rows and fails each group whose output holds another count there (run/extent); where the graph computes it from the values (detections kept, NonZero's positions), no layout splits it per request\n%s",
				p.Name, f.comp.Name, ra, d.Sym, f.rowsFix(p))
			continue
		}
		for i, d := range k.Shape {
			if f.computedUnpadded(c, p, i) {
				// A warning: the graph's dynamic axis may be a constant
				// the export left so (a head count), which grouping does
				// not change; a dimension computed per item is caught at
				// load, where serve compares grouped against alone.
				c.Warn(diag.CapacityUnreconciled, d.Loc,
					"output port `%s` of component `%s` names `%s` (axis %d), which no input port names and the graph leaves dynamic, but does not pad it: where the graph computes its extent from each item (a convolution's frames of padded samples), grouped, each request would receive its rows at the group's extent, not its own\n%s",
					p.Name, f.comp.Name, d.Sym, i, f.computedFix(p, i))
				break
			}
			if !d.IsSym() || f.uniform[d.Sym] || i == k.RequestAxis() || k.Packed() && i == 0 ||
				slices.ContainsFunc(k.Padding, func(pd ir.Padding) bool { return pd.Dim.Name == d.Sym }) {
				continue
			}
			at := slices.IndexFunc(f.padded[d.Sym], func(sp SymbolPad) bool { return f.comp.Input(sp.Port) != nil })
			if at < 0 {
				continue
			}
			pad := f.padded[d.Sym][at]
			fix := fmt.Sprintf("declare on port `%s` (and on the workflow output it is emitted to): padding: [{ dimension: %s, valid_lengths: %s }]", p.Name, d.Sym, f.lengthsOf(d.Sym))
			if ra := k.RequestAxis(); ra > i {
				// Time-major [steps, batch, ...]: lengths pad only
				// axes after the request axis (padding/dimension).
				fix = fmt.Sprintf("`%s` is axis %d, outside the request axis (%d), where no lengths can split it: return the output batch first from the model (a transpose), or leave port `%s` out (a graph output no port declares is not fetched)", d.Sym, i, ra, p.Name)
			}
			c.ReportRelated(diag.CapacityUnreconciled, d.Loc, []Related{{pad.Loc, fmt.Sprintf("input port `%s` pads `%s` here", pad.Port, d.Sym)}},
				"output port `%s` of component `%s` leaves `%s` (axis %d) unpadded, which input port `%s` pads: grouped, each request would receive its rows at the group's longest extent, not its own, with no lengths to say where its own end\n%s",
				p.Name, f.comp.Name, d.Sym, i, pad.Port, fix)
			break
		}
	}
}

// capacityOutputCounts reports an output port of a grouped component
// whose split axis takes another count of rows a request than its input
// brings (rowsMiscounted), or that splits back per request on one axis
// but names, on another, a count of the group that an input port states: another input's rows, a packed
// axis, a level's units (a CLIP-style model's logits_per_image,
// [images, texts], split by the images). Each request's rows would span
// every request's texts in the group: other requests' data, at an extent
// it would not have alone. No layout splits one output by two counts, so
// the fix is to leave the port out of the component, or not to group.
// An axis the port pads is split by its lengths and is not judged here.
func capacityOutputCounts(c *Context, f *capacityFacts) {
	for _, p := range contractPorts(f.comp, false) {
		k := p.Contract
		if k.Layout.Kind == ir.Shared {
			continue // capacitySharedOutputs judges it
		}
		split := k.RequestAxis()
		if k.Packed() {
			split = 0
		}
		if split >= 0 && split < len(k.Shape) && !k.Packed() && f.rowsMiscounted(c, p, split) {
			continue
		}
		if i, n, ok := f.crossedAxis(k, split); ok {
			d := k.Shape[i]
			c.ReportRelated(diag.CapacityUnreconciled, d.Loc, []Related{{n.Loc, fmt.Sprintf("input port `%s` counts `%s` here", n.Port, d.Sym)}},
				"output port `%s` of component `%s` is split per request on axis %d, but axis %d is `%s`, %s: grouped, each request would receive its rows across every request's `%s` in the group, the other requests' data, not only its own\n%s",
				p.Name, f.comp.Name, split, i, d.Sym, n, d.Sym, twoCounts(p.Name))
		}
	}
}

// crossedAxis is the first axis of contract k but axis split whose
// symbol an input port counts (another input's rows, a packed axis, a
// level's units), neither uniform nor padded on k, with that count.
func (f *capacityFacts) crossedAxis(k *ir.Contract, split int) (int, SymbolCount, bool) {
	for i, d := range k.Shape {
		if i == split || !d.IsSym() || f.uniform[d.Sym] ||
			slices.ContainsFunc(k.Padding, func(pd ir.Padding) bool { return pd.Dim.Name == d.Sym }) {
			continue
		}
		if n, ok := f.inputCount(d.Sym); ok {
			return i, n, true
		}
	}
	return 0, SymbolCount{}, false
}

// twoCounts is the help line of an output port that names two counts of
// the group.
func twoCounts(port string) string {
	return fmt.Sprintf("no layout splits an output by two counts of the group: leave port `%s` out of the component (a graph output no port declares is not fetched) and compute it from outputs split per request, or remove batch_capacity so that each call takes one request; where one count's inputs are no request's own (a table of class embeddings every request sends alike), leave them shared instead: requests that bring equal values share a call", port)
}

// rowsMiscounted reports an output port split one row (or factor rows)
// per request on axis ra whose symbol an input port counts otherwise: the
// packed positions or a level's units of a packed input, of which a
// request brings any number, or another number of rows per request
// (request_expanded's factor). The runtime splits such an output by
// position, its rows per request, and fails every request of a call that
// holds another count (run/extent), alone or grouped; check refuses it
// first. The help spells the layout that splits it as the input is.
func (f *capacityFacts) rowsMiscounted(c *Context, p *ir.Port, ra int) bool {
	k := p.Contract
	d := k.Shape[ra]
	if !d.IsSym() {
		return false
	}
	n, ok := f.inputCount(d.Sym)
	rows := rowsPerRequest(k.Layout)
	if !ok || n.Kind == CountRows && n.Factor == rows {
		return false
	}
	fix := "split it as the input is"
	if layout := f.layoutFor(k, ra); layout != "" {
		fix = "declare on port `" + p.Name + "` (and on the workflow output it is emitted to): " + layout
	}
	what := fmt.Sprintf("%s, of which a request brings any number", n)
	if n.Kind == CountRows {
		what = fmt.Sprintf("%s, which brings %s a request", n, rowsWord(n.Factor))
	}
	c.ReportRelated(diag.CapacityUnreconciled, d.Loc, []Related{{n.Loc, fmt.Sprintf("input port `%s` counts `%s` here", n.Port, d.Sym)}},
		"output port `%s` of component `%s` is split %s per request on axis %d, `%s`, but that is %s: a request that brings another count would fail (run/extent), alone or grouped\n%s",
		p.Name, f.comp.Name, rowsWord(rows), ra, d.Sym, what, fix)
	return true
}

// rowsWord says a count of rows: "one row", "2 rows".
func rowsWord(n int64) string {
	if n == 1 {
		return "one row"
	}
	return fmt.Sprintf("%d rows", n)
}

// inputCount is the first count an input port states of sym, preferring
// the kinds Count does.
func (f *capacityFacts) inputCount(sym string) (SymbolCount, bool) {
	var best SymbolCount
	found := false
	for _, n := range f.counts[sym] {
		if n.Input && (!found || n.Kind < best.Kind) {
			best, found = n, true
		}
	}
	return best, found
}

// computedUnpadded reports whether axis i of output port p, split back
// per request, names a symbol the model computes per item but p does not
// pad: no input names it, the graph leaves it dynamic, and the
// component's items differ in extent.
func (f *capacityFacts) computedUnpadded(c *Context, p *ir.Port, i int) bool {
	k := p.Contract
	d := k.Shape[i]
	if k.Layout.Kind == ir.Shared || !d.IsSym() || f.uniform[d.Sym] || i == k.RequestAxis() || k.Packed() && i == 0 || f.onInput(d.Sym) ||
		slices.ContainsFunc(k.Padding, func(pd ir.Padding) bool { return pd.Dim.Name == d.Sym }) {
		return false
	}
	return f.itemsDiffer() && graphDynamic(c, f.comp, p.Name, i)
}

// computedRows reports whether output port p, split one row per request
// in a component whose inputs bring one row per request, names its
// request axis with a symbol no input port names and the graph leaves
// dynamic: the rows of the group only where the export spelled the batch
// axis apart, else a count the graph computes. Where an input is packed
// or brings several rows per request, the requests' count is named by no
// input port as a rule.
func (f *capacityFacts) computedRows(c *Context, p *ir.Port) bool {
	ra := p.Contract.RequestAxis()
	if p.Contract.Layout.Kind != ir.RequestAligned || ra >= len(p.Contract.Shape) {
		return false // an axis past the rank: contracts reports it
	}
	if !f.rowsAligned() {
		return false
	}
	d := p.Contract.Shape[ra]
	return d.IsSym() && !f.onInput(d.Sym) && graphDynamic(c, f.comp, p.Name, ra)
}

// rowsAligned reports whether the component's inputs bring one row per
// request and none is packed: the rows of an output split per request
// are then its inputs' rows, under their symbol.
func (f *capacityFacts) rowsAligned() bool {
	aligned := false
	for _, q := range contractPorts(f.comp, true) {
		switch q.Contract.Layout.Kind {
		case ir.RequestAligned:
			aligned = true
		case ir.RequestExpanded, ir.TokenPacked:
			return false
		}
	}
	return aligned
}

// rowsFix is the help line of an output port whose request axis is a
// symbol of its own (computedRows): the inputs' request axis, where it
// is that under another name; else the port left out, or the component
// ungrouped.
func (f *capacityFacts) rowsFix(p *ir.Port) string {
	rows := "the inputs' request axis"
	for _, q := range contractPorts(f.comp, true) {
		if ra := q.Contract.RequestAxis(); ra >= 0 && ra < len(q.Contract.Shape) && q.Contract.Shape[ra].IsSym() {
			rows = "`" + q.Contract.Shape[ra].Sym + "`"
			break
		}
	}
	sym := p.Contract.Shape[p.Contract.RequestAxis()].Sym
	return fmt.Sprintf("where `%s` is %s under another name (an export that named only its inputs' axes), write %s in its place; %s. `genaic init --print MODEL.onnx` runs the model and names what each output dimension follows",
		sym, rows, strings.Trim(rows, "`"), unsplittable(p.Name))
}

// unsplittable says what to do with an output port whose rows no layout
// splits per request: a count the model computes from the values.
func unsplittable(port string) string {
	return fmt.Sprintf("where the model computes it from the values (detections kept, NonZero's positions), no layout splits it per request: leave port `%s` out of the component (a graph output no port declares is not fetched), or remove batch_capacity so that each call takes one request and returns it whole", port)
}

// awaited is a computed dimension an output port's lengths would pad.
type awaited struct{ port, sym string }

// awaitedLengths are the output ports that capacityUnpaddedOutputs names
// as the lengths a computed dimension lacks, each with that dimension.
func (f *capacityFacts) awaitedLengths(c *Context) map[string]awaited {
	out := map[string]awaited{}
	for _, p := range contractPorts(f.comp, false) {
		for i, d := range p.Contract.Shape {
			if lengths := f.outputLengths(p, i); lengths != "" && f.computedUnpadded(c, p, i) {
				out[lengths] = awaited{p.Name, d.Sym}
			}
		}
	}
	return out
}

// itemsDiffer reports whether the component's items may differ in extent
// within a group: an input port pads a dimension. Packed rows of uniform
// extents (a recognizer's lines of one width) give a dynamic output axis
// the same extent grouped and alone.
func (f *capacityFacts) itemsDiffer() bool {
	return slices.ContainsFunc(contractPorts(f.comp, true), func(p *ir.Port) bool { return len(p.Contract.Padding) > 0 })
}

// graphDynamic reports whether the component's model leaves axis of its
// output port dynamic; false where the model or the port's shape cannot
// be read (the models pass reports that).
func graphDynamic(c *Context, comp *ir.Component, port string, axis int) bool {
	if c.opts.Models == nil || comp.Impl != ir.ImplONNX || comp.Artifact == "" {
		return false
	}
	g, err := c.opts.Models.Graph(comp.Artifact)
	if err != nil {
		return false
	}
	v := g.Output(port)
	if v == nil || !v.HasShape || axis >= len(v.Dims) {
		return false
	}
	_, fixed := v.Fixed(axis)
	return !fixed
}

// computedFix says how to split axis i of output port p, a dimension the
// graph leaves dynamic and names apart from every input: which fix holds
// depends on what the dimension is, which running the model tells (init
// does). Where the graph outputs lengths of it, it is computed per item
// first of all (a speech encoder's frames and frame_lengths).
func (f *capacityFacts) computedFix(p *ir.Port, i int) string {
	sym := p.Contract.Shape[i].Sym
	var pads []string
	for _, q := range contractPorts(f.comp, true) {
		for _, pd := range q.Contract.Padding {
			if !slices.Contains(pads, pd.Dim.Name) {
				pads = append(pads, pd.Dim.Name)
			}
		}
	}
	padded := "`" + strings.Join(pads, "`, `") + "`"
	renamed := fmt.Sprintf("where `%s` is %s under another name (an export that named only its inputs' axes), write %s in its place and pad it as the input is", sym, padded, padded)
	constant := "where it is one extent whatever the items (a head count the export left dynamic), write that number in its place"
	if lengths := f.outputLengths(p, i); lengths != "" {
		return fmt.Sprintf("declare on port `%s`, and on the workflow output it is emitted to, padding: [{ dimension: %s, valid_lengths: %s }], `%s` being the model's output of each item's `%s` (a companion, left shared); or, %s; or, %s",
			p.Name, sym, lengths, lengths, sym, renamed, constant)
	}
	return fmt.Sprintf("%s; or, %s; or, where the model computes it per item, pad it with lengths the model outputs (int64, the axes outer to it, a companion left shared), or list %s in uniform_dimensions in place of padding. `genaic init --print MODEL.onnx` runs the model and names what each output dimension follows",
		renamed, constant, padded)
}

// outputLengths names the output port of the component that can hold the
// lengths of axis i of port p: an integer port shaped as p's axes outer
// to i (a model's frame_lengths beside its frames), where exactly one
// is; "" otherwise.
func (f *capacityFacts) outputLengths(p *ir.Port, i int) string {
	name := ""
	for _, q := range contractPorts(f.comp, false) {
		k := q.Contract
		if q == p || !ir.SameDType(k.DType, "int64") && !ir.SameDType(k.DType, "int32") ||
			!slices.EqualFunc(k.Shape, p.Contract.Shape[:i], func(a, b ir.Dim) bool { return a.Sym == b.Sym && a.Size == b.Size }) {
			continue
		}
		if name != "" {
			return ""
		}
		name = q.Name
	}
	return name
}

// groupDecides reports whether the group, rather than one item, decides
// the extent of a symbol of an output's shape.
func (f *capacityFacts) groupDecides(sym string) bool {
	if f.uniform[sym] {
		return false
	}
	return f.Classes(sym)&groupDependent != 0 || !f.onInput(sym)
}

// onInput reports whether an input port's shape names sym.
func (f *capacityFacts) onInput(sym string) bool {
	for _, p := range contractPorts(f.comp, true) {
		if p.Contract.Axis(sym) >= 0 {
			return true
		}
	}
	return false
}

// groupWord says why the group decides sym's extent, for messages.
func (f *capacityFacts) groupWord(sym string) string {
	if k, ok := f.Count(sym, false); ok {
		return k.String() + ", which the group decides"
	}
	if pads := f.padded[sym]; len(pads) > 0 {
		return fmt.Sprintf("padded on port `%s`, which a group pads to its longest item", pads[0].Port)
	}
	if f.budgeted[sym] {
		return "a dimension a budget bounds, whose extent the group decides"
	}
	return "which no input port names (the graph decides it from the whole group's inputs)"
}

// splitting is the help line for shared output p, whose axis i the group
// decides: the batch_layout that splits the port back per request, read
// off the input port that counts the symbol, and a padding entry for each
// padded symbol of its shape.
func (f *capacityFacts) splitting(p *ir.Port, i int) string {
	k := p.Contract
	var decl []string
	if layout := f.layoutFor(k, i); layout != "" {
		decl = append(decl, layout)
	}
	for _, d := range k.Shape {
		if d.IsSym() && len(f.padded[d.Sym]) > 0 {
			decl = append(decl, fmt.Sprintf("padding: [{ dimension: %s, valid_lengths: %s }]", d.Sym, f.lengthsOf(d.Sym)))
		}
	}
	if len(decl) > 0 {
		return fmt.Sprintf("declare on port `%s`: %s", p.Name, strings.Join(decl, "; "))
	}
	return fmt.Sprintf("give port `%s` the batch_layout its rows follow: %s (or write an extent that is the same for every group as a literal)", p.Name, strings.Join(f.layoutsByRows(i), "; "))
}

// layoutsByRows lists, for an output axis no input names, the layouts
// that split it by what its rows might be: one a unit of some level of a
// packed input, or one a request.
func (f *capacityFacts) layoutsByRows(i int) []string {
	var out []string
	if i == 0 {
		for _, p := range f.payload {
			lvs := p.Contract.Layout.Levels
			for l := range lvs {
				if units := f.UnitCount(p, l); units != "" {
					out = append(out, fmt.Sprintf("with one row per `%s` of input `%s`, %s", units, p.Name, preservedLevels(lvs, l)))
				}
			}
		}
	}
	return append(out, fmt.Sprintf("with one row per request, batch_layout: { kind: request_aligned, axis: %d }", i))
}

// layoutFor is the batch_layout that splits an output whose axis i is
// counted by an input port's layout, or "" when no input port counts the
// symbol there.
func (f *capacityFacts) layoutFor(k *ir.Contract, i int) string {
	sym := k.Shape[i].Sym
	for _, n := range f.counts[sym] {
		if !n.Input {
			continue
		}
		in := f.comp.Input(n.Port)
		switch {
		case n.Kind == CountRows && n.Factor > 1:
			return fmt.Sprintf("batch_layout: { kind: request_expanded, axis: %d, factor: %d }", i, n.Factor)
		case n.Kind == CountRows:
			return fmt.Sprintf("batch_layout: { kind: request_aligned, axis: %d }", i)
		case i != 0:
			// A packed output packs on axis 0: only a graph that puts the
			// count there can split it.
			continue
		case n.Kind == CountPacked:
			return preservedLevels(in.Contract.Layout.Levels, 0)
		case n.Kind == CountUnits:
			return preservedLevels(in.Contract.Layout.Levels, n.Level)
		}
	}
	return ""
}

// preservedLevels spells a token_packed layout that keeps the input
// levels from the one whose units it counts outward, each preserved.
func preservedLevels(levels []ir.Level, from int) string {
	var lv []string
	for _, l := range levels[from:] {
		lv = append(lv, fmt.Sprintf("{ offsets: %s, owner: %s, extent: preserved }", l.Offsets.Name, l.Owner.Name))
	}
	return "batch_layout: { kind: token_packed, axis: 0, levels: [" + strings.Join(lv, ", ") + "] }"
}

// lengthsOf is the valid_lengths the first input port padding sym names,
// or a placeholder.
func (f *capacityFacts) lengthsOf(sym string) string {
	for _, p := range contractPorts(f.comp, true) {
		for _, pd := range p.Contract.Padding {
			if pd.Dim.Name == sym {
				return pd.Lengths.Name
			}
		}
	}
	return "LENGTHS"
}

// layoutYAML spells a batch_layout as a document writes it.
func layoutYAML(l ir.Layout) string {
	switch l.Kind {
	case ir.RequestExpanded:
		return fmt.Sprintf("{ kind: request_expanded, axis: %d, factor: %d }", l.Axis, l.Factor)
	case ir.TokenPacked:
		var lv []string
		for _, x := range l.Levels {
			lv = append(lv, fmt.Sprintf("{ offsets: %s, owner: %s }", x.Offsets.Name, x.Owner.Name))
		}
		return fmt.Sprintf("{ kind: token_packed, axis: %d, levels: [%s] }", l.Axis, strings.Join(lv, ", "))
	}
	return fmt.Sprintf("{ kind: %s, axis: %d }", l.Kind, l.Axis)
}

// sharedHow says how a port is shared: by default or as declared.
func sharedHow(k *ir.Contract) string {
	if k.Layout.Loc != 0 {
		return "declares batch_layout shared"
	}
	return "is shared (the default when a port declares no batch_layout)"
}
