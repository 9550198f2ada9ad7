package passes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// acceptedDocuments returns every document the checks accept: the accepted
// conformance cases and the valid fixture documents.
func acceptedDocuments(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	dir, cases := testenv.Cases(t)
	for _, c := range cases {
		if c.Accept {
			b, err := os.ReadFile(filepath.Join(dir, c.File))
			if err != nil {
				t.Fatal(err)
			}
			docs[c.File] = b
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "diag", "*.yaml"))
	pkgs, _ := filepath.Glob(filepath.Join("..", "testdata", "packages", "*", "inference_metadata.yaml"))
	for _, f := range append(files, pkgs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(string(b)) {
			if !strings.Contains(doc, "# want") {
				docs[fmt.Sprintf("%s#%d", f, i)] = []byte(doc)
			}
		}
	}
	return docs
}

// TestPlansHonorTheRules is a property test over every accepted document:
// each plan decision is re-derived from the contracts and checked against
// the rule it rests on, independently of the planner's own code.
func TestPlansHonorTheRules(t *testing.T) {
	grouped := 0
	for name, src := range acceptedDocuments(t) {
		d, err := CheckSource(name, src, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Valid() {
			t.Errorf("%s: expected valid, got %v", name, d.Diags())
			continue
		}
		gps := d.Results[PlanPass].(GroupPlans)
		if len(gps) != len(d.Module.Components) {
			t.Errorf("%s: %d plans for %d components", name, len(gps), len(d.Module.Components))
		}
		for _, g := range gps {
			comp := d.Module.Component(g.Component)
			for _, problem := range planProblems(comp, g, d.Results[BindingsPass].(*Bindings)) {
				t.Errorf("%s: component %s: %s", name, comp.Name, problem)
			}
			if g.Grouped {
				grouped++
			}
		}
	}
	if grouped < 10 {
		t.Errorf("only %d grouped components were checked; the property needs real cases", grouped)
	}
}

// planProblems lists the decisions of g that the validation rules forbid.
func planProblems(comp *ir.Component, g *plan.GroupPlan, bind *Bindings) []string {
	bound := func(side ir.SiteKind) func(string) string {
		return func(name string) string { return bind.PortOf(comp.Name, side, name) }
	}
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if g.Grouped != (comp.Capacity != nil) {
		bad("grouped=%v but batch_capacity present=%v (§3.1: absent means never grouped)", g.Grouped, comp.Capacity != nil)
	}
	if len(g.Inputs) != len(comp.Inputs) || len(g.Outputs) != len(comp.Outputs) {
		bad("plans %d/%d ports of %d/%d", len(g.Inputs), len(g.Outputs), len(comp.Inputs), len(comp.Outputs))
		return out
	}
	counts := map[string]bool{}
	for i, in := range g.Inputs {
		out = append(out, inputProblems(comp, comp.Inputs[i], in, counts, bound(ir.SitePortIn))...)
	}
	for i, o := range g.Outputs {
		out = append(out, outputProblems(comp, comp.Outputs[i], o, g, bound(ir.SitePortOut))...)
	}
	if comp.Capacity == nil {
		return out
	}
	for _, u := range g.Uniform {
		if counts[u.Symbol] {
			bad("uniform symbol %s counts the group (r2)", u.Symbol)
		}
		port := comp.Input(u.Port)
		if port == nil || port.Contract.Axis(u.Symbol) != u.Axis {
			bad("uniform symbol %s is read from %s axis %d, which is not that symbol", u.Symbol, u.Port, u.Axis)
		}
		for _, in := range g.Inputs {
			if slices.ContainsFunc(in.Padded, func(p plan.Pad) bool { return p.Dimension == u.Symbol }) {
				bad("uniform symbol %s is padded on %s (r3)", u.Symbol, in.Name)
			}
		}
	}
	budgeted := map[string]bool{}
	for _, b := range g.Budgets {
		if b.MaxTotal < 1 || b.MinItem > b.MaxTotal {
			bad("budget %v admits no item: max_total %d, min_item %d (r8)", b.Dimensions, b.MaxTotal, b.MinItem)
		}
		if len(b.Terms) == 0 || !slices.Contains([]plan.TermKind{plan.TermPacked, plan.TermUnits, plan.TermRows}, b.Terms[0].Kind) {
			bad("budget %v is not group-rooted (r4)", b.Dimensions)
		}
		for _, term := range b.Terms {
			budgeted[term.Symbol] = true
		}
	}
	for _, in := range g.Inputs {
		for _, l := range in.Levels {
			if !budgeted[l.Units] {
				bad("level %d of %s counts %s, which no budget bounds (r5)", l.Index, in.Name, l.Units)
			}
		}
	}
	return out
}

func inputProblems(comp *ir.Component, port *ir.Port, in plan.Port, counts map[string]bool, bound func(string) string) []string {
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("input %s: "+format, append([]any{port.Name}, args...)...))
	}
	c := port.Contract
	if in.Name != port.Name || in.Why == "" {
		bad("plan names %q, why %q", in.Name, in.Why)
	}
	if in.Role == plan.RoleCompanion {
		if in.Serves == nil || !servedBy(comp.Input(in.Serves.Port), in.Serves, port.Name, bound) {
			bad("is a companion of %+v, which does not name it", in.Serves)
		}
		return out
	}
	want := map[ir.LayoutKind]plan.Role{ir.Shared: plan.RoleBroadcast, ir.RequestAligned: plan.RoleRows,
		ir.RequestExpanded: plan.RoleExpanded, ir.TokenPacked: plan.RolePacked}[c.Layout.Kind]
	if in.Role != want {
		bad("role %s for a %s contract", in.Role, c.Layout.Kind)
	}
	if len(in.Levels) != len(c.Layout.Levels) || len(in.Levels) > 2 {
		bad("%d plan levels for %d declared (r3: one or two)", len(in.Levels), len(c.Layout.Levels))
	}
	for _, l := range in.Levels {
		counts[l.Units] = true
		if l.Index == 0 && l.Units != c.PackedSym() {
			bad("level 0 counts %s, not the packed symbol %s (r4)", l.Units, c.PackedSym())
		}
	}
	for _, p := range in.Padded {
		if p.Axis < 0 || p.Axis >= len(c.Shape) || c.Shape[p.Axis].Sym != p.Dimension {
			bad("pads %s on axis %d, which is not that symbol", p.Dimension, p.Axis)
		}
		if (c.Packed() && p.Axis == 0) || p.Axis == c.RequestAxis() {
			bad("pads its packed or request axis %d (§3.2)", p.Axis)
		}
	}
	return out
}

