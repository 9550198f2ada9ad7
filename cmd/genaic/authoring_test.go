package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
)

// authoringGuide is the guide whose examples the tests below run.
const authoringGuide = "../../docs/authoring.md"

// docBlock is one fenced block of a markdown file. Its info string is the
// language, then words: KEY=VALUE, or a bare KEY (value "").
type docBlock struct {
	line  int // of the opening fence
	lang  string
	attrs map[string]string
	body  string
}

// fencedBlocks reads every ``` block of md.
func fencedBlocks(md string) ([]docBlock, error) {
	var out []docBlock
	var cur *docBlock
	var body []string
	for i, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			words := strings.Fields(strings.TrimPrefix(l, "```"))
			cur = &docBlock{line: i + 1, attrs: map[string]string{}}
			for j, w := range words {
				if j == 0 {
					cur.lang = w
					continue
				}
				k, v, _ := strings.Cut(w, "=")
				cur.attrs[k] = v
			}
			body = nil
		case cur != nil && l == "```":
			cur.body = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, l)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("the block opened at line %d is never closed", cur.line)
	}
	return out, nil
}

// TestAuthoringExamples runs the examples of docs/authoring.md. Each yaml
// block is marked in its info string:
//
//	example=ID fixture=PKG [refuses=RULE]  a whole document
//	init=PKG                               lines `genaic init` writes for PKG's model
//	fragment                               a piece of a document
//
// An example is written beside the models of testdata/packages/PKG and
// checked: one refuses exactly RULE; any other is valid, and requests the
// fixture's generator draws (and the guide's own `json requests=ID`
// block, if any) run grouped and solo with equal answers, at least one
// call holding several requests. A `text output=ID` block is what
// `genaic check mypkg` prints for the example, exactly. Together the
// examples must cover every layout.
func TestAuthoringExamples(t *testing.T) {
	b, err := os.ReadFile(authoringGuide)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := fencedBlocks(string(b))
	if err != nil {
		t.Fatal(err)
	}
	requests, outputs := map[string]string{}, map[string]string{}
	for _, bl := range blocks {
		if id, ok := bl.attrs["requests"]; bl.lang == "json" && ok {
			requests[id] = bl.body
		}
		if id, ok := bl.attrs["output"]; bl.lang == "text" && ok {
			outputs[id] = bl.body
		}
	}
	covered := map[string]bool{}
	examples := map[string]bool{}
	for _, bl := range blocks {
		if bl.lang != "yaml" {
			continue
		}
		id, isExample := bl.attrs["example"]
		_, isFragment := bl.attrs["fragment"]
		pkg, isInit := bl.attrs["init"]
		switch {
		case isExample:
			if examples[id] {
				t.Errorf("line %d: example %q is named twice", bl.line, id)
			}
			examples[id] = true
			t.Run(id, func(t *testing.T) {
				for _, c := range runAuthoringExample(t, bl, requests[id], outputs[id]) {
					covered[c] = true
				}
			})
		case isInit:
			dir, models := copyModels(t, filepath.Join("../../testdata/packages", pkg))
			out, errOut, code := runCLI(t, append([]string{"init", "--print", "-o", dir}, models...)...)
			if code != exitOK || !strings.Contains(out, bl.body) {
				t.Errorf("line %d: genaic init of %s (exit %d%s) does not write\n%s\nit writes\n%s", bl.line, pkg, code, errOut, bl.body, out)
			}
		case isFragment:
			var v any
			if err := yaml.Unmarshal([]byte(bl.body), &v); err != nil {
				t.Errorf("line %d: the fragment is not YAML: %v", bl.line, err)
			}
		default:
			t.Errorf("line %d: a yaml block marks no example=ID fixture=PKG, init=PKG or fragment", bl.line)
		}
	}
	for _, m := range []map[string]string{requests, outputs} {
		for id := range m {
			if !examples[id] {
				t.Errorf("a requests or output block names example %q, which the guide does not have", id)
			}
		}
	}
	for _, want := range []string{"shared", "request_aligned", "request_expanded", "token_packed, 1 level",
		"token_packed, 2 levels", "padding", "refuses capacity/shared-output"} {
		if !covered[want] {
			t.Errorf("no example of the guide shows %s", want)
		}
	}
}

