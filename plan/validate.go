package plan

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/genaic/genaic/ir"
)

// Validate checks a decoded plan as untrusted input: every GroupPlan field
// in range and consistent with the plan's IR, so that a plan edited by hand
// (with its signature recomputed) is refused with a message naming the
// field, never executed into a panic. Decode runs it after the IR's own
// invariants (ir.Verify) hold.
//
// It checks that the GroupPlans and the IR's components correspond one to
// one; that every port plan names the component's ports in declaration
// order, with a role or split that is a known word and the one its contract
// (or the port it serves) makes it; that axes, factors, levels and padded
// dimensions are those of the port's contract; that every reference (a
// level's companions, a preserved level's input pair, a served port, a
// uniform symbol's port, a shared input, a budget term's port) names a port
// or value that exists, on the right side, at an index in range; that
// budgets are the IR's, with max_total >= 1 and 1 <= min_item <= max_total
// and terms of known kinds measured on valid ports and axes; and that
// artifacts name components and stay inside the package.
func (f *File) Validate() error {
	v := &validator{m: f.IR}
	v.file(f)
	if len(v.problems) == 0 {
		return nil
	}
	const most = 8
	ps := v.problems
	more := ""
	if len(ps) > most {
		more = fmt.Sprintf("; and %d more", len(ps)-most)
		ps = ps[:most]
	}
	return fmt.Errorf("%s%s", strings.Join(ps, "; "), more)
}

type validator struct {
	m        *ir.Module
	problems []string
}

func (v *validator) fail(field, format string, args ...any) {
	v.problems = append(v.problems, field+": "+fmt.Sprintf(format, args...))
}

func (v *validator) file(f *File) {
	if f.SchemaVersion != f.IR.Schema {
		v.fail("schema_version", "is %q but the IR was compiled from %q", f.SchemaVersion, f.IR.Schema)
	}
	if !localPath(f.Source) {
		v.fail("source", "%q is not a file name inside the package folder", f.Source)
	}
	if !isHex(f.SourceSHA256) {
		v.fail("source_sha256", "%q is not a lower-case hex SHA-256", f.SourceSHA256)
	}
	irComps := map[string]*ir.Component{}
	for _, c := range f.IR.Components {
		if c != nil {
			irComps[c.Name] = c
		}
	}
	seen := map[string]bool{}
	for i, g := range f.Components {
		field := fmt.Sprintf("components[%d]", i)
		if g == nil {
			v.fail(field, "is null")
			continue
		}
		field += fmt.Sprintf(" (`%s`)", g.Component)
		if seen[g.Component] {
			v.fail(field+".component", "`%s` has a second GroupPlan; a component has exactly one", g.Component)
			continue
		}
		seen[g.Component] = true
		c := irComps[g.Component]
		if c == nil {
			v.fail(field+".component", "`%s` is not a component of the plan's IR", g.Component)
			continue
		}
		gv := &groupValidator{validator: v, field: field, g: g, c: c}
		gv.check()
	}
	for _, c := range f.IR.Components {
		if c != nil && !seen[c.Name] {
			v.fail("components", "component `%s` of the plan's IR has no GroupPlan", c.Name)
		}
	}
	v.contracts()
	arts := map[string]bool{}
	for i, a := range f.Artifacts {
		field := fmt.Sprintf("artifacts[%d]", i)
		c := irComps[a.Component]
		switch {
		case c == nil:
			v.fail(field+".component", "`%s` is not a component of the plan's IR", a.Component)
		case arts[a.Component]:
			v.fail(field+".component", "component `%s` has a second artifact", a.Component)
		case c.Artifact == "":
			v.fail(field+".component", "component `%s` declares no artifact", a.Component)
		}
		arts[a.Component] = true
		if !localPath(a.Path) {
			v.fail(field+".path", "%q is not a path inside the package folder", a.Path)
		}
		if a.SHA256 != "" && !isHex(a.SHA256) {
			v.fail(field+".sha256", "%q is not a lower-case hex SHA-256", a.SHA256)
		}
		v.ops(field+".ops", c, a.Ops)
	}
}