// servedBy reports whether port's contract names companion (by the port's
// name, or by the value an invoke binds to it) in the slot s says it serves.
func servedBy(port *ir.Port, s *plan.Serves, companion string, bound func(string) string) bool {
	if port == nil || port.Contract == nil {
		return false
	}
	c := port.Contract
	names := func(n string) bool { return n == companion || bound(n) == companion }
	switch s.Role {
	case "lengths":
		return slices.ContainsFunc(c.Padding, func(p ir.Padding) bool { return p.Dim.Name == s.Dimension && names(p.Lengths.Name) })
	case "offsets":
		return s.Level < len(c.Layout.Levels) && names(c.Layout.Levels[s.Level].Offsets.Name)
	case "owner":
		return s.Level < len(c.Layout.Levels) && names(c.Layout.Levels[s.Level].Owner.Name)
	}
	return false
}

func outputProblems(comp *ir.Component, port *ir.Port, o plan.Port, g *plan.GroupPlan, bound func(string) string) []string {
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("output %s: "+format, append([]any{port.Name}, args...)...))
	}
	if o.Serves != nil {
		wantSplit := map[string]plan.Split{"owner": plan.SplitInternal, "offsets": plan.SplitCompanion, "lengths": plan.SplitCompanion}[o.Serves.Role]
		if o.Split != wantSplit || !servedBy(comp.Output(o.Serves.Port), o.Serves, port.Name, bound) {
			bad("split %s as %+v", o.Split, o.Serves)
		}
		if o.Serves.Role == "owner" && o.Delivery != "" {
			bad("an owner map is delivered (%s); owners are never delivered", o.Delivery)
		}
		return out
	}
	for _, l := range o.Levels {
		switch l.Extent {
		case "preserved":
			if l.From == nil {
				bad("preserved level %d has no input level to split with (r5)", l.Index)
				continue
			}
			in := g.Input(l.From.Port)
			if in == nil || l.From.Level >= len(in.Levels) || in.Levels[l.From.Level].Offsets.Name() != l.Offsets.Name() {
				bad("preserved level %d splits with %+v, which does not carry its pair", l.Index, l.From)
			}
		case "produced":
			if comp.Output(l.Offsets.Name()) == nil || comp.Output(l.Owner.Name()) == nil {
				bad("produced level %d names companions that are not outputs of %s (r5)", l.Index, comp.Name)
			}
		default:
			bad("level %d has extent %q", l.Index, l.Extent)
		}
	}
	return out
}

