package view

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// This file holds the text view of a plan (`genaic inspect --format
// text`) and the phrases the three views share. A view only reads the
// plan: every word it prints about a decision comes from the GroupPlan, so
// what a person reads is what a runtime will do.

// WriteText writes the plan as a person reads it: for every component,
// whether and why it is grouped, how each input takes part in a group and
// why, the compatibility key, the budgets as footprint formulas, and how
// each output splits back to the requests. m is the plan's module: it adds
// port shapes and the steps that invoke each component, and may be nil.
func WriteText(w io.Writer, f *plan.File) error {
	m := f.IR
	t := &textView{f: f, m: m}
	t.header()
	for _, g := range plans(f) {
		t.component(g)
	}
	_, err := io.WriteString(w, t.b.String())
	return err
}

type textView struct {
	b strings.Builder
	f *plan.File
	m *ir.Module
}

func (t *textView) line(indent int, format string, args ...any) {
	t.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&t.b, format, args...)
	t.b.WriteByte('\n')
}

func (t *textView) header() {
	t.line(0, "plan of %s", t.f.Source)
	t.line(1, "%s, plan format %d", schemaText(t.f.SchemaVersion), t.f.PlanVersion)
	n, k := len(plans(t.f)), groupedCount(t.f)
	t.line(1, "%d %s: %d grouped, %d solo", n, plural(n, "component"), k, n-k)
}

// plans returns the plan's GroupPlans, leaving out null entries a
// hand-made file may hold: a view never trusts a file's shape.
func plans(f *plan.File) []*plan.GroupPlan {
	var out []*plan.GroupPlan
	for _, g := range f.Components {
		if g != nil {
			out = append(out, g)
		}
	}
	return out
}

// planOf returns the plan of component name, or nil.
func planOf(f *plan.File, name string) *plan.GroupPlan {
	for _, g := range plans(f) {
		if g.Component == name {
			return g
		}
	}
	return nil
}

func schemaText(v string) string {
	if v == "" {
		return "schema_version absent (read as v1.0)"
	}
	return "schema_version " + v
}

