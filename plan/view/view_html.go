package view

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// The HTML view is one self-contained page (inline CSS and SVG, no script,
// no font or image from elsewhere), titled by the package's name: the
// workflow graph drawn as SVG (see view_svg.go) at its own size, never
// shrunk below it, in a figure as wide as the window that scrolls sideways
// when the graph is wider still; a legend of the decisions, then one section per component
// with its ports in tables (inputs and outputs styled apart), the
// compatibility key, each budget as a footprint formula and a bar, the
// source line of every decision and links to the rules behind it, which a
// glossary at the end of the page explains. html/template escapes every
// name; `code` spans of the shared phrases become <code> elements.

// RunStats is what a running engine measured, as the HTML view draws it
// (`genaic inspect --stats FILE`): per component, its invocations and the
// peak footprint each budget reached.
type RunStats struct {
	Components map[string]ComponentRun
}

// ComponentRun is one component's share of RunStats.
type ComponentRun struct {
	Invocations, Requests int64
	MaxGroupRequests      int
	Peaks                 []BudgetPeak
}

// BudgetPeak is the largest footprint a budget's path reached in a group.
type BudgetPeak struct {
	Dimensions []string
	Peak       int64
}

type htmlPage struct {
	Title, Schema, Summary, Caption string
	Graph                           template.HTML
	Components                      []htmlComponent
	Rules                           []htmlRule
	Stats                           bool
}

type htmlComponent struct {
	ID, Name, Word, Runs string
	Why                  template.HTML
	Ops                  []string
	Grouped              bool
	Declared             string
	Invoked              []string
	Inputs, Outputs      []htmlPort
	Compatibility        template.HTML
	CompatRules          []htmlRule
	Budgets              []htmlBudget
	BudgetRules          []htmlRule
	Run                  *ComponentRun
}

type htmlPort struct {
	Name, Word, Role, Contract string
	Folded                     bool
	Why                        template.HTML
	Details                    []template.HTML
	Source, SourcePath         string
	Rules                      []htmlRule
}

type htmlBudget struct {
	Formula, Where, Source string
	MaxTotal, MinItem      int64
	Fit                    int64
	MinW, PeakW            string
	HasPeak, Over          bool
	Peak                   int64
	PeakPct                string
}

type htmlRule struct {
	ID, Anchor, Meaning string
}

// ruleMeaning is the one-line meaning of each rule the page links to, in
// the words of the catalogue (RULES.md); a test keeps every id in the
// code's catalogue (diag.Rules).
var ruleMeaning = map[diag.Rule]string{
	diag.PackedLevels:            "a packed value declares one or two ownership levels",
	diag.PackedCompanion:         "a companion is int64, rank 1, shared and serves one role of one level",
	diag.PackedPair:              "one offsets vector is paired with one owner everywhere",
	diag.PackedExtent:            "an output level says whether its extent is preserved from an input pair or produced by the graph",
	diag.PaddingDimension:        "the padded dimension is a shape symbol of the value, not its request axis",
	diag.PaddingCompanion:        "valid_lengths is int64, shared, and shaped like the value's outer axes",
	diag.CapacityUniformCount:    "a uniform symbol is an item's extent, never a count of the group",
	diag.CapacityUnreconciled:    "every symbolic dimension of a grouped input is uniform, padded, packed or its request axis",
	diag.CapacityBudgetRoot:      "a budget path starts at a group-rooted symbol (packed axis, level units or request axis)",
	diag.CapacityBudgetTooSmall:  "max_total is at least 1 and fits one item alone",
	diag.CapacityLevelUnbudgeted: "every input ownership level's unit count appears in some budget",
	diag.ModelLengthsUnseen:      "a padded port's valid_lengths is an input of the graph, so the model can mask the padding",
	diag.RunOffsets:              "at run time, offsets start at 0, never decrease and end at the child count",
	diag.RunOwner:                "at run time, every owner entry is in range and agrees with its offsets",
	diag.RunExtent:               "at run time, a companion's extent agrees with its parent/child count",
	diag.RunLengths:              "at run time, every valid length lies in [0, padded extent]",
	diag.RunBudget:               "at run time, an item that alone exceeds a budget is refused at admission",
	diag.RunUniform:              "at run time, every item of a group agrees on the uniform dimensions",
}

