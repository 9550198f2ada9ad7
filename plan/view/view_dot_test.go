package view_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan/view"
)

var (
	dotRank   = regexp.MustCompile(`^\s*\{ rank=same; (.*); \}$`)
	dotQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// dotOf draws the DOT view of a package folder.
func dotOf(t *testing.T, pkg string) (string, *ir.Module) {
	t.Helper()
	d, err := passes.CheckPath(pkg, passes.Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%s: %v %v", pkg, err, d.Diags())
	}
	f, err := passes.BuildPlan(d, pkg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := view.WriteDOT(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String(), d.Module
}

// TestDOTCompanionsBesideTheirValues: in the DOT view of every example
// package, each companion a workflow input or output names (level offsets
// and owners, padding lengths) shares a rank=same group with a value it
// serves and has an edge to every value it serves; so no owner node is left
// without an edge. The expectations come from the module's contracts.
func TestDOTCompanionsBesideTheirValues(t *testing.T) {
	pkgs, err := filepath.Glob("../../testdata/packages/*")
	if err != nil || len(pkgs) < 12 {
		t.Fatalf("found %d packages (%v)", len(pkgs), err)
	}
	owners := 0
	for _, pkg := range pkgs {
		dot, m := dotOf(t, pkg)
		rankOf := map[string]int{} // node → its rank=same group
		edges := map[[2]string]bool{}
		incident := map[string]bool{}
		for i, line := range strings.Split(dot, "\n") {
			if r := dotRank.FindStringSubmatch(line); r != nil {
				for _, id := range dotQuoted.FindAllString(r[1], -1) {
					if _, twice := rankOf[id]; twice {
						t.Errorf("%s: %s is in two rank groups", pkg, id)
					}
					rankOf[id] = i
				}
			} else if e := dotEdge.FindStringSubmatch(line); e != nil {
				edges[[2]string{e[1], e[2]}] = true
				incident[e[1]], incident[e[2]] = true, true
			}
		}
		type served struct {
			value string
			c     *ir.Contract
		}
		var values []served
		for _, in := range m.Inputs {
			values = append(values, served{"in:" + in.Name, in.Contract})
		}
		for _, o := range m.Outputs {
			values = append(values, served{"out:" + o.Name, o.Contract})
		}
		besides := map[string]bool{} // companion → shares a rank with a value it serves
		for _, v := range values {
			if v.c == nil {
				continue
			}
			prefix := v.value[:strings.Index(v.value, ":")+1]
			var comps []string
			for _, l := range v.c.Layout.Levels {
				comps = append(comps, l.Offsets.Name, l.Owner.Name)
				owners++
			}
			for _, p := range v.c.Padding {
				comps = append(comps, p.Lengths.Name)
			}
			value := `"` + v.value + `"`
			for _, name := range comps {
				id := `"` + prefix + name + `"`
				if !edges[[2]string{id, value}] {
					t.Errorf("%s: companion %s has no edge to %s, which it serves", pkg, id, value)
				}
				if r, ok := rankOf[id]; ok && r == rankOf[value] {
					besides[id] = true
				} else if !besides[id] {
					besides[id] = false
				}
			}
		}
		for id, ok := range besides {
			if !ok {
				t.Errorf("%s: companion %s shares a rank with no value it serves", pkg, id)
			}
			if !incident[id] {
				t.Errorf("%s: companion %s has no edge", pkg, id)
			}
		}
	}
	if owners < 12 {
		t.Errorf("the packages name %d ownership levels; the test saw too few to mean anything", owners)
	}
}
