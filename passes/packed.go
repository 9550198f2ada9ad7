package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// PackedPass checks token_packed layouts (§4 r1–r8): resolvable, well-typed companions on axis 0, one or two levels, extents on output levels, consistent pairs.
//
// One defect gets one diagnostic. The checks run in an order that lets the
// most specific finding silence the ones it explains: a level whose shape is
// wrong as a whole (a value serving two roles, a preserved level that
// preserves nothing, an offsets vector paired with a second owner) takes part
// in no extent comparison, and a companion that is malformed on its own
// (wrong dtype, rank, layout, padding) takes part in no comparison at all.
var PackedPass = &Pass{
	Name:     "packed",
	Doc:      "check token_packed layouts (rules packed/*; see docs/authoring.md#token_packed): resolvable, well-typed companions on axis 0, one or two levels, extents on output levels, consistent pairs",
	Kind:     Check,
	Requires: []*Pass{ScopesPass, BindingsPass},
	Rules: []diag.Rule{
		diag.PackedUnresolved, diag.PackedAxis, diag.PackedLevels, diag.PackedCompanion,
		diag.PackedCompanionRole, diag.PackedExtent, diag.PackedPair,
		diag.PackedDoubleSpelling, diag.PackedOwnerSuppliable,
	},
	Run: func(c *Context) (any, error) {
		p := &packedChecker{c: c, sc: c.Result(ScopesPass).(*Scopes),
			bad: map[*ir.Contract]bool{}, seen: map[string]bool{}, bind: c.Result(BindingsPass).(*Bindings)}
		p.run()
		return nil, nil
	},
}

// packedRole is what a level companion is to its level.
type packedRole uint8

const (
	packedOffsets packedRole = iota
	packedOwner
)

func (r packedRole) String() string {
	if r == packedOwner {
		return "owner map"
	}
	return "offsets"
}

// content is the preprocessing content role a companion of this role
// carries.
func (r packedRole) content() string {
	if r == packedOwner {
		return "pack_owner"
	}
	return "pack_offsets"
}

// packedCompanion is one name a level writes, and what it resolved to.
type packedCompanion struct {
	ref      ir.Ref
	role     packedRole
	target   Target
	resolved bool
}

// contract returns the companion's contract, or nil when it has none.
func (pc *packedCompanion) contract() *ir.Contract {
	if !pc.resolved {
		return nil
	}
	return pc.target.Contract
}

// packedLevel is one ownership level of one packed contract.
type packedLevel struct {
	site           *ir.Site
	index          int
	level          *ir.Level
	offsets, owner packedCompanion
	// overflow: the site declares more than two levels, so no level of it
	// has a position to be checked against.
	overflow bool
	// broken: a structural defect of this level is already reported, so it
	// takes part in no extent comparison.
	broken bool
	// conflict: the offsets are paired with another owner elsewhere; the
	// owner is the wrong value, not a malformed one.
	conflict bool
}

func (l *packedLevel) companions() []*packedCompanion {
	return []*packedCompanion{&l.offsets, &l.owner}
}

// describe names the level the way messages do.
func (l *packedLevel) describe(pc *packedCompanion) string {
	return fmt.Sprintf("level %d %s `%s` of %s", l.index, pc.role, pc.ref.Name, l.site)
}

type packedChecker struct {
	c      *Context
	sc     *Scopes
	levels []*packedLevel
	// bad holds companions with a defect of their own: they take part in
	// no comparison, which would only restate it.
	bad map[*ir.Contract]bool
	// seen de-duplicates findings about one declaration named from
	// several sites.
	seen map[string]bool
	// bind says which values some step, cell initializer or serving
	// declaration reads.
	bind *Bindings
}

func (p *packedChecker) once(key string) bool {
	if p.seen[key] {
		return false
	}
	p.seen[key] = true
	return true
}

func (p *packedChecker) run() {
	for _, s := range p.sc.Sites {
		if s.Contract != nil && s.Contract.Packed() {
			p.site(s)
		}
	}
	// Pairs are reconciled across every site (input and output levels of
	// every component, workflow inputs, outputs and cells, program outputs)
	// before extents are judged: an output level that pairs an input's
	// offsets with another owner names the wrong pair (r6), which is what
	// makes it preserve nothing.
	p.pairOwners()
	for _, l := range p.levels {
		if !l.overflow {
			p.extent(l)
		}
	}
	for _, l := range p.levels {
		p.companionsOwn(l)
	}
	for _, l := range p.levels {
		p.levelExtents(l)
	}
	p.pairExtents()
	for _, l := range p.levels {
		p.ownerExtent(l)
	}
}