// ops checks an artifact's operator types: an ONNX component's, sorted,
// each once, each a non-empty name without spaces or control characters.
func (v *validator) ops(field string, c *ir.Component, ops []string) {
	if len(ops) == 0 {
		return
	}
	if c != nil && c.Impl != ir.ImplONNX {
		v.fail(field, "lists operator types, but component `%s` is not an ONNX graph", c.Name)
		return
	}
	for i, op := range ops {
		switch {
		case op == "" || strings.IndexFunc(op, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			v.fail(fmt.Sprintf("%s[%d]", field, i), "%q is not an operator type", op)
		case i > 0 && ops[i-1] >= op:
			v.fail(fmt.Sprintf("%s[%d]", field, i), "%q is out of order or repeated; operator types are sorted, each once", op)
		}
	}
}

// localPath reports whether p is a relative, /-separated path that stays
// inside its folder.
func localPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../") && c != "."
}

func isHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// groupValidator checks one GroupPlan against its IR component.
type groupValidator struct {
	*validator
	field string
	g     *GroupPlan
	c     *ir.Component
}

func (v *groupValidator) check() {
	g, c := v.g, v.c
	if g.Grouped != (c.Capacity != nil) {
		v.fail(v.field+".grouped", "is %v but the component %s batch_capacity", g.Grouped, map[bool]string{true: "declares", false: "declares no"}[c.Capacity != nil])
	}
	if v.ports("inputs", g.Inputs, c.Inputs) {
		for i := range g.Inputs {
			v.port(fmt.Sprintf("%s.inputs[%d] (`%s`)", v.field, i, g.Inputs[i].Name), &g.Inputs[i], c.Inputs[i], true)
		}
	}
	outputsOK := v.ports("outputs", g.Outputs, c.Outputs)
	if outputsOK {
		for i := range g.Outputs {
			v.port(fmt.Sprintf("%s.outputs[%d] (`%s`)", v.field, i, g.Outputs[i].Name), &g.Outputs[i], c.Outputs[i], false)
		}
	}
	if c.Capacity == nil {
		if len(g.Uniform) > 0 || len(g.SharedEqual) > 0 || len(g.KeyedBy) > 0 || len(g.Budgets) > 0 {
			v.fail(v.field, "a solo component carries no uniform, shared_equal, keyed_by or budgets")
		}
		return
	}
	v.uniform()
	v.sharedEqual()
	v.budgets(outputsOK)
}

// ports checks that a side lists the component's ports in declaration
// order; it reports whether the port plans may be checked one by one.
func (v *groupValidator) ports(side string, ps []Port, decl []*ir.Port) bool {
	if len(ps) != len(decl) {
		v.fail(v.field+"."+side, "lists %d ports, but the component declares %d", len(ps), len(decl))
		return false
	}
	ok := true
	for i, p := range ps {
		if decl[i] == nil || decl[i].Name != p.Name {
			want := "<none>"
			if decl[i] != nil {
				want = decl[i].Name
			}
			v.fail(fmt.Sprintf("%s.%s[%d].port", v.field, side, i), "is `%s`, but the component's %s port %d is `%s`", p.Name, strings.TrimSuffix(side, "s"), i, want)
			ok = false
		}
	}
	return ok
}

// rank returns a contract's number of axes, or -1 when it is not known.
func rank(k *ir.Contract) int {
	if k == nil {
		return -1
	}
	if k.HasShape {
		return len(k.Shape)
	}
	return k.Rank
}

