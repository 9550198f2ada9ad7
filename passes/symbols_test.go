package passes

import "testing"

// TestSymbolClasses reads the classes of the generated encoder's symbols,
// several facts to a symbol where the ports state several.
func TestSymbolClasses(t *testing.T) {
	d, err := CheckSource("gen.yaml", generatedWorkflow(1), Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	comp := d.Module.Components[0]
	f := d.Results[SymbolsPass].(Symbols)[comp]
	for sym, want := range map[string]SymbolClass{
		"images":      SymPacked | SymUnits | SymBudgeted,
		"patches":     SymPadded | SymBudgeted,
		"features":    SymUniform,
		"offsets_len": SymOffsets,
		"hidden":      0,
	} {
		if got := f.Classes(sym); got != want {
			t.Errorf("%s: classes %b, want %b", sym, got, want)
		}
	}
	if !f.Classes("hidden").Free() || f.Classes("patches").Free() || !f.Known("hidden") || f.Known("nope") {
		t.Errorf("hidden is free and known, patches is not free, nope is unknown")
	}
	px := comp.Input("px")
	if got := f.UnitCount(px, 0); got != "images" || len(f.Payload()) != 1 || f.Payload()[0] != px {
		t.Errorf("level 0 of px counts %q; payload %v", got, f.Payload())
	}
	if k, ok := f.Count("images", true); !ok || k.Kind != CountPacked || k.Port != "px" {
		t.Errorf("images counts %v, want the packed axis of px", k)
	}
}