// site checks what one packed contract says on its own and collects its
// levels for the checks that compare levels across sites.
func (p *packedChecker) site(s *ir.Site) {
	k := s.Contract
	p.axis(s)
	p.doubleSpelling(s)
	n := len(k.Layout.Levels)
	switch {
	case n == 0:
		p.c.Report(diag.PackedLevels, packedLoc(k.Layout.Loc, k.Loc),
			"%s is token_packed but declares no ownership levels; a packed run is only attributable to requests through at least one offsets/owner pair\nwrite `levels: [{ offsets: <o>, owner: <w> }]`", s)
	case n > 2:
		p.c.Report(diag.PackedLevels, packedLoc(k.Layout.Levels[2].Loc, k.Layout.Loc, k.Loc),
			"%s declares %d ownership levels, more than the 2 a packed value may carry (items in units, units in request rows)\nkeep at most two levels, innermost first", s, n)
	}
	var levels []*packedLevel
	for i := range k.Layout.Levels {
		lv := &k.Layout.Levels[i]
		l := &packedLevel{site: s, index: i, level: lv, overflow: n > 2,
			offsets: packedCompanion{ref: lv.Offsets, role: packedOffsets},
			owner:   packedCompanion{ref: lv.Owner, role: packedOwner}}
		for _, pc := range l.companions() {
			p.resolve(l, pc)
		}
		levels = append(levels, l)
	}
	if n <= 2 {
		p.structure(levels)
	}
	p.levels = append(p.levels, levels...)
}

// axis checks §4 r2: the packed axis is 0, wherever token_packed appears.
func (p *packedChecker) axis(s *ir.Site) {
	k := s.Contract
	a := k.Layout.Axis
	if a == 0 {
		return
	}
	loc := packedLoc(k.Layout.AxisLoc, k.Layout.Loc, k.Loc)
	if a < 0 || (k.Rank >= 0 && a >= int64(k.Rank)) {
		where := "which names no axis"
		if k.Rank >= 0 {
			where = fmt.Sprintf("outside its rank %d", k.Rank)
		}
		p.c.Report(diag.PackedAxis, loc,
			"%s packs items along axis %d, %s; a packed axis must be axis 0\nput the packed dimension first in the shape and write `axis: 0`", s, a, where)
		return
	}
	fix := "put the packed dimension first in the shape and write `axis: 0`"
	if d, _, ok := packedDim(k); ok {
		fix = fmt.Sprintf("move %s to the front of the shape and write `axis: 0`", packedDimText(d))
	}
	p.c.Report(diag.PackedAxis, loc,
		"%s packs items along axis %d; a packed axis must be axis 0, because only then is each request's span a contiguous range that can be aliased rather than gathered\n%s", s, a, fix)
}

// doubleSpelling checks §4 r7: no padding on the dimension a value packs.
func (p *packedChecker) doubleSpelling(s *ir.Site) {
	d, axis, ok := packedDim(s.Contract)
	if !ok || !d.IsSym() {
		return
	}
	for _, pad := range s.Contract.Padding {
		if pad.Dim.Name == d.Sym {
			p.c.ReportRelated(diag.PackedDoubleSpelling, packedLoc(pad.Dim.Loc, pad.Loc),
				[]Related{{Loc: s.Contract.Layout.Loc, Message: "the token_packed layout is declared here"}},
				"%s declares padding on dimension `%s`, which is the axis %d it packs items along; packed items are contiguous and carry no padding, and the level offsets already say where each one ends\ndrop this padding entry",
				s, d.Sym, axis)
		}
	}
}

// resolve checks §4 r1: a level companion names a value visible in the
// contract's scope. A workflow input no step reads is exempt: nothing
// assembles, groups or splits it, so its companions are never looked up
// (the one-level rewrite of a retired flat pair in a document with no steps
// must load, corpus case 105). What its companions are declared to be, when
// they resolve, is still checked.
func (p *packedChecker) resolve(l *packedLevel, pc *packedCompanion) {
	if pc.ref.Name == "" {
		return
	}
	pc.target, pc.resolved = p.sc.Lookup(l.site, pc.ref.Name)
	if !pc.resolved && (l.site.Kind != ir.SiteInput || p.bind.Read(l.site.Name)) {
		p.c.ReportName(diag.PackedUnresolved, packedLoc(pc.ref.Loc, l.level.Loc), pc.ref.Name, diag.DidYouMean(pc.ref.Name, p.sc.Names(l.site)),
			"%s names `%s` as its level %d %s, which is not a declared value or port in that scope (%s)\ndeclare it there or name one that is",
			l.site, pc.ref.Name, l.index, pc.role, packedScopeText(l.site))
	}
}

