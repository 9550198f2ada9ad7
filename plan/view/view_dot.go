package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// WriteDOT draws the workflow as a Graphviz digraph: workflow inputs and
// state cells flow into invoke steps, whose results flow into other steps
// and, through emits, into workflow outputs. An invoke of a grouped
// component is drawn as a bold, filled box listing its budgets; a solo one
// as a plain box. Branch cases and loops are dashed clusters. The output
// is deterministic. Without a module only the components are drawn.
//
// A workflow input or output that is packed or padded keeps its companions
// (level offsets and owners, padding lengths) beside it: they share its
// rank, and each companion has a dotted edge to the value it serves, so an
// owner never floats unconnected.
func WriteDOT(w io.Writer, f *plan.File) error {
	m := f.IR
	d := &dotView{f: f, m: m, producer: map[ir.ValueID]string{}, stepID: map[*ir.Step]string{}, declared: map[string]bool{}}
	d.line(0, "// genaic inspect --format dot: the workflow of %s", strings.ReplaceAll(f.Source, "\n", " "))
	d.line(0, "// grouped components: bold filled boxes with their budgets; solo ones: plain boxes")
	d.line(0, "digraph workflow {")
	d.line(1, "rankdir=LR;")
	d.line(1, `graph [fontname="Helvetica", fontsize=10];`)
	d.line(1, `node [fontname="Helvetica", fontsize=10];`)
	d.line(1, `edge [fontname="Helvetica", fontsize=9];`)
	if m != nil {
		d.number()
		d.sources()
		d.block(m.Body, 1)
		d.outputs()
		d.companions()
	}
	d.uninvoked()
	for _, e := range d.edges {
		if d.declared[e.from] && d.declared[e.to] {
			d.line(1, "%s -> %s [%s];", dotID(e.from), dotID(e.to), e.attrs)
		}
	}
	d.line(0, "}")
	_, err := io.WriteString(w, d.b.String())
	return err
}

type dotView struct {
	b        strings.Builder
	f        *plan.File
	m        *ir.Module
	producer map[ir.ValueID]string // value → the node that defines it
	stepID   map[*ir.Step]string   // invoke step → its node
	invoked  map[string]bool       // components some step invokes
	declared map[string]bool       // nodes drawn
	edges    []dotEdge
	clusters int
}

// dotEdge is an edge, written after every node so that an edge whose end
// was never drawn (a name the module does not declare) is left out rather
// than conjuring a node.
type dotEdge struct{ from, to, attrs string }

// node draws a node and remembers it.
func (d *dotView) node(indent int, id, attrs string) {
	d.declared[id] = true
	d.line(indent, "%s %s;", dotID(id), attrs)
}

func (d *dotView) line(indent int, format string, args ...any) {
	d.b.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteByte('\n')
}

// number names every node before any is drawn, so that an edge may point
// at a value defined later in the text (a loop's carried next value).
func (d *dotView) number() {
	d.invoked = map[string]bool{}
	for _, in := range d.m.Inputs {
		d.producer[in.Value] = "in:" + in.Name
	}
	for _, c := range d.m.Cells {
		d.producer[c.Value] = "cell:" + c.Name
	}
	n := 0
	d.m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke {
			id := fmt.Sprintf("invoke:%d", n)
			n++
			d.stepID[s] = id
			d.invoked[s.Component.Name] = true
			for _, r := range s.Results {
				d.producer[r.Value] = id
			}
		}
		for _, p := range s.Phis {
			d.producer[p.Value] = fmt.Sprintf("phi:%d", p.Value)
		}
		if s.Iteration != nil {
			d.producer[*s.Iteration] = fmt.Sprintf("iteration:%d", *s.Iteration)
		}
		return true
	})
}

// sources draws the workflow inputs and state cells.
func (d *dotView) sources() {
	for _, in := range d.m.Inputs {
		label := dotLabel(in.Name, contractText(in.Contract), layoutWord(in.Contract), "source "+in.Source)
		d.node(1, "in:"+in.Name, "[shape=box, style=rounded, label="+label+"]")
	}
	for _, c := range d.m.Cells {
		label := dotLabel(c.Name, contractText(c.Contract), "state cell, scope "+c.Scope)
		d.node(1, "cell:"+c.Name, "[shape=cylinder, label="+label+"]")
		if c.Initializer.Name != "" {
			d.edge(c.Initializer.ID, "cell:"+c.Name, "initializer", "dashed")
		}
	}
}