func groupedCount(f *plan.File) int {
	n := 0
	for _, g := range plans(f) {
		if g.Grouped {
			n++
		}
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func (t *textView) component(g *plan.GroupPlan) {
	t.line(0, "")
	t.line(0, "component %s: %s", g.Component, groupedWord(g))
	t.line(1, "why: %s", g.Why)
	if runs := t.runs(g.Component); runs != "" {
		t.line(1, "runs: %s", runs)
		if ops := t.f.Ops(g.Component); len(ops) > 0 {
			t.line(1, "operators: %s", opsText(ops))
		}
	}
	if t.m != nil {
		t.line(1, "invoked at: %s", invokedAt(t.m, g.Component))
	}
	t.ports("inputs", g, g.Inputs, true)
	if g.Grouped {
		t.line(0, "")
		t.line(1, "compatibility key")
		t.line(2, "%s", compatibility(g))
		t.line(2, "every other difference between items is padded with declared lengths or consumed by the packed axis (see docs/authoring.md#when-items-share-a-call)")
		t.budgets(g)
	}
	t.ports("outputs", g, g.Outputs, false)
}

func groupedWord(g *plan.GroupPlan) string {
	if g.Grouped {
		return "grouped"
	}
	return "solo"
}

// runs says what executes a component: its implementation from the module,
// and whether the plan found its artifact.
func (t *textView) runs(comp string) string {
	var parts []string
	if t.m != nil {
		if c := t.m.Component(comp); c != nil {
			parts = append(parts, implText(c))
		}
	}
	for _, a := range t.f.Artifacts {
		if a.Component != comp {
			continue
		}
		s := "artifact " + a.Path
		if a.SHA256 == "" {
			s += " (missing when the plan was compiled: the plan can be inspected, not run)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// opsText lists a graph's operator types with their count.
func opsText(ops []string) string {
	return fmt.Sprintf("%s (%d %s)", strings.Join(ops, ", "), len(ops), plural(len(ops), "type"))
}

func implText(c *ir.Component) string {
	switch c.Impl {
	case ir.ImplAdapter:
		return fmt.Sprintf("adapter %s@%s", c.ABI, c.Version)
	case ir.ImplBinding:
		return "binding (a Go function the application registers)"
	}
	return c.Impl.String()
}

// invokedAt lists the invoke steps of comp with their source positions.
func invokedAt(m *ir.Module, comp string) string {
	var sites []string
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke && s.Component.Name == comp {
			sites = append(sites, locText(m, s.Loc))
		}
		return true
	})
	if len(sites) == 0 {
		return "no step invokes it"
	}
	return strings.Join(sites, "; ")
}

func locText(m *ir.Module, l ir.Loc) string {
	loc := m.Location(l)
	if loc.Line == 0 {
		return "an unknown position"
	}
	if loc.Path == "" {
		return fmt.Sprintf("line %d", loc.Line)
	}
	return fmt.Sprintf("line %d (%s)", loc.Line, loc.Path)
}

func (t *textView) ports(title string, g *plan.GroupPlan, ps []plan.Port, inputs bool) {
	if len(ps) == 0 {
		return
	}
	t.line(0, "")
	t.line(1, "%s", title)
	nameW, wordW := 0, 0
	for _, p := range ps {
		nameW, wordW = max(nameW, utf8.RuneCountInString(p.Name)), max(wordW, utf8.RuneCountInString(portWord(p)))
	}
	for _, p := range ps {
		head := fmt.Sprintf("%-*s  %-*s  %s", nameW, p.Name, wordW, portWord(p), t.contract(g.Component, p.Name, inputs))
		t.line(2, "%s", strings.TrimRight(head, " "))
		t.line(3, "why: %s", p.Why)
		for _, l := range p.Levels {
			t.line(3, "%s", levelText(p, l))
		}
		for _, pad := range p.Padded {
			t.line(3, "%s", padText(pad, inputs))
		}
	}
}

// portWord is the role of an input or the split of an output, with the
// delivery of a delivered companion.
func portWord(p plan.Port) string {
	if p.Role != "" {
		return string(p.Role)
	}
	if p.Delivery != "" {
		return fmt.Sprintf("%s (%s)", p.Split, p.Delivery)
	}
	return string(p.Split)
}

// contract prints a port's declared contract from the module, or nothing
// when the module is not at hand.
func (t *textView) contract(comp, port string, input bool) string {
	if t.m == nil {
		return ""
	}
	c := t.m.Component(comp)
	if c == nil {
		return ""
	}
	p := c.Output(port)
	if input {
		p = c.Input(port)
	}
	if p == nil {
		return ""
	}
	return contractText(p.Contract)
}

// contractText writes a contract's dtype and shape as `float32[frames,
// patches, 3]`, with its rank when the shape is not declared.
func contractText(c *ir.Contract) string {
	if c == nil {
		return "no contract"
	}
	var s string
	switch {
	case c.HasShape:
		dims := make([]string, len(c.Shape))
		for i, d := range c.Shape {
			dims[i] = dimText(d)
		}
		s = c.DType + "[" + strings.Join(dims, ", ") + "]"
	case c.Rank >= 0:
		s = fmt.Sprintf("%s (rank %d)", c.DType, c.Rank)
	default:
		s = c.DType + " (rank unknown)"
	}
	if c.Optional {
		s += " optional"
	}
	return s
}

func dimText(d ir.Dim) string {
	if d.IsSym() {
		return d.Sym
	}
	return strconv.FormatInt(d.Size, 10)
}

// levelText explains one ownership level: whose units it groups into what,
// and, on an output, where its split boundaries come from.
func levelText(p plan.Port, l plan.Level) string {
	pair := fmt.Sprintf("offsets %s, owner %s", refText(l.Offsets), refText(l.Owner))
	head := fmt.Sprintf("level %d: %s → %s", l.Index, orUnknown(l.Units), outerUnits(p, l.Index))
	switch {
	case l.Extent == "preserved" && l.From != nil:
		return fmt.Sprintf("%s, preserved from input `%s` level %d: splits with that input's pair (%s)", head, l.From.Port, l.From.Level, pair)
	case l.Extent == "preserved":
		return fmt.Sprintf("%s, preserved: splits with the input pair (%s)", head, pair)
	case l.Extent == "produced":
		return fmt.Sprintf("%s, produced by the graph: splits at the graph's own companions (%s)", head, pair)
	}
	return fmt.Sprintf("%s (%s)", head, pair)
}

// outerUnits names what level i's units belong to: the next level's units,
// or the request rows for the outermost level.
func outerUnits(p plan.Port, i int) string {
	for _, l := range p.Levels {
		if l.Index == i+1 {
			return orUnknown(l.Units)
		}
	}
	return "rows"
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown units)"
	}
	return s
}

func padText(pad plan.Pad, input bool) string {
	s := fmt.Sprintf("padded: `%s` (axis %d), lengths %s", pad.Dimension, pad.Axis, refText(pad.Lengths))
	if input {
		return s + ": allocated at the group maximum, each item copied into its prefix and the rest zero-filled (see docs/authoring.md#padding)"
	}
	return s + ": each request receives its own rows and its lengths sliced (see docs/authoring.md#padding)"
}

// refText names a companion: a port of the component, or a workflow value.
func refText(r plan.Ref) string {
	if r.Port != "" {
		return "`" + r.Port + "`"
	}
	if r.Value != "" {
		return "workflow value `" + r.Value + "`"
	}
	return "(none)"
}

// compatibility states the compatibility key as a sentence.
func compatibility(g *plan.GroupPlan) string {
	var agree []string
	for _, u := range g.Uniform {
		agree = append(agree, fmt.Sprintf("%s (read from %s axis %d)", u.Symbol, u.Port, u.Axis))
	}
	var when []string
	if len(agree) > 0 {
		when = append(when, "agree on "+strings.Join(agree, ", "))
	}
	if len(g.SharedEqual) > 0 {
		when = append(when, "bring equal values for: "+strings.Join(g.SharedEqual, ", "))
	}
	if len(g.KeyedBy) > 0 {
		when = append(when, "make the same "+strings.Join(g.KeyedBy, " and ")+" (read off each item's header when its request is admitted)")
	}
	if len(when) == 0 {
		return "any two items may share an invocation: no dimension is uniform and no shared input must be equal"
	}
	return "items share an invocation when they " + strings.Join(when, " and ")
}

func (t *textView) budgets(g *plan.GroupPlan) {
	t.line(0, "")
	if len(g.Budgets) == 0 {
		t.line(1, "budgets: none declared")
		return
	}
	t.line(1, "budgets (materialized footprint; see docs/authoring.md#budgets-and-footprint)")
	t.line(2, "each binds on its own; an item that alone exceeds one is refused at admission (run/budget)")
	for _, b := range g.Budgets {
		t.line(2, "%s ≤ %d", footprint(b), b.MaxTotal)
		t.line(3, "where %s", budgetWhere(g, b))
		if b.MinItem != 1 {
			t.line(3, "one item alone is at least %d", b.MinItem)
		}
	}
}

// footprint writes a budget path as a product, outermost first.
func footprint(b plan.Budget) string { return strings.Join(b.Dimensions, " × ") }

// budgetWhere says how each symbol of a budget path is measured on a
// candidate group.
func budgetWhere(g *plan.GroupPlan, b plan.Budget) string {
	parts := make([]string, len(b.Terms))
	for i, tm := range b.Terms {
		parts[i] = tm.Symbol + " = " + termText(g, tm)
	}
	return strings.Join(parts, ", ")
}

// termText is how one budget symbol's footprint is computed (§3.5).
func termText(g *plan.GroupPlan, tm plan.Term) string {
	switch tm.Kind {
	case plan.TermPacked:
		return "packed positions of " + tm.Port
	case plan.TermUnits:
		return fmt.Sprintf("level-%d units of %s (%s in the group)", tm.Level, tm.Port, tm.Symbol)
	case plan.TermRows:
		side := ""
		if g.Input(tm.Port) == nil && g.Output(tm.Port) != nil {
			side = "output "
		}
		if tm.Factor > 1 {
			return fmt.Sprintf("request rows × %d (%s%s axis %d)", tm.Factor, side, tm.Port, tm.Axis)
		}
		return fmt.Sprintf("request rows of the group (%s%s axis %d)", side, tm.Port, tm.Axis)
	case plan.TermPadded:
		return fmt.Sprintf("padded extent of %s axis %d (group maximum)", tm.Port, tm.Axis)
	case plan.TermPinned:
		if tm.Port == "" {
			return "pinned extent (equal across the group)"
		}
		return fmt.Sprintf("pinned extent of %s axis %d (equal across the group)", tm.Port, tm.Axis)
	}
	return fmt.Sprintf("%s term of %s", tm.Kind, tm.Port)
}