// port checks one port plan against its declaration.
func (v *groupValidator) port(field string, p *Port, decl *ir.Port, input bool) {
	k := decl.Contract
	if k != nil && k.HasShape && k.Rank != len(k.Shape) {
		v.fail(field, "the IR contract has rank %d but %d shape entries", k.Rank, len(k.Shape))
		return
	}
	if p.Factor < 0 {
		v.fail(field+".factor", "is %d; a factor is at least 1", p.Factor)
	}
	if p.Axis < 0 {
		v.fail(field+".axis", "is %d; an axis is at least 0", p.Axis)
	}
	if p.Serves != nil {
		v.serves(field, p, input)
		return
	}
	if input {
		if p.Split != "" {
			v.fail(field+".split", "is set on an input port")
		}
		want := RoleBroadcast
		if k != nil {
			want = map[ir.LayoutKind]Role{ir.Shared: RoleBroadcast, ir.RequestAligned: RoleRows, ir.RequestExpanded: RoleExpanded, ir.TokenPacked: RolePacked}[k.Layout.Kind]
		}
		switch p.Role {
		case RoleBroadcast, RoleRows, RoleExpanded, RolePacked:
			if p.Role != want {
				v.fail(field+".role", "is %q, but the port's contract makes it %q", p.Role, want)
				return
			}
		case RoleCompanion:
			v.fail(field+".role", "is %q but the port serves nothing (no serves)", p.Role)
			return
		default:
			v.fail(field+".role", "%q is not a role (broadcast, rows, expanded, packed, companion)", p.Role)
			return
		}
	} else {
		if p.Role != "" {
			v.fail(field+".role", "is set on an output port")
		}
		want := SplitBroadcast
		if k != nil {
			want = map[ir.LayoutKind]Split{ir.Shared: SplitBroadcast, ir.RequestAligned: SplitRows, ir.RequestExpanded: SplitExpanded, ir.TokenPacked: SplitPacked}[k.Layout.Kind]
		}
		switch p.Split {
		case SplitBroadcast, SplitRows, SplitExpanded, SplitPacked:
			if p.Split != want {
				v.fail(field+".split", "is %q, but the port's contract makes it %q", p.Split, want)
				return
			}
		case SplitCompanion, SplitInternal:
			v.fail(field+".split", "is %q but the port serves nothing (no serves)", p.Split)
			return
		default:
			v.fail(field+".split", "%q is not a split (rows, expanded, packed, broadcast, companion, internal)", p.Split)
			return
		}
		if p.Delivery != "" {
			v.fail(field+".delivery", "is %q on a port that is not a delivered companion", p.Delivery)
		}
	}
	if k == nil {
		if p.Axis != 0 || p.Factor != 0 || len(p.Levels) > 0 || len(p.Padded) > 0 {
			v.fail(field, "the port declares no contract, so it has no axis, factor, levels or padding")
		}
		return
	}
	r := rank(k)
	if p.Axis != int(k.Layout.Axis) {
		v.fail(field+".axis", "is %d, but the port's contract says %d", p.Axis, k.Layout.Axis)
	} else if (k.Layout.Kind != ir.Shared) && (p.Axis < 0 || r >= 0 && p.Axis >= r) {
		v.fail(field+".axis", "is %d, outside the port's rank %d", p.Axis, r)
	}
	if p.Factor != k.Layout.Factor {
		v.fail(field+".factor", "is %d, but the port's contract says %d", p.Factor, k.Layout.Factor)
	} else if k.Layout.Kind == ir.RequestExpanded && p.Factor < 1 {
		v.fail(field+".factor", "is %d; request_expanded brings at least 1 row per request", p.Factor)
	}
	v.levels(field, p, k, input)
	v.padded(field, p, k, r)
}

// levels checks a port's ownership levels against its contract's.
func (v *groupValidator) levels(field string, p *Port, k *ir.Contract, input bool) {
	decl := k.Layout.Levels
	if k.Layout.Kind != ir.TokenPacked {
		if len(p.Levels) > 0 {
			v.fail(field+".levels", "a port that is not token_packed has no levels")
		}
		return
	}
	if len(p.Levels) != len(decl) || len(p.Levels) < 1 || len(p.Levels) > 2 {
		v.fail(field+".levels", "lists %d levels, but the port's contract declares %d (one or two)", len(p.Levels), len(decl))
		return
	}
	for i, l := range p.Levels {
		lf := fmt.Sprintf("%s.levels[%d]", field, i)
		if l.Index != i {
			v.fail(lf+".level", "is %d, but it is level %d", l.Index, i)
		}
		v.ref(lf+".offsets", l.Offsets)
		v.ref(lf+".owner", l.Owner)
		want := decl[i].Extent.String()
		if input {
			want = ""
		}
		if l.Extent != want {
			v.fail(lf+".extent", "is %q, but the port's contract says %q", l.Extent, want)
		}
		if l.From == nil {
			continue
		}
		if input || l.Extent != ir.ExtentPreserved.String() {
			v.fail(lf+".from", "only a preserved output level names the input level it preserves")
			continue
		}
		in := v.g.Input(l.From.Port)
		switch {
		case in == nil:
			v.fail(lf+".from.port", "`%s` is not an input port of the component", l.From.Port)
		case in.Role != RolePacked || l.From.Level < 0 || l.From.Level >= len(in.Levels):
			v.fail(lf+".from.level", "input port `%s` has no level %d", l.From.Port, l.From.Level)
		case in.Levels[l.From.Level].Offsets.Name() != l.Offsets.Name() || in.Levels[l.From.Level].Owner.Name() != l.Owner.Name():
			v.fail(lf+".from", "input port `%s` level %d pairs (`%s`, `%s`), not this level's (`%s`, `%s`)", l.From.Port, l.From.Level,
				in.Levels[l.From.Level].Offsets.Name(), in.Levels[l.From.Level].Owner.Name(), l.Offsets.Name(), l.Owner.Name())
		}
	}
}

