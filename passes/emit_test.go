package passes

import (
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// runEmitOnly runs the emit pass and the passes it requires on a hand-built
// module, so the emit rules can be fed shapes the front end never lowers.
func runEmitOnly(t *testing.T, m *ir.Module) diag.List {
	t.Helper()
	var ds diag.List
	results := map[*Pass]any{}
	for _, p := range []*Pass{ScopesPass, BindingsPass, EmitPass} {
		res, err := runOne(p, &Context{Module: m, pass: p, results: results, diags: &ds})
		if err != nil {
			t.Fatal(err)
		}
		results[p] = res
	}
	return ds
}

// TestEmitOddModules feeds the emit rules modules a broken document could
// lower to: missing contracts, unresolved values, unknown ranks, padded
// dimensions that are no axis, ranks past the payload's shape, empty names.
func TestEmitOddModules(t *testing.T) {
	axis := func(a int64) *int64 { return &a }
	m := ir.NewModule()
	m.Major, m.Minor = 1, 1
	m.Serving = &ir.Serving{}
	v := m.NewValue("v", ir.DefPhi, nil, 0)
	packed := &ir.Contract{DType: "float32", Rank: -1, Layout: ir.Layout{Kind: ir.TokenPacked,
		Levels: []ir.Level{{Offsets: ir.Ref{Name: "o"}, Owner: ir.Ref{Name: ""}}, {}}},
		Padding: []ir.Padding{{Dim: ir.Ref{Name: "nope"}, Lengths: ir.Ref{Name: "o"}}, {Lengths: ir.Ref{Name: "p"}}}}
	m.Outputs = []*ir.Output{
		{Name: "none"},
		{Name: "p", Contract: packed},
		{Name: "p", Contract: &ir.Contract{Rank: 3}},
		{Name: "o", Contract: &ir.Contract{DType: "nonsense", Rank: -1}},
		{Name: "q", Contract: &ir.Contract{DType: "float32", Rank: 1, Padding: []ir.Padding{{Dim: ir.Ref{Name: "x"}, Lengths: ir.Ref{Name: "r"}}},
			Shape: []ir.Dim{{Sym: "x"}}}},
		{Name: "r", Contract: &ir.Contract{DType: "int32", Rank: 2}},
	}
	m.Body = &ir.Block{Steps: []*ir.Step{
		{Op: ir.OpEmit, Value: ir.Use{ID: ir.NoValue}, Output: ir.Ref{Name: "none"}, Mode: "append", Axis: axis(9)},
		{Op: ir.OpEmit, Value: ir.Use{Name: "v", ID: v}, Output: ir.Ref{Name: "p"}, Mode: "append",
			ValidLength: &ir.Use{ID: ir.NoValue}, When: &ir.Use{ID: 99}},
		{Op: ir.OpEmit, Value: ir.Use{ID: 42}, Output: ir.Ref{Name: "o"}, Mode: "replace", Axis: axis(-3)},
		{Op: ir.OpEmit, Value: ir.Use{ID: ir.NoValue}, Output: ir.Ref{Name: "q"}, Mode: "event"},
		{Op: ir.OpEmit, Output: ir.Ref{Name: "undeclared"}, Mode: "append"},
		{Op: ir.OpSequence, Body: &ir.Block{Steps: []*ir.Step{{Op: ir.OpEmit, Value: ir.Use{ID: ir.NoValue}, Output: ir.Ref{Name: "r"}}}}},
	}}
	runEmitOnly(t, m)

	m2 := ir.NewModule()
	m2.Body = nil
	if ds := runEmitOnly(t, m2); len(ds) != 0 {
		t.Errorf("empty module: %v", ds)
	}
}

// TestEmitAxisVersionScoping pins the split of §6.1: the demand to name an
// axis starts at v1.1, the range check holds at every version.
func TestEmitAxisVersionScoping(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		axis         *int64
		want         []diag.Rule
	}{
		{1, 0, nil, nil},
		{1, 1, nil, []diag.Rule{diag.EmitAxisRequired}},
		{1, 0, ptr64(4), []diag.Rule{diag.EmitAxis}},
		{1, 1, ptr64(3), nil},
	} {
		m := ir.NewModule()
		m.Major, m.Minor = tc.major, tc.minor
		c := &ir.Contract{DType: "float32", Rank: 4, Layout: ir.Layout{Kind: ir.RequestAligned}}
		v := m.NewValue("x", ir.DefInput, c, 0)
		m.Outputs = []*ir.Output{{Name: "y", Contract: c}}
		m.Body.Steps = []*ir.Step{{Op: ir.OpEmit, Value: ir.Use{Name: "x", ID: v}, Output: ir.Ref{Name: "y"}, Mode: "append", Axis: tc.axis}}
		var got []diag.Rule
		for _, d := range runEmitOnly(t, m) {
			got = append(got, d.Rule)
		}
		if len(got) != len(tc.want) || len(got) > 0 && got[0] != tc.want[0] {
			t.Errorf("v%d.%d axis %v: got %v, want %v", tc.major, tc.minor, tc.axis, got, tc.want)
		}
	}
}

func ptr64(a int64) *int64 { return &a }
