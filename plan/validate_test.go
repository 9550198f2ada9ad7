package plan_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
)

// signedPlan is a compiled plan as bytes a runtime would read.
type signedPlan struct {
	name  string
	bytes []byte
}

// compiledPlans compiles every fixture package and every accepted
// conformance document into a signed plan.
func compiledPlans(t *testing.T) []signedPlan {
	t.Helper()
	compiled.Do(func() { compiled.plans = compilePlans(t) })
	if len(compiled.plans) == 0 {
		t.Fatal("no compiled plans")
	}
	return compiled.plans
}

// compiled holds the plans, built once per test binary.
var compiled struct {
	sync.Once
	plans []signedPlan
}

func compilePlans(t *testing.T) []signedPlan {
	root := testenv.Root(t)
	paths, err := filepath.Glob(filepath.Join(root, "testdata", "packages", "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixture packages under testdata/packages (%v)", err)
	}
	dir, cases := testenv.Cases(t)
	for _, cs := range cases {
		if cs.Accept {
			paths = append(paths, filepath.Join(dir, cs.File))
		}
	}
	var out []signedPlan
	for _, p := range paths {
		d, err := passes.CheckPath(p, passes.Options{Check: true})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !d.Valid() {
			t.Fatalf("%s has diagnostics: %v", p, d.Diags())
		}
		f, err := passes.BuildPlan(d, filepath.Dir(d.File))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, p)
		out = append(out, signedPlan{name: name, bytes: b})
	}
	return out
}

