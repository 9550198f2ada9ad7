package irtext

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
)

// TestBriefRoundTrips: the brief form (no locations) of every lowered
// package parses back and prints to the same brief text.
func TestBriefRoundTrips(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(testenv.Root(t), "testdata", "packages", "*", "inference_metadata.yaml"))
	if len(docs) == 0 {
		t.Fatal("no packages")
	}
	for _, doc := range docs {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		r := compiler.Load(doc, src)
		if !r.Valid() {
			t.Fatalf("%s: %v", doc, r.Diags)
		}
		m0 := compiler.Lower(r.Doc, r.Version)
		ir.StripLocations(m0)
		brief := m0.String()
		if !strings.HasSuffix(brief, "locs {\n}\n") || regexp.MustCompile(`(?m)^[^"]*#[0-9]`).MatchString(brief) {
			t.Errorf("%s: the brief form keeps locations", doc)
		}
		m, err := Parse(doc, []byte(brief))
		if err != nil {
			t.Fatalf("%s: the brief form does not parse: %v", doc, err)
		}
		if got := m.String(); got != brief {
			t.Errorf("%s: brief → parse → print differs", doc)
		}
		if err := ir.Verify(m); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
