package e2e

import (
	"context"
	"slices"
	"testing"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestItemsEqualCompanions runs every packed fixture's requests given as
// items (each row cut to its valid length, no companion sent) grouped, and
// the same requests in companion form solo: every item's result equals
// the solo result's row of that item, and the outputs the items carry
// come back as items, their companions left out.
func TestItemsEqualCompanions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range packedFixtures() {
			if f.Name == "token_merge" {
				continue // its output's inner level is produced: it stays packed (items.go)
			}
			t.Run(f.Name, func(t *testing.T) {
				p, _ := fixtures.Compile(t, f)
				var reqs, items []vm.Request
				for _, r := range f.Requests(uint64(300+i), 24) {
					if it, ok := fixtures.ToItems(p.IR, r); ok {
						reqs, items = append(reqs, r), append(items, it)
					}
				}
				if len(items) < 4 {
					t.Fatalf("only %d of 24 requests could be given as items", len(items))
				}
				g, s := e.grouped(t, f, nil), e.solo(t, f)
				got := runAll(context.Background(), g, items)
				want := runAll(context.Background(), s, reqs)
				checkItemResponses(t, f, items, got, want)
				if cs := g.Stats().Components[f.Component]; cs.Invocations >= int64(len(items)) {
					t.Errorf("%d requests with items ran in %d invocations: they were not grouped", len(items), cs.Invocations)
				}
			})
		}
	})
}

// checkItemResponses compares responses to requests with items with the
// solo responses of the same requests in companion form.
func checkItemResponses(t *testing.T, f fixtures.Fixture, items []vm.Request, got, want []vm.Response) {
	t.Helper()
	for i, r := range got {
		w := want[i]
		if r.Err != nil || w.Err != nil {
			t.Fatalf("%s: items error %v, solo error %v", items[i].ID, r.Err, w.Err)
		}
		its := r.Items[f.Out]
		if its == nil {
			t.Fatalf("%s: output %s did not come back as items (outputs %v, items %d)", r.ID, f.Out, fixtures.Names(r.Outputs), len(r.Items))
		}
		if _, ok := r.Outputs[f.Out]; ok {
			t.Errorf("%s: output %s is both in Outputs and in Items", r.ID, f.Out)
		}
		for name := range r.Outputs {
			if slices.Contains([]string{"image_offsets", "image_owner", "segment_offsets", "segment_owner", "clip_offsets", "clip_owner", "line_offsets", "line_owner"}, name) {
				t.Errorf("%s: companion %s of an items output is still in Outputs", r.ID, name)
			}
		}
		ref := w.Outputs[f.Out]
		if int64(len(its)) != ref.Shape[0] {
			t.Fatalf("%s: %d items of %s, the solo result has %d rows", r.ID, len(its), f.Out, ref.Shape[0])
		}
		for j, it := range its {
			row := ref.View(int64(j), int64(j)+1)
			row.Shape = row.Shape[1:]
			if d := fixtures.Diff(it.Tensor, row, tolerance); d != "" {
				t.Errorf("%s: item %d of %s differs from the solo result: %s", r.ID, j, f.Out, d)
			}
		}
	}
}