// TestPlanFileRoundTrip: a plan survives write→load→write byte-identically,
// and a changed artifact or document makes it stale.
func TestPlanFileRoundTrip(t *testing.T) {
	pkg := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "packages", "image_padded", "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model, err := os.ReadFile(filepath.Join("..", "testdata", "packages", "image_padded", "encoder.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	write("inference_metadata.yaml", string(src))
	write("encoder.onnx", string(model))
	d, err := CheckPath(pkg, Options{Check: true})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	out := filepath.Join(t.TempDir(), "plan.json")
	f, err := BuildPlan(d, filepath.Dir(out))
	if err != nil {
		t.Fatal(err)
	}
	first, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, first, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := plan.Load(out)
	if err != nil {
		t.Fatalf("loading a fresh plan: %v", err)
	}
	second, err := loaded.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("write→load→write differs")
	}
	write("encoder.onnx", "other model bytes")
	if _, err := plan.Load(out); !errors.Is(err, plan.ErrStale) || !strings.Contains(err.Error(), "artifact of component `encoder` encoder.onnx changed since the plan was compiled") {
		t.Fatalf("a changed artifact: %v", err)
	}
	write("encoder.onnx", string(model))
	write("inference_metadata.yaml", string(src)+"\n# edited\n")
	if _, err := plan.Load(out); !errors.Is(err, plan.ErrStale) || !strings.Contains(err.Error(), "the metadata document inference_metadata.yaml changed") {
		t.Fatalf("a changed document: %v", err)
	}
}