// padded checks a port's padded dimensions against its contract's.
func (v *groupValidator) padded(field string, p *Port, k *ir.Contract, r int) {
	if len(p.Padded) != len(k.Padding) {
		v.fail(field+".padded", "lists %d padded dimensions, but the port's contract declares %d", len(p.Padded), len(k.Padding))
		return
	}
	for i, pad := range p.Padded {
		pf := fmt.Sprintf("%s.padded[%d]", field, i)
		if pad.Dimension != k.Padding[i].Dim.Name {
			v.fail(pf+".dimension", "is `%s`, but the port's contract pads `%s`", pad.Dimension, k.Padding[i].Dim.Name)
		}
		switch {
		case pad.Axis < 0 || r < 0 || pad.Axis >= r:
			v.fail(pf+".axis", "is %d, outside the port's rank %d", pad.Axis, r)
		case (p.Role == RoleRows || p.Role == RoleExpanded) && pad.Axis < p.Axis:
			// Its lengths, shaped by the axes outer to it, would not have
			// the request axis: a group could carry only one request's.
			v.fail(pf+".axis", "is %d, before the port's request axis %d: its lengths could not hold one length per request of a group", pad.Axis, p.Axis)
		case k.HasShape && k.Shape[pad.Axis].Sym != pad.Dimension:
			v.fail(pf+".axis", "is %d, but the port's axis %d is not `%s`", pad.Axis, pad.Axis, pad.Dimension)
		case p.Levels != nil && pad.Axis == 0:
			v.fail(pf+".axis", "is the packed axis 0, which carries no padding")
		}
		v.ref(pf+".lengths", pad.Lengths)
	}
}

// ref checks that a companion reference names a port of the component or
// a workflow-level value of the IR.
func (v *groupValidator) ref(field string, r Ref) {
	switch {
	case r.Port != "" && r.Value != "":
		v.fail(field, "names both port `%s` and value `%s`", r.Port, r.Value)
	case r.Port != "":
		if v.c.Input(r.Port) == nil && v.c.Output(r.Port) == nil {
			v.fail(field+".port", "`%s` is not a port of the component", r.Port)
		}
	case r.Value != "":
		if !v.workflowName(r.Value) {
			v.fail(field+".value", "`%s` is not a value of the plan's IR", r.Value)
		}
	default:
		v.fail(field, "names neither a port nor a value")
	}
}

// contracts checks that every name a contract of the workflow's inputs and
// outputs and of the components' ports refers to resolves (a value's
// contract is its producer's, checked there): each level's offsets and
// owner, and each padding's lengths, to
// a workflow-level name (or, on a component's port, to a port of that
// component), and each padding's dimension to a symbol of the contract's
// shape. A name that resolves nowhere would make the runtime read the
// contract otherwise than it was compiled: a level without offsets is no
// level, and a packed output would be answered whole instead of as items.
func (v *validator) contracts() {
	m := v.m
	for i, in := range m.Inputs {
		if in != nil {
			v.contract(fmt.Sprintf("ir.inputs[%d] (`%s`).contract", i, in.Name), in.Contract, nil, false)
		}
	}
	for i, o := range m.Outputs {
		if o != nil {
			v.contract(fmt.Sprintf("ir.outputs[%d] (`%s`).contract", i, o.Name), o.Contract, nil, true)
		}
	}
	for i, c := range m.Components {
		if c == nil {
			continue
		}
		for side, ports := range map[string][]*ir.Port{"inputs": c.Inputs, "outputs": c.Outputs} {
			for j, p := range ports {
				if p != nil {
					v.contract(fmt.Sprintf("ir.components[%d] (`%s`).%s[%d] (`%s`).contract", i, c.Name, side, j, p.Name), p.Contract, c, true)
				}
			}
		}
	}
}

