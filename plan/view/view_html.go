package view

import (
	"fmt"
	"html/template"
	"io"

	"github.com/genaic/genaic/plan"
)

// The HTML view is the text view laid out as a page a person can share:
// one section per component, tables of ports with the decision and why,
// the compatibility key, and each budget as a footprint formula.

type htmlPage struct {
	Title, Schema, Summary string
	Components             []htmlComponent
}

type htmlComponent struct {
	Name, Word, Why, Runs string
	Ops                   []string
	Grouped               bool
	Inputs, Outputs       []htmlPort
	Compatibility         string
	Budgets               []htmlBudget
}

type htmlPort struct {
	Name, Word, Contract, Why string
	Details                   []string
}

type htmlBudget struct {
	Formula, Where string
}

// WriteHTML writes the plan as a standalone HTML page; m (which may be nil)
// supplies the declared contracts.
func WriteHTML(w io.Writer, f *plan.File) error {
	m := f.IR
	tv := &textView{m: m, f: f}
	page := htmlPage{
		Title:   "plan of " + f.Source,
		Schema:  fmt.Sprintf("%s, plan format %d", schemaText(f.SchemaVersion), f.PlanVersion),
		Summary: fmt.Sprintf("%d %s: %d grouped, %d solo", len(plans(f)), plural(len(plans(f)), "component"), groupedCount(f), len(plans(f))-groupedCount(f)),
	}
	for _, g := range plans(f) {
		page.Components = append(page.Components, htmlComponentOf(tv, g))
	}
	return htmlTemplate.Execute(w, page)
}

func htmlComponentOf(tv *textView, g *plan.GroupPlan) htmlComponent {
	c := htmlComponent{Name: g.Component, Word: groupedWord(g), Why: g.Why, Runs: tv.runs(g.Component), Ops: tv.f.Ops(g.Component), Grouped: g.Grouped,
		Compatibility: compatibility(g)}
	for _, p := range g.Inputs {
		c.Inputs = append(c.Inputs, htmlPortOf(tv, g, p, true))
	}
	for _, p := range g.Outputs {
		c.Outputs = append(c.Outputs, htmlPortOf(tv, g, p, false))
	}
	for _, b := range g.Budgets {
		c.Budgets = append(c.Budgets, htmlBudget{Formula: fmt.Sprintf("%s ≤ %d", footprint(b), b.MaxTotal), Where: budgetWhere(g, b)})
	}
	return c
}

func htmlPortOf(tv *textView, g *plan.GroupPlan, p plan.Port, input bool) htmlPort {
	hp := htmlPort{Name: p.Name, Word: portWord(p), Contract: tv.contract(g.Component, p.Name, input), Why: p.Why}
	for _, l := range p.Levels {
		hp.Details = append(hp.Details, levelText(p, l))
	}
	for _, pad := range p.Padded {
		hp.Details = append(hp.Details, padText(pad, input))
	}
	return hp
}

var htmlTemplate = template.Must(template.New("plan").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; color: #222; }
h2 { margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
.grouped { color: #1a5fb4; } .solo { color: #666; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1rem; }
th, td { text-align: left; vertical-align: top; padding: 0.3rem 0.6rem; border-bottom: 1px solid #eee; }
code { font-family: ui-monospace, monospace; }
.why, .details { color: #555; font-size: 0.9em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Schema}}; {{.Summary}}</p>
{{range .Components}}
<h2 id="{{.Name}}"><code>{{.Name}}</code>: <span class="{{.Word}}">{{.Word}}</span></h2>
<p class="why">{{.Why}}</p>
{{if .Runs}}<p>runs: {{.Runs}}</p>{{end}}
{{if .Ops}}<p>operators ({{len .Ops}}): {{range $i, $op := .Ops}}{{if $i}}, {{end}}<code>{{$op}}</code>{{end}}</p>{{end}}
{{template "ports" .Inputs}}
{{if .Grouped}}
<h3>compatibility key</h3>
<p>{{.Compatibility}}</p>
<h3>budgets (materialized footprint)</h3>
{{if .Budgets}}<ul>{{range .Budgets}}<li><code>{{.Formula}}</code><br><span class="details">where {{.Where}}</span></li>{{end}}</ul>{{else}}<p>none declared</p>{{end}}
{{end}}
{{template "ports" .Outputs}}
{{end}}
</body>
</html>
{{define "ports"}}{{if .}}<table>
<tr><th>port</th><th>decision</th><th>contract</th><th>why</th></tr>
{{range .}}<tr><td><code>{{.Name}}</code></td><td>{{.Word}}</td><td><code>{{.Contract}}</code></td><td class="why">{{.Why}}{{range .Details}}<br><span class="details">{{.}}</span>{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}
`))
