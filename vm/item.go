package vm

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/sched"
)

// item is one request's share of a grouped invocation: its payload per
// port, its companions per level, its padded extents, and its footprint.
//
// Everything is indexed by the position of the input port in the
// GroupPlan (componentSpec.index), so that admitting an item allocates a
// few slices, not maps.
type item struct {
	ports []itemPort
	// uniform holds the item's extent of each uniform symbol.
	uniform []int64
	// spare is room for the item's chains, cut from a batch's slab
	// (itemSlab): admission takes what each port needs from it, and
	// allocates only once it runs out (an item admitted alone has none).
	spare struct {
		levels          [][]int64
		owners, lengths []*backend.Tensor
	}
	uniformInline [2]int64
	// terms caches the item's part of every budget term (componentSpec.
	// terms), computed on first use: admission checks it, and the policy
	// reads it for every candidate, several times.
	terms       []int64
	termsInline [4]int64
	// pad caches the item's padded parts (componentSpec.padParts) the
	// same way.
	pad       []int64
	padInline [4]int64
	// key is what one invocation cannot mix of the item beside its uniform
	// extents: what the component's session keys (backend.Keyer) and the
	// values of its shared inputs (sharedKey); "" where there is neither.
	key string
	// isolated says that a floating-point input of the item holds NaN or
	// an infinity: it runs in a group of its own (compatible), since a
	// model that mixes positions (a pooling matrix product, attention)
	// would carry it into the other items' results.
	isolated bool
}

// itemPort is an item's value of one input port.
type itemPort struct {
	t *backend.Tensor // a payload or broadcast input; nil for companions
	// levels holds, for a packed port, the item's offsets per level
	// (innermost first); its outermost level has exactly one row.
	levels [][]int64
	// owners holds the request's own owner map per level, when it was
	// checked at admission: a group of one passes it on as it is.
	owners []*backend.Tensor
	// lengths holds, for a padded port, the item's lengths per padding
	// entry (in the order of the port's Padded list).
	lengths []*backend.Tensor
}

// empty reports whether the item holds no unit at all: it has a packed
// port, and every packed port's outermost level counts zero units.
func (it *item) empty() bool {
	packed := false
	for _, p := range it.ports {
		if len(p.levels) == 0 {
			continue
		}
		packed = true
		top := p.levels[len(p.levels)-1]
		if top[len(top)-1] != 0 {
			return false
		}
	}
	return packed
}

// newItem returns an empty item of a component with n input ports.
func newItem(n int) *item {
	it := &item{ports: make([]itemPort, n)}
	it.uniform = it.uniformInline[:0]
	return it
}

// itemSlab holds the items a lockstep batch admits at one component, with
// their ports and chains, in a few allocations for the whole batch rather
// than several per item.
type itemSlab struct {
	items   []item
	ports   []itemPort
	levels  [][]int64
	owners  []*backend.Tensor
	lengths []*backend.Tensor
	// per item: ports, levels (and owners) and lengths
	nPorts, nLevels, nLengths int
}

func (s *componentSpec) newItemSlab(n int) *itemSlab {
	sl := &itemSlab{items: make([]item, n), nPorts: len(s.gp.Inputs)}
	for _, in := range s.gp.Inputs {
		if in.Role == plan.RoleCompanion {
			continue
		}
		if in.Role == plan.RolePacked {
			sl.nLevels += len(in.Levels)
		}
		sl.nLengths += len(in.Padded)
	}
	sl.ports = make([]itemPort, n*sl.nPorts)
	if sl.nLevels > 0 {
		sl.levels, sl.owners = make([][]int64, n*sl.nLevels), make([]*backend.Tensor, n*sl.nLevels)
	}
	if sl.nLengths > 0 {
		sl.lengths = make([]*backend.Tensor, n*sl.nLengths)
	}
	return sl
}

// clear empties every item of the slab.
func (sl *itemSlab) clear() {
	clear(sl.items)
	clear(sl.ports)
	clear(sl.levels)
	clear(sl.owners)
	clear(sl.lengths)
}