// contract checks the names one contract refers to (contracts); c is the
// component whose port it types, nil for a workflow-level one. Where
// defined is false (a workflow input, whose companions the runtime makes
// when the request does not bring them) a name need not resolve, but it
// must be there.
func (v *validator) contract(field string, k *ir.Contract, c *ir.Component, defined bool) {
	if k == nil {
		return
	}
	resolve := func(f string, r ir.Ref) {
		switch {
		case r.Name == "":
			v.fail(f, "names nothing")
		case !defined:
		case c != nil && (c.Input(r.Name) != nil || c.Output(r.Name) != nil):
		case !v.workflowName(r.Name):
			v.fail(f, "`%s` resolves to nothing the IR defines", r.Name)
		}
	}
	for i, l := range k.Layout.Levels {
		resolve(fmt.Sprintf("%s.layout.levels[%d].offsets", field, i), l.Offsets)
		resolve(fmt.Sprintf("%s.layout.levels[%d].owner", field, i), l.Owner)
	}
	for i, pad := range k.Padding {
		resolve(fmt.Sprintf("%s.padding[%d].lengths", field, i), pad.Lengths)
		if k.HasShape && k.Axis(pad.Dim.Name) < 0 {
			v.fail(fmt.Sprintf("%s.padding[%d].dim", field, i), "`%s` is not a symbol of the contract's shape", pad.Dim.Name)
		}
	}
}

// workflowName reports whether name is a workflow-level value of the IR.
func (v *validator) workflowName(name string) bool {
	for _, x := range v.m.Values {
		if x != nil && x.Name == name {
			return true
		}
	}
	for _, x := range v.m.Inputs {
		if x != nil && x.Name == name {
			return true
		}
	}
	for _, x := range v.m.Outputs {
		if x != nil && x.Name == name {
			return true
		}
	}
	for _, x := range v.m.Cells {
		if x != nil && x.Name == name {
			return true
		}
	}
	return false
}

// serves checks a companion port: what it serves exists on its side, and
// its role, split and delivery are the ones that service makes.
func (v *groupValidator) serves(field string, p *Port, input bool) {
	s := p.Serves
	sf := field + ".serves"
	var served *Port
	if input {
		served = v.g.Input(s.Port)
		if p.Role != RoleCompanion {
			v.fail(field+".role", "is %q, but a port that serves another's level or padding is %q", p.Role, RoleCompanion)
		}
	} else {
		served = v.g.Output(s.Port)
	}
	side := map[bool]string{true: "input", false: "output"}[input]
	switch {
	case served == nil:
		v.fail(sf+".port", "`%s` is not an %s port of the component", s.Port, side)
		return
	case served.Serves != nil:
		v.fail(sf+".port", "`%s` is itself a companion", s.Port)
		return
	case s.Port == p.Name:
		v.fail(sf+".port", "a port does not serve itself")
		return
	}
	wantSplit, wantDelivery := SplitCompanion, ""
	switch s.Role {
	case "offsets", "owner":
		if s.Level < 0 || s.Level >= len(served.Levels) {
			v.fail(sf+".level", "is %d, but `%s` has %d ownership level(s)", s.Level, s.Port, len(served.Levels))
		}
		if s.Dimension != "" {
			v.fail(sf+".dimension", "is set for role %q", s.Role)
		}
		wantDelivery = "rebased"
		if s.Role == "owner" {
			wantSplit, wantDelivery = SplitInternal, ""
		}
	case "lengths":
		if !slices.ContainsFunc(served.Padded, func(pd Pad) bool { return pd.Dimension == s.Dimension }) {
			v.fail(sf+".dimension", "`%s` is not a padded dimension of `%s`", s.Dimension, s.Port)
		}
		if s.Level != 0 {
			v.fail(sf+".level", "is set for role lengths")
		}
		wantDelivery = "sliced"
	default:
		v.fail(sf+".role", "%q is not a companion role (offsets, owner, lengths)", s.Role)
		return
	}
	if input {
		if p.Split != "" || p.Delivery != "" {
			v.fail(field, "an input port has no split or delivery")
		}
	} else {
		if p.Role != "" {
			v.fail(field+".role", "is set on an output port")
		}
		if p.Split != wantSplit {
			v.fail(field+".split", "is %q, but a port serving the %s of `%s` is %q", p.Split, s.Role, s.Port, wantSplit)
		}
		if p.Delivery != wantDelivery {
			v.fail(field+".delivery", "is %q, but a port serving the %s of `%s` is delivered %q", p.Delivery, s.Role, s.Port, wantDelivery)
		}
	}
	if p.Axis != 0 || p.Factor != 0 || len(p.Levels) > 0 || len(p.Padded) > 0 {
		v.fail(field, "a companion port has no axis, factor, levels or padding of its own")
	}
}

