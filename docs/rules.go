// Package docs ships genaic's rule catalogue, docs/rules.md, inside the
// binary, for `genaic explain RULE`: what each rule id means, a document
// that triggers it and how to fix it. A test keeps the file equal to the
// code's catalogue (diag.Rules) and to the public one (RULES.md), and
// checks that every example really triggers its rule.
package docs

import (
	_ "embed"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/genaic/genaic/onnx"
)

//go:embed rules.md
var rulesMD string

// RulesMarkdown is the text of docs/rules.md.
func RulesMarkdown() string { return rulesMD }

// Rule is one entry of the catalogue.
type Rule struct {
	ID      string
	Family  string // the section heading it is listed under
	Section string // its rule number in the design (such as "r4"), or ""
	Meaning string // when it fires, as RULES.md words it
	Fix     string // what to change
	Example string // a document that triggers it; for run/* rules, a request
	// ExampleLang is the fence's language: "yaml" for a document to check,
	// "text" for a runtime example.
	ExampleLang string
}

// Rules parses docs/rules.md into its entries, in catalogue order.
func Rules() ([]Rule, error) { return parse(rulesMD) }

// Lookup returns the entry of id.
func Lookup(id string) (Rule, bool) {
	rs, err := Rules()
	if err != nil {
		return Rule{}, false
	}
	for _, r := range rs {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// parse reads the layout rules.md is written in:
//
//	## Family
//	### `id`
//	Fires when: meaning      (one line)
//	Rule: r4                 (optional)
//	Fix: what to change      (one line)
//	```yaml                  (or ```text)
//	example
//	```
func parse(md string) ([]Rule, error) {
	var out []Rule
	var cur *Rule
	family := ""
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "## "):
			family = strings.TrimPrefix(line, "## ")
		case strings.HasPrefix(line, "### `") && strings.HasSuffix(line, "`"):
			out = append(out, Rule{ID: strings.TrimSuffix(strings.TrimPrefix(line, "### `"), "`"), Family: family})
			cur = &out[len(out)-1]
		case cur == nil:
		case strings.HasPrefix(line, "Fires when: "):
			cur.Meaning = strings.TrimPrefix(line, "Fires when: ")
		case strings.HasPrefix(line, "Rule: "):
			cur.Section = strings.TrimPrefix(line, "Rule: ")
		case strings.HasPrefix(line, "Fix: "):
			cur.Fix = strings.TrimPrefix(line, "Fix: ")
		case strings.HasPrefix(line, "```") && len(line) > 3:
			cur.ExampleLang = line[3:]
			j := i + 1
			for j < len(lines) && lines[j] != "```" {
				j++
			}
			if j == len(lines) {
				return nil, fmt.Errorf("rules.md:%d: the example of %s is not closed", i+1, cur.ID)
			}
			cur.Example = strings.Join(lines[i+1:j], "\n") + "\n"
			i = j
		}
	}
	for _, r := range out {
		if r.Meaning == "" || r.Fix == "" || r.Example == "" {
			return nil, fmt.Errorf("rules.md: rule %s lacks its meaning, fix or example", r.ID)
		}
	}
	return out, nil
}

// Graphs are the models an example describes in its comments, by
// artifact: a check of the example reads them in place of model files.
type Graphs map[string]*onnx.Graph

// Graph returns the graph of artifact, or an error wrapping
// fs.ErrNotExist when the example describes none.
func (g Graphs) Graph(artifact string) (*onnx.Graph, error) {
	if m, ok := g[artifact]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("open %s: %w", artifact, fs.ErrNotExist)
}

var graphLine = regexp.MustCompile(`(?m)^# graph (\S+): (.*)$`)
var graphValue = regexp.MustCompile(`^(in|out) (\S+) (\S+) \[([^\]]*)\]$`)

// Graphs reads the `# graph FILE: in NAME DTYPE [dims]; out ...` comments
// of the example.
func (r Rule) Graphs() (Graphs, error) {
	gs := Graphs{}
	types := map[string]int32{}
	for n := int32(1); n < 24; n++ {
		types[onnx.DTypeName(n)] = n
	}
	for _, m := range graphLine.FindAllStringSubmatch(r.Example, -1) {
		g := &onnx.Graph{IRVersion: 8}
		for _, part := range strings.Split(m[2], "; ") {
			v := graphValue.FindStringSubmatch(part)
			if v == nil || types[v[3]] == 0 {
				return nil, fmt.Errorf("graph comment %q: cannot read %q", m[0], part)
			}
			val := onnx.Value{Name: v[2], ElemType: types[v[3]], HasShape: true}
			for _, d := range strings.Split(v[4], ", ") {
				if n, err := strconv.ParseInt(d, 10, 64); err == nil {
					val.Dims = append(val.Dims, onnx.Dim{Value: n, Literal: true})
				} else {
					val.Dims = append(val.Dims, onnx.Dim{Param: d})
				}
			}
			if v[1] == "in" {
				g.Inputs = append(g.Inputs, val)
			} else {
				g.Outputs = append(g.Outputs, val)
			}
		}
		gs[m[1]] = g
	}
	return gs, nil
}
