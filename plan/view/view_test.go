package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/plan/view"
)

// The view goldens live in testdata/views, one txtar archive per document:
// an archive holding an `inference_metadata.yaml` section is a worked shape
// of DESIGN §3.4 written for these tests; any other archive is named after
// an accepted conformance case that declares a capacity and holds only the
// views. GENAIC_UPDATE=1 rewrites the view sections and creates the
// archives of corpus cases that have none.

const (
	viewsDir = "testdata/views"
	docName  = "inference_metadata.yaml"
)

var viewSections = []string{"text", "json", "dot"}

// compiled is one document taken to a plan, as `genaic inspect` does.
type compiled struct {
	file *plan.File
	mod  *ir.Module
}

// compile checks a document or package folder and builds its plan, going
// through the file bytes so the views see what a plan file holds. It
// returns nil (after reporting) when the document has diagnostics.
func compile(t *testing.T, path string) *compiled {
	t.Helper()
	d, err := passes.CheckPath(path, passes.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Valid() {
		var b strings.Builder
		for _, dg := range d.Diags() {
			fmt.Fprintf(&b, "\n  %d:%d: %s: %s", dg.Line, dg.Column, dg.Rule, dg.Message)
		}
		t.Errorf("%s has diagnostics, so it has no plan:%s", path, b.String())
		return nil
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if f, err = plan.Decode(path, b); err != nil {
		t.Fatal(err)
	}
	return &compiled{file: f, mod: d.Module}
}

// views renders the three views of a plan.
func views(t *testing.T, c *compiled) map[string]string {
	t.Helper()
	var text, js, dot bytes.Buffer
	f := *c.file
	f.IR = c.mod
	if err := view.WriteText(&text, &f); err != nil {
		t.Fatal(err)
	}
	if err := view.WriteJSON(&js, &f); err != nil {
		t.Fatal(err)
	}
	if err := view.WriteDOT(&dot, &f); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"text": text.String(), "json": js.String(), "dot": dot.String()}
}

func readArchive(t *testing.T, path string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func section(a *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// compareViews checks the archive's view sections against got, or rewrites
// them under GENAIC_UPDATE=1 (keeping the comment and the document).
func compareViews(t *testing.T, path string, a *txtar.Archive, got map[string]string) {
	t.Helper()
	if os.Getenv("GENAIC_UPDATE") == "1" {
		var files []txtar.File
		for _, f := range a.Files {
			if !slices.Contains(viewSections, f.Name) {
				files = append(files, f)
			}
		}
		for _, name := range viewSections {
			files = append(files, txtar.File{Name: name, Data: []byte(got[name])})
		}
		a.Files = files
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range viewSections {
		want, ok := section(a, name)
		if !ok {
			t.Errorf("%s has no -- %s -- section (GENAIC_UPDATE=1 writes it)", path, name)
			continue
		}
		if string(want) != got[name] {
			t.Errorf("the %s view differs from %s (GENAIC_UPDATE=1 rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, path, got[name], want)
		}
	}
}

// TestViewsOfWorkedShapes compiles the document in each worked-shape
// archive and compares its views with the archive's.
func TestViewsOfWorkedShapes(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(viewsDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range paths {
		a := readArchive(t, path)
		doc, ok := section(a, docName)
		if !ok {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, docName), doc, 0o644); err != nil {
				t.Fatal(err)
			}
			// The archives hold documents without their models: the
			// document is checked alone, so model/missing is a warning.
			c := compile(t, filepath.Join(dir, docName))
			if c == nil {
				return
			}
			got := views(t, c)
			checkViewInvariants(t, c, got)
			compareViews(t, path, a, got)
		})
	}
	if n < 8 {
		t.Errorf("found %d worked-shape archives in %s, want one per worked shape of DESIGN §3.4 (8)", n, viewsDir)
	}
}

// TestViewsOfCorpus compares the views of every accepted conformance
// document that declares a capacity, and refuses archives that name no
// such case.
func TestViewsOfCorpus(t *testing.T) {
	dir, cases := testenv.Cases(t)
	want := map[string]bool{}
	for _, cs := range cases {
		if !cs.Accept {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, cs.File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(src, []byte("batch_capacity")) {
			continue
		}
		name := strings.TrimSuffix(cs.File, filepath.Ext(cs.File))
		want[name+".txtar"] = true
		t.Run(name, func(t *testing.T) {
			c := compile(t, filepath.Join(dir, cs.File))
			if c == nil {
				return
			}
			if !slices.ContainsFunc(c.file.Components, func(g *plan.GroupPlan) bool { return g.Grouped }) {
				t.Fatalf("%s mentions batch_capacity but no component is grouped", cs.File)
			}
			got := views(t, c)
			checkViewInvariants(t, c, got)
			path := filepath.Join(viewsDir, name+".txtar")
			a := &txtar.Archive{Comment: []byte("genaic inspect views of the conformance case " + cs.File + " (the document stays in the corpus)\n")}
			switch _, err := os.Stat(path); {
			case err == nil:
				a = readArchive(t, path)
			case os.Getenv("GENAIC_UPDATE") != "1":
				t.Fatalf("%s has no view archive %s (GENAIC_UPDATE=1 creates it)", cs.File, path)
			}
			compareViews(t, path, a, got)
		})
	}
	paths, _ := filepath.Glob(filepath.Join(viewsDir, "*.txtar"))
	for _, path := range paths {
		if _, ok := section(readArchive(t, path), docName); !ok && !want[filepath.Base(path)] {
			t.Errorf("%s holds no document and names no accepted corpus case that declares a capacity; remove it", path)
		}
	}
}

// checkViewInvariants checks what every view promises beyond its golden.
func checkViewInvariants(t *testing.T, c *compiled, got map[string]string) {
	t.Helper()
	checkInspectJSON(t, c.file, got["json"])
	checkDOT(t, got["dot"])
	f := *c.file
	f.IR = c.mod
	checkHTML(t, &f)
	// The module a plan file carries, decoded from its JSON, gives the same
	// views as the module the compiler built.
	again := views(t, &compiled{file: c.file, mod: c.file.IR})
	for _, name := range viewSections {
		if again[name] != got[name] {
			t.Errorf("the %s view differs between the compiled module and the plan's decoded IR", name)
		}
	}
	// A second rendering is byte-identical.
	for name, v := range views(t, c) {
		if v != got[name] {
			t.Errorf("the %s view is not deterministic", name)
		}
	}
}

var (
	inputRoles  = []string{"broadcast", "rows", "expanded", "packed", "companion"}
	outputSplit = []string{"rows", "expanded", "packed", "broadcast", "companion", "internal"}
)

// checkInspectJSON checks the JSON view against the contract `genaic
// inspect --format json` publishes (docs/plan.md), reading it as a tool
// would: untyped.
func checkInspectJSON(t *testing.T, f *plan.File, text string) {
	t.Helper()
	var v struct {
		PlanVersion   *int    `json:"plan_version"`
		SchemaVersion *string `json:"schema_version"`
		Components    map[string]struct {
			Grouped *bool `json:"grouped"`
			Inputs  map[string]struct {
				Role   string    `json:"role"`
				Levels *int      `json:"levels"`
				Padded *[]string `json:"padded"`
			} `json:"inputs"`
			Outputs map[string]struct {
				Split string `json:"split"`
			} `json:"outputs"`
			Uniform *[]string `json:"uniform"`
			Budgets *[]struct {
				Dimensions []string `json:"dimensions"`
				MaxTotal   *int64   `json:"max_total"`
			} `json:"budgets"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("the JSON view does not decode: %v", err)
	}
	if v.PlanVersion == nil || *v.PlanVersion != plan.Version || v.SchemaVersion == nil || *v.SchemaVersion != f.SchemaVersion {
		t.Errorf("the JSON view lacks plan_version %d or schema_version %q", plan.Version, f.SchemaVersion)
	}
	if len(v.Components) != len(f.Components) {
		t.Errorf("the JSON view has %d components, the plan %d", len(v.Components), len(f.Components))
	}
	for _, g := range f.Components {
		c, ok := v.Components[g.Component]
		if !ok || c.Grouped == nil || *c.Grouped != g.Grouped || c.Uniform == nil || c.Budgets == nil {
			t.Errorf("component %s: grouped, uniform or budgets missing from the JSON view", g.Component)
			continue
		}
		for _, p := range g.Inputs {
			in := c.Inputs[p.Name]
			if !slices.Contains(inputRoles, in.Role) || in.Padded == nil || (p.Role == plan.RolePacked) != (in.Levels != nil) {
				t.Errorf("component %s input %s: role %q, padded %v, levels %v", g.Component, p.Name, in.Role, in.Padded, in.Levels)
			}
		}
		for _, p := range g.Outputs {
			if s := c.Outputs[p.Name].Split; !slices.Contains(outputSplit, s) {
				t.Errorf("component %s output %s: split %q", g.Component, p.Name, s)
			}
		}
		for i, b := range *c.Budgets {
			if len(b.Dimensions) == 0 || b.MaxTotal == nil {
				t.Errorf("component %s budget %d: dimensions %v, max_total %v", g.Component, i, b.Dimensions, b.MaxTotal)
			}
		}
	}
}

var (
	dotNode = regexp.MustCompile(`^\s*("(?:[^"\\]|\\.)*") \[`)
	dotEdge = regexp.MustCompile(`^\s*("(?:[^"\\]|\\.)*") -> ("(?:[^"\\]|\\.)*") \[`)
)

// checkDOT checks that the DOT view is one balanced digraph whose edges
// join declared nodes.
func checkDOT(t *testing.T, dot string) {
	t.Helper()
	if !strings.Contains(dot, "digraph workflow {\n") || !strings.HasSuffix(dot, "}\n") || strings.Count(dot, "{") != strings.Count(dot, "}") {
		t.Errorf("the DOT view is not one balanced digraph:\n%s", dot)
	}
	nodes := map[string]bool{}
	var edges [][]string
	for _, line := range strings.Split(dot, "\n") {
		if m := dotEdge.FindStringSubmatch(line); m != nil {
			edges = append(edges, m[1:])
		} else if m := dotNode.FindStringSubmatch(line); m != nil {
			nodes[m[1]] = true
		}
	}
	for _, e := range edges {
		if !nodes[e[0]] || !nodes[e[1]] {
			t.Errorf("the DOT edge %s -> %s joins an undeclared node", e[0], e[1])
		}
	}
}

// TestViewsTolerateOddPlans: a plan is read from a file, so the views must
// not panic on one with missing pieces, null entries, words this build does
// not know, or a module that disagrees with it.
func TestViewsTolerateOddPlans(t *testing.T) {
	odd := &plan.File{Components: []*plan.GroupPlan{
		nil,
		{},
		{
			Component: "enc", Grouped: true,
			Inputs: []plan.Port{
				{Name: "p", Role: plan.RolePacked, Levels: []plan.Level{{Index: 1}}, Padded: []plan.Pad{{Dimension: "d"}}},
				{Name: "c", Role: plan.RoleCompanion, Serves: &plan.Serves{Port: "gone", Role: "owner"}},
				{Name: "q", Role: "future-role"},
			},
			Outputs: []plan.Port{
				{Name: "o", Split: plan.SplitPacked, Levels: []plan.Level{{Extent: "preserved"}, {Index: 1, Extent: "produced"}}},
				{Name: "x", Split: "future-split"},
			},
			Uniform: []plan.Uniform{{Symbol: "u"}},
			Budgets: []plan.Budget{{}, {Dimensions: []string{"a"}, Terms: []plan.Term{{Symbol: "a", Kind: "future-term"}, {Kind: plan.TermRows, Port: "o"}, {Kind: plan.TermPinned}}}},
		},
	}}
	m := ir.NewModule()
	m.Components = []*ir.Component{{Name: "enc", Inputs: []*ir.Port{{Name: "p"}}}}
	m.Inputs = []*ir.Input{{Name: "i", Value: 7}}
	m.Body.Steps = []*ir.Step{
		{Op: ir.OpInvoke, Component: ir.Ref{Name: "enc"}, Args: []ir.Arg{{Port: "p", Value: ir.Use{Name: "nothing", ID: ir.NoValue}}}},
		{Op: ir.OpInvoke, Component: ir.Ref{Name: "not-planned"}},
		{Op: ir.OpEmit, Value: ir.Use{Name: "i", ID: 99}, Output: ir.Ref{Name: "nowhere"}},
		{Op: ir.OpBranch, Phis: []ir.Phi{{Value: 42, Inputs: []ir.PhiInput{{Key: "k", Value: ir.Use{ID: 5}}}}}},
		{Op: ir.OpLoop, Iteration: new(ir.ValueID(43)), Carried: []ir.Carry{{Cell: ir.Ref{Name: "c"}, Next: ir.Use{ID: 42}}}},
	}
	for _, mod := range []*ir.Module{nil, ir.NewModule(), m} {
		c := &compiled{file: odd, mod: mod}
		got := views(t, c)
		checkDOT(t, got["dot"])
		f := *odd
		f.IR = mod
		checkHTML(t, &f)
		if !strings.Contains(got["text"], "component enc: grouped") {
			t.Errorf("the text view lost the component:\n%s", got["text"])
		}
	}
}

// TestHTMLView: the HTML view holds every component and port, escapes
// names, and is deterministic.
func TestHTMLView(t *testing.T) {
	f := &plan.File{Format: plan.Format, PlanVersion: plan.Version, SchemaVersion: "v1.1", Source: "doc.yaml", Components: []*plan.GroupPlan{{
		Component: "enc<1>", Grouped: true, Why: "because",
		Inputs:  []plan.Port{{Name: "x", Role: plan.RolePacked, Why: "packed & padded"}},
		Outputs: []plan.Port{{Name: "y", Split: plan.SplitPacked, Why: "view"}},
		Budgets: []plan.Budget{{Dimensions: []string{"images"}, MaxTotal: 4, Terms: []plan.Term{{Symbol: "images", Kind: plan.TermPacked, Port: "x"}}}},
	}}}
	var a, b strings.Builder
	if err := view.WriteHTML(&a, f); err != nil {
		t.Fatal(err)
	}
	view.WriteHTML(&b, f)
	if a.String() != b.String() {
		t.Error("the HTML view is not deterministic")
	}
	for _, want := range []string{"<code>enc&lt;1&gt;</code>", "packed &amp; padded", "<code>images ≤ 4</code>", "<code>y</code>", "schema_version v1.1, plan format 2",
		// The graph's node, its ports, the two tables and a rule link.
		`data-node-kind="component" data-name="enc&lt;1&gt;" data-grouped="true"`, `data-port="x"`, `data-port="y"`,
		`<table class="ports inputs">`, `<table class="ports outputs">`, `<a href="#rule-packed-2f-levels"`, `<dt id="rule-packed-2f-levels">packed/levels</dt>`,
	} {
		if !strings.Contains(a.String(), want) {
			t.Errorf("the HTML view lacks %q", want)
		}
	}
	if strings.Contains(a.String(), `class="bar-peak`) {
		t.Error("the HTML view draws a peak without stats")
	}
	// Given the package's name, the page is titled by it, escaped.
	var named strings.Builder
	if err := view.WriteHTMLPage(&named, f, view.Page{Name: "enc<pkg>"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>enc&lt;pkg&gt;</title>", "<h1>enc&lt;pkg&gt;</h1>", "plan of doc.yaml: schema_version v1.1"} {
		if !strings.Contains(named.String(), want) {
			t.Errorf("the HTML view given a name lacks %q", want)
		}
	}
	// With a run's stats, each budget's peak is drawn against max_total;
	// one over it (a plan changed since the run) is marked.
	var c strings.Builder
	if err := view.WriteHTMLPage(&c, f, view.Page{Stats: &view.RunStats{Components: map[string]view.ComponentRun{"enc<1>": {Invocations: 2, Requests: 5, MaxGroupRequests: 3,
		Peaks: []view.BudgetPeak{{Dimensions: []string{"images"}, Peak: 6}}}}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peak in a run: 6 (150%)", `class="bar-peak over"`, "measured: 2 invocations for 5 requests, largest group 3"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("the HTML view with stats lacks %q", want)
		}
	}
}

var (
	htmlHref = regexp.MustCompile(`href="#([^"]*)"`)
	htmlID   = regexp.MustCompile(` id="([^"]*)"`)
	htmlCode = regexp.MustCompile(`(?s)<code>.*?</code>`)
)

// checkHTML checks what the HTML view promises beyond its content: it is
// deterministic and self-contained (no script, no stylesheet, font or
// image from elsewhere), every in-page link has its target, and no raw
// backtick is left outside a <code> element.
func checkHTML(t *testing.T, f *plan.File) {
	t.Helper()
	var a, b strings.Builder
	if err := view.WriteHTML(&a, f); err != nil {
		t.Fatal(err)
	}
	if err := view.WriteHTML(&b, f); err != nil {
		t.Fatal(err)
	}
	page := a.String()
	if page != b.String() {
		t.Error("the HTML view is not deterministic")
	}
	for _, bad := range []string{"<script", "<link", "@import", "<img", "<iframe", "https://", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the HTML view is not self-contained: it holds %q", bad)
		}
	}
	// With no script, the page can promise links, never a selection.
	if strings.Contains(strings.ToLower(page), "select a") {
		t.Error("the HTML view asks to select something, which a page without a script cannot do")
	}
	if n := strings.Count(page, "http://"); n != 1 || !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the HTML view names %d http:// addresses, want only the SVG namespace", n)
	}
	ids := map[string]bool{}
	for _, m := range htmlID.FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Errorf("the HTML view repeats the id %q", m[1])
		}
		ids[m[1]] = true
	}
	for _, m := range htmlHref.FindAllStringSubmatch(page, -1) {
		if !ids[m[1]] {
			t.Errorf("the HTML view links to #%s, which it does not hold", m[1])
		}
	}
	if strings.Contains(htmlCode.ReplaceAllString(page, ""), "`") {
		t.Error("the HTML view leaves a raw backtick outside <code>")
	}
	if !strings.Contains(page, `<svg class="graph"`) {
		t.Error("the HTML view draws no graph")
	}
}