// decodeRaw reads a plan's bytes without the checks Decode makes, so a test
// can edit it as a person with a text editor would.
func decodeRaw(t *testing.T, b []byte) *plan.File {
	t.Helper()
	var f plan.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// A mutation edits one field of a plan; it reports false when the plan has
// no such field to edit. want is a fragment of the field's name in the
// message Decode must refuse it with.
type mutation struct {
	name string
	want string
	edit func(f *plan.File) bool
}

// eachPort calls fn on ports until it reports true.
func eachPort(f *plan.File, inputs bool, fn func(g *plan.GroupPlan, p *plan.Port) bool) bool {
	for _, g := range f.Components {
		ps := g.Outputs
		if inputs {
			ps = g.Inputs
		}
		for i := range ps {
			if fn(g, &ps[i]) {
				return true
			}
		}
	}
	return false
}

func eachBudget(f *plan.File, fn func(b *plan.Budget) bool) bool {
	for _, g := range f.Components {
		for i := range g.Budgets {
			if fn(&g.Budgets[i]) {
				return true
			}
		}
	}
	return false
}

func eachTerm(f *plan.File, fn func(t *plan.Term) bool) bool {
	return eachBudget(f, func(b *plan.Budget) bool {
		for i := range b.Terms {
			if fn(&b.Terms[i]) {
				return true
			}
		}
		return false
	})
}

func firstGrouped(f *plan.File) *plan.GroupPlan {
	for _, g := range f.Components {
		if g.Grouped {
			return g
		}
	}
	return nil
}

var mutations = []mutation{
	{"uniform axis beyond the rank", "uniform[0].axis", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Uniform) > 0 {
				g.Uniform[0].Axis = 9
				return true
			}
		}
		return false
	}},
	{"uniform axis negative", "uniform[0].axis", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Uniform) > 0 {
				g.Uniform[0].Axis = -1
				return true
			}
		}
		return false
	}},
	{"uniform port unknown", "uniform[0].port", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Uniform) > 0 {
				g.Uniform[0].Port = "ghost"
				return true
			}
		}
		return false
	}},
	{"uniform symbol unknown", "uniform[0].symbol", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Uniform) > 0 {
				g.Uniform[0].Symbol = "ghost"
				return true
			}
		}
		return false
	}},
	{"max_total negative", "max_total", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.MaxTotal = -5; return true })
	}},
	{"max_total changed", "max_total", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.MaxTotal++; return true })
	}},
	{"min_item zero", "min_item", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.MinItem = 0; return true })
	}},
	{"min_item above max_total", "min_item", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.MinItem = b.MaxTotal + 1; return true })
	}},
	{"budget dimensions changed", "dimensions", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.Dimensions = append(b.Dimensions, "ghost"); return true })
	}},
	{"budget terms dropped", "terms", func(f *plan.File) bool {
		return eachBudget(f, func(b *plan.Budget) bool { b.Terms = b.Terms[:0]; return true })
	}},
	{"budget dropped", "budgets", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Budgets) > 0 {
				g.Budgets = g.Budgets[1:]
				return true
			}
		}
		return false
	}},
	{"term kind unknown", ".kind", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool { t.Kind = "bogus"; return true })
	}},
	{"term symbol changed", ".symbol", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool { t.Symbol += "x"; return true })
	}},
	{"term port unknown", ".port", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool {
			if t.Port == "" {
				return false
			}
			t.Port = "ghost"
			return true
		})
	}},
	{"padded or pinned term axis beyond the rank", ".axis", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool {
			if (t.Kind != plan.TermPadded && t.Kind != plan.TermPinned) || t.Port == "" {
				return false
			}
			t.Axis = 9
			return true
		})
	}},
	{"rows term factor zero", ".factor", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool {
			if t.Kind != plan.TermRows {
				return false
			}
			t.Factor = 0
			return true
		})
	}},
	{"units term level out of range", ".level", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool {
			if t.Kind != plan.TermUnits {
				return false
			}
			t.Level = 7
			return true
		})
	}},
	{"term level negative", "terms[", func(f *plan.File) bool {
		return eachTerm(f, func(t *plan.Term) bool { t.Level = -1; return true })
	}},
	{"input role unknown", ".role", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool { p.Role = "bogus"; return true })
	}},
	{"input role contradicts its contract", ".role", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Role != plan.RoleRows && p.Role != plan.RolePacked {
				return false
			}
			p.Role = plan.RoleBroadcast
			return true
		})
	}},
	{"output split unknown", ".split", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool { p.Split = "bogus"; return true })
	}},
	{"input axis beyond the rank", ".axis", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Role != plan.RoleRows && p.Role != plan.RolePacked {
				return false
			}
			p.Axis = 9
			return true
		})
	}},
	{"output axis beyond the rank", ".axis", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Split != plan.SplitRows {
				return false
			}
			p.Axis = 9
			return true
		})
	}},
	{"expanded factor zero", ".factor", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Role != plan.RoleExpanded {
				return false
			}
			p.Factor = 0
			return true
		})
	}},
	{"input port renamed", ".port", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool { p.Name = "ghost"; return true })
	}},
	{"input port dropped", "inputs", func(f *plan.File) bool {
		for _, g := range f.Components {
			if len(g.Inputs) > 0 {
				g.Inputs = g.Inputs[1:]
				return true
			}
		}
		return false
	}},
	{"level offsets port unknown", ".offsets.port", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels[0].Offsets = plan.Ref{Port: "ghost"}
			return true
		})
	}},
	{"level owner value unknown", ".owner.value", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels[0].Owner = plan.Ref{Value: "ghost"}
			return true
		})
	}},
	{"level ref empty", ".offsets", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels[0].Offsets = plan.Ref{}
			return true
		})
	}},
	{"level index wrong", ".level", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels[0].Index = 3
			return true
		})
	}},
	{"levels dropped", ".levels", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels = p.Levels[:len(p.Levels)-1]
			return true
		})
	}},
	{"output level extent unknown", ".extent", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Levels) == 0 {
				return false
			}
			p.Levels[0].Extent = "bogus"
			return true
		})
	}},
	{"preserved level from an input level out of range", ".from", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			for i := range p.Levels {
				if p.Levels[i].From != nil {
					p.Levels[i].From.Level = 5
					return true
				}
			}
			return false
		})
	}},
	{"preserved level from an unknown port", ".from.port", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			for i := range p.Levels {
				if p.Levels[i].From != nil {
					p.Levels[i].From.Port = "ghost"
					return true
				}
			}
			return false
		})
	}},
	{"padded axis beyond the rank", "padded[0].axis", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Padded) == 0 {
				return false
			}
			p.Padded[0].Axis = 9
			return true
		})
	}},
	{"padded axis on another dimension", "padded[0].axis", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Padded) == 0 || p.Padded[0].Axis == 0 {
				return false
			}
			p.Padded[0].Axis--
			return true
		})
	}},
	{"padded axis before the request axis", "before the port's request axis", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Role != plan.RoleRows || len(p.Padded) == 0 || p.Padded[0].Axis <= p.Axis {
				return false
			}
			p.Axis = p.Padded[0].Axis + 1
			return true
		})
	}},
	{"padded lengths port unknown", "padded[0].lengths", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Padded) == 0 {
				return false
			}
			p.Padded[0].Lengths = plan.Ref{Port: "ghost"}
			return true
		})
	}},
	{"padded dimension dropped", ".padded", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if len(p.Padded) == 0 {
				return false
			}
			p.Padded = nil
			return true
		})
	}},
	{"input serves an unknown port", ".serves.port", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil {
				return false
			}
			p.Serves.Port = "ghost"
			return true
		})
	}},
	{"output serves an unknown port", ".serves.port", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil {
				return false
			}
			p.Serves.Port = "ghost"
			return true
		})
	}},
	{"serves a level out of range", ".serves.level", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil || p.Serves.Role == "lengths" {
				return false
			}
			p.Serves.Level = 5
			return true
		})
	}},
	{"serves an unknown padded dimension", ".serves.dimension", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil || p.Serves.Role != "lengths" {
				return false
			}
			p.Serves.Dimension = "ghost"
			return true
		})
	}},
	{"serves role unknown", ".serves.role", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil {
				return false
			}
			p.Serves.Role = "bogus"
			return true
		})
	}},
	{"companion input without serves", ".role", func(f *plan.File) bool {
		return eachPort(f, true, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Serves == nil {
				return false
			}
			p.Serves = nil
			return true
		})
	}},
	{"delivery unknown", ".delivery", func(f *plan.File) bool {
		return eachPort(f, false, func(_ *plan.GroupPlan, p *plan.Port) bool {
			if p.Split != plan.SplitCompanion {
				return false
			}
			p.Delivery = "bogus"
			return true
		})
	}},
	{"shared_equal names no broadcast input", "shared_equal[", func(f *plan.File) bool {
		g := firstGrouped(f)
		if g == nil {
			return false
		}
		g.SharedEqual = append(g.SharedEqual, "ghost")
		return true
	}},
	{"keyed_by on a solo component", "keyed_by", func(f *plan.File) bool {
		for _, g := range f.Components {
			if !g.Grouped {
				g.KeyedBy = []string{"width of `pixels`"}
				return true
			}
		}
		return false
	}},
	{"grouped flipped", ".grouped", func(f *plan.File) bool {
		if len(f.Components) == 0 {
			return false
		}
		f.Components[0].Grouped = !f.Components[0].Grouped
		return true
	}},
	{"component renamed", ".component", func(f *plan.File) bool {
		if len(f.Components) == 0 {
			return false
		}
		f.Components[0].Component = "ghost"
		return true
	}},
	{"component dropped", "has no GroupPlan", func(f *plan.File) bool {
		if len(f.Components) == 0 {
			return false
		}
		f.Components = f.Components[1:]
		return true
	}},
	{"component duplicated", "second GroupPlan", func(f *plan.File) bool {
		if len(f.Components) == 0 {
			return false
		}
		f.Components = append(f.Components, f.Components[0])
		return true
	}},
	{"component null", "components[0]", func(f *plan.File) bool {
		if len(f.Components) == 0 {
			return false
		}
		f.Components[0] = nil
		return true
	}},
	{"artifact of an unknown component", "artifacts[0].component", func(f *plan.File) bool {
		if len(f.Artifacts) == 0 {
			return false
		}
		f.Artifacts[0].Component = "ghost"
		return true
	}},
	{"artifact outside the package", "artifacts[0].path", func(f *plan.File) bool {
		if len(f.Artifacts) == 0 {
			return false
		}
		f.Artifacts[0].Path = "../../etc/passwd"
		return true
	}},
	{"artifact hash malformed", "artifacts[0].sha256", func(f *plan.File) bool {
		if len(f.Artifacts) == 0 {
			return false
		}
		f.Artifacts[0].SHA256 = "zz"
		return true
	}},
	{"operator types out of order", "artifacts[0].ops[1]", func(f *plan.File) bool {
		if len(f.Artifacts) == 0 || len(f.Artifacts[0].Ops) < 2 {
			return false
		}
		ops := f.Artifacts[0].Ops
		ops[0], ops[1] = ops[1], ops[0]
		return true
	}},
	{"operator type malformed", "artifacts[0].ops[0]", func(f *plan.File) bool {
		if len(f.Artifacts) == 0 || len(f.Artifacts[0].Ops) == 0 {
			return false
		}
		f.Artifacts[0].Ops[0] = "Mat\nMul"
		return true
	}},
	{"source outside the package", "source", func(f *plan.File) bool {
		f.Source = "/etc/passwd"
		return true
	}},
	{"schema version differs from the IR", "schema_version", func(f *plan.File) bool {
		f.SchemaVersion = "v9"
		return true
	}},
}

