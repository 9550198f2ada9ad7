package passes

import (
	"slices"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// runAlone runs one check pass on m with the scopes it requires and returns
// the rules it reported.
func runAlone(t *testing.T, p *Pass, m *ir.Module) []diag.Rule {
	t.Helper()
	var ds diag.List
	c := &Context{Module: m, pass: p, results: map[*Pass]any{ScopesPass: buildScopes(m), BindingsPass: buildBindings(m)}, diags: &ds}
	if _, err := runOne(p, c); err != nil {
		t.Fatal(err)
	}
	return ds.Rules()
}

func packedSyms(names ...string) []ir.Dim {
	out := make([]ir.Dim, len(names))
	for i, n := range names {
		out[i] = ir.Dim{Sym: n}
	}
	return out
}

func packedLevels(pairs ...string) []ir.Level {
	var out []ir.Level
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, ir.Level{Offsets: ir.Ref{Name: pairs[i]}, Owner: ir.Ref{Name: pairs[i+1]}})
	}
	return out
}

// TestPackedOddInput feeds contracts no valid document has (no shape,
// unknown ranks, empty names, axes outside any shape, a nil companion
// contract): both passes must report or keep quiet, never panic.
func TestPackedOddInput(t *testing.T) {
	m := ir.NewModule()
	noShape := &ir.Contract{Rank: -1, Layout: ir.Layout{Kind: ir.TokenPacked, Axis: -1, Levels: []ir.Level{{}, {Extent: ir.ExtentProduced}}},
		Padding: []ir.Padding{{}, {Dim: ir.Ref{Name: "x"}}, {Dim: ir.Ref{Name: "x"}, Lengths: ir.Ref{Name: "x"}}}}
	empty := &ir.Contract{Rank: 0, HasShape: true, Layout: ir.Layout{Kind: ir.TokenPacked, Levels: packedLevels("o", "w")},
		Padding: []ir.Padding{{Dim: ir.Ref{Name: "n"}, Lengths: ir.Ref{Name: "o"}}}}
	farAxis := &ir.Contract{Rank: 2, HasShape: true, Shape: packedSyms("n", "d"),
		Layout: ir.Layout{Kind: ir.TokenPacked, Axis: 9, Levels: packedLevels("o", "w", "o", "w", "w", "o")}}
	rankless := &ir.Contract{Rank: -1, Layout: ir.Layout{Kind: ir.RequestAligned}}
	mismatched := &ir.Contract{Rank: 3, HasShape: true, Shape: packedSyms("n"), Layout: ir.Layout{Kind: ir.Shared},
		Padding: []ir.Padding{{Dim: ir.Ref{Name: "n"}, Lengths: ir.Ref{Name: "r"}}}}
	m.Inputs = []*ir.Input{{Name: "nil"}, {Name: "a", Contract: noShape}, {Name: "o", Contract: rankless}, {Name: "w", Contract: mismatched},
		{Name: "r", Contract: rankless}}
	m.Components = []*ir.Component{{
		Name:    "odd",
		Inputs:  []*ir.Port{{Name: "nil"}, {Name: "e", Contract: empty}, {Name: "f", Contract: farAxis}},
		Outputs: []*ir.Port{{Name: "g", Contract: noShape}, {Name: "h", Contract: farAxis}},
	}}
	m.Programs = []*ir.Program{{Modality: "image", Outputs: []ir.ProgramOutput{{Name: "p", Content: "pixels", Contract: farAxis}, {Name: "o", Content: "pixels"}}}}
	m.NewValue("phi", ir.DefPhi, nil, 0)
	m.Outputs = []*ir.Output{{Name: "out", Contract: &ir.Contract{Rank: 1, HasShape: true, Shape: packedSyms("n"),
		Layout: ir.Layout{Kind: ir.TokenPacked, Levels: packedLevels("phi", "phi")}}}}
	runAlone(t, PackedPass, m)
	runAlone(t, PaddingPass, m)
}

// TestPackedPairPrecedence pins which rule explains a defect that several
// could: a pair whose owner extent differs between a port and the
// workflow is packed/pair alone; a level whose offsets and owner share an
// extent is packed/companion alone, though that also makes its pair differ
// from the workflow's.
func TestPackedPairPrecedence(t *testing.T) {
	build := func(portOwner string) *ir.Module {
		m := ir.NewModule()
		packed := func() *ir.Contract {
			return &ir.Contract{Rank: 2, HasShape: true, Shape: packedSyms("n", "d"), Layout: ir.Layout{Kind: ir.TokenPacked, Levels: packedLevels("s", "w")}}
		}
		vec := func(sym string) *ir.Contract {
			return &ir.Contract{DType: "int64", Rank: 1, HasShape: true, Shape: packedSyms(sym)}
		}
		m.Inputs = []*ir.Input{{Name: "x", Contract: packed()}, {Name: "s", Contract: vec("s_n")}, {Name: "w", Contract: vec("n")}}
		m.Components = []*ir.Component{{Name: "c",
			Inputs: []*ir.Port{{Name: "x", Contract: packed()}, {Name: "s", Contract: vec("s_n")}, {Name: "w", Contract: vec(portOwner)}}}}
		return m
	}
	for _, tc := range []struct {
		portOwner string
		want      diag.Rule
	}{{"other", "packed/pair"}, {"s_n", "packed/companion"}} {
		got := runAlone(t, PackedPass, build(tc.portOwner))
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("port owner extent %s: got %v, want exactly [%s]", tc.portOwner, got, tc.want)
		}
	}
}

// TestPackedUnreadInput pins the one exemption from packed/unresolved and
// padding/unresolved: a workflow input no step reads.
func TestPackedUnreadInput(t *testing.T) {
	build := func(read bool) *ir.Module {
		m := ir.NewModule()
		m.Inputs = []*ir.Input{{Name: "x", Contract: &ir.Contract{Rank: 2, HasShape: true, Shape: packedSyms("n", "d"),
			Layout:  ir.Layout{Kind: ir.TokenPacked, Levels: packedLevels("s", "w")},
			Padding: []ir.Padding{{Dim: ir.Ref{Name: "d"}, Lengths: ir.Ref{Name: "l"}}}}}}
		m.Body = &ir.Block{}
		if read {
			m.Body.Steps = []*ir.Step{{Op: ir.OpEmit, Value: ir.Use{Name: "x"}}}
		}
		return m
	}
	if got := append(runAlone(t, PackedPass, build(false)), runAlone(t, PaddingPass, build(false))...); len(got) != 0 {
		t.Errorf("unread input: got %v, want nothing", got)
	}
	got := append(runAlone(t, PackedPass, build(true)), runAlone(t, PaddingPass, build(true))...)
	for _, want := range []diag.Rule{diag.PackedUnresolved, diag.PaddingUnresolved} {
		if !slices.Contains(got, want) {
			t.Errorf("read input: got %v, want %s", got, want)
		}
	}
}
