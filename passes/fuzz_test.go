package passes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/testenv"
)

// FuzzCheck runs the whole check pipeline, with the IR verified after every
// pass and the adapters loaded as check loads them, on arbitrary
// documents: any input gives diagnostics or success with catalogued rule
// ids, never a panic or a broken invariant; and a document
// the checks accept builds a plan that the runtime's validation of plan
// files accepts (what the runtime would refuse, the compiler refuses
// first).
func FuzzCheck(f *testing.F) {
	dir, cases := testenv.Cases(f)
	for _, c := range cases {
		if b, err := os.ReadFile(filepath.Join(dir, c.File)); err == nil {
			f.Add(b)
		}
	}
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "diag", "*.yaml"))
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, doc := range splitDocuments(string(b)) {
			f.Add([]byte(doc))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := CheckSource("fuzz.yaml", b, Options{Check: true, Adapters: builtinAdapters})
		if err != nil {
			t.Fatalf("the pipeline failed: %v", err)
		}
		for _, dg := range d.Diags() {
			if !diag.KnownRule(dg.Rule) {
				t.Fatalf("unknown rule %q", dg.Rule)
			}
		}
		if !d.Valid() {
			return
		}
		if _, err := BuildPlan(d, "."); err != nil && strings.Contains(err.Error(), "a genaic bug") {
			t.Fatalf("an accepted document: %v", err)
		}
	})
}