// TestDecodeRefusesInconsistentPlans edits the compiled plan of every
// fixture package and accepted conformance document, one field at a time,
// re-signs it as a person with a recomputed digest would, and expects
// Decode to refuse each edit with a message naming the field.
func TestDecodeRefusesInconsistentPlans(t *testing.T) {
	plans := compiledPlans(t)
	applied := map[string]int{}
	for _, sp := range plans {
		if _, err := plan.Decode(sp.name, sp.bytes); err != nil {
			t.Fatalf("the compiled plan of %s is refused: %v", sp.name, err)
		}
		for _, m := range mutations {
			f := decodeRaw(t, sp.bytes)
			if !m.edit(f) {
				continue
			}
			applied[m.name]++
			b, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			_, err = plan.Decode(sp.name, b)
			switch {
			case err == nil:
				t.Errorf("%s, %s: Decode accepted the edited plan", sp.name, m.name)
			case !strings.Contains(err.Error(), m.want):
				t.Errorf("%s, %s: the message does not name %q: %v", sp.name, m.name, m.want, err)
			case strings.Contains(err.Error(), "signature"):
				t.Errorf("%s, %s: refused for its signature, not its content: %v", sp.name, m.name, err)
			}
		}
	}
	for _, m := range mutations {
		if applied[m.name] == 0 {
			t.Errorf("mutation %q applies to no compiled plan", m.name)
		}
	}
}