// TestPlanFileRefusesForeign: a hand-edited plan, another format version,
// and a JSON file that is not a plan are refused with what to do.
func TestPlanFileRefusesForeign(t *testing.T) {
	d, err := CheckSource("doc.yaml", generatedWorkflow(1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := BuildPlan(d, ".")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := f.Marshal()
	tests := []struct{ name, body, want string }{
		{"edited", strings.Replace(string(good), `"max_total": 16`, `"max_total": 1600`, 1), "signature does not match"},
		{"other version", strings.Replace(string(good), `"plan_version": 2`, `"plan_version": 1`, 1), "format version 1, and this genaic reads version 2"},
		{"not a plan", `{"requests": []}`, "is not a genaic plan"},
		{"not JSON", `plan`, "is not a genaic plan"},
		{"unknown field", strings.Replace(string(good), `"format"`, `"extra": 1, "format"`, 1), "malformed plan"},
	}
	for _, tt := range tests {
		if _, err := plan.Decode("p.json", []byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if _, err := plan.Decode("p.json", good); err != nil {
		t.Errorf("the untouched plan: %v", err)
	}
}

// TestNoPlanForInvalidDocument: plan passes never run on a module a check
// refused, and no plan file can be built from it.
func TestNoPlanForInvalidDocument(t *testing.T) {
	src := strings.Replace(string(generatedWorkflow(1)), "max_total: 16", "max_total: 0", 1)
	d, err := CheckSource("doc.yaml", []byte(src), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Valid() {
		t.Fatal("a zero budget was accepted")
	}
	if _, ran := d.Results[PlanPass]; ran {
		t.Error("the plan pass ran on an invalid module")
	}
	if _, err := BuildPlan(d, "."); err == nil {
		t.Error("BuildPlan built a plan for an invalid document")
	}
}

// TestPlanProblemsFire shows the property's checks can fail: each wrong
// decision planted in a correct plan is found.
func TestPlanProblemsFire(t *testing.T) {
	d, err := CheckSource("doc.yaml", generatedWorkflow(1), Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	comp := d.Module.Components[0]
	bound := d.Results[BindingsPass].(*Bindings)
	fresh := func() *plan.GroupPlan {
		return planComponent(d.Results[ScopesPass].(*Scopes), bound, d.Results[SymbolsPass].(Symbols)[comp], comp)
	}
	if p := planProblems(comp, fresh(), bound); len(p) != 0 {
		t.Fatalf("the correct plan has problems: %v", p)
	}
	plants := map[string]func(g *plan.GroupPlan){
		"role":         func(g *plan.GroupPlan) { g.Inputs[0].Role = plan.RoleRows },
		"uniform":      func(g *plan.GroupPlan) { g.Uniform = append(g.Uniform, plan.Uniform{Symbol: "images", Port: "px"}) },
		"budget root":  func(g *plan.GroupPlan) { g.Budgets[1].Terms[0].Kind = plan.TermPadded },
		"min item":     func(g *plan.GroupPlan) { g.Budgets[0].MinItem = 99 },
		"unbudgeted":   func(g *plan.GroupPlan) { g.Budgets = nil },
		"companion":    func(g *plan.GroupPlan) { g.Inputs[1].Serves.Role = "owner" },
		"preserved":    func(g *plan.GroupPlan) { g.Outputs[0].Levels[0].From = nil },
		"grouped":      func(g *plan.GroupPlan) { g.Grouped = false },
		"padded axis":  func(g *plan.GroupPlan) { g.Inputs[0].Padded[0].Axis = 0 },
		"level 0 unit": func(g *plan.GroupPlan) { g.Inputs[0].Levels[0].Units = "patches" },
	}
	for name, plant := range plants {
		g := fresh()
		plant(g)
		if len(planProblems(comp, g, bound)) == 0 {
			t.Errorf("planted %s: not found", name)
		}
	}
}

// TestPlanIRRoundTrips: the IR a plan carries as JSON decodes into the
// module the compiler built, locations included (its canonical text form
// and location table are equal), for every accepted corpus document and
// every fixture package.
func TestPlanIRRoundTrips(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(testenv.Conformance(t), "*.yaml"))
	pkgs, _ := filepath.Glob(filepath.Join("..", "testdata", "packages", "*"))
	n := 0
	for _, path := range append(paths, pkgs...) {
		d, err := CheckPath(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Valid() {
			continue
		}
		f, err := BuildPlan(d, filepath.Dir(d.File))
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := plan.Decode(path, b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got, want := back.IR.String(), d.Module.String(); got != want {
			t.Errorf("%s: the decoded IR differs from the compiled module:\n got: %.600s\nwant: %.600s", path, got, want)
		}
		if !slices.Equal(back.IR.Locs, d.Module.Locs) {
			t.Errorf("%s: the decoded location table differs", path)
		}
		n++
	}
	if n < 50 {
		t.Errorf("only %d documents round-tripped; the corpus and fixtures hold more", n)
	}
}

// TestBuildPlanValidates: a plan that the runtime's validation of plan
// files would refuse is never built, even from a document the checks
// accepted: BuildPlan says it is genaic's bug. The plan of an accepted
// document is tampered with here (a port's request axis moved off its
// contract's) as a gap in the checks would leave it.
func TestBuildPlanValidates(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "models", "models.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := CheckSource("models.yaml", []byte(splitDocuments(string(src))[0]), Options{Check: true, Models: modelFixtures})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	if _, err := BuildPlan(d, "."); err != nil {
		t.Fatalf("the accepted document: %v", err)
	}
	d.Results[PlanPass].(GroupPlans).Get("reader").Input("pages").Axis = 7
	_, err = BuildPlan(d, ".")
	if err == nil || !strings.Contains(err.Error(), "a genaic bug") || !strings.Contains(err.Error(), "(`pages`).axis: is 7") {
		t.Errorf("a plan whose request axis is not its contract's: %v, want the validation's refusal as genaic's bug", err)
	}
}