func (d *dotView) outputs() {
	for _, o := range d.m.Outputs {
		label := dotLabel(o.Name, contractText(o.Contract), layoutWord(o.Contract))
		d.node(1, "out:"+o.Name, `[shape=box, style="rounded,filled", fillcolor="#eeeeee", label=`+label+"]")
	}
}

// companionRef is one companion a contract names.
type companionRef struct{ name, role string }

// companionsOf lists the companions a contract names: each level's offsets
// and owner, innermost first, then each padding's lengths.
func companionsOf(c *ir.Contract) []companionRef {
	if c == nil {
		return nil
	}
	var refs []companionRef
	for i, l := range c.Layout.Levels {
		refs = append(refs,
			companionRef{l.Offsets.Name, fmt.Sprintf("offsets, level %d", i)},
			companionRef{l.Owner.Name, fmt.Sprintf("owner, level %d", i)})
	}
	for _, p := range c.Padding {
		refs = append(refs, companionRef{p.Lengths.Name, "lengths of " + p.Dim.Name})
	}
	return refs
}

// companions draws each workflow input's and output's companions beside
// it: one rank=same subgraph per served value (a companion joins the first
// value that names it), and a dotted edge from each companion to every
// value it serves. Companions of inputs are inputs; of outputs, outputs.
func (d *dotView) companions() {
	placed := map[string]bool{}
	group := func(served string, c *ir.Contract, prefix string) {
		if !d.declared[served] {
			return
		}
		members := []string{served}
		for _, r := range companionsOf(c) {
			id := prefix + r.name
			if r.name == "" || !d.declared[id] || id == served {
				continue
			}
			d.edges = append(d.edges, dotEdge{from: id, to: served,
				attrs: "label=" + dotLabel(r.role) + ", style=dotted, arrowhead=none, constraint=false"})
			if !placed[id] {
				placed[id] = true
				members = append(members, id)
			}
		}
		if len(members) == 1 {
			return
		}
		ids := make([]string, len(members))
		for i, id := range members {
			ids[i] = dotID(id)
		}
		d.line(1, "{ rank=same; %s; }", strings.Join(ids, "; "))
	}
	for _, in := range d.m.Inputs {
		group("in:"+in.Name, in.Contract, "in:")
	}
	for _, o := range d.m.Outputs {
		group("out:"+o.Name, o.Contract, "out:")
	}
}

func layoutWord(c *ir.Contract) string {
	if c == nil {
		return ""
	}
	return c.Layout.Kind.String()
}

func (d *dotView) block(b *ir.Block, indent int) {
	if b == nil {
		return
	}
	for _, s := range b.Steps {
		switch s.Op {
		case ir.OpInvoke:
			d.invoke(s, indent)
		case ir.OpEmit:
			d.emit(s)
		case ir.OpSequence:
			d.block(s.Body, indent)
		case ir.OpBranch:
			d.branch(s, indent)
		case ir.OpLoop:
			d.loop(s, indent)
		}
	}
}

func (d *dotView) invoke(s *ir.Step, indent int) {
	id := d.stepID[s]
	g := planOf(d.f, s.Component.Name)
	d.node(indent, id, componentAttrs(s.Component.Name, g))
	for _, a := range s.Args {
		label := a.Port
		if a.Value.Name != a.Port {
			label = a.Value.Name + " → " + a.Port
		}
		if g != nil && g.Grouped {
			if p := g.Input(a.Port); p != nil {
				label += " (" + string(p.Role) + ")"
			}
		}
		d.edge(a.Value.ID, id, label, "")
	}
}

// componentAttrs draws a component: grouped ones bold and filled, with
// their budgets; solo ones plain.
func componentAttrs(name string, g *plan.GroupPlan) string {
	if g == nil || !g.Grouped {
		return fmt.Sprintf("[shape=box, label=%s]", dotLabel(name, "solo"))
	}
	lines := []string{name, "grouped"}
	for _, b := range g.Budgets {
		lines = append(lines, fmt.Sprintf("%s ≤ %d", footprint(b), b.MaxTotal))
	}
	return fmt.Sprintf("[shape=box3d, style=\"bold,filled\", fillcolor=\"#cfe2f3\", label=%s]", dotLabel(lines...))
}