// portRules are the rules behind a port's decision.
func portRules(p plan.Port, input bool) []diag.Rule {
	var rs []diag.Rule
	switch {
	case input && p.Role == plan.RolePacked:
		rs = append(rs, diag.PackedLevels, diag.PackedPair, diag.CapacityLevelUnbudgeted, diag.RunOffsets, diag.RunOwner, diag.RunExtent)
	case !input && p.Split == plan.SplitPacked:
		rs = append(rs, diag.PackedExtent, diag.PackedPair)
	}
	if p.Serves != nil {
		if p.Serves.Role == "lengths" {
			rs = append(rs, diag.PaddingCompanion, diag.RunLengths)
		} else {
			rs = append(rs, diag.PackedCompanion)
		}
	}
	if len(p.Padded) > 0 {
		rs = append(rs, diag.PaddingDimension, diag.RunLengths)
		if input {
			rs = append(rs, diag.ModelLengthsUnseen)
		}
	}
	return rs
}

// htmlState collects what the page links to while it is built.
type htmlState struct {
	tv    *textView
	used  map[diag.Rule]bool
	stats *RunStats
}

func (h *htmlState) rules(rs ...diag.Rule) []htmlRule {
	var out []htmlRule
	for _, r := range rs {
		if slices.ContainsFunc(out, func(x htmlRule) bool { return x.ID == string(r) }) {
			continue
		}
		h.used[r] = true
		out = append(out, htmlRule{ID: string(r), Anchor: anchorID("rule", string(r)), Meaning: ruleMeaning[r]})
	}
	return out
}

// Page is what the HTML view shows besides the plan.
type Page struct {
	// Name titles the page: the package's name, which is its folder's (as
	// genaic serve names the model). A plan does not record it; without
	// it the page is titled by the source document.
	Name string
	// Stats is what a running engine measured (may be nil): invocations
	// per component and each budget's peak.
	Stats *RunStats
}

// WriteHTML writes the plan as a standalone HTML page; its module (which
// may be nil) supplies the workflow graph, contracts and source lines.
func WriteHTML(w io.Writer, f *plan.File) error { return WriteHTMLPage(w, f, Page{}) }

// WriteHTMLPage writes the HTML page of the plan with what pg adds.
func WriteHTMLPage(w io.Writer, f *plan.File, pg Page) error {
	h := &htmlState{tv: &textView{m: f.IR, f: f}, used: map[diag.Rule]bool{}, stats: pg.Stats}
	n, k := len(plans(f)), groupedCount(f)
	g := newSVGGraph(f)
	title := pg.Name
	if title == "" {
		title = "plan of " + f.Source
	}
	page := htmlPage{
		Title:   title,
		Schema:  fmt.Sprintf("plan of %s: %s, plan format %d", f.Source, schemaText(f.SchemaVersion), f.PlanVersion),
		Summary: fmt.Sprintf("%d %s: %d grouped, %d solo", n, plural(n, "component"), k, n-k),
		Graph:   g.svg(),
		Caption: graphCaption(g),
		Stats:   pg.Stats != nil,
	}
	for _, gp := range plans(f) {
		page.Components = append(page.Components, h.component(gp))
	}
	for _, r := range diag.Rules {
		if h.used[r] {
			page.Rules = append(page.Rules, htmlRule{ID: string(r), Anchor: anchorID("rule", string(r)), Meaning: ruleMeaning[r]})
		}
	}
	return htmlTemplate.Execute(w, page)
}

// graphCaption counts what the figure shows.
func graphCaption(g *svgGraph) string {
	count := map[string]int{}
	for _, nd := range g.nodes {
		count[nd.kind]++
	}
	part := func(kind, word string) string {
		return fmt.Sprintf("%d %s", count[kind], plural(count[kind], word))
	}
	return fmt.Sprintf("The workflow, left to right: %s, %s, %s (each drawn with its ports), %s and %s.",
		part(kindInput, "workflow input"), part(kindCell, "state cell"), part(kindComponent, "component step"), part(kindValue, "value"), part(kindOutput, "workflow output"))
}