// payloadInput returns an input port that carries items (not a companion)
// and its IR contract, or nils.
func (v *groupValidator) payloadInput(name string) (*Port, *ir.Contract) {
	p := v.g.Input(name)
	in := v.c.Input(name)
	if p == nil || in == nil || p.Role == RoleCompanion || p.Serves != nil {
		return nil, nil // a port the IR lacks is reported with the ports
	}
	return p, in.Contract
}

// symbolAt checks that a port's contract has sym on axis.
func (v *groupValidator) symbolAt(field, port, sym string, axis int, k *ir.Contract) {
	r := rank(k)
	switch {
	case k == nil || !k.HasShape:
		v.fail(field+".port", "input port `%s` declares no shape to read `%s` from", port, sym)
	case axis < 0 || axis >= r:
		v.fail(field+".axis", "is %d, outside the rank %d of input port `%s`", axis, r, port)
	case k.Shape[axis].Sym != sym:
		v.fail(field+".axis", "is %d, but axis %d of input port `%s` is not `%s`", axis, axis, port, sym)
	}
}

func (v *groupValidator) uniform() {
	declared := map[string]bool{}
	for _, u := range v.c.Capacity.Uniform {
		declared[u.Name] = true
	}
	seen := map[string]bool{}
	for i, u := range v.g.Uniform {
		uf := fmt.Sprintf("%s.uniform[%d]", v.field, i)
		if !declared[u.Symbol] || seen[u.Symbol] {
			v.fail(uf+".symbol", "`%s` is not a uniform dimension of the component, or is listed twice", u.Symbol)
		}
		seen[u.Symbol] = true
		p, k := v.payloadInput(u.Port)
		if p == nil {
			v.fail(uf+".port", "`%s` is not an input port of the component that carries items", u.Port)
			continue
		}
		v.symbolAt(uf, u.Port, u.Symbol, u.Axis, k)
	}
}

func (v *groupValidator) sharedEqual() {
	seen := map[string]bool{}
	for i, name := range v.g.SharedEqual {
		p := v.g.Input(name)
		if p == nil || p.Role != RoleBroadcast || seen[name] {
			v.fail(fmt.Sprintf("%s.shared_equal[%d]", v.field, i), "`%s` is not an input port with role broadcast, or is listed twice", name)
		}
		seen[name] = true
	}
}