// packedScopeText says where a name written in site's contract is looked
// up.
func packedScopeText(s *ir.Site) string {
	const wf = "the workflow's inputs, state cells, step values and outputs"
	switch s.Kind {
	case ir.SitePortIn, ir.SitePortOut:
		return fmt.Sprintf("the ports of component `%s`, then %s", s.Component.Name, wf)
	case ir.SiteProgram:
		return fmt.Sprintf("the outputs of preprocessing.%s, then %s", s.Program.Modality, wf)
	}
	return wf
}

// structure checks, within one levels list, that offsets and owner of a
// level are two values, that no value serves two levels or two roles
// (§4 r4), and that no pair repeats (§4 r6).
func (p *packedChecker) structure(levels []*packedLevel) {
	for _, l := range levels {
		if l.offsets.ref.Name != "" && l.offsets.ref.Name == l.owner.ref.Name {
			l.broken = true
			p.c.Report(diag.PackedCompanion, packedLoc(l.owner.ref.Loc, l.level.Loc),
				"%s names `%s` as both its level %d offsets and its level %d owner map; the two are different vectors of different lengths (units + 1 and %s), so one value cannot be both\ndeclare a separate owner map",
				l.site, l.owner.ref.Name, l.index, l.index, packedOwnerUnit(l.index))
		}
	}
	if len(levels) != 2 {
		return
	}
	inner, outer := levels[0], levels[1]
	if inner.offsets.ref.Name != "" && inner.offsets.ref.Name == outer.offsets.ref.Name &&
		inner.owner.ref.Name != "" && inner.owner.ref.Name == outer.owner.ref.Name {
		outer.broken = true
		p.c.ReportRelated(diag.PackedPair, packedLoc(outer.level.Loc, outer.offsets.ref.Loc),
			[]Related{{Loc: inner.level.Loc, Message: "level 0 names the same pair"}},
			"%s repeats the pair (offsets `%s`, owner map `%s`) at levels 0 and 1; level 1 groups the units of level 0 into request rows, so it needs a pair of its own\nname the outer grouping's offsets and owner map there",
			outer.site, outer.offsets.ref.Name, outer.owner.ref.Name)
		return
	}
	for _, pc := range outer.companions() {
		if pc.ref.Name == "" {
			continue
		}
		for _, prev := range inner.companions() {
			if prev.ref.Name != pc.ref.Name {
				continue
			}
			outer.broken = true
			p.c.ReportRelated(diag.PackedCompanion, packedLoc(pc.ref.Loc, outer.level.Loc),
				[]Related{{Loc: prev.ref.Loc, Message: fmt.Sprintf("level 0 names `%s` here", prev.ref.Name)}},
				"%s names `%s` as both its level 0 %s and its level 1 %s; the two are different vectors of different lengths, so one value cannot serve two levels\ndeclare a separate %s for level 1",
				outer.site, pc.ref.Name, prev.role, pc.role, pc.role)
		}
	}
}

// packedOwnerUnit says what an owner map at level i has one entry per.
func packedOwnerUnit(i int) string {
	if i == 0 {
		return "one entry per packed position"
	}
	return fmt.Sprintf("one entry per unit of level %d", i-1)
}

// extent checks §4 r5: output levels state who produces their units, input
// levels state nothing, and the statement is true of the component. Input
// levels are a component's input ports' and the workflow's inputs'; output
// levels are a component's output ports' and a program's outputs'. A
// workflow output's level may state an extent, and nothing checks it: no
// graph stands behind a workflow output to produce or preserve anything.
func (p *packedChecker) extent(l *packedLevel) {
	switch l.site.Kind {
	case ir.SitePortIn, ir.SiteInput:
		if l.level.Extent != ir.ExtentNone {
			p.c.Report(diag.PackedExtent, l.level.Loc,
				"%s declares level %d `extent: %s`, but an input level carries no extent: every count of a value it consumes is one its caller assembled\ndrop `extent`",
				l.site, l.index, l.level.Extent)
		}
	case ir.SitePortOut, ir.SiteProgram:
		if l.conflict && l.level.Extent != ir.ExtentNone {
			// packed/pair reported the level's owner as the wrong one;
			// whether the pair is preserved or produced is moot until it
			// names the right pair.
			l.broken = true
			return
		}
		switch l.level.Extent {
		case ir.ExtentNone:
			l.broken = true
			p.c.Report(diag.PackedExtent, l.level.Loc,
				"%s declares no extent for level %d; a level either preserves an input level's units one for one or has its units produced by the graph\nwrite `extent: preserved` or `extent: produced`",
				l.site, l.index)
		case ir.ExtentProduced:
			p.produced(l)
		case ir.ExtentPreserved:
			p.preserved(l)
		}
	}
}