func (h *htmlState) component(gp *plan.GroupPlan) htmlComponent {
	tv := h.tv
	c := htmlComponent{ID: anchorID("c", gp.Component), Name: gp.Component, Word: groupedWord(gp), Why: codeHTML(gp.Why), Runs: tv.runs(gp.Component),
		Ops: tv.f.Ops(gp.Component), Grouped: gp.Grouped, Compatibility: codeHTML(compatibility(gp))}
	var ic *ir.Component
	if tv.m != nil {
		ic = tv.m.Component(gp.Component)
		if ic != nil {
			c.Declared = h.source(ic.Loc)
		}
		tv.m.Body.Walk(func(s *ir.Step) bool {
			if s.Op == ir.OpInvoke && s.Component.Name == gp.Component {
				c.Invoked = append(c.Invoked, h.source(s.Loc))
			}
			return true
		})
	}
	for _, p := range foldOrder(gp.Inputs) {
		c.Inputs = append(c.Inputs, h.port(gp, ic, p, true))
	}
	for _, p := range foldOrder(gp.Outputs) {
		c.Outputs = append(c.Outputs, h.port(gp, ic, p, false))
	}
	if gp.Grouped {
		c.CompatRules = h.rules(diag.CapacityUnreconciled, diag.CapacityUniformCount, diag.RunUniform)
		if len(gp.Budgets) > 0 {
			c.BudgetRules = h.rules(diag.CapacityBudgetRoot, diag.CapacityBudgetTooSmall, diag.RunBudget)
		}
	}
	if h.stats != nil {
		if r, ok := h.stats.Components[gp.Component]; ok {
			c.Run = &r
		}
	}
	for _, b := range gp.Budgets {
		c.Budgets = append(c.Budgets, h.budget(gp, ic, b, c.Run))
	}
	return c
}

// foldOrder orders ports as declared, each companion right under the port
// it serves (as the graph draws them).
func foldOrder(ps []plan.Port) []plan.Port {
	names := map[string]bool{}
	for _, p := range ps {
		names[p.Name] = true
	}
	folded := func(p plan.Port) bool { return p.Serves != nil && names[p.Serves.Port] && p.Serves.Port != p.Name }
	var out []plan.Port
	for _, p := range ps {
		if folded(p) {
			continue
		}
		out = append(out, p)
		for _, c := range ps {
			if folded(c) && c.Serves.Port == p.Name {
				out = append(out, c)
			}
		}
	}
	return out
}

// source is a location as file:line, or "" when unknown.
func (h *htmlState) source(l ir.Loc) string {
	loc := h.tv.m.Location(l)
	if loc.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", h.tv.f.Source, loc.Line)
}

func (h *htmlState) port(gp *plan.GroupPlan, ic *ir.Component, p plan.Port, input bool) htmlPort {
	hp := htmlPort{Name: p.Name, Word: portWord(p), Role: portRole(p, input), Contract: h.tv.contract(gp.Component, p.Name, input), Why: codeHTML(p.Why),
		Folded: p.Serves != nil && p.Serves.Port != p.Name && (gp.Input(p.Serves.Port) != nil || gp.Output(p.Serves.Port) != nil)}
	if len(p.Padded) > 0 {
		hp.Word += ", padded"
	}
	for _, l := range p.Levels {
		hp.Details = append(hp.Details, codeHTML(levelText(p, l)))
	}
	for _, pad := range p.Padded {
		hp.Details = append(hp.Details, codeHTML(padText(pad, input)))
	}
	if ic != nil {
		ip := ic.Output(p.Name)
		if input {
			ip = ic.Input(p.Name)
		}
		if ip != nil {
			hp.Source = h.source(ip.Loc)
			hp.SourcePath = h.tv.m.Location(ip.Loc).Path
		}
	}
	if gp.Grouped {
		hp.Rules = h.rules(portRules(p, input)...)
	}
	return hp
}

const barW = 320.0

func (h *htmlState) budget(gp *plan.GroupPlan, ic *ir.Component, b plan.Budget, run *ComponentRun) htmlBudget {
	hb := htmlBudget{Formula: fmt.Sprintf("%s ≤ %d", footprint(b), b.MaxTotal), Where: budgetWhere(gp, b), MaxTotal: b.MaxTotal, MinItem: b.MinItem}
	if ic != nil && ic.Capacity != nil {
		for _, ib := range ic.Capacity.Budgets {
			if slices.Equal(refNames(ib.Path), b.Dimensions) {
				hb.Source = h.source(ib.Loc)
			}
		}
	}
	frac := func(v int64) float64 {
		if b.MaxTotal <= 0 {
			return 1
		}
		return min(1, max(0, float64(v)/float64(b.MaxTotal)))
	}
	hb.MinW = num(barW * frac(max(b.MinItem, 0)))
	if b.MinItem > 0 {
		hb.Fit = b.MaxTotal / b.MinItem
	}
	if run != nil {
		for _, pk := range run.Peaks {
			if slices.Equal(pk.Dimensions, b.Dimensions) {
				hb.HasPeak, hb.Peak, hb.PeakW = true, pk.Peak, num(barW*frac(pk.Peak))
				hb.Over = pk.Peak > b.MaxTotal
				if b.MaxTotal > 0 {
					hb.PeakPct = fmt.Sprintf("%.0f%%", 100*float64(pk.Peak)/float64(b.MaxTotal))
				}
			}
		}
	}
	return hb
}

