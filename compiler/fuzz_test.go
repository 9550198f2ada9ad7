package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/testenv"
)

// FuzzFrontEnd feeds arbitrary bytes to the front end: every input must give
// diagnostics or success, with catalogued rule ids and positions inside the
// document, and never a panic.
func FuzzFrontEnd(f *testing.F) {
	dir, cases := testenv.Cases(f)
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("{\"schema_version\": 1.1}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Load("fuzz.yaml", b)
		lines := strings.Count(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") + strings.Count(string(b), "\r") + 1
		for _, d := range r.Diags {
			if !diag.KnownRule(d.Rule) || d.Message == "" {
				t.Fatalf("diagnostic with unknown rule or no message: %+v", d)
			}
			if d.Line > lines+1 {
				t.Fatalf("diagnostic points past the end (line %d of %d): %+v", d.Line, lines, d)
			}
		}
		if r.Valid() && r.Doc == nil {
			t.Fatalf("a valid document has no model")
		}
		var sb strings.Builder
		diag.Renderer{Source: func(string) []byte { return b }}.Render(&sb, r.Diags)
	})
}