// produced checks that a produced level's companions are outputs of the
// component (or program) that produces the value.
func (p *packedChecker) produced(l *packedLevel) {
	var names, what []string
	var related []Related
	at := ir.Loc(0)
	for _, pc := range l.companions() {
		if !pc.resolved || p.ownOutput(l.site, pc.target) {
			continue
		}
		at = packedLoc(at, pc.ref.Loc)
		names = append(names, fmt.Sprintf("`%s`", pc.ref.Name))
		what = append(what, fmt.Sprintf("its %s `%s` is %s", pc.role, pc.ref.Name, pc.target))
		related = append(related, Related{Loc: pc.target.Loc, Message: fmt.Sprintf("`%s` is declared here", pc.ref.Name)})
	}
	if len(names) == 0 {
		return
	}
	l.broken = true
	p.c.ReportRelated(diag.PackedExtent, packedLoc(at, l.level.Loc), related,
		"%s declares level %d `extent: produced`, but %s, not an output of %s; a level the graph decides is described by companions the graph emits\ndeclare %s as outputs there, or write `extent: preserved` if the level keeps an input level's units",
		l.site, l.index, strings.Join(what, " and "), packedProducer(l.site), strings.Join(names, " and "))
}

// preserved checks that a preserved level reuses a pair an input port of
// the same component carries, and names none of the component's outputs.
func (p *packedChecker) preserved(l *packedLevel) {
	if l.site.Kind == ir.SiteProgram {
		l.broken = true
		p.c.Report(diag.PackedExtent, l.level.Loc,
			"%s declares level %d `extent: preserved`, but a preprocessing program has no input level to preserve\nwrite `extent: produced` and name companions the program outputs",
			l.site, l.index)
		return
	}
	for _, pc := range l.companions() {
		if pc.resolved && p.ownOutput(l.site, pc.target) {
			l.broken = true
			p.c.Report(diag.PackedExtent, packedLoc(pc.ref.Loc, l.level.Loc),
				"%s declares level %d `extent: preserved` but its %s `%s` is an output port of the same component; preserving a level means reusing the companions that already described it on an input\nname the input's pair, or write `extent: produced`",
				l.site, l.index, pc.role, pc.ref.Name)
			return
		}
	}
	if l.offsets.ref.Name == "" || l.owner.ref.Name == "" || p.inputCarries(l) || p.inputUnresolved(l.site.Component) {
		return
	}
	l.broken = true
	p.c.Report(diag.PackedExtent, l.level.Loc,
		"%s declares level %d `extent: preserved`, but no input port of component `%s` declares an ownership level pairing offsets `%s` with owner map `%s`; a level is preserved by reusing the very pair that described it\nname an input level's pair, or write `extent: produced`",
		l.site, l.index, l.site.Component.Name, l.offsets.ref.Name, l.owner.ref.Name)
}

// ownOutput reports whether t is an output of the component or program
// that declares site.
func (p *packedChecker) ownOutput(site *ir.Site, t Target) bool {
	if t.Site == nil {
		return false
	}
	switch site.Kind {
	case ir.SitePortIn, ir.SitePortOut:
		return t.Site.Kind == ir.SitePortOut && t.Site.Component == site.Component
	case ir.SiteProgram:
		return t.Site.Kind == ir.SiteProgram && t.Site.Program == site.Program
	}
	return false
}

// packedProducer names what must output a produced level's companions.
func packedProducer(s *ir.Site) string {
	if s.Kind == ir.SiteProgram {
		return fmt.Sprintf("preprocessing.%s", s.Program.Modality)
	}
	return fmt.Sprintf("component `%s`", s.Component.Name)
}

// inputCarries reports whether an input port of l's component declares a
// level with l's pair.
func (p *packedChecker) inputCarries(l *packedLevel) bool {
	for _, in := range l.site.Component.Inputs {
		if in.Contract == nil || !in.Contract.Packed() {
			continue
		}
		for _, lv := range in.Contract.Layout.Levels {
			if lv.Offsets.Name == l.offsets.ref.Name && lv.Owner.Name == l.owner.ref.Name {
				return true
			}
		}
	}
	return false
}

