package view

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// The workflow graph of the HTML view, laid out here so that the page
// needs no tool or script to show it: workflow inputs and state cells on
// the left, then invoke steps and the values they define, workflow outputs
// on the right. Layers are longest paths from the sources; within a layer,
// a few barycenter sweeps order the nodes to reduce crossings. Each
// component node lists its input ports on its left edge and its output
// ports on its right edge, with each companion folded under the port it
// serves; edges join the exact port rows. Every node is an SVG group with
// data-node-kind and data-name attributes, so that a test (or a script a
// person writes) can read the graph back from the DOM.

// Node kinds, as the data-node-kind attribute spells them.
const (
	kindInput     = "input"
	kindCell      = "cell"
	kindComponent = "component"
	kindValue     = "value"
	kindOutput    = "output"
	kindDummy     = "dummy" // a point a long edge passes through; never drawn
)

type svgNode struct {
	kind, name string
	lines      []string // under the name: contract, role, ...
	def        string   // what defines a value node: invoke, phi, iteration
	grouped    bool
	invoked    bool
	planned    bool // has a section on the page to link to
	ins, outs  []svgPort
	doc        int // document order, the first ordering
	layer      int
	pos        float64 // position within its layer while ordering
	x, y, w, h float64
}

type svgPort struct {
	name, word string
	role       string // the role or split, for the colour
	folded     bool   // a companion drawn under the port it serves
	y          float64
}

type svgEdge struct {
	from, to         int
	fromPort, toPort string
	title            string
	dashed, back     bool
	companion        bool  // a workflow value serving a port's level or padding
	via              []int // dummy nodes in the layers the edge crosses
}

type svgGraph struct {
	f        *plan.File
	m        *ir.Module
	nodes    []*svgNode
	edges    []svgEdge
	producer map[ir.ValueID]int
	invokeOf map[*ir.Step]int
	outputOf map[string]int
	cellOf   map[string]int
	w, h     float64
	colX     []float64 // each layer's left edge
	colW     []float64 // and width
}

// Sizes in pixels; text widths are estimated from a monospace advance.
const (
	charW      = 7.3 // 12px monospace: port names
	subCharW   = 6.7 // 11px: the lines under a name, a port's role
	titleCharW = 8.0 // 13px bold: a node's name
	portRow    = 18.0
	nodeGapY   = 22.0
	layerGapX  = 80.0
	margin     = 16.0
)

func newSVGGraph(f *plan.File) *svgGraph {
	g := &svgGraph{f: f, m: f.IR, producer: map[ir.ValueID]int{}, invokeOf: map[*ir.Step]int{}, outputOf: map[string]int{}, cellOf: map[string]int{}}
	g.build()
	g.layer()
	g.splitLong()
	g.order()
	g.place()
	return g
}

func (g *svgGraph) add(n *svgNode) int {
	n.lines = slices.DeleteFunc(n.lines, func(l string) bool { return l == "" })
	n.doc = len(g.nodes)
	g.nodes = append(g.nodes, n)
	return n.doc
}

