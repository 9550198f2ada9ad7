package passes

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/testenv"
)

// trailingAdvice finds a fix written into a message rather than on its help
// line: a clause after "; " or ": " that starts with an imperative, such as
// "…; declare it under ports.outputs" or "…: drop this entry".
var trailingAdvice = regexp.MustCompile(`(?:;|:) (?:(?:so|then|or|and|otherwise),? )?(?:add|bind|change|convert|correct|declare|define|drop|give|indent|keep|line|list|make|move|name|pad|pin|put|quote|raise|remove|rename|replace|resample|sample|send|set|start|use|write)\b`)

// TestMessagesCarryNoAdvice keeps the fix of every compile-time diagnostic
// of the fixtures and of the conformance corpus on its help line: the
// message says what is wrong and where, the help what to do.
func TestMessagesCarryNoAdvice(t *testing.T) {
	type source struct {
		file, doc string
		opts      Options
	}
	var srcs []source
	for _, set := range []struct {
		glob string
		opts Options
	}{
		{filepath.Join("testdata", "diag", "*.yaml"), Options{}},
		{filepath.Join("testdata", "models", "*.yaml"), Options{Models: modelFixtures, ModelsRequired: true}},
	} {
		files, _ := filepath.Glob(set.glob)
		if len(files) == 0 {
			t.Fatalf("no fixtures match %s", set.glob)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range splitDocuments(string(b)) {
				srcs = append(srcs, source{f, doc, set.opts})
			}
		}
	}
	dir, cases := testenv.Cases(t)
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, source{c.File, string(b), Options{}})
	}
	seen := 0
	for _, s := range srcs {
		d, err := CheckSource(s.file, []byte(s.doc), s.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, dg := range d.Diags() {
			seen++
			if strings.Contains(dg.Message, "\n") {
				t.Errorf("%s:%d:%d: %s: the message spans lines (a fix passed as an argument, not in the format?): %q", s.file, dg.Line, dg.Column, dg.Rule, dg.Message)
			}
			if m := adviceIn(dg); m != "" {
				t.Errorf("%s:%d:%d: %s: the message carries its fix (%q) instead of a help line: %s", s.file, dg.Line, dg.Column, dg.Rule, m, dg.Message)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("only %d diagnostics seen: the fixtures or the corpus went missing", seen)
	}
}

// adviceIn returns the advice clause of dg's message, or "".
func adviceIn(dg diag.Diagnostic) string {
	// Backquoted text is quoted source (`extent: preserved`), not prose.
	prose := regexp.MustCompile("`[^`]*`").ReplaceAllString(dg.Message, "``")
	return trailingAdvice.FindString(prose)
}

func TestTrailingAdviceIsFound(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{"port `x` is not an input; declare it under ports.outputs", true},
		{"it has rank 3: drop `rank` or make it 2", true},
		{"a packed axis must be axis 0; so put it first", true},
		{"the document is empty", false},
		{"`a; declare: b` is quoted", false},
		{"which is not a declared value; a value is named once", false},
	} {
		if got := adviceIn(diag.Diagnostic{Message: c.msg}) != ""; got != c.want {
			t.Errorf("%q: advice found = %v, want %v", c.msg, got, c.want)
		}
	}
}