// inputUnresolved reports whether an input level of comp names a companion
// that resolves to nothing: packed/unresolved reported it, and the pair a
// preserved output level reuses is likely the one that name misspells, so
// saying no input carries the pair would restate that one mistake.
func (p *packedChecker) inputUnresolved(comp *ir.Component) bool {
	for _, l := range p.levels {
		if l.site.Kind == ir.SitePortIn && l.site.Component == comp &&
			slices.ContainsFunc(l.companions(), func(pc *packedCompanion) bool { return pc.ref.Name != "" && !pc.resolved }) {
			return true
		}
	}
	return false
}

// pairOwners checks §4 r6's first half: one offsets vector is paired with
// one owner map wherever it is named.
func (p *packedChecker) pairOwners() {
	var ls []*packedLevel
	for _, l := range p.levels {
		if !l.overflow && !l.broken && l.offsets.resolved && l.owner.resolved {
			ls = append(ls, l)
		}
	}
	sameOwner := func(a, b *packedLevel) bool { return a.owner.ref.Name == b.owner.ref.Name }
	for _, group := range packedGroup(ls, func(l *packedLevel) string { return l.offsets.ref.Name }) {
		packedReconcile(group, sameOwner, func(l, ref *packedLevel) {
			l.conflict = true
			name := l.offsets.ref.Name
			p.c.ReportRelated(diag.PackedPair, packedLoc(l.owner.ref.Loc, l.level.Loc),
				[]Related{{Loc: ref.owner.ref.Loc, Message: fmt.Sprintf("%s pairs `%s` with `%s` here", ref.site, name, ref.owner.ref.Name)}},
				"%s pairs offsets `%s` with owner map `%s` at level %d, but %s pairs the same offsets with `%s`; one offsets vector describes one grouping, so it has one owner map\nname `%s` here, or give this level offsets of its own",
				l.site, name, l.owner.ref.Name, l.index, ref.site, ref.owner.ref.Name, ref.owner.ref.Name)
		})
	}
}

// packedGroup splits levels by key, in order of first appearance.
func packedGroup(ls []*packedLevel, key func(*packedLevel) string) [][]*packedLevel {
	index := map[string]int{}
	var out [][]*packedLevel
	for _, l := range ls {
		k := key(l)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], l)
	}
	return out
}

// packedScope says where a level's names resolve: the component (or
// program) whose ports (or outputs) its companions are, or "" for
// workflow-level values.
func packedScope(l *packedLevel) string {
	for _, pc := range l.companions() {
		switch t := pc.target.Site; {
		case !pc.resolved || t == nil:
		case t.IsPort():
			return "component " + t.Component.Name
		case t.Kind == ir.SiteProgram:
			return "preprocessing." + t.Program.Modality
		}
	}
	return ""
}

// packedReconcile finds, among levels naming one thing, those that
// disagree. A pair is keyed by its names, but two components' ports are
// different values even when they share a name, so levels are compared
// only within one scope and with the workflow-level ones, which bind the
// components together: those are the reference when there are any,
// otherwise the variant most levels of the scope agree on is (the first on
// a tie).
func packedReconcile(ls []*packedLevel, agree func(a, b *packedLevel) bool, report func(l, ref *packedLevel)) {
	scopes := packedGroup(ls, packedScope)
	var hub *packedLevel
	for _, g := range scopes {
		if packedScope(g[0]) == "" {
			hub = packedMajority(g, agree)
		}
	}
	for _, g := range scopes {
		ref := hub
		if ref == nil || packedScope(g[0]) == "" {
			ref = packedMajority(g, agree)
		}
		for _, l := range g {
			if !agree(l, ref) {
				report(l, ref)
			}
		}
	}
}

// packedMajority returns the element of ls that the most elements agree
// with, the first one on a tie.
func packedMajority(ls []*packedLevel, agree func(a, b *packedLevel) bool) *packedLevel {
	best, bestN := ls[0], 0
	for _, a := range ls {
		n := 0
		for _, b := range ls {
			if agree(a, b) {
				n++
			}
		}
		if n > bestN {
			best, bestN = a, n
		}
	}
	return best
}

// companionsOwn checks §4 r4, r8 and the role rule on each companion's own
// declaration: int64, rank 1, shared, no padding, the content role a
// program output must carry, and an owner the caller cannot supply.
func (p *packedChecker) companionsOwn(l *packedLevel) {
	for _, pc := range l.companions() {
		k := pc.contract()
		if k == nil || (pc.role == packedOwner && l.conflict) {
			continue
		}
		p.companionType(l, pc, k)
		p.companionRole(l, pc)
		if pc.role == packedOwner {
			p.ownerSuppliable(l, pc)
		}
	}
}