func refNames(rs []ir.Ref) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// codeHTML escapes a phrase and writes its `code` spans as <code>
// elements; an unpaired backtick is kept as it is.
func codeHTML(s string) template.HTML {
	parts := strings.Split(s, "`")
	if len(parts)%2 == 0 {
		return template.HTML(template.HTMLEscapeString(s))
	}
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
		} else {
			b.WriteString(template.HTMLEscapeString(p))
		}
	}
	return template.HTML(b.String())
}

var htmlTemplate = template.Must(template.New("plan").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --rows: #1a5fb4; --packed: #8e44ad; --padded: #c45500; --broadcast: #2e7d32; --companion: #6b6b6b; --expanded: #00838f; --internal: #9e9e9e; }
body { font-family: system-ui, sans-serif; margin: 2rem 1rem; color: #222; line-height: 1.45; }
.column { max-width: 72rem; margin: 0 auto; }
h1 { margin-bottom: 0.2rem; } .meta { color: #555; margin-top: 0; }
h2 { margin-top: 2.5rem; border-bottom: 2px solid #ddd; padding-bottom: 0.2rem; }
h3 { margin: 1.2rem 0 0.4rem; font-size: 1.05rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; background: #f3f3f5; padding: 0 0.25em; border-radius: 3px; }
figure.graph { margin: 1rem 0; border: 1px solid #ddd; border-radius: 6px; background: #fcfcfd; }
figure.graph .scroll { overflow-x: auto; border-bottom: 1px solid #eee; }
figcaption { max-width: 72rem; margin: 0 auto; padding: 0.5rem 0.8rem; color: #444; font-size: 0.9rem; }
svg.graph { display: block; margin: 0 auto; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
svg.graph .edge path { fill: none; stroke: #8a8a8a; stroke-width: 1.3; }
svg.graph .edge.dashed path { stroke-dasharray: 5 4; }
svg.graph .edge.companion path { stroke: var(--companion); stroke-dasharray: 1.5 3; stroke-width: 1.6; }
svg.graph .node rect { fill: #fff; stroke: #888; stroke-width: 1.2; }
svg.graph .node .name { font-weight: bold; font-size: 13px; fill: #111; }
svg.graph .node .sub { fill: #555; font-size: 11px; }
svg.graph .node.input rect { fill: #eef4fb; stroke: var(--rows); }
svg.graph .node.output rect { fill: #eef7ee; stroke: var(--broadcast); }
svg.graph .node.cell rect { fill: #fff8e6; stroke: #b58900; }
svg.graph .node.value rect { fill: #f7f7f7; stroke: #bbb; stroke-dasharray: 3 2; }
svg.graph .node.component.grouped rect { fill: #e3edf9; stroke: var(--rows); stroke-width: 2.2; }
svg.graph .node.component.solo rect { fill: #fafafa; }
svg.graph .node.component.uninvoked rect { stroke-dasharray: 6 3; }
svg.graph .node a:hover rect { stroke: #000; }
svg.graph .sep { stroke: #c8d3e0; }
svg.graph .port text { fill: #222; } svg.graph .port .badge { font-size: 11px; }
svg.graph .port circle { fill: #888; }
{{range $r := .RoleNames}}svg.graph .role-{{$r}} circle { fill: var(--{{$r}}); } svg.graph .role-{{$r}} .badge { fill: var(--{{$r}}); }
{{end}}
.legend { display: grid; grid-template-columns: repeat(auto-fit, minmax(21rem, 1fr)); gap: 0.3rem 1.5rem; font-size: 0.9rem; margin: 0.5rem 0 1.5rem; }
.legend div { color: #444; } .legend b { color: #222; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 50%; margin-right: 0.4em; vertical-align: baseline; }
{{range $r := .RoleNames}}.swatch.role-{{$r}}, .role.role-{{$r}} { background: var(--{{$r}}); }
{{end}}
.badge-grouped { color: #fff; background: var(--rows); border-radius: 3px; padding: 0 0.4em; font-size: 0.8em; vertical-align: middle; }
.badge-solo { color: #fff; background: #888; border-radius: 3px; padding: 0 0.4em; font-size: 0.8em; vertical-align: middle; }
.role { color: #fff; border-radius: 3px; padding: 0 0.35em; font-size: 0.85em; white-space: nowrap; background: #777; }
table.ports { border-collapse: collapse; width: 100%; margin: 0.3rem 0 1rem; table-layout: fixed; }
table.ports td { overflow-wrap: anywhere; }
table.ports th:nth-child(1) { width: 22%; } table.ports th:nth-child(2) { width: 13%; } table.ports th:nth-child(3) { width: 20%; }
table.ports caption { text-align: left; font-weight: bold; padding: 0.3rem 0.6rem; }
table.ports th, table.ports td { text-align: left; vertical-align: top; padding: 0.3rem 0.6rem; border-bottom: 1px solid #eee; }
table.inputs { border-left: 4px solid var(--rows); } table.inputs caption, table.inputs th { background: #eaf1fa; }
table.outputs { border-left: 4px solid var(--broadcast); } table.outputs caption, table.outputs th { background: #eaf5ea; }
tr.folded td.name { padding-left: 1.8rem; } tr.folded td.name::before { content: "↳ "; color: #888; }
.why, .details, .src { color: #555; font-size: 0.9em; } .details { display: block; }
.src { white-space: nowrap; font-family: ui-monospace, monospace; }
.rules a, a.rule { font-size: 0.8em; font-family: ui-monospace, monospace; margin-right: 0.4em; color: #6a3d9a; }
.ops code { line-height: 1.8; }
.budget { margin: 0.6rem 0 1rem; } .budget svg { vertical-align: middle; margin-right: 0.6rem; }
.bar-total { fill: #eceff3; stroke: #b8c2cc; } .bar-min { fill: #f0b37e; } .bar-peak { fill: var(--rows); } .bar-peak.over { fill: #c62828; }
dl.rules dt { font-family: ui-monospace, monospace; margin-top: 0.4rem; } dl.rules dd { margin-left: 1.5rem; color: #444; }
:target { background: #fff6cc; }
</style>
</head>
<body>
<header class="column">
<h1>{{.Title}}</h1>
<p class="meta">{{.Schema}}; {{.Summary}}</p>
</header>
<figure class="graph">
<div class="scroll">{{.Graph}}</div>
<figcaption>{{.Caption}} Grouped components are drawn bold and blue, solo ones plain; each component lists its input ports on the left and its output ports on the right, with the decision for each; a companion is folded (↳) under the port it serves; dashed edges feed state cells or carry a branch's predicate; dotted edges join a workflow value to the port whose level or padding it serves. Each component links to its section below, which explains its decisions.</figcaption>
</figure>
<main class="column">
<h2 id="legend">Legend of the decisions</h2>
<div class="legend">
<div><span class="swatch role-packed"></span><b>packed</b>: input: items are concatenated on axis 0; ownership levels say which positions belong to whom, and their companions are recomputed for the group (see docs/authoring.md#token_packed)</div>
<div><span class="swatch role-padded"></span><b>padded</b>: a dimension items may differ on is allocated at the group maximum, each item copied into its prefix, with declared valid lengths (see docs/authoring.md#padding)</div>
<div><span class="swatch role-rows"></span><b>rows</b>: input: each request's rows are stacked on the request axis; output: each request receives its rows as a view (see docs/authoring.md#request_aligned)</div>
<div><span class="swatch role-expanded"></span><b>expanded</b>: like rows, with a fixed factor of rows per request</div>
<div><span class="swatch role-broadcast"></span><b>broadcast</b>: input: shared, passed once and equal across the group; output: the same value goes to every request</div>
<div><span class="swatch role-companion"></span><b>companion</b>: serves another port's level (offsets, owner) or padding (lengths): recomputed for the group, never gathered; as an output, delivered rebased or sliced (see docs/authoring.md#what-each-request-gets-back)</div>
<div><span class="swatch role-internal"></span><b>internal</b>: output split: an owner map never delivered; each request's is derived from its rebased offsets</div>
<div><b>solo</b>: no batch_capacity: one request row per invocation, never grouped (see docs/authoring.md#batch_capacity)</div>
<div><b>budgets</b>: bars: the whole bar is <code>max_total</code>; orange, the smallest footprint one item can have; blue, the peak a run reached (with <code>--stats</code>)</div>
</div>
{{range .Components}}
<section id="{{.ID}}">
<h2><code>{{.Name}}</code> <span class="badge-{{.Word}}">{{.Word}}</span></h2>
<p class="why">{{.Why}}</p>
{{if .Runs}}<p>runs: {{.Runs}}</p>{{end}}
{{if .Declared}}<p class="src">declared at {{.Declared}}{{if .Invoked}}; invoked at {{range $i, $s := .Invoked}}{{if $i}}, {{end}}{{$s}}{{end}}{{end}}</p>{{end}}
{{if .Ops}}<p class="ops">operators ({{len .Ops}}): {{range .Ops}}<code>{{.}}</code> {{end}}</p>{{end}}
{{if .Run}}<p>measured: {{.Run.Invocations}} invocations for {{.Run.Requests}} requests, largest group {{.Run.MaxGroupRequests}}</p>{{end}}
{{template "ports" .InputTable}}
{{if .Grouped}}
<h3>compatibility key</h3>
<p>{{.Compatibility}} <span class="rules">{{range .CompatRules}}<a href="#{{.Anchor}}" title="{{.Meaning}}">{{.ID}}</a>{{end}}</span></p>
<h3>budgets (materialized footprint; see docs/authoring.md#budgets-and-footprint)</h3>
{{if .Budgets}}<p class="why">each binds on its own; an item that alone exceeds one is refused at admission <span class="rules">{{range .BudgetRules}}<a href="#{{.Anchor}}" title="{{.Meaning}}">{{.ID}}</a>{{end}}</span></p>
{{range .Budgets}}<div class="budget"><code>{{.Formula}}</code>{{if .Source}} <span class="src">{{.Source}}</span>{{end}}<br>
<svg width="322" height="16" role="img" aria-label="budget {{.Formula}}"><rect class="bar-total" x="1" y="2" width="320" height="12" rx="2"/><rect class="bar-min" x="1" y="2" width="{{.MinW}}" height="12" rx="2"/>{{if .HasPeak}}<rect class="bar-peak{{if .Over}} over{{end}}" x="1" y="5" width="{{.PeakW}}" height="6"/>{{end}}</svg>
<span class="details">where {{.Where}}</span>
<span class="details">one item alone is at least {{.MinItem}} of {{.MaxTotal}}{{if .Fit}}: at most {{.Fit}} minimal items fit{{end}}{{if .HasPeak}}; peak in a run: {{.Peak}}{{if .PeakPct}} ({{.PeakPct}}){{end}}{{end}}</span></div>
{{end}}{{else}}<p>none declared</p>{{end}}
{{end}}
{{template "ports" .OutputTable}}
</section>
{{end}}
{{if .Rules}}<h2 id="rules">Rules referenced</h2>
<dl class="rules">{{range .Rules}}<dt id="{{.Anchor}}">{{.ID}}</dt><dd>{{.Meaning}}</dd>
{{end}}</dl>{{end}}
</main>
</body>
</html>
{{define "ports"}}{{if .Ports}}<table class="ports {{.Class}}">
<caption>{{.Caption}}</caption>
<tr><th>port</th><th>decision</th><th>contract</th><th>why</th></tr>
{{range .Ports}}<tr class="port{{if .Folded}} folded{{end}}"><td class="name"><code>{{.Name}}</code>{{if .Source}}<br><span class="src" title="{{.SourcePath}}">{{.Source}}</span>{{end}}</td><td><span class="role role-{{.Role}}">{{.Word}}</span></td><td><code>{{.Contract}}</code></td><td class="why">{{.Why}}{{range .Details}}<span class="details">{{.}}</span>{{end}}{{if .Rules}}<span class="rules details">rules: {{range .Rules}}<a href="#{{.Anchor}}" title="{{.Meaning}}">{{.ID}}</a>{{end}}</span>{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}
`))

// roleNames are the roles and splits that have a colour.
var roleNames = []string{"rows", "packed", "padded", "broadcast", "companion", "expanded", "internal"}

// RoleNames lists the coloured roles for the template's CSS.
func (htmlPage) RoleNames() []string { return roleNames }

type htmlTable struct {
	Class, Caption string
	Ports          []htmlPort
}

// InputTable is the inputs table: how each input takes part in a group.
func (c htmlComponent) InputTable() htmlTable {
	return htmlTable{Class: "inputs", Caption: "inputs: how each takes part in a group", Ports: c.Inputs}
}

// OutputTable is the outputs table: how each output splits back.
func (c htmlComponent) OutputTable() htmlTable {
	return htmlTable{Class: "outputs", Caption: "outputs: how each splits back to its requests", Ports: c.Outputs}
}