// The two edits issue 12 reports: an axis beyond the port's rank (which
// panicked the runtime) and a negative budget (which was accepted).
func TestDecodeRefusesIssue12Edits(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "examples", "videoframes", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ edit, want string }{
		{"uniform axis 9", "uniform[0].axis"},
		{"max_total -5", "max_total"},
	} {
		f := decodeRaw(t, b)
		g := firstGrouped(f)
		if g == nil || len(g.Uniform) == 0 || len(g.Budgets) == 0 {
			t.Fatal("examples/videoframes/plan.json has no grouped component with uniform dimensions and budgets")
		}
		if c.edit == "uniform axis 9" {
			g.Uniform[0].Axis = 9
		} else {
			g.Budgets[0].MaxTotal = -5
		}
		signed, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plan.Decode("plan.json", signed); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want a refusal naming %s, got %v", c.edit, c.want, err)
		}
	}
}

// TestDecodeRandomEditsNeverPanic edits compiled plans at random, in their
// JSON form (numbers to extreme or small values, strings to names from the
// plan or nonsense, list entries dropped or duplicated), re-signs them, and
// decodes: an error or a plan, never a panic. A plan Decode accepts must
// still agree with itself under a second Validate.
func TestDecodeRandomEditsNeverPanic(t *testing.T) {
	plans := compiledPlans(t)
	rng := rand.New(rand.NewPCG(12, 5))
	n := 1500
	if testing.Short() {
		n = 300
	}
	for i := range n {
		sp := plans[rng.IntN(len(plans))]
		var doc map[string]any
		if err := json.Unmarshal(sp.bytes, &doc); err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(3) {
			key := []string{"components", "components", "components", "artifacts"}[rng.IntN(4)]
			doc[key] = mutateJSON(rng, doc[key])
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var f plan.File
		if json.Unmarshal(raw, &f) != nil || f.IR == nil {
			continue
		}
		signed, err := f.Marshal()
		if err != nil {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("edit %d of %s: Decode panicked: %v", i, sp.name, r)
				}
			}()
			if got, err := plan.Decode(sp.name, signed); err == nil {
				if err := got.Validate(); err != nil {
					t.Fatalf("edit %d of %s: Decode accepted a plan Validate refuses: %v", i, sp.name, err)
				}
			}
		}()
	}
}

var oddNumbers = []float64{-1, 0, 1, 2, 3, 9, -5, 1 << 40, -(1 << 40)}
var oddStrings = []string{"", "ghost", "packed", "rows", "units", "padded", "pinned", "offsets", "owner", "lengths", "broadcast", "companion", "internal", "preserved", "produced", "rebased", "sliced", "../x"}

// mutateJSON changes one random place in a decoded JSON value.
func mutateJSON(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return x
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Map order is random: sort for a reproducible walk.
		sortStrings(keys)
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(12) == 0 {
			delete(x, k)
			return x
		}
		x[k] = mutateJSON(rng, x[k])
		return x
	case []any:
		if len(x) == 0 {
			return x
		}
		i := rng.IntN(len(x))
		switch rng.IntN(8) {
		case 0:
			return append(x[:i:i], x[i+1:]...)
		case 1:
			return append(x, x[i])
		}
		x[i] = mutateJSON(rng, x[i])
		return x
	case float64:
		if rng.IntN(2) == 0 {
			return oddNumbers[rng.IntN(len(oddNumbers))]
		}
		return x + float64(rng.IntN(5)-2)
	case string:
		return oddStrings[rng.IntN(len(oddStrings))]
	case bool:
		return !x
	case nil:
		return map[string]any{"port": "ghost"}
	}
	return v
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