func (p *packedChecker) companionType(l *packedLevel, pc *packedCompanion, k *ir.Contract) {
	key := fmt.Sprintf("type %p %d", k, pc.role)
	if p.seen[key] {
		return
	}
	report := func(loc ir.Loc, format string, args ...any) {
		p.seen[key] = true
		p.bad[k] = true
		p.c.ReportRelated(diag.PackedCompanion, packedLoc(pc.ref.Loc, l.level.Loc),
			[]Related{{Loc: packedLoc(loc, k.Loc), Message: fmt.Sprintf("`%s` is declared here", pc.ref.Name)}},
			"%s "+format, append([]any{l.describe(pc)}, args...)...)
	}
	if _, known := ir.LookupDType(k.DType); known && !ir.SameDType(k.DType, "int64") {
		report(k.DTypeLoc, "is %s but must be int64: %s\ndeclare `dtype: int64`", k.DType, packedMeaning(pc.role))
	}
	if k.Rank >= 0 && k.Rank != 1 {
		report(packedLoc(k.RankLoc, k.Loc), "has rank %d but must be rank 1: %s\ndeclare its shape as one symbol", k.Rank, packedMeaning(pc.role))
	}
	if k.Layout.Kind != ir.Shared {
		report(k.Layout.Loc, "declares %s but must declare shared; %s\nwrite `batch_layout: { kind: shared }`", k.Layout.Kind, packedWhyShared(pc.role))
	}
	if len(k.Padding) > 0 {
		report(k.Padding[0].Loc, "declares padding of its own; a companion has exactly one entry per unit, so there is nothing in it to pad\ndrop its padding")
	}
}

// packedMeaning says what a companion holds, for messages.
func packedMeaning(r packedRole) string {
	if r == packedOwner {
		return "an owner map holds, for each position, the index of the unit that owns it"
	}
	return "offsets hold each unit's exclusive prefix offset, one per unit plus a final total"
}

// packedWhyShared says why a companion is shared, for messages.
func packedWhyShared(r packedRole) string {
	if r == packedOwner {
		return "an owner map indexes positions of the whole assembled group, not of one request"
	}
	return "an exclusive prefix sum is not permutation-followable, so it describes the whole group rather than one request row"
}

// companionRole checks that a preprocessing output named as a companion
// carries the content role that says it is one. Declarations without a
// content role (a component's graph outputs) are out of its reach.
func (p *packedChecker) companionRole(l *packedLevel, pc *packedCompanion) {
	po := pc.target.Site.ProgramOutput()
	if po == nil || po.Content == "" || po.Content == pc.role.content() {
		return
	}
	if !p.once(fmt.Sprintf("role %p %d", po, pc.role)) {
		return
	}
	p.c.ReportRelated(diag.PackedCompanionRole, packedLoc(pc.ref.Loc, l.level.Loc),
		[]Related{{Loc: po.Loc, Message: fmt.Sprintf("`%s` is declared with content `%s` here", po.Name, po.Content)}},
		"%s names `%s` as its level %d %s, but that output carries content role `%s`; a companion says what it is by its role, and the role that says this is `%s`\nwrite `content: %s` on it, or name the output that carries that role",
		l.site, pc.ref.Name, l.index, pc.role, po.Content, pc.role.content(), pc.role.content())
}

// ownerSuppliable checks §4 r8: an owner map is never externally
// suppliable.
func (p *packedChecker) ownerSuppliable(l *packedLevel, pc *packedCompanion) {
	if pc.target.Site == nil || pc.target.Site.Kind != ir.SiteInput {
		return
	}
	var in *ir.Input
	for _, x := range p.c.Module.Inputs {
		if x.Name == pc.target.Site.Name {
			in = x
			break
		}
	}
	if in == nil || !in.ExternallySuppliable || !p.once("suppliable "+in.Name) {
		return
	}
	p.c.ReportRelated(diag.PackedOwnerSuppliable, packedLoc(in.ExternalLoc, in.Loc),
		[]Related{{Loc: pc.ref.Loc, Message: fmt.Sprintf("%s names it as its level %d owner map here", l.site, l.index)}},
		"workflow input `%s` is externally_suppliable but %s names it as its level %d owner map; an owner map holds positions inside a group the application never sees, so no caller can supply one\ndrop `externally_suppliable` (offsets may stay suppliable, the runtime rebases them)",
		in.Name, l.site, l.index)
}