// build makes one node per workflow input, state cell, invoke step,
// value an invoke, branch or loop defines, workflow output, and per
// component no step invokes; then the edges of the data flow.
func (g *svgGraph) build() {
	invoked := map[string]bool{}
	if g.m != nil {
		for _, in := range g.m.Inputs {
			g.producer[in.Value] = g.add(&svgNode{kind: kindInput, name: in.Name, lines: []string{contractText(in.Contract), "from " + orWord(in.Source, "request")}})
		}
		for _, c := range g.m.Cells {
			i := g.add(&svgNode{kind: kindCell, name: c.Name, lines: []string{contractText(c.Contract), "state, scope " + orWord(c.Scope, "request")}})
			g.producer[c.Value], g.cellOf[c.Name] = i, i
		}
		walkWhere(g.m.Body, "", func(s *ir.Step, where string) {
			switch {
			case s.Op == ir.OpInvoke:
				invoked[s.Component.Name] = true
				n := g.componentNode(s.Component.Name, true)
				if where != "" {
					n.lines = append(n.lines, where)
				}
				i := g.add(n)
				g.invokeOf[s] = i
				for _, r := range s.Results {
					v := g.add(&svgNode{kind: kindValue, def: "invoke", name: g.valueName(r.Value), lines: []string{g.valueContract(r.Value)}})
					g.producer[r.Value] = v
					g.edges = append(g.edges, svgEdge{from: i, to: v, fromPort: r.Port, title: s.Component.Name + "." + r.Port + " → " + g.valueName(r.Value)})
				}
			case s.Op == ir.OpBranch:
				for _, p := range s.Phis {
					g.producer[p.Value] = g.add(&svgNode{kind: kindValue, def: "phi", name: g.valueName(p.Value), lines: []string{"branch on " + s.Predicate.Name}})
				}
			case s.Op == ir.OpLoop && s.Iteration != nil:
				g.producer[*s.Iteration] = g.add(&svgNode{kind: kindValue, def: "iteration", name: g.valueName(*s.Iteration), lines: []string{"loop iteration"}})
			}
		})
		for _, o := range g.m.Outputs {
			g.outputOf[o.Name] = g.add(&svgNode{kind: kindOutput, name: o.Name, lines: []string{contractText(o.Contract), orWord(o.Role, "")}})
		}
	}
	for _, gp := range plans(g.f) {
		if !invoked[gp.Component] {
			g.add(g.componentNode(gp.Component, g.m == nil))
		}
	}
	if g.m != nil {
		g.flows()
	}
}

// walkWhere calls f on every step of b in document order, with where it
// runs: the branch cases and loops around it, innermost last.
func walkWhere(b *ir.Block, where string, f func(s *ir.Step, where string)) {
	if b == nil {
		return
	}
	in := func(what string) string {
		if where == "" {
			return what
		}
		return where + ", " + what
	}
	for _, s := range b.Steps {
		f(s, where)
		switch s.Op {
		case ir.OpBranch:
			for _, c := range s.Cases {
				walkWhere(c.Body, in("case "+c.Key+" of "+s.Predicate.Name), f)
			}
			walkWhere(s.Default, in("default of "+s.Predicate.Name), f)
		case ir.OpLoop:
			walkWhere(s.Setup, in("loop setup"), f)
			walkWhere(s.Body, in("loop while "+s.ContinueWhen.Name), f)
		default:
			for _, nb := range s.Blocks() {
				walkWhere(nb, where, f)
			}
		}
	}
}

// flows adds the edges: values into ports, branch cases into their phis,
// emits into outputs, and the dashed edges into state cells (an
// initializer, a loop's initial and next values).
func (g *svgGraph) flows() {
	for _, c := range g.m.Cells {
		g.flow(c.Initializer.ID, g.cellOf[c.Name], "", "initializer of "+c.Name, true)
	}
	g.m.Body.Walk(func(s *ir.Step) bool {
		switch s.Op {
		case ir.OpInvoke:
			for _, a := range s.Args {
				g.flow(a.Value.ID, g.invokeOf[s], a.Port, a.Value.Name+" → "+s.Component.Name+"."+a.Port, false)
			}
			g.companions(s)
		case ir.OpEmit:
			if o, ok := g.outputOf[s.Output.Name]; ok {
				g.flow(s.Value.ID, o, "", "emit "+s.Value.Name+" into "+s.Output.Name+" ("+orWord(s.Mode, "replace")+")", false)
			}
		case ir.OpBranch:
			for _, p := range s.Phis {
				to := g.producer[p.Value]
				g.flow(s.Predicate.ID, to, "", "predicate "+s.Predicate.Name, true)
				for _, in := range p.Inputs {
					g.flow(in.Value.ID, to, "", "case "+in.Key, false)
				}
				if p.Default != nil {
					g.flow(p.Default.ID, to, "", "default", false)
				}
			}
		case ir.OpLoop:
			for _, c := range s.Carried {
				cell, ok := g.cellOf[c.Cell.Name]
				if !ok {
					continue
				}
				if c.Initial != nil {
					g.flow(c.Initial.ID, cell, "", "initial "+c.Cell.Name, true)
				}
				g.flow(c.Next.ID, cell, "", "next "+c.Cell.Name, true)
			}
		}
		return true
	})
}

