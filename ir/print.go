package ir

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Print writes m in the canonical text form of the IR, which the irtext
// package parses back into an equal module. The form is line-oriented and
// deterministic: every field a node's kind uses is written unless it holds
// its zero or implied value (a list's nil and empty are one, except for a
// written shape, which is never nil), a location reference
// #n follows the word it locates (and is left out when it is the unknown
// location), values are written %id, unresolved uses %?, and a name is
// written bare when it is an identifier and as a Go string literal
// otherwise. Print fails, writing nothing, on a module it cannot represent:
// a nil entry in one of its lists, or an op, def, implementation, layout or
// extent outside its table.
func Print(w io.Writer, m *Module) error {
	p := &printer{m: m}
	p.module()
	if p.err != nil {
		return p.err
	}
	_, err := w.Write(p.buf.Bytes())
	return err
}

// String returns the canonical text form of m (see Print), or a one-line
// description of why m cannot be printed.
func (m *Module) String() string {
	var b strings.Builder
	if err := Print(&b, m); err != nil {
		return "<ir.Module: " + err.Error() + ">"
	}
	return b.String()
}

type printer struct {
	m     *Module
	buf   bytes.Buffer
	depth int
	refs  map[*Contract]string // a site's contract → how a value refers to it
	err   error
}

func (p *printer) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("ir.Print: "+format, args...)
	}
}

// line writes one indented line made of parts.
func (p *printer) line(parts ...string) {
	p.buf.WriteString(strings.Repeat("  ", p.depth))
	for _, s := range parts {
		p.buf.WriteString(s)
	}
	p.buf.WriteByte('\n')
}

// nested writes the lines f writes one level deeper.
func (p *printer) nested(f func()) {
	p.depth++
	f()
	p.depth--
}

// braced writes head {, the lines f writes one level deeper, and }.
func (p *printer) braced(head string, f func()) {
	p.line(head, "{")
	p.nested(f)
	p.line("}")
}

func (p *printer) module() {
	m := p.m
	if m == nil {
		p.fail("the module is nil")
		return
	}
	p.refs = contractRefs(m)
	p.line("module ", strconv.Quote(m.Schema), " ", strconv.Itoa(m.Major), ".", strconv.Itoa(m.Minor))
	p.manifest(&m.Manifest)
	each(p, "input", m.Inputs, p.input)
	each(p, "cell", m.Cells, p.cell)
	each(p, "output", m.Outputs, p.output)
	each(p, "component", m.Components, p.component)
	if m.Serving != nil {
		p.serving(m.Serving)
	}
	each(p, "program", m.Programs, p.program)
	p.values()
	p.line()
	p.braced("body ", func() { p.steps(m.Body) })
	p.locs()
}

// each prints every entry of xs with f, failing on a nil entry.
func each[T any](p *printer, what string, xs []*T, f func(*T)) {
	for i, x := range xs {
		if x == nil {
			p.fail("%s %d is nil", what, i)
			continue
		}
		f(x)
	}
}