// levelExtents checks §4 r4 within a level: offsets and owner count
// different things, so their extent symbols differ.
func (p *packedChecker) levelExtents(l *packedLevel) {
	if !p.comparable(l) {
		return
	}
	o, _ := packedExtent(l.offsets.contract())
	w, _ := packedExtent(l.owner.contract())
	if !o.IsSym() || o.Sym != w.Sym {
		return
	}
	l.broken = true
	if !p.once(fmt.Sprintf("same-extent %p %p", l.offsets.contract(), l.owner.contract())) {
		return
	}
	p.c.ReportRelated(diag.PackedCompanion, packedLoc(l.offsets.ref.Loc, l.level.Loc),
		[]Related{{Loc: o.Loc, Message: fmt.Sprintf("`%s` is [%s]", l.offsets.ref.Name, o.Sym)}, {Loc: w.Loc, Message: fmt.Sprintf("`%s` is [%s]", l.owner.ref.Name, w.Sym)}},
		"%s declares level %d offsets `%s` and owner map `%s` with the same extent `%s`; offsets carry one entry per unit plus a final total and the owner map %s, so they cannot have one extent\n%s",
		l.site, l.index, l.offsets.ref.Name, l.owner.ref.Name, o.Sym, packedOwnerUnit(l.index), packedSameExtentFix(l, o.Sym))
}

// packedSameExtentFix says which of a level's two companions to re-declare
// when both have one extent symbol: at level 0 the owner map's extent is the
// packed axis symbol, so whichever of the two is not is the one to change.
func packedSameExtentFix(l *packedLevel, sym string) string {
	offsets := fmt.Sprintf("give the offsets a symbol of their own, e.g. [%s_len]", strings.ReplaceAll(l.offsets.ref.Name, ".", "_"))
	if l.index != 0 {
		return "declare the offsets over the count of request rows plus one and the owner map over the count of level-0 units, each with a symbol of its own"
	}
	if d, _, ok := packedDim(l.site.Contract); ok && d.IsSym() && d.Sym != sym {
		return fmt.Sprintf("declare the owner map over the packed axis symbol, [%s]", d.Sym)
	}
	return offsets
}

// comparable reports whether l's two companions are sound enough to have
// their extents compared.
func (p *packedChecker) comparable(l *packedLevel) bool {
	if l.overflow || l.broken || l.conflict {
		return false
	}
	for _, pc := range l.companions() {
		k := pc.contract()
		if k == nil || p.bad[k] {
			return false
		}
		if _, ok := packedExtent(k); !ok {
			return false
		}
	}
	return true
}

// pairExtents checks §4 r6's second half: a pair's extent symbols are the
// same at every site that names it, one report per differing variant.
func (p *packedChecker) pairExtents() {
	var ls []*packedLevel
	for _, l := range p.levels {
		if p.comparable(l) {
			ls = append(ls, l)
		}
	}
	names := func(l *packedLevel) string { return l.offsets.ref.Name + "\x00" + l.owner.ref.Name }
	for _, group := range packedGroup(ls, names) {
		var reported []*packedLevel
		packedReconcile(group, packedSameExtents, func(l, ref *packedLevel) {
			l.conflict = true
			if !slices.ContainsFunc(reported, func(r *packedLevel) bool { return packedSameExtents(r, l) }) {
				reported = append(reported, l)
				p.pairExtentReport(l, ref)
			}
		})
	}
}

func (p *packedChecker) pairExtentReport(l, ref *packedLevel) {
	o, _ := packedExtent(l.offsets.contract())
	w, _ := packedExtent(l.owner.contract())
	ro, _ := packedExtent(ref.offsets.contract())
	rw, _ := packedExtent(ref.owner.contract())
	var fix []string
	at := l.owner.ref.Loc
	if packedDimsDiffer(w, rw) {
		fix = append(fix, fmt.Sprintf("declare `%s` as [%s]", l.owner.ref.Name, packedDimPlain(rw)))
	}
	if packedDimsDiffer(o, ro) {
		fix = append(fix, fmt.Sprintf("declare `%s` as [%s]", l.offsets.ref.Name, packedDimPlain(ro)))
		at = l.offsets.ref.Loc
	}
	p.c.ReportRelated(diag.PackedPair, packedLoc(at, l.level.Loc),
		[]Related{{Loc: ref.level.Loc, Message: fmt.Sprintf("%s names the pair with extents [%s] and [%s] here", ref.site, packedDimPlain(ro), packedDimPlain(rw))}},
		"%s names the pair (offsets `%s`, owner map `%s`) at level %d with extents [%s] and [%s], but %s names the same pair with [%s] and [%s]; a pair is one mapping wherever it is named, so its counts cannot differ by the port that names it\n%s",
		l.site, l.offsets.ref.Name, l.owner.ref.Name, l.index, packedDimPlain(o), packedDimPlain(w), ref.site, packedDimPlain(ro), packedDimPlain(rw), strings.Join(fix, " and "))
}

