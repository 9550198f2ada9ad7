package ir

import (
	"slices"
	"testing"
)

// TestSitesInDocumentOrder: every declaration with a contract is one site,
// in document order, and one without a contract is none.
func TestSitesInDocumentOrder(t *testing.T) {
	k := &Contract{DType: "float32", Rank: -1}
	m := NewModule()
	m.Inputs = []*Input{{Name: "x", Contract: k}}
	m.Outputs = []*Output{{Name: "y", Contract: k}, {Name: "untyped"}}
	m.Cells = []*Cell{{Name: "s", Contract: k}}
	m.Components = []*Component{{Name: "c", Inputs: []*Port{{Name: "i", Contract: k}}, Outputs: []*Port{{Name: "o", Contract: k}}}}
	m.Programs = []*Program{{Modality: "image", Outputs: []ProgramOutput{{Name: "px", Contract: k}}}}
	var got []string
	for _, s := range m.Sites() {
		got = append(got, s.String())
	}
	want := []string{"workflow input `x`", "workflow output `y`", "state cell `s`", "input port `i` of component `c`",
		"output port `o` of component `c`", "preprocessing.image output `px`"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if po := m.Sites()[5].ProgramOutput(); po == nil || po.Name != "px" {
		t.Errorf("program output of the last site = %v", po)
	}
}
