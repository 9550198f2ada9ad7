package adapters

import (
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
)

// TestCorpusAdaptersLoad: every accepted corpus document with a
// preprocessing program loads its adapter (the program's ops and output
// bindings are ones the built-in adapters run), including paddings that
// name the value an invoke binds rather than the port.
func TestCorpusAdaptersLoad(t *testing.T) {
	dir, cases := testenv.Cases(t)
	loaded := 0
	for _, c := range cases {
		if !c.Accept {
			continue
		}
		d, err := passes.CheckPath(filepath.Join(dir, c.File), passes.Options{})
		if err != nil || !d.Valid() || len(d.Module.Programs) == 0 {
			continue
		}
		b := New(d.Module)
		for _, comp := range d.Module.Components {
			if comp.Impl != ir.ImplAdapter {
				continue
			}
			if _, err := b.Load(comp, dir); err != nil {
				t.Errorf("%s: adapter %s: %v", c.File, comp.Name, err)
			}
			loaded++
		}
	}
	if loaded == 0 {
		t.Fatal("no corpus document has an adapter")
	}
}