// item returns the slab's item i, empty, with its share of the slab.
func (sl *itemSlab) item(i int) *item {
	it := &sl.items[i]
	it.ports = sl.ports[i*sl.nPorts : (i+1)*sl.nPorts : (i+1)*sl.nPorts]
	it.uniform = it.uniformInline[:0]
	if sl.nLevels > 0 {
		lo, hi := i*sl.nLevels, (i+1)*sl.nLevels
		it.spare.levels, it.spare.owners = sl.levels[lo:hi:hi], sl.owners[lo:hi:hi]
	}
	if sl.nLengths > 0 {
		it.spare.lengths = sl.lengths[i*sl.nLengths : (i+1)*sl.nLengths : (i+1)*sl.nLengths]
	}
	return it
}

// cut takes the first n elements of *spare (an item's room for a chain)
// as an empty slice of capacity n, or nil when fewer are left.
func cut[T any](spare *[]T, n int) []T {
	if len(*spare) < n {
		return nil
	}
	s := (*spare)[:0:n]
	*spare = (*spare)[n:]
	return s
}

// componentSpec is what the runtime derives once per component from its
// contracts and GroupPlan.
type componentSpec struct {
	comp *ir.Component
	gp   *plan.GroupPlan
	m    *ir.Module // for the locations of the component's ports
	pads []padPort  // the payload inputs with padded axes
	// padLayout is where each of pads lies in an item's padded parts.
	padLayout sched.Pads
	// index maps an input port's name to its position in gp.Inputs.
	index map[string]int
	// budgets are the component's budgets, whose terms termInfo computes
	// of an item, in the same order.
	budgets  *sched.Budgets
	termInfo []termInfo
	// refs holds, per input port, where its companions come from (refAt).
	refs []portRefs
	// outNames are the component's output names, as every invocation
	// asks for them (the backend only reads them).
	outNames []string
	// contracts are the component's input contracts, by input position.
	contracts []*ir.Contract
	// uniformAt and sharedAt are the positions of gp.Uniform's ports and
	// of gp.SharedEqual among the inputs, found once.
	uniformAt, sharedAt []int
	// keyer is the component's session where it keys its invocations
	// (backend.Keyer): an adapter whose images resize to their own width.
	keyer backend.Keyer
	// fixed holds, per input position, the extents the component's graph
	// fixes (-1 where it leaves an axis dynamic; nil where the session does
	// not say, or fixes none): a request whose extent differs on such an
	// axis is refused at admission (checkFixed).
	fixed [][]int64
	// padTo holds, per input position, the extent the component's graph
	// fixes for each of its padded axes (0 where the graph leaves it
	// dynamic; nil for a port with none fixed): such an axis is padded to
	// that extent, in a group of one too (fixExtents).
	padTo [][]int64
}

// fixExtents learns from the session the extents its graph fixes for the
// component's inputs (backend.InputShaper) and what they mean for
// grouping. A padded axis it fixes: an item is padded to that extent
// whatever its group, its budget terms count it so, forming sees no
// padding to weigh there (every group pays it), and an item longer than
// it is refused at admission. A request axis it fixes (a graph exported
// with a batch of 1) lets no group form: decline says why, and the
// component runs one request per invocation from the start rather than
// failing every group and running its requests again alone; fixed at
// another extent than one request's rows, the graph can run no request
// at all, which is an error. Only a grouped component's request axes are
// judged (an ungrouped one may take a request's several rows).
func (s *componentSpec) fixExtents(sess backend.Session) (decline string, err error) {
	shaper, ok := sess.(backend.InputShaper)
	if !ok {
		return "", nil
	}
	for i, in := range s.gp.Inputs {
		dims := shaper.InputShape(in.Name)
		if slices.ContainsFunc(dims, func(d int64) bool { return d >= 0 }) {
			if s.fixed == nil {
				s.fixed = make([][]int64, len(s.gp.Inputs))
			}
			s.fixed[i] = dims
		}
		if s.gp.Grouped && (in.Role == plan.RoleRows || in.Role == plan.RoleExpanded) && in.Axis < len(dims) && dims[in.Axis] >= 0 {
			n, rows := dims[in.Axis], max(in.Factor, 1)
			if n != rows {
				return "", fmt.Errorf("component `%s`: its graph fixes axis %d of input `%s` (the requests' rows) at %d, but a request brings %d row(s) there: export the graph with that axis dynamic, or fixed at %d",
					s.comp.Name, in.Axis, in.Name, n, rows, rows)
			}
			if decline == "" {
				decline = fmt.Sprintf("its graph fixes axis %d of input `%s`, where a group stacks its requests' rows, to %d: one request per invocation (%s)",
					in.Axis, in.Name, n, plan.OpenAxis(in.Axis, n))
			}
		}
		for _, p := range in.Padded {
			if p.Axis >= len(dims) || dims[p.Axis] <= 0 {
				continue
			}
			if s.padTo == nil {
				s.padTo = make([][]int64, len(s.gp.Inputs))
			}
			if s.padTo[i] == nil {
				s.padTo[i] = make([]int64, len(dims))
			}
			s.padTo[i][p.Axis] = dims[p.Axis]
		}
	}
	if s.padTo == nil {
		return decline, nil
	}
	for k := range s.termInfo {
		t := &s.termInfo[k]
		if t.kind == termPadded && t.port >= 0 {
			t.fixed = s.fixedPad(t.port, t.axis)
		}
	}
	for k := range s.pads {
		p := &s.pads[k]
		p.fixed = make([]int64, len(p.axes))
		for j, a := range p.axes {
			p.fixed[j] = s.fixedPad(p.at, a)
		}
	}
	return decline, nil
}