// companions connects the workflow values that serve a level or the
// padding of an input port without being bound to a port (a level-1 pair
// or an owner the graph never reads) to the port they serve, dotted.
func (g *svgGraph) companions(s *ir.Step) {
	gp := planOf(g.f, s.Component.Name)
	if gp == nil {
		return
	}
	to := g.invokeOf[s]
	link := func(r plan.Ref, port, what string) {
		if r.Value == "" {
			return
		}
		id, ok := g.valueNamed(r.Value)
		if !ok {
			return
		}
		n := len(g.edges)
		g.flow(id, to, port, r.Value+": "+what+" of "+s.Component.Name+"."+port, false)
		if len(g.edges) > n {
			g.edges[n].companion = true
		}
	}
	for _, p := range gp.Inputs {
		for _, l := range p.Levels {
			link(l.Offsets, p.Name, fmt.Sprintf("offsets of level %d", l.Index))
			link(l.Owner, p.Name, fmt.Sprintf("owner of level %d", l.Index))
		}
		for _, pad := range p.Padded {
			link(pad.Lengths, p.Name, "valid lengths of "+pad.Dimension)
		}
	}
}

// valueNamed finds a workflow value by name: an input, a cell, or the first
// value so named.
func (g *svgGraph) valueNamed(name string) (ir.ValueID, bool) {
	for _, in := range g.m.Inputs {
		if in.Name == name {
			return in.Value, true
		}
	}
	for _, c := range g.m.Cells {
		if c.Name == name {
			return c.Value, true
		}
	}
	for _, v := range g.m.Values {
		if v != nil && v.Name == name {
			return v.ID, true
		}
	}
	return 0, false
}

// flow records an edge from the node defining value v; a value nothing
// defines (an unresolved use) draws none.
func (g *svgGraph) flow(v ir.ValueID, to int, port, title string, dashed bool) {
	from, ok := g.producer[v]
	if !ok || from == to {
		return
	}
	g.edges = append(g.edges, svgEdge{from: from, to: to, toPort: port, title: title, dashed: dashed})
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (g *svgGraph) valueName(id ir.ValueID) string {
	if v := g.m.Value(id); v != nil && v.Name != "" {
		return v.Name
	}
	return fmt.Sprintf("%%%d", id)
}

func (g *svgGraph) valueContract(id ir.ValueID) string {
	if v := g.m.Value(id); v != nil && v.Contract != nil {
		return contractText(v.Contract)
	}
	return ""
}

// componentNode draws a component with its ports: the plan's ports when it
// has a plan (with their roles), else the module's.
func (g *svgGraph) componentNode(name string, invoked bool) *svgNode {
	n := &svgNode{kind: kindComponent, name: name, invoked: invoked}
	gp := planOf(g.f, name)
	n.planned = gp != nil
	word := "solo"
	if gp != nil && gp.Grouped {
		n.grouped, word = true, "grouped"
	}
	if !invoked {
		word += ", not invoked by any step"
	}
	if ops := g.f.Ops(name); len(ops) > 0 {
		word += fmt.Sprintf(", %d %s", len(ops), plural(len(ops), "op type"))
	}
	n.lines = []string{word}
	switch {
	case gp != nil:
		n.ins, n.outs = foldPorts(gp.Inputs, true), foldPorts(gp.Outputs, false)
	case g.m != nil && g.m.Component(name) != nil:
		c := g.m.Component(name)
		for _, p := range c.Inputs {
			n.ins = append(n.ins, svgPort{name: p.Name})
		}
		for _, p := range c.Outputs {
			n.outs = append(n.outs, svgPort{name: p.Name})
		}
	}
	return n
}

// foldPorts orders ports as they are declared, each companion moved under
// the port it serves.
func foldPorts(ps []plan.Port, inputs bool) []svgPort {
	served := map[string][]plan.Port{}
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = true
	}
	for _, p := range ps {
		if p.Serves != nil && names[p.Serves.Port] && p.Serves.Port != p.Name {
			served[p.Serves.Port] = append(served[p.Serves.Port], p)
		}
	}
	var out []svgPort
	for _, p := range ps {
		if p.Serves != nil && names[p.Serves.Port] && p.Serves.Port != p.Name {
			continue
		}
		out = append(out, svgPort{name: p.Name, word: portBadge(p, inputs), role: portRole(p, inputs)})
		for _, c := range served[p.Name] {
			out = append(out, svgPort{name: c.Name, word: servesWord(c.Serves), role: portRole(c, inputs), folded: true})
		}
	}
	return out
}