func (d *dotView) emit(s *ir.Step) {
	label := s.Value.Name + "\nemit " + s.Mode
	if s.When != nil {
		label += " when " + s.When.Name
	}
	d.edge(s.Value.ID, "out:"+s.Output.Name, label, "")
}

func (d *dotView) branch(s *ir.Step, indent int) {
	d.cluster(indent, "branch on "+s.Predicate.Name, func() {
		for _, c := range s.Cases {
			d.cluster(indent+1, "case "+c.Key, func() { d.block(c.Body, indent+2) })
		}
		if s.Default != nil {
			d.cluster(indent+1, "default", func() { d.block(s.Default, indent+2) })
		}
		for _, p := range s.Phis {
			id := d.producer[p.Value]
			d.node(indent+1, id, "[shape=diamond, label="+dotLabel(d.valueName(p.Value))+"]")
			for _, in := range p.Inputs {
				d.edge(in.Value.ID, id, "case "+in.Key, "")
			}
			if p.Default != nil {
				d.edge(p.Default.ID, id, "default", "")
			}
		}
	})
}

func (d *dotView) loop(s *ir.Step, indent int) {
	title := fmt.Sprintf("loop while %s, at most %d iterations", s.ContinueWhen.Name, s.MaxIterations)
	d.cluster(indent, title, func() {
		if s.Iteration != nil {
			d.node(indent+1, d.producer[*s.Iteration], "[shape=plaintext, label="+dotLabel(d.valueName(*s.Iteration), "iteration")+"]")
		}
		d.block(s.Setup, indent+1)
		d.block(s.Body, indent+1)
	})
	for _, c := range s.Carried {
		if c.Initial != nil {
			d.edge(c.Initial.ID, "cell:"+c.Cell.Name, "initial", "dashed")
		}
		d.edge(c.Next.ID, "cell:"+c.Cell.Name, "next", "dashed")
	}
}

func (d *dotView) cluster(indent int, label string, body func()) {
	d.clusters++
	d.line(indent, "subgraph %s {", dotID(fmt.Sprintf("cluster_%d", d.clusters)))
	d.line(indent+1, "label=%s; style=dashed;", dotLabel(label))
	body()
	d.line(indent, "}")
}

// uninvoked draws the components no step invokes, dashed.
func (d *dotView) uninvoked() {
	for _, g := range plans(d.f) {
		if d.invoked[g.Component] {
			continue
		}
		word := "solo"
		if g.Grouped {
			word = "grouped"
		}
		if d.m == nil {
			d.node(1, "component:"+g.Component, componentAttrs(g.Component, g))
			continue
		}
		label := dotLabel(g.Component, word, "not invoked by any step")
		d.node(1, "component:"+g.Component, "[shape=box, style=dashed, label="+label+"]")
	}
}

func (d *dotView) valueName(id ir.ValueID) string {
	if v := d.m.Value(id); v != nil {
		return v.Name
	}
	return fmt.Sprintf("%%%d", id)
}

// edge records an edge from the node defining a value; a value nothing
// defines (an unresolved use) draws no edge.
func (d *dotView) edge(from ir.ValueID, to, label, style string) {
	src, ok := d.producer[from]
	if !ok {
		return
	}
	attrs := "label=" + dotLabel(label)
	if style != "" {
		attrs += ", style=" + style
	}
	d.edges = append(d.edges, dotEdge{from: src, to: to, attrs: attrs})
}

// dotID quotes a node or cluster name: names are free strings.
func dotID(s string) string { return `"` + dotEscape(s) + `"` }

// dotLabel joins non-empty lines into one quoted label.
func dotLabel(lines ...string) string {
	var kept []string
	for _, l := range lines {
		if l != "" {
			kept = append(kept, dotEscape(l))
		}
	}
	return `"` + strings.Join(kept, `\n`) + `"`
}

func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