// packedSameExtents reports whether two levels naming one pair agree on
// both extents.
func packedSameExtents(a, b *packedLevel) bool {
	ao, _ := packedExtent(a.offsets.contract())
	aw, _ := packedExtent(a.owner.contract())
	bo, _ := packedExtent(b.offsets.contract())
	bw, _ := packedExtent(b.owner.contract())
	return !packedDimsDiffer(ao, bo) && !packedDimsDiffer(aw, bw)
}

// ownerExtent checks §4 r4 for level 0: the owner map has one entry per
// packed position, so its extent symbol is the packed axis symbol.
func (p *packedChecker) ownerExtent(l *packedLevel) {
	if l.index != 0 || l.site.Contract.Layout.Axis != 0 || !p.comparable(l) {
		// With a packed/axis finding, which dimension was meant to be
		// packed is the question that finding asks.
		return
	}
	packed, _, ok := packedDim(l.site.Contract)
	w, _ := packedExtent(l.owner.contract())
	if !ok || !packedDimsDiffer(packed, w) {
		return
	}
	p.c.ReportRelated(diag.PackedCompanion, packedLoc(l.owner.ref.Loc, l.level.Loc),
		[]Related{{Loc: w.Loc, Message: fmt.Sprintf("`%s` is declared [%s] here", l.owner.ref.Name, packedDimPlain(w))},
			{Loc: packed.Loc, Message: fmt.Sprintf("the packed axis is %s here", packedDimText(packed))}},
		"level 0 owner map `%s` of %s has extent %s, but the packed axis symbol is %s; the level-0 owner map has one entry per packed position\ndeclare its shape as [%s]",
		l.owner.ref.Name, l.site, packedDimText(w), packedDimText(packed), packedDimPlain(packed))
}

// packedDim returns the dimension a token_packed contract packs (the one
// its axis names, when that is inside the shape) and its axis.
func packedDim(k *ir.Contract) (ir.Dim, int, bool) {
	if k == nil || !k.Packed() {
		return ir.Dim{}, -1, false
	}
	a := k.Layout.Axis
	if a < 0 || a >= int64(len(k.Shape)) {
		return ir.Dim{}, -1, false
	}
	return k.Shape[a], int(a), true
}

// packedExtent returns the one extent of a rank-1 contract.
func packedExtent(k *ir.Contract) (ir.Dim, bool) {
	if k == nil || !k.HasShape || len(k.Shape) != 1 {
		return ir.Dim{}, false
	}
	return k.Shape[0], true
}

// packedDimsDiffer reports whether two dimensions are known to differ: two
// different symbols, or two different fixed extents. A symbol and a fixed
// extent may agree.
func packedDimsDiffer(a, b ir.Dim) bool {
	if a.IsSym() && b.IsSym() {
		return a.Sym != b.Sym
	}
	if !a.IsSym() && !b.IsSym() {
		return a.Size != b.Size
	}
	return false
}

// packedDimText writes a dimension for a message: a symbol quoted, an
// extent bare.
func packedDimText(d ir.Dim) string {
	if d.IsSym() {
		return "`" + d.Sym + "`"
	}
	return fmt.Sprint(d.Size)
}

// packedDimPlain writes a dimension as the shape entry to declare.
func packedDimPlain(d ir.Dim) string {
	if d.IsSym() {
		return d.Sym
	}
	return fmt.Sprint(d.Size)
}

// packedLoc returns the first known location.
func packedLoc(locs ...ir.Loc) ir.Loc {
	for _, l := range locs {
		if l != 0 {
			return l
		}
	}
	return 0
}

// packedCompanionContracts returns the contracts of every value named as a
// level companion of a token_packed layout. The padding pass leaves their
// padding to the packed pass, which refuses a companion that has any.
func packedCompanionContracts(sc *Scopes) map[*ir.Contract]bool {
	out := map[*ir.Contract]bool{}
	for _, s := range sc.Sites {
		if s.Contract == nil || !s.Contract.Packed() {
			continue
		}
		for _, lv := range s.Contract.Layout.Levels {
			for _, r := range []ir.Ref{lv.Offsets, lv.Owner} {
				if t, ok := sc.Lookup(s, r.Name); ok && r.Name != "" && t.Contract != nil {
					out[t.Contract] = true
				}
			}
		}
	}
	return out
}