// fixedPad is the extent the graph fixes for padded axis a of input
// position i, or 0.
func (s *componentSpec) fixedPad(i, a int) int64 {
	if i >= len(s.padTo) || a >= len(s.padTo[i]) {
		return 0
	}
	return s.padTo[i][a]
}

// termInfo is what admission and forming read of one budget term: the
// position of its port among the inputs (-1 for none) and the plan's term
// with its kind as a small integer (the plan's is a string, compared per
// item otherwise). A group's padded term (a padded or pinned axis) is its
// items' maximum, any other their sum.
type termInfo struct {
	port   int
	kind   termKind
	axis   int
	level  int
	factor int64
	fixed  int64 // a padded axis the graph fixes: every item spans it whole
}

// termKind is a plan.TermKind, numbered.
type termKind uint8

const (
	termOther termKind = iota
	termRows
	termPacked
	termUnits
	termPadded // or pinned
)

func newTermInfo(t plan.Term, port int) termInfo {
	ti := termInfo{port: port, axis: t.Axis, level: t.Level, factor: t.Factor}
	switch t.Kind {
	case plan.TermRows:
		ti.kind = termRows
	case plan.TermPacked:
		ti.kind = termPacked
	case plan.TermUnits:
		ti.kind = termUnits
	case plan.TermPadded, plan.TermPinned:
		ti.kind = termPadded
	}
	return ti
}

// portRefs locates one input port's companions: per level its offsets and
// owner, per padding entry its lengths.
type portRefs struct {
	offsets, owner, lengths []int
}