func (v *groupValidator) budgets(outputsOK bool) {
	decl := v.c.Capacity.Budgets
	if len(v.g.Budgets) != len(decl) {
		v.fail(v.field+".budgets", "lists %d budgets, but the component declares %d", len(v.g.Budgets), len(decl))
		return
	}
	for i, b := range v.g.Budgets {
		bf := fmt.Sprintf("%s.budgets[%d]", v.field, i)
		if b.MaxTotal < 1 {
			v.fail(bf+".max_total", "is %d; a budget is at least 1", b.MaxTotal)
		} else if b.MaxTotal != decl[i].MaxTotal {
			v.fail(bf+".max_total", "is %d, but the component declares %d", b.MaxTotal, decl[i].MaxTotal)
		}
		if b.MinItem < 1 || b.MaxTotal >= 1 && b.MinItem > b.MaxTotal {
			v.fail(bf+".min_item", "is %d; one item's footprint is at least 1 and at most max_total %d", b.MinItem, b.MaxTotal)
		}
		var path []string
		for _, r := range decl[i].Path {
			path = append(path, r.Name)
		}
		if !slices.Equal(b.Dimensions, path) {
			v.fail(bf+".dimensions", "is %v, but the component declares %v", b.Dimensions, path)
			continue
		}
		if len(b.Terms) != len(b.Dimensions) {
			v.fail(bf+".terms", "lists %d terms for %d dimensions", len(b.Terms), len(b.Dimensions))
			continue
		}
		for j, t := range b.Terms {
			v.term(fmt.Sprintf("%s.terms[%d]", bf, j), t, b.Dimensions[j], outputsOK)
		}
	}
}

// term checks how one budget symbol is measured.
func (v *groupValidator) term(field string, t Term, sym string, outputsOK bool) {
	if t.Symbol != sym {
		v.fail(field+".symbol", "is `%s`, but the budget's dimension there is `%s`", t.Symbol, sym)
	}
	if t.Factor < 0 || t.Level < 0 || t.Axis < 0 {
		v.fail(field, "factor, level and axis are at least 0 (read %d, %d, %d)", t.Factor, t.Level, t.Axis)
		return
	}
	switch t.Kind {
	case TermPacked, TermUnits:
		p, _ := v.payloadInput(t.Port)
		switch {
		case p == nil || p.Role != RolePacked:
			v.fail(field+".port", "`%s` is not a token_packed input port of the component", t.Port)
		case t.Kind == TermPacked && (t.Level != 0 || t.Axis != 0):
			v.fail(field, "a packed term measures level 0 on axis 0 (read level %d, axis %d)", t.Level, t.Axis)
		case t.Kind == TermUnits && (t.Level < 1 || t.Level >= len(p.Levels)):
			v.fail(field+".level", "is %d, but the units of input port `%s` are counted at levels 1 to %d", t.Level, t.Port, len(p.Levels)-1)
		}
	case TermRows:
		p := v.g.Input(t.Port)
		isRows := p != nil && (p.Role == RoleRows || p.Role == RoleExpanded)
		if !isRows && outputsOK {
			p = v.g.Output(t.Port)
			isRows = p != nil && (p.Split == SplitRows || p.Split == SplitExpanded)
		}
		switch {
		case !isRows:
			v.fail(field+".port", "`%s` is not a port of the component with a request axis", t.Port)
		case t.Axis != p.Axis:
			v.fail(field+".axis", "is %d, but the request axis of `%s` is %d", t.Axis, t.Port, p.Axis)
		case t.Factor != max(p.Factor, 1):
			v.fail(field+".factor", "is %d, but `%s` brings %d row(s) per request", t.Factor, t.Port, max(p.Factor, 1))
		}
	case TermPadded:
		p, _ := v.payloadInput(t.Port)
		switch {
		case p == nil:
			v.fail(field+".port", "`%s` is not an input port of the component that carries items", t.Port)
		case !slices.ContainsFunc(p.Padded, func(pd Pad) bool { return pd.Axis == t.Axis && pd.Dimension == t.Symbol }):
			v.fail(field+".axis", "is %d, but input port `%s` pads no `%s` there", t.Axis, t.Port, t.Symbol)
		}
	case TermPinned:
		if t.Port == "" {
			if t.Axis != 0 {
				v.fail(field+".axis", "is %d for a pinned term read from no port", t.Axis)
			}
			return
		}
		p, k := v.payloadInput(t.Port)
		if p == nil {
			v.fail(field+".port", "`%s` is not an input port of the component that carries items", t.Port)
			return
		}
		v.symbolAt(field, t.Port, t.Symbol, t.Axis, k)
	default:
		v.fail(field+".kind", "%q is not a term kind (packed, units, rows, padded, pinned)", t.Kind)
	}
}