// name writes s bare when it is an identifier, else quoted.
func name(s string) string {
	if isIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

func isIdent(s string) bool {
	for i, r := range s {
		letter := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// loc writes a location reference, or nothing for the unknown location.
func loc(l Loc) string {
	if l == 0 {
		return ""
	}
	return "#" + strconv.Itoa(int(l))
}

func val(id ValueID) string {
	if id == NoValue {
		return "%?"
	}
	return "%" + strconv.Itoa(int(id))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ref(r Ref) string { return name(r.Name) + loc(r.Loc) }

func use(u Use) string { return val(u.ID) + " " + name(u.Name) + loc(u.Loc) }

// list writes the items f renders, comma separated, between open and close.
func list[T any](open string, xs []T, f func(T) string, close string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f(x)
	}
	return open + strings.Join(parts, ", ") + close
}

func kv(x KV) string { return name(x.Key) + " = " + strconv.Quote(x.Value) + loc(x.Loc) }

func (p *printer) manifest(mf *Manifest) {
	if mf.Loc == 0 && len(mf.AdapterABIs) == 0 && len(mf.Capabilities) == 0 {
		return
	}
	p.line()
	p.line("manifest", loc(mf.Loc))
	p.nested(func() {
		for _, x := range mf.AdapterABIs {
			p.line("abi ", kv(x))
		}
		for _, c := range mf.Capabilities {
			p.line("capability ", name(c))
		}
	})
}

// typed writes ": " and the contract, or nothing for a nil contract.
func (p *printer) typed(c *Contract) string {
	if c == nil {
		return ""
	}
	return ": " + p.contract(c)
}

// contract writes a contract: [#loc] dtype[shape] [rank n] [optional]
// [layout] [pad(...)]...
func (p *printer) contract(c *Contract) string {
	var b strings.Builder
	if c.Loc != 0 {
		b.WriteString(loc(c.Loc) + " ")
	}
	b.WriteString(name(c.DType) + loc(c.DTypeLoc))
	if c.HasShape {
		b.WriteString(list("[", c.Shape, dim, "]"))
	}
	b.WriteString(rank(c))
	if c.Optional {
		b.WriteString(" optional")
	}
	b.WriteString(p.layout(&c.Layout))
	for _, pd := range c.Padding {
		b.WriteString(" pad" + loc(pd.Loc) + "(" + ref(pd.Dim) + ": " + ref(pd.Lengths) + ")")
	}
	return b.String()
}

// rank writes " rank n" unless the rank is the one the shape implies
// (len(shape), or -1 without a shape) and has no location.
func rank(c *Contract) string {
	implied := -1
	if c.HasShape {
		implied = len(c.Shape)
	}
	if c.Rank == implied && c.RankLoc == 0 {
		return ""
	}
	return " rank " + strconv.Itoa(c.Rank) + loc(c.RankLoc)
}

func dim(d Dim) string {
	if d.IsSym() {
		return name(d.Sym) + loc(d.Loc)
	}
	return itoa(d.Size) + loc(d.Loc)
}

// layout writes " kind#loc(axis, factor: n, levels: [...])", leaving out
// what the zero layout (shared, unwritten) implies.
func (p *printer) layout(l *Layout) string {
	args := l.Axis != 0 || l.AxisLoc != 0 || l.Factor != 0 || len(l.Levels) > 0
	if l.Kind == Shared && l.Loc == 0 && !args {
		return ""
	}
	if int(l.Kind) >= len(layoutNames) {
		p.fail("layout kind %d is outside the table", l.Kind)
	}
	s := " " + l.Kind.String() + loc(l.Loc)
	if !args && l.Kind == Shared {
		return s
	}
	s += "(" + itoa(l.Axis) + loc(l.AxisLoc)
	if l.Factor != 0 {
		s += ", factor: " + itoa(l.Factor)
	}
	if len(l.Levels) > 0 {
		s += ", levels: " + list("[", l.Levels, p.level, "]")
	}
	return s + ")"
}

func (p *printer) level(lv Level) string {
	s := "(" + ref(lv.Offsets) + ", " + ref(lv.Owner)
	if lv.Extent != ExtentNone {
		if int(lv.Extent) >= len(extentNames) {
			p.fail("level extent %d is outside the table", lv.Extent)
		}
		s += " " + lv.Extent.String()
	}
	return s + ")" + loc(lv.Loc)
}

func (p *printer) input(in *Input) {
	p.line()
	p.line("input ", val(in.Value), " ", name(in.Name), loc(in.Loc), p.typed(in.Contract))
	p.nested(func() {
		if in.Role != "" || in.RuntimeRole != "" || in.RoleVersion != "" {
			p.line("role ", name(in.Role), optArgs(in.RuntimeRole != "" || in.RoleVersion != "", name(in.RuntimeRole), strconv.Quote(in.RoleVersion)))
		}
		if in.Source != "" || in.SourceArg != "" {
			p.line("source ", name(in.Source), optArgs(in.SourceArg != "", strconv.Quote(in.SourceArg)))
		}
		if in.Required != nil {
			p.line("required ", strconv.FormatBool(*in.Required))
		}
		p.flag(in.HasDefault, "default")
		p.attr("present_as", in.PresentAs)
		if in.ExternallySuppliable || in.ExternalLoc != 0 {
			p.line("externally_suppliable ", strconv.FormatBool(in.ExternallySuppliable), loc(in.ExternalLoc))
		}
	})
}

// optArgs writes "(args...)" when cond holds.
func optArgs(cond bool, args ...string) string {
	if !cond {
		return ""
	}
	return "(" + strings.Join(args, ", ") + ")"
}

// attr writes the line "key value" when value is not empty.
func (p *printer) attr(key, value string) {
	if value != "" {
		p.line(key, " ", name(value))
	}
}

// flag writes the line key when set.
func (p *printer) flag(set bool, key string) {
	if set {
		p.line(key)
	}
}

func (p *printer) cell(c *Cell) {
	p.line()
	p.line("cell ", val(c.Value), " ", name(c.Name), loc(c.Loc), p.typed(c.Contract))
	p.nested(func() {
		p.attr("scope", c.Scope)
		if c.Initializer != (Use{ID: NoValue}) {
			p.line("init ", use(c.Initializer))
		}
		p.attr("recurrence", c.Recurrence)
		p.attr("next", c.Next)
		p.attr("class", c.Class)
		p.attr("management", c.Management)
		p.attr("release_boundary", c.ReleaseBoundary)
		p.attr("service_group", c.ServiceGroup)
	})
}

func (p *printer) output(o *Output) {
	p.line()
	p.line("output ", name(o.Name), loc(o.Loc), p.typed(o.Contract))
	p.nested(func() {
		p.attr("role", o.Role)
		p.attr("stage", o.Stage)
	})
}

func (p *printer) component(c *Component) {
	p.line()
	p.line("component ", name(c.Name), loc(c.Loc))
	p.nested(func() {
		p.impl(c)
		each(p, "input port", c.Inputs, func(pt *Port) { p.line("in ", name(pt.Name), loc(pt.Loc), p.typed(pt.Contract)) })
		each(p, "output port", c.Outputs, func(pt *Port) { p.line("out ", name(pt.Name), loc(pt.Loc), p.typed(pt.Contract)) })
		if c.Capacity != nil {
			p.capacity(c.Capacity)
		}
		if rs := c.RowScope; rs != nil {
			p.line("row_scope", loc(rs.Loc), " axis ", itoa(rs.Axis), stateful(rs.Stateful))
		}
	})
}

func stateful(b bool) string {
	if b {
		return " stateful"
	}
	return ""
}

func (p *printer) impl(c *Component) {
	if int(c.Impl) >= len(implNames) {
		p.fail("component %s has implementation kind %d, outside the table", c.Name, c.Impl)
	}
	s := "impl " + c.Impl.String()
	for _, f := range []struct{ key, value string }{{"artifact", c.Artifact}, {"abi", c.ABI}, {"version", c.Version}} {
		if f.value != "" {
			s += " " + f.key + " " + strconv.Quote(f.value)
		}
	}
	p.line(s)
}

func (p *printer) capacity(c *Capacity) {
	uniform := ""
	if len(c.Uniform) > 0 {
		uniform = " uniform " + list("[", c.Uniform, ref, "]")
	}
	p.line("capacity", loc(c.Loc), uniform)
	p.nested(func() {
		for _, b := range c.Budgets {
			p.line("budget", loc(b.Loc), " ", list("[", b.Path, ref, "]"), " max_total ", itoa(b.MaxTotal))
		}
	})
}

func (p *printer) serving(s *Serving) {
	p.line()
	p.line("serving", loc(s.Loc))
	p.nested(func() {
		p.refAttr("active", s.Active)
		p.refAttr("done", s.Done)
		p.refAttr("accepted_len", s.AcceptedLen)
		for _, g := range s.Groups {
			p.line("group ", name(g.Name), loc(g.Loc), group(g))
		}
	})
}

// refAttr writes the line "key ref" when r is written.
func (p *printer) refAttr(key string, r Ref) {
	if r != (Ref{}) {
		p.line(key, " ", ref(r))
	}
}

func group(g ServiceGroup) string {
	var b strings.Builder
	for _, f := range []struct{ key, value string }{{"kind", g.Kind}, {"layout", g.Layout}, {"aliasing", g.Aliasing}} {
		if f.value != "" {
			b.WriteString(" " + f.key + " " + name(f.value))
		}
	}
	if g.SequenceAxis != nil {
		b.WriteString(" sequence_axis " + itoa(*g.SequenceAxis))
	}
	if g.LogicalLengths != (Ref{}) {
		b.WriteString(" logical_lengths " + ref(g.LogicalLengths))
	}
	return b.String()
}

func (p *printer) program(pr *Program) {
	p.line()
	p.line("program ", name(pr.Modality), loc(pr.Loc))
	p.nested(func() {
		for _, t := range pr.Transforms {
			p.line("transform ", name(t.Op), loc(t.Loc), " ", list("[", t.Inputs, name, "]"), " -> ", list("[", t.Outputs, name, "]"), params(t.Params))
		}
		for _, o := range pr.Outputs {
			p.programOutput(o)
		}
	})
}

func params(ps []Param) string {
	if len(ps) == 0 {
		return ""
	}
	return " " + list("{", ps, param, "}")
}

// param writes a parameter as key = kind "text", or key = [kind "text", ...].
func param(x Param) string { return name(x.Key) + " = " + paramValue(x) + loc(x.Loc) }

func paramValue(x Param) string {
	if x.Kind == ParamList {
		return list("[", x.Items, paramValue, "]")
	}
	return x.Kind.String() + " " + strconv.Quote(x.Text)
}

func (p *printer) programOutput(o ProgramOutput) {
	s := "out " + name(o.Name) + loc(o.Loc)
	for _, f := range []struct{ key, value string }{{"source", o.Source}, {"content", o.Content}, {"dtype", o.DType}} {
		if f.value != "" {
			s += " " + f.key + " " + name(f.value)
		}
	}
	p.line(s, p.typed(o.Contract))
}

// siteKey names a contract site the way a value's contract refers to it:
// @input x, @cell x, @output x, @in component port, @out component port,
// @program modality output.
type siteKey struct{ kind, a, b string }

func (k siteKey) String() string {
	s := "@" + k.kind + " " + name(k.a)
	if k.kind == "in" || k.kind == "out" || k.kind == "program" {
		s += " " + name(k.b)
	}
	return s
}

// contractSites calls f on every contract site of m in print order.
func contractSites(m *Module, f func(siteKey, *Contract)) {
	for _, x := range m.Inputs {
		if x != nil {
			f(siteKey{"input", x.Name, ""}, x.Contract)
		}
	}
	for _, x := range m.Cells {
		if x != nil {
			f(siteKey{"cell", x.Name, ""}, x.Contract)
		}
	}
	for _, x := range m.Outputs {
		if x != nil {
			f(siteKey{"output", x.Name, ""}, x.Contract)
		}
	}
	for _, c := range m.Components {
		if c != nil {
			componentSites(c, f)
		}
	}
	programSites(m, f)
}

func programSites(m *Module, f func(siteKey, *Contract)) {
	for _, pr := range m.Programs {
		if pr != nil {
			for _, o := range pr.Outputs {
				f(siteKey{"program", pr.Modality, o.Name}, o.Contract)
			}
		}
	}
}

func componentSites(c *Component, f func(siteKey, *Contract)) {
	for _, pt := range c.Inputs {
		if pt != nil {
			f(siteKey{"in", c.Name, pt.Name}, pt.Contract)
		}
	}
	for _, pt := range c.Outputs {
		if pt != nil {
			f(siteKey{"out", c.Name, pt.Name}, pt.Contract)
		}
	}
}

// contractRefs maps each site contract to the key a value writes for it.
// A key names the first site it matches, so a contract is referred to only
// from the first site with its key; any other contract is written in full.
func contractRefs(m *Module) map[*Contract]string {
	refs := map[*Contract]string{}
	seen := map[siteKey]bool{}
	contractSites(m, func(k siteKey, c *Contract) {
		if seen[k] {
			return
		}
		seen[k] = true
		if _, ok := refs[c]; c != nil && !ok {
			refs[c] = k.String()
		}
	})
	return refs
}

func (p *printer) values() {
	p.line()
	p.braced("values ", func() {
		each(p, "value", p.m.Values, func(v *Value) {
			if int(v.Def) >= len(defNames) {
				p.fail("value %%%d has def kind %d, outside the table", v.ID, v.Def)
			}
			p.line(val(v.ID), " ", v.Def.String(), " ", name(v.Name), loc(v.Loc), p.valueContract(v.Contract))
		})
	})
}

func (p *printer) valueContract(c *Contract) string {
	if r, ok := p.refs[c]; ok {
		return ": " + r
	}
	return p.typed(c)
}

func (p *printer) steps(b *Block) {
	if b != nil {
		each(p, "step", b.Steps, p.step)
	}
}

// step writes s in the shape its op-table entry gives it.
func (p *printer) step(s *Step) {
	info := s.Op.Info()
	if info.Name == "?" {
		p.fail("a step has op %d, outside the table", s.Op)
		return
	}
	head := info.Name + loc(s.Loc)
	switch {
	case info.Component:
		p.line(results(s.Results), head, " ", ref(s.Component), list("(", s.Args, arg, ")"))
	case info.Emit:
		p.line(head, emit(s))
	case info.Branch:
		p.braced(head+" "+use(s.Predicate)+" ", func() { p.branch(s) })
	case info.Loop:
		p.braced(head+loopHead(s)+" ", func() { p.loop(s) })
	case info.Body:
		p.braced(head+" ", func() { p.steps(s.Body) })
	}
}

func results(rs []Result) string {
	if len(rs) == 0 {
		return ""
	}
	return list("(", rs, func(r Result) string { return name(r.Port) + loc(r.Loc) + ": " + val(r.Value) }, ") = ")
}

func arg(a Arg) string { return name(a.Port) + loc(a.Loc) + ": " + use(a.Value) }

// emit writes " mode value -> output [when u] [valid_length u] [axis n]".
func emit(s *Step) string {
	e := " " + name(s.Mode) + " " + use(s.Value) + " -> " + ref(s.Output)
	if s.When != nil {
		e += " when " + use(*s.When)
	}
	if s.ValidLength != nil {
		e += " valid_length " + use(*s.ValidLength)
	}
	if s.Axis != nil {
		e += " axis " + itoa(*s.Axis) + loc(s.AxisLoc)
	}
	return e
}

func (p *printer) branch(s *Step) {
	for _, c := range s.Cases {
		p.braced("case "+name(c.Key)+loc(c.Loc)+" ", func() { p.steps(c.Body) })
	}
	if s.Default != nil {
		p.braced("default ", func() { p.steps(s.Default) })
	}
	for _, ph := range s.Phis {
		dflt := ""
		if ph.Default != nil {
			dflt = " default " + use(*ph.Default)
		}
		p.line(val(ph.Value), " = phi", loc(ph.Loc), list("(", ph.Inputs, phiInput, ")"), dflt)
	}
}

func phiInput(in PhiInput) string { return name(in.Key) + ": " + use(in.Value) }

func loopHead(s *Step) string {
	h := ""
	if s.Iteration != nil {
		h += " iteration " + val(*s.Iteration)
	}
	if s.MaxIterations != 0 {
		h += " max_iterations " + itoa(s.MaxIterations)
	}
	return h
}

func (p *printer) loop(s *Step) {
	if s.Setup != nil {
		p.braced("setup ", func() { p.steps(s.Setup) })
	}
	p.braced("body ", func() { p.steps(s.Body) })
	p.line("while ", use(s.ContinueWhen))
	for _, c := range s.Carried {
		initial := ""
		if c.Initial != nil {
			initial = " init " + use(*c.Initial)
		}
		p.line("carry", loc(c.Loc), " ", ref(c.Cell), initial, " next ", use(c.Next))
	}
}

// locs writes the location table; the unknown location #0 is written only
// when it is not the zero Location.
func (p *printer) locs() {
	p.line()
	p.braced("locs ", func() {
		for i, l := range p.m.Locs {
			if i == 0 && l == (Location{}) {
				continue
			}
			p.line("#", strconv.Itoa(i), " = ", strconv.Itoa(l.Line), ":", strconv.Itoa(l.Col), " ", strconv.Quote(l.Path))
		}
	})
}

// StripLocations sets every location of m to the unknown location and
// empties the location table, in place. Printed afterwards, m is the brief
// text form: the same module without `#n` references, which parses back
// and prints to the same text. `genaic compile --emit ir` shows that form
// unless asked for locations.
func StripLocations(m *Module) {
	seen := map[uintptr]bool{}
	zeroLocs(reflect.ValueOf(m), seen)
	m.Locs = []Location{{}}
}

var locType = reflect.TypeFor[Loc]()

// zeroLocs walks a value of the module's types and zeroes every Loc.
func zeroLocs(v reflect.Value, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		zeroLocs(v.Elem(), seen)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				continue
			}
			if f.Type() == locType {
				f.SetInt(0)
				continue
			}
			zeroLocs(f, seen)
		}
	case reflect.Slice:
		for i := range v.Len() {
			zeroLocs(v.Index(i), seen)
		}
	}
}