// at returns the position of input port name in the GroupPlan (-1 when
// the component has none).
func (s *componentSpec) at(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

func newComponentSpec(comp *ir.Component, gp *plan.GroupPlan, m *ir.Module, sl *slots) *componentSpec {
	s := &componentSpec{comp: comp, gp: gp, m: m, index: map[string]int{}}
	for _, o := range comp.Outputs {
		s.outNames = append(s.outNames, o.Name)
	}
	for i, in := range gp.Inputs {
		s.index[in.Name] = i
		var c *ir.Contract
		if p := comp.Input(in.Name); p != nil {
			c = p.Contract
		}
		s.contracts = append(s.contracts, c)
	}
	for _, u := range gp.Uniform {
		s.uniformAt = append(s.uniformAt, s.at(u.Port))
	}
	for _, name := range gp.SharedEqual {
		s.sharedAt = append(s.sharedAt, s.at(name))
	}
	s.budgets = &sched.Budgets{}
	for _, b := range gp.Budgets {
		largest := make([]bool, len(b.Terms))
		for j, t := range b.Terms {
			ti := newTermInfo(t, s.at(t.Port))
			s.termInfo = append(s.termInfo, ti)
			largest[j] = ti.kind == termPadded
		}
		s.budgets.Add(b.MaxTotal, largest...)
	}
	s.refs = make([]portRefs, len(gp.Inputs))
	for i, in := range gp.Inputs {
		r := &s.refs[i]
		for _, l := range in.Levels {
			r.offsets, r.owner = append(r.offsets, s.refAt(l.Offsets, sl)), append(r.owner, s.refAt(l.Owner, sl))
		}
		for _, p := range in.Padded {
			r.lengths = append(r.lengths, s.refAt(p.Lengths, sl))
		}
	}
	for i, in := range gp.Inputs {
		if len(in.Padded) == 0 || in.Role == plan.RoleCompanion || in.Role == plan.RoleBroadcast {
			continue
		}
		p := padPort{name: in.Name, at: i}
		for _, pad := range in.Padded {
			p.axes = append(p.axes, pad.Axis)
		}
		s.pads = append(s.pads, p)
	}
	axes := make([]int, len(s.pads))
	for k, p := range s.pads {
		axes[k] = len(p.axes)
	}
	s.padLayout = sched.NewPads(axes...)
	return s
}

// terms is the item's part of every budget term (itemTerm), in
// termInfo's order, computed once per item: an item is never changed once
// admitted.
func (s *componentSpec) terms(it *item) []int64 {
	if it.terms == nil {
		ts := it.termsInline[:0]
		for k := range s.termInfo {
			ts = append(ts, s.termInfo[k].of(it))
		}
		it.terms = ts
	}
	return it.terms
}

// refAt is where a companion reference's value comes from: the position of
// its port among the inputs, or for a workflow value its slot among the
// engine's (sl; -1 where they do not name it).
func (s *componentSpec) refAt(ref plan.Ref, sl *slots) int {
	if ref.Port == "" {
		if k, ok := sl.byName[ref.Value]; ok {
			return k
		}
		return -1
	}
	return s.at(ref.Port)
}

// values resolves the workflow-level values a component's companions name:
// a request's run reads its slot (found at Open), a map its name.
type values interface {
	named(name string, slot int) *backend.Tensor
}

// valueMap is values by name.
type valueMap map[string]*backend.Tensor

func (m valueMap) named(name string, _ int) *backend.Tensor { return m[name] }

// companionValue resolves a companion reference of a port to the request's
// tensor: a bound port of the invoke (at, its position among the inputs),
// or a workflow-level value.
func companionValue(ref plan.Ref, at int, args []*backend.Tensor, env values) *backend.Tensor {
	switch {
	case ref.Port == "":
		return env.named(ref.Value, at)
	case at < 0:
		return nil
	}
	return args[at]
}

// args lays a map of an invoke's arguments out by input position.
func (s *componentSpec) args(byName map[string]*backend.Tensor) []*backend.Tensor {
	args := make([]*backend.Tensor, len(s.gp.Inputs))
	for i, in := range s.gp.Inputs {
		args[i] = byName[in.Name]
	}
	return args
}

// argsAt returns, for each argument of an invoke step, the position of its
// port among the inputs (-1: the component has no such input).
func (s *componentSpec) argsAt(st *ir.Step) []int {
	at := make([]int, len(st.Args))
	for j, a := range st.Args {
		at[j] = s.at(a.Port)
	}
	return at
}

// admit builds and validates a request's item for a grouped component. A
// bad companion fails this request only, before it can join a group.
func (s *componentSpec) admit(args map[string]*backend.Tensor, env values) (*item, error) {
	return s.admitInto(newItem(len(s.gp.Inputs)), s.args(args), env)
}

// admitInto is admit into an empty item it (one of a batch's slab), with
// the arguments by input position.
func (s *componentSpec) admitInto(it *item, args []*backend.Tensor, env values) (*item, error) {
	for i := range s.gp.Inputs {
		in := &s.gp.Inputs[i]
		if in.Role == plan.RoleCompanion {
			continue
		}
		if err := s.admitPort(it, i, in, args, env); err != nil {
			return nil, backend.Located(err, s.m.Location(s.comp.Input(in.Name).Loc))
		}
	}
	for k, u := range s.gp.Uniform {
		it.uniform = append(it.uniform, it.ports[s.uniformAt[k]].t.Shape[u.Axis])
	}
	if s.keyer != nil {
		byName := make(map[string]*backend.Tensor, len(args))
		for i, t := range args {
			if t != nil {
				byName[s.gp.Inputs[i].Name] = t
			}
		}
		key, err := s.keyer.Key(byName)
		if err != nil {
			return nil, err
		}
		it.key = key
	}
	if len(s.sharedAt) > 0 {
		it.key = s.sharedKey(it)
	}
	for i := range it.ports {
		if t := it.ports[i].t; t != nil && backend.HasNonFinite(t.DType, t.Data) {
			it.isolated = true
			break
		}
	}
	return it, nil
}

// admitPort validates one payload port of the request and its companions.
func (s *componentSpec) admitPort(it *item, i int, in *plan.Port, args []*backend.Tensor, env values) error {
	t := args[i]
	if t == nil {
		return runErr("run/input", "component `%s` input port `%s` has no value", s.comp.Name, in.Name)
	}
	if err := s.checkPort(i, in, t); err != nil {
		return err
	}
	if err := s.checkFixed(i, t); err != nil {
		return err
	}
	it.ports[i].t = t
	if err := s.admitLevels(it, i, in, t, args, env); err != nil {
		return err
	}
	return s.admitPadding(it, i, in, t, args, env)
}

// checkFixed refuses a request's tensor for input position i whose
// extent differs from one the component's graph fixes: the caller's
// mistake, told at admission rather than by the backend once a group
// runs. Where the component groups, the axes whose extent is the group's
// (the packed axis, the request axis) and the padded ones (padded to the
// graph's extent, fixExtents) are not the request's to match.
func (s *componentSpec) checkFixed(i int, t *backend.Tensor) error {
	if i >= len(s.fixed) || s.fixed[i] == nil || t.Rank() != len(s.fixed[i]) {
		return nil
	}
	in := &s.gp.Inputs[i]
	for a, n := range s.fixed[i] {
		if n < 0 || t.Shape[a] == n {
			continue
		}
		if s.gp.Grouped {
			switch {
			case in.Role == plan.RolePacked && a == 0,
				(in.Role == plan.RoleRows || in.Role == plan.RoleExpanded) && a == in.Axis,
				slices.ContainsFunc(in.Padded, func(p plan.Pad) bool { return p.Axis == a }):
				continue
			}
		}
		return runErr("run/input", "component `%s` input port `%s` has extent %d on axis %d, but the component's graph fixes that axis at %d (the request is %s): send %d there",
			s.comp.Name, in.Name, t.Shape[a], a, n, t, n)
	}
	return nil
}

// checkArgs is checkFixed for every argument of an invocation of an
// ungrouped component, by port name.
func (s *componentSpec) checkArgs(args map[string]*backend.Tensor) error {
	if s.fixed == nil {
		return nil
	}
	for i, in := range s.gp.Inputs {
		if t := args[in.Name]; t != nil {
			if err := s.checkFixed(i, t); err != nil {
				return backend.Located(err, s.m.Location(s.comp.Input(in.Name).Loc))
			}
		}
	}
	return nil
}

// checkPort checks a payload tensor's rank and, for row layouts, that the
// request brings exactly its rows.
func (s *componentSpec) checkPort(i int, in *plan.Port, t *backend.Tensor) error {
	c := s.contracts[i]
	if c != nil && c.Rank >= 0 && t.Rank() != c.Rank {
		return runErr("run/input", "component `%s` input port `%s` expects rank %d, got %s", s.comp.Name, in.Name, c.Rank, t)
	}
	want := int64(1)
	if in.Role == plan.RoleExpanded {
		want = in.Factor
	}
	if (in.Role == plan.RoleRows || in.Role == plan.RoleExpanded) && (in.Axis >= t.Rank() || t.Shape[in.Axis] != want) {
		return runErr("run/input", "component `%s` input port `%s` is %s on axis %d: one request brings %d row(s) there, got %s",
			s.comp.Name, in.Name, in.Role, in.Axis, want, t)
	}
	return nil
}

// checkLevels validates the ownership chains of a request's packed inputs
// for a component that does not group (an adapter, say): its offsets and
// owners are checked like those of a grouped component's items, so that a
// companion the component never reads is still refused when it is wrong.
// Unlike an item, the request may hold any number of outermost units.
func (s *componentSpec) checkLevels(byName map[string]*backend.Tensor, env values) error {
	args := s.args(byName)
	for i, in := range s.gp.Inputs {
		t := args[i]
		if in.Role != plan.RolePacked || t == nil || t.Rank() == 0 {
			continue
		}
		children := t.Shape[0]
		for k := range in.Levels {
			offs, _, err := s.checkLevel(i, k, children, args, env)
			if err != nil {
				return backend.Located(err, s.m.Location(s.comp.Input(in.Name).Loc))
			}
			children = int64(len(offs) - 1)
		}
	}
	return nil
}

// checkLevel validates level k of packed input i over children entries
// below it: its offsets and owner are int64 vectors that agree. It returns
// the offsets and the owner tensor.
func (s *componentSpec) checkLevel(i, k int, children int64, args []*backend.Tensor, env values) ([]int64, *backend.Tensor, error) {
	in := &s.gp.Inputs[i]
	l := &in.Levels[k]
	ot := companionValue(l.Offsets, s.refs[i].offsets[k], args, env)
	wt := companionValue(l.Owner, s.refs[i].owner[k], args, env)
	if ot == nil || wt == nil || ot.DType != "int64" || wt.DType != "int64" || ot.Rank() != 1 || wt.Rank() != 1 {
		return nil, nil, runErr("run/input", "level %d companions `%s`/`%s` of `%s` must be int64 vectors, got %v and %v",
			l.Index, l.Offsets.Name(), l.Owner.Name(), in.Name, ot, wt)
	}
	offs := ot.Int64s()
	if err := checkOffsets(l.Offsets.Name(), l.Index, offs, children); err != nil {
		return nil, nil, err
	}
	if err := checkOwner(l.Owner.Name(), l.Index, wt.Int64s(), offs); err != nil {
		return nil, nil, err
	}
	return offs, wt, nil
}

// admitLevels validates the request's ownership chain of a packed port,
// innermost level first, and records its offsets.
func (s *componentSpec) admitLevels(it *item, i int, in *plan.Port, t *backend.Tensor, args []*backend.Tensor, env values) error {
	if in.Role != plan.RolePacked {
		return nil
	}
	children := t.Shape[0]
	offsets, owners := cut(&it.spare.levels, len(in.Levels)), cut(&it.spare.owners, len(in.Levels))
	for k := range in.Levels {
		offs, wt, err := s.checkLevel(i, k, children, args, env)
		if err != nil {
			return err
		}
		offsets = append(offsets, offs)
		owners = append(owners, wt)
		children = int64(len(offs) - 1)
	}
	if children != 1 {
		return runErr("run/extent", "the outermost level of `%s` counts %d rows, but one request is one row: its outer offsets are [0, items]", in.Name, children)
	}
	it.ports[i].levels, it.ports[i].owners = offsets, owners
	return nil
}

// admitPadding validates the request's lengths of a padded port.
func (s *componentSpec) admitPadding(it *item, i int, in *plan.Port, t *backend.Tensor, args []*backend.Tensor, env values) error {
	for k := range in.Padded {
		p := &in.Padded[k]
		lt := companionValue(p.Lengths, s.refs[i].lengths[k], args, env)
		if lt == nil || lt.DType != "int64" {
			return runErr("run/lengths", "valid_lengths `%s` of `%s` must be an int64 tensor, got %v", p.Lengths.Name(), in.Name, lt)
		}
		if p.Axis >= t.Rank() {
			return runErr("run/input", "`%s` is padded on axis %d but has rank %d", in.Name, p.Axis, t.Rank())
		}
		if n := s.fixedPad(i, p.Axis); n > 0 && t.Shape[p.Axis] > n {
			return runErr("run/input", "component `%s` input port `%s` has %d positions on its padded axis %d (`%s`), but the component's graph fixes that axis at %d: send at most %d",
				s.comp.Name, in.Name, t.Shape[p.Axis], p.Axis, p.Dimension, n, n)
		}
		if err := checkLengths(p.Lengths.Name(), p.Dimension, lt, t.Shape[:p.Axis], t.Shape[p.Axis]); err != nil {
			return err
		}
		if it.ports[i].lengths == nil {
			if p := cut(&it.spare.lengths, len(in.Padded)); p != nil {
				it.ports[i].lengths = p[:len(in.Padded)]
			} else {
				it.ports[i].lengths = make([]*backend.Tensor, len(in.Padded))
			}
		}
		it.ports[i].lengths[k] = lt
	}
	return nil
}

// sharedKey is the item's key with its shared inputs' values: items of
// a group bring equal values there (§3.4), so equal values must give equal
// keys and different values different ones. A value is written with its
// dtype, its shape and its elements in Go syntax, which tells apart any
// two that differ (floats in their shortest exact form).
func (s *componentSpec) sharedKey(it *item) string {
	b := fmt.Appendf(nil, "%d:%s", len(it.key), it.key)
	for _, i := range s.sharedAt {
		if t := it.ports[i].t; t != nil {
			b = fmt.Appendf(b, "%s%v%#v;", t.DType, t.Shape, t.Data)
		} else {
			b = append(b, "nil;"...)
		}
	}
	return string(b)
}

func equalTensor(a, b *backend.Tensor) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		return false
	}
	return reflect.DeepEqual(a.Data, b.Data)
}

