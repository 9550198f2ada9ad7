package passes

import (
	"slices"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// runCapacity runs the capacity pass alone on m and returns the rules it
// reported.
func runCapacity(t *testing.T, m *ir.Module) []diag.Rule {
	t.Helper()
	var ds diag.List
	sc := buildScopes(m)
	c := &Context{Module: m, pass: CapacityPass, diags: &ds,
		results: map[*Pass]any{ScopesPass: sc, SymbolsPass: buildSymbols(m, sc), BindingsPass: buildBindings(m)}}
	if _, err := runOne(CapacityPass, c); err != nil {
		t.Fatal(err)
	}
	return ds.Rules()
}

func capacitySyms(names ...string) []ir.Dim {
	out := make([]ir.Dim, len(names))
	for i, n := range names {
		out[i] = ir.Dim{Sym: n}
	}
	return out
}

func capacityRefs(names ...string) []ir.Ref {
	out := make([]ir.Ref, len(names))
	for i, n := range names {
		out[i] = ir.Ref{Name: n}
	}
	return out
}

// TestCapacityOddInput feeds contracts no valid document has: the pass
// must report or keep quiet, never panic.
func TestCapacityOddInput(t *testing.T) {
	m := ir.NewModule()
	packedEmpty := &ir.Contract{Rank: 0, HasShape: true, Layout: ir.Layout{Kind: ir.TokenPacked, Levels: []ir.Level{{}, {Offsets: ir.Ref{Name: "nowhere"}}}}}
	farAxis := &ir.Contract{Rank: 1, HasShape: true, Shape: capacitySyms("n"), Layout: ir.Layout{Kind: ir.RequestAligned, Axis: 7}}
	negAxis := &ir.Contract{Rank: 1, HasShape: true, Shape: capacitySyms("n"), Layout: ir.Layout{Kind: ir.RequestExpanded, Axis: -2}}
	unknownRank := &ir.Contract{Rank: -1, Layout: ir.Layout{Kind: ir.RequestAligned}, Padding: []ir.Padding{{}}}
	selfOwner := &ir.Contract{Rank: 2, HasShape: true, Shape: capacitySyms("p", "q"),
		Layout: ir.Layout{Kind: ir.TokenPacked, Axis: 5, Levels: []ir.Level{{Offsets: ir.Ref{Name: "x"}, Owner: ir.Ref{Name: "x"}}}}}
	m.Components = []*ir.Component{{
		Name: "odd",
		Inputs: []*ir.Port{{Name: "nil"}, {Name: "a", Contract: packedEmpty}, {Name: "b", Contract: farAxis},
			{Name: "c", Contract: negAxis}, {Name: "d", Contract: unknownRank}, {Name: "x", Contract: selfOwner}},
		Outputs:  []*ir.Port{{Name: "o", Contract: packedEmpty}},
		Capacity: &ir.Capacity{Uniform: capacityRefs("", "n", "n"), Budgets: []ir.Budget{{}, {Path: capacityRefs(""), MaxTotal: -1}, {Path: capacityRefs("n", "p"), MaxTotal: 1 << 62}}},
		RowScope: &ir.RowScope{Axis: -3},
	}}
	runCapacity(t, m)
}

// TestCapacityFootprintOverflow checks that a path of large
// request_expanded factors saturates rather than wrapping around.
func TestCapacityFootprintOverflow(t *testing.T) {
	m := ir.NewModule()
	var ins []*ir.Port
	var path []ir.Ref
	for _, n := range []string{"a", "b", "c"} {
		ins = append(ins, &ir.Port{Name: n, Contract: &ir.Contract{Rank: 1, HasShape: true, Shape: capacitySyms(n),
			Layout: ir.Layout{Kind: ir.RequestExpanded, Factor: 1 << 30}}})
		path = append(path, ir.Ref{Name: n})
	}
	m.Components = []*ir.Component{{Name: "big", Inputs: ins,
		Capacity: &ir.Capacity{Budgets: []ir.Budget{{Path: path, MaxTotal: 1 << 40}}}}}
	if got := runCapacity(t, m); !slices.Contains(got, "capacity/budget-too-small") {
		t.Fatalf("a budget below a saturated footprint was accepted: %v", got)
	}
}