// portBadge is the short word drawn beside a port: its role or split, and
// "padded" when it is padded.
func portBadge(p plan.Port, inputs bool) string {
	w := string(p.Role)
	if !inputs {
		w = string(p.Split)
	}
	if len(p.Padded) > 0 {
		w += " padded"
	}
	return w
}

func portRole(p plan.Port, inputs bool) string {
	if len(p.Padded) > 0 {
		return "padded"
	}
	if inputs {
		return string(p.Role)
	}
	return string(p.Split)
}

// servesWord is what a companion does for the port it is folded under.
func servesWord(s *plan.Serves) string {
	switch s.Role {
	case "lengths":
		return "lengths of " + s.Dimension
	case "offsets", "owner":
		return fmt.Sprintf("%s L%d", s.Role, s.Level)
	}
	return s.Role
}

// layer assigns each node its longest path from a source. Edges into
// state cells close loops, so they do not count; any other cycle (a
// malformed module) is broken at the earliest node still waiting.
func (g *svgGraph) layer() {
	n := len(g.nodes)
	indeg := make([]int, n)
	out := make([][]int, n)
	for i, e := range g.edges {
		if g.nodes[e.to].kind == kindCell && e.dashed {
			g.edges[i].back = true
			continue
		}
		indeg[e.to]++
		out[e.from] = append(out[e.from], i)
	}
	done := make([]bool, n)
	var queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for left := n; left > 0; {
		if len(queue) == 0 {
			// A cycle: release the earliest waiting node, its remaining
			// incoming edges drawn as back edges.
			for i := range n {
				if !done[i] {
					for k, e := range g.edges {
						if e.to == i && !done[e.from] && !e.back {
							g.edges[k].back = true
						}
					}
					queue = append(queue, i)
					break
				}
			}
		}
		v := queue[0]
		queue = queue[1:]
		if done[v] {
			continue
		}
		done[v] = true
		left--
		for _, ei := range out[v] {
			e := g.edges[ei]
			if e.back {
				continue
			}
			g.nodes[e.to].layer = max(g.nodes[e.to].layer, g.nodes[v].layer+1)
			if indeg[e.to]--; indeg[e.to] == 0 {
				queue = append(queue, e.to)
			}
		}
	}
	// Workflow outputs line up on the right.
	last := 0
	for _, nd := range g.nodes {
		last = max(last, nd.layer)
	}
	for _, nd := range g.nodes {
		if nd.kind == kindOutput {
			nd.layer = last
		}
	}
}

// layers returns the nodes of each layer in their current order.
func (g *svgGraph) layers() [][]int {
	var ls [][]int
	for i, nd := range g.nodes {
		for len(ls) <= nd.layer {
			ls = append(ls, nil)
		}
		ls[nd.layer] = append(ls[nd.layer], i)
	}
	for _, l := range ls {
		slices.SortStableFunc(l, func(a, b int) int { return cmp.Compare(g.nodes[a].pos, g.nodes[b].pos) })
	}
	return ls
}