// runAuthoringExample builds a package from one example and runs it; it
// returns what the example shows: the layouts of its grouped components'
// input ports, or the rule it is refused with.
func runAuthoringExample(t *testing.T, bl docBlock, requestsDoc, checkOutput string) []string {
	fixture := bl.attrs["fixture"]
	if fixture == "" {
		t.Fatalf("line %d: the example names no fixture=PKG", bl.line)
	}
	dir, _ := copyModels(t, filepath.Join("../../testdata/packages", fixture))
	if err := os.WriteFile(filepath.Join(dir, metadataName), []byte(bl.body), 0o644); err != nil {
		t.Fatal(err)
	}
	if checkOutput != "" {
		out, errOut, _ := runCLI(t, "check", dir)
		got := "$ genaic check mypkg\n" + strings.ReplaceAll(out+errOut, dir, "mypkg")
		if got != checkOutput {
			t.Errorf("the guide shows check printing\n%s\nbut it prints\n%s", checkOutput, got)
		}
	}
	if rule := bl.attrs["refuses"]; rule != "" {
		rep, code := checkJSONOf(t, dir)
		if code != exitDiags || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 1 || rep.Files[0].Diagnostics[0].Rule != rule {
			t.Fatalf("line %d: check exits %d with %+v; want exactly one %s", bl.line, code, rep.Files, rule)
		}
		return []string{"refuses " + rule}
	}
	checkClean(t, dir)
	if t.Failed() {
		t.FailNow()
	}
	d, err := passes.CheckPath(dir, passes.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatal(err)
	}
	var shows, grouped []string
	for _, gp := range f.Components {
		if gp.Grouped {
			grouped = append(grouped, gp.Component)
			shows = append(shows, inputLayouts(gp)...)
		}
	}
	if len(grouped) == 0 {
		t.Fatalf("line %d: the example groups no component", bl.line)
	}

	fx := fixtures.Lookup(fixture)
	generated := filepath.Join(t.TempDir(), "requests.json")
	writeRequestFile(t, generated, fx.Requests(46, 12)...)
	docs := []string{generated}
	if requestsDoc != "" {
		p := filepath.Join(t.TempDir(), "guide_requests.json")
		if err := os.WriteFile(p, []byte(requestsDoc), 0o644); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, p)
	}
	for _, reqs := range docs {
		got, gs := runAnswersWith(t, dir, reqs, "--stats", "--max-delay", "200ms")
		want, _ := runAnswersWith(t, dir, reqs, "--solo")
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d answers grouped, %d solo", reqs, len(got), len(want))
		}
		for id, w := range want {
			if err := sameAnswer(got[id], w); err != nil {
				t.Errorf("%s: request %s grouped differs from solo: %v", filepath.Base(reqs), id, err)
			}
		}
		for _, c := range grouped {
			if cs := gs.Components[c]; cs.MaxGroupRequests < 2 {
				t.Errorf("%s: component %s never took several requests in one call: %+v", filepath.Base(reqs), c, cs)
			}
		}
	}
	return shows
}

// inputLayouts names the layouts of a group plan's input ports, as the
// guide's sections are named.
func inputLayouts(gp *plan.GroupPlan) []string {
	var out []string
	for _, in := range gp.Inputs {
		switch in.Role {
		case plan.RoleBroadcast:
			out = append(out, "shared")
		case plan.RoleRows:
			out = append(out, "request_aligned")
		case plan.RoleExpanded:
			out = append(out, "request_expanded")
		case plan.RolePacked:
			out = append(out, fmt.Sprintf("token_packed, %d %s", len(in.Levels), plural(len(in.Levels), "level")))
		}
		if len(in.Padded) > 0 {
			out = append(out, "padding")
		}
	}
	return out
}

// headingAnchors are the anchors a markdown renderer gives the headings of
// md: lower case, punctuation but - and _ dropped, spaces as -, and -1,
// -2, ... on a repeat.
func headingAnchors(md string) map[string]bool {
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchors := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		name := a
		for i := 1; anchors[name]; i++ {
			name = fmt.Sprintf("%s-%d", a, i)
		}
		anchors[name] = true
	}
	return anchors
}

// TestAuthoringAnchors: every reference into docs/authoring.md names one
// of its headings — those in the code (the plan's reasons, the views, the
// passes' docs), in the other docs, and the guide's own links, within it
// and into docs/rules.md — so that a reader who follows one lands on the
// section it means.
func TestAuthoringAnchors(t *testing.T) {
	b, err := os.ReadFile(authoringGuide)
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(string(b))
	for _, want := range []string{"shared", "request_aligned", "request_expanded", "token_packed",
		"token_packed-one-level", "token_packed-two-levels", "padding", "batch_capacity", "budgets-and-footprint"} {
		if !anchors[want] {
			t.Errorf("the guide has no section #%s", want)
		}
	}
	check := func(where string, anchor string) {
		if !anchors[anchor] {
			t.Errorf("%s refers to docs/authoring.md#%s, which is no heading of the guide", where, anchor)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(string(b), -1) {
		check("docs/authoring.md", m[1])
	}
	rules, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	ruleAnchors := headingAnchors(string(rules))
	for _, m := range regexp.MustCompile(`\]\(rules\.md#([^)]+)\)`).FindAllStringSubmatch(string(b), -1) {
		if !ruleAnchors[m[1]] {
			t.Errorf("docs/authoring.md links to rules.md#%s, which is no heading of docs/rules.md", m[1])
		}
	}
	ref := regexp.MustCompile(`authoring\.md#([A-Za-z0-9_-]+)`)
	root := testenv.Root(t)
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range ref.FindAllStringSubmatch(string(src), -1) {
			found++
			check(rel, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("nothing refers into docs/authoring.md: the plan's reasons should")
	}
}

// TestFencedBlocks pins how the guide's blocks are read.
func TestFencedBlocks(t *testing.T) {
	bs, err := fencedBlocks("text\n```yaml example=a fixture=b fragment\nx: 1\n```\n```\nplain\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []docBlock{
		{line: 2, lang: "yaml", attrs: map[string]string{"example": "a", "fixture": "b", "fragment": ""}, body: "x: 1\n"},
		{line: 5, lang: "", attrs: map[string]string{}, body: "plain\n"},
	}
	if len(bs) != len(want) {
		t.Fatalf("read %+v", bs)
	}
	for i := range want {
		g, w := bs[i], want[i]
		if g.line != w.line || g.lang != w.lang || g.body != w.body || len(g.attrs) != len(w.attrs) {
			t.Errorf("block %d: %+v, want %+v", i, g, w)
		}
		for k, v := range w.attrs {
			if g.attrs[k] != v {
				t.Errorf("block %d: %s=%q, want %q", i, k, g.attrs[k], v)
			}
		}
	}
	if _, err := fencedBlocks("```yaml\nx: 1\n"); err == nil {
		t.Error("an unclosed block is read without an error")
	}
	if a := headingAnchors("# Top\n## `token_packed`, one level\n```\n# not a heading\n```\n## Top\n"); !a["top"] || !a["token_packed-one-level"] || !a["top-1"] || a["not-a-heading"] {
		t.Errorf("anchors %v", a)
	}
}