// entryKey is what says which items may share an invocation (§3.4, §9):
// equal uniform extents and an equal key; an isolated item joins no other.
func entryKey(it *item) sched.Key {
	return sched.Key{Name: it.key, Dims: it.uniform, Alone: it.isolated}
}

// of is one item's part of the budget term: its packed extent, its units
// of a level, its rows, or its extent on a padded or pinned axis.
func (t *termInfo) of(it *item) int64 {
	if t.kind == termRows {
		return max(t.factor, 1) // one request: one row, or factor rows when expanded
	}
	if t.port < 0 {
		return 0
	}
	switch p := it.ports[t.port].t; t.kind {
	case termPacked:
		if p != nil {
			return p.Shape[0]
		}
	case termUnits:
		if offs := it.ports[t.port].levels; t.level-1 < len(offs) && t.level >= 1 {
			return int64(len(offs[t.level-1]) - 1)
		}
	case termPadded:
		if p != nil && t.axis < p.Rank() {
			return max(p.Shape[t.axis], t.fixed)
		}
	}
	return 0
}

// padPort is a payload input port with padded axes.
type padPort struct {
	name  string
	at    int // its position in the GroupPlan's inputs
	axes  []int
	fixed []int64 // per padded axis: the extent the graph fixes, or 0
}