// maxDummies bounds the points long edges add: a workflow of thousands of
// steps in a chain is drawn with straight long edges past the bound, not
// with a quadratic number of points.
const maxDummies = 20000

// splitLong gives an edge that crosses layers one dummy node in each, so
// that ordering keeps its path clear of the nodes it passes.
func (g *svgGraph) splitLong() {
	added := 0
	for i := range g.edges {
		e := &g.edges[i]
		span := g.nodes[e.to].layer - g.nodes[e.from].layer - 1
		if e.back || span <= 0 || added+span > maxDummies {
			continue
		}
		added += span
		for l := g.nodes[e.from].layer + 1; l < g.nodes[e.to].layer; l++ {
			e.via = append(e.via, g.add(&svgNode{kind: kindDummy, layer: l}))
		}
	}
}

// order runs barycenter sweeps: each node moves to the mean position of
// its neighbours in the previous layer, down and then up.
func (g *svgGraph) order() {
	preds := make([][]int, len(g.nodes))
	succs := make([][]int, len(g.nodes))
	for _, e := range g.edges {
		if e.back {
			continue
		}
		path := append(append([]int{e.from}, e.via...), e.to)
		for k := 1; k < len(path); k++ {
			preds[path[k]] = append(preds[path[k]], path[k-1])
			succs[path[k-1]] = append(succs[path[k-1]], path[k])
		}
	}
	for _, nd := range g.nodes {
		nd.pos = float64(nd.doc)
	}
	for _, l := range g.layers() {
		for k, i := range l {
			g.nodes[i].pos = float64(k)
		}
	}
	for sweep := range 4 {
		down := sweep%2 == 0
		ls := g.layers()
		idx := make([]int, len(ls))
		for k := range ls {
			idx[k] = k
		}
		if !down {
			slices.Reverse(idx)
		}
		for _, k := range idx[1:] {
			for _, i := range ls[k] {
				nb := preds[i]
				if !down {
					nb = succs[i]
				}
				sum, cnt := 0.0, 0
				for _, j := range nb {
					sum += g.nodes[j].pos
					cnt++
				}
				if cnt > 0 {
					g.nodes[i].pos = sum / float64(cnt)
				}
			}
			// Renumber this layer so the next one reads positions.
			l := slices.Clone(ls[k])
			slices.SortStableFunc(l, func(a, b int) int { return cmp.Compare(g.nodes[a].pos, g.nodes[b].pos) })
			for p, i := range l {
				g.nodes[i].pos = float64(p)
			}
		}
	}
}

func textW(s string, cw float64) float64 { return float64(utf8.RuneCountInString(s)) * cw }

// size measures a node from its text.
func (nd *svgNode) size() {
	w := textW(nd.name, titleCharW) + 24
	for _, l := range nd.lines {
		w = max(w, textW(l, subCharW)+24)
	}
	if nd.kind == kindDummy {
		nd.w, nd.h = 0, 6
		return
	}
	if nd.kind != kindComponent {
		nd.w, nd.h = max(w, 90), nd.head()-2
		return
	}
	colW := func(ps []svgPort) float64 {
		m := 0.0
		for _, p := range ps {
			m = max(m, textW(p.name, charW)+textW(" "+p.word, subCharW)+float64(boolInt(p.folded))*(14+2*charW))
		}
		return m
	}
	in, out := colW(nd.ins), colW(nd.outs)
	nd.w = max(w, in+out+40, 150)
	rows := max(len(nd.ins), len(nd.outs))
	head := nd.head()
	nd.h = head + portRow*float64(rows) + 8
	for k := range nd.ins {
		nd.ins[k].y = head + portRow*float64(k) + portRow/2
	}
	for k := range nd.outs {
		nd.outs[k].y = head + portRow*float64(k) + portRow/2
	}
}

