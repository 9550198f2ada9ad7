package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
)

// TestLowerVerifies lowers every conformance document that decodes and
// checks the IR invariants on the result.
func TestLowerVerifies(t *testing.T) {
	dir, cases := testenv.Cases(t)
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		r := Load(c.File, b)
		if r.Doc == nil || !r.Valid() {
			continue
		}
		m := Lower(r.Doc, r.Version)
		if err := ir.Verify(m); err != nil {
			t.Errorf("%s: %v", c.File, err)
		}
	}
}