// padParts returns the item's padded parts (sched.Entry.Pad), per padded
// port in turn: its rows (extent on axis 0), the product of its axes other
// than 0 and the padded ones (inner), its own element count, then its
// extent on each padded axis (0 where its rank stops short). An item never
// changes once admitted, and the policy reads these for every candidate of
// every group that might take it, so they are computed once, like its
// budget terms.
func (s *componentSpec) padParts(it *item) []int64 {
	if it.pad == nil && len(s.pads) > 0 {
		v := it.padInline[:0]
		for _, p := range s.pads {
			t := it.ports[p.at].t.Shape
			own := backend.Elements(t)
			if p.fixed != nil {
				// Padded to what the graph fixes alone too: that padding
				// is the item's own, not the group's.
				for j, a := range p.axes {
					if a < len(t) && p.fixed[j] > t[a] && t[a] > 0 {
						own = own / t[a] * p.fixed[j]
					}
				}
			}
			v = append(v, t[0], p.inner(t), own)
			for j, a := range p.axes {
				var e int64
				if a < len(t) {
					e = t[a]
				}
				if p.fixed != nil {
					e = max(e, p.fixed[j])
				}
				v = append(v, e)
			}
		}
		it.pad = v
	}
	return it.pad
}

// padParts writes sched.PadLead parts before a port's extents: rows,
// inner and own.
var _ = [1]struct{}{}[sched.PadLead-3]

// inner is the product of a shape's axes other than 0 and the padded ones.
func (p *padPort) inner(shape []int64) int64 {
	inner := int64(1)
	for a := 1; a < len(shape); a++ {
		if !slices.Contains(p.axes, a) {
			inner *= shape[a]
		}
	}
	return inner
}