// head is the height of a node's name and the lines under it.
func (nd *svgNode) head() float64 { return 24 + 16*float64(len(nd.lines)) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// place sets coordinates: one column per layer, nodes stacked in their
// order and each column centred on the tallest.
func (g *svgGraph) place() {
	for _, nd := range g.nodes {
		nd.size()
	}
	ls := g.layers()
	x, tallest := margin, 0.0
	colH := make([]float64, len(ls))
	for k, l := range ls {
		colW := 0.0
		for _, i := range l {
			colW = max(colW, g.nodes[i].w)
			colH[k] += g.nodes[i].h + nodeGapY
		}
		for _, i := range l {
			g.nodes[i].x = x + (colW-g.nodes[i].w)/2
		}
		g.colX, g.colW = append(g.colX, x), append(g.colW, colW)
		x += colW + layerGapX
		tallest = max(tallest, colH[k])
	}
	for k, l := range ls {
		y := margin + (tallest-colH[k])/2
		for _, i := range l {
			g.nodes[i].y = y
			y += g.nodes[i].h + nodeGapY
		}
	}
	g.w = max(x-layerGapX+margin, 200)
	g.h = max(tallest+margin, 80)
	for _, e := range g.edges {
		if e.back {
			g.h = max(g.h, g.nodes[e.from].y+g.nodes[e.from].h+70, g.nodes[e.to].y+g.nodes[e.to].h+70)
		}
	}
}

// anchor is where an edge leaves or enters a node: the port's row when it
// names a drawn port, else the middle of the node's side.
func anchor(nd *svgNode, port string, right bool) (float64, float64) {
	x := nd.x
	ps := nd.ins
	if right {
		x, ps = nd.x+nd.w, nd.outs
	}
	for _, p := range ps {
		if p.name == port && port != "" {
			return x, nd.y + p.y
		}
	}
	return x, nd.y + nd.h/2
}

func num(f float64) string {
	return fmt.Sprintf("%.1f", math.Round(f*10)/10)
}

// svg writes the graph. Every string goes through template.HTMLEscapeString.
func (g *svgGraph) svg() template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" role="img" aria-label="workflow graph">`, num(g.w), num(g.h), num(g.w), num(g.h))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>`)
	for _, e := range g.edges {
		from, to := g.nodes[e.from], g.nodes[e.to]
		x1, y1 := anchor(from, e.fromPort, true)
		x2, y2 := anchor(to, e.toPort, false)
		var d string
		if e.back || x2 <= x1 {
			low := max(from.y+from.h, to.y+to.h) + 50
			d = fmt.Sprintf("M%s,%s C%s,%s %s,%s %s,%s", num(x1), num(y1), num(x1+60), num(low), num(x2-60), num(low), num(x2), num(y2))
		} else {
			d = curve(x1, y1, e.via, g, x2, y2)
		}
		class := "edge"
		if e.dashed {
			class += " dashed"
		}
		if e.companion {
			class += " companion"
		}
		fmt.Fprintf(&b, `<g class="%s" data-from="%s" data-to="%s"><title>%s</title><path d="%s" marker-end="url(#arrow)"/></g>`,
			class, esc(from.name), esc(to.name), esc(e.title), d)
	}
	for _, nd := range g.nodes {
		g.writeNode(&b, nd)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// curve draws an edge through the dummies it passes, straight across each
// of their columns at the dummy's height: one smooth cubic from point to
// point, each leaving and arriving horizontally.
func curve(x1, y1 float64, via []int, g *svgGraph, x2, y2 float64) string {
	xs, ys := []float64{x1}, []float64{y1}
	for _, i := range via {
		nd := g.nodes[i]
		y := nd.y + nd.h/2
		xs, ys = append(xs, g.colX[nd.layer], g.colX[nd.layer]+g.colW[nd.layer]), append(ys, y, y)
	}
	xs, ys = append(xs, x2), append(ys, y2)
	d := fmt.Sprintf("M%s,%s", num(xs[0]), num(ys[0]))
	for k := 1; k < len(xs); k++ {
		dx := max(0, (xs[k]-xs[k-1])/2)
		d += fmt.Sprintf(" C%s,%s %s,%s %s,%s", num(xs[k-1]+dx), num(ys[k-1]), num(xs[k]-dx), num(ys[k]), num(xs[k]), num(ys[k]))
	}
	return d
}

func (g *svgGraph) writeNode(b *strings.Builder, nd *svgNode) {
	if nd.kind == kindDummy {
		return
	}
	esc := template.HTMLEscapeString
	class := "node " + nd.kind
	extra := ""
	switch nd.kind {
	case kindComponent:
		class += " " + map[bool]string{true: "grouped", false: "solo"}[nd.grouped]
		if !nd.invoked {
			class += " uninvoked"
		}
		extra = fmt.Sprintf(` data-grouped="%t" data-invoked="%t"`, nd.grouped, nd.invoked)
	case kindValue:
		extra = fmt.Sprintf(` data-def="%s"`, esc(nd.def))
	}
	fmt.Fprintf(b, `<g class="%s" data-node-kind="%s" data-name="%s"%s transform="translate(%s,%s)">`, class, nd.kind, esc(nd.name), extra, num(nd.x), num(nd.y))
	link := nd.kind == kindComponent && nd.planned
	if link {
		fmt.Fprintf(b, `<a href="#%s">`, esc(anchorID("c", nd.name)))
	}
	fmt.Fprintf(b, `<title>%s %s</title>`, nd.kind, esc(nd.name))
	rx := "4"
	if nd.kind == kindInput || nd.kind == kindOutput {
		rx = "14"
	}
	fmt.Fprintf(b, `<rect width="%s" height="%s" rx="%s"/>`, num(nd.w), num(nd.h), rx)
	fmt.Fprintf(b, `<text class="name" x="12" y="17">%s</text>`, esc(nd.name))
	for k, l := range nd.lines {
		if l != "" {
			fmt.Fprintf(b, `<text class="sub" x="12" y="%s">%s</text>`, num(17+16*float64(k+1)), esc(l))
		}
	}
	if nd.kind == kindComponent {
		if len(nd.ins)+len(nd.outs) > 0 {
			fmt.Fprintf(b, `<line class="sep" x1="0" y1="%s" x2="%s" y2="%s"/>`, num(nd.head()-2), num(nd.w), num(nd.head()-2))
		}
		for _, p := range nd.ins {
			indent := 10.0
			name := p.name
			if p.folded {
				indent, name = 24, "↳ "+p.name
			}
			fmt.Fprintf(b, `<g class="port in role-%s" data-port="%s"><circle cx="0" cy="%s" r="3.5"/><text x="%s" y="%s">%s <tspan class="badge">%s</tspan></text></g>`,
				esc(p.role), esc(p.name), num(p.y), num(indent), num(p.y+4), esc(name), esc(p.word))
		}
		for _, p := range nd.outs {
			name := p.name
			if p.folded {
				name = "↳ " + p.name
			}
			fmt.Fprintf(b, `<g class="port out role-%s" data-port="%s"><circle cx="%s" cy="%s" r="3.5"/><text x="%s" y="%s" text-anchor="end"><tspan class="badge">%s</tspan> %s</text></g>`,
				esc(p.role), esc(p.name), num(nd.w), num(p.y), num(nd.w-10), num(p.y+4), esc(p.word), esc(name))
		}
	}
	if link {
		b.WriteString(`</a>`)
	}
	b.WriteString(`</g>`)
}

// anchorID makes an element id from a prefix and a free name: ASCII
// letters, digits and '_' are kept, anything else becomes its code point
// in hex between two '-', so two names never share an id.
func anchorID(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix + "-")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "-%x-", r)
		}
	}
	return b.String()
}
