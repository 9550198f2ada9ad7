package plan_test

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// TestDecodeRefusesUnresolvedContractNames: a plan re-signed after a
// level's offsets or owner name, or a padding's lengths name, was deleted
// from a contract of the IR, or renamed to something the IR does not
// define, is refused at decode, naming the field: read as it is, a packed
// workflow output would be answered whole instead of as items.
func TestDecodeRefusesUnresolvedContractNames(t *testing.T) {
	type edit struct {
		where string
		ref   func(f *plan.File) *ir.Ref
	}
	// The first contract of a kind holding a level (or a padding) in
	// each plan: a workflow output's, and a component port's.
	firstLevel := func(outputs bool, owner bool) func(f *plan.File) *ir.Ref {
		return func(f *plan.File) *ir.Ref {
			var ks []*ir.Contract
			if outputs {
				for _, o := range f.IR.Outputs {
					ks = append(ks, o.Contract)
				}
			} else {
				for _, c := range f.IR.Components {
					for _, p := range c.Outputs {
						ks = append(ks, p.Contract)
					}
				}
			}
			for _, k := range ks {
				if k != nil && len(k.Layout.Levels) > 0 {
					if owner {
						return &k.Layout.Levels[0].Owner
					}
					return &k.Layout.Levels[0].Offsets
				}
			}
			return nil
		}
	}
	firstPadding := func(f *plan.File) *ir.Ref {
		for _, c := range f.IR.Components {
			for _, p := range c.Inputs {
				if p.Contract != nil && len(p.Contract.Padding) > 0 {
					return &p.Contract.Padding[0].Lengths
				}
			}
		}
		return nil
	}
	edits := []edit{
		{"ir.outputs", firstLevel(true, false)},
		{"ir.outputs", firstLevel(true, true)},
		{"ir.components", firstLevel(false, false)},
		{"ir.components", firstLevel(false, true)},
		{"ir.components", firstPadding},
	}
	applied := make([]int, len(edits))
	for _, p := range compiledPlans(t) {
		for i, e := range edits {
			for _, name := range []string{"", "no_such_companion"} {
				f := decodeRaw(t, p.bytes)
				r := e.ref(f)
				if r == nil {
					continue
				}
				applied[i]++
				r.Name = name
				signed, err := f.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				_, err = plan.Decode("plan.json", signed)
				if err == nil || !strings.Contains(err.Error(), e.where) {
					t.Errorf("%s: edit %d of %s to %q: want a refusal naming %s, got %v", p.name, i, e.where, name, e.where, err)
				}
			}
		}
	}
	for i, n := range applied {
		if n == 0 {
			t.Errorf("edit %d applies to no compiled plan", i)
		}
	}
}
