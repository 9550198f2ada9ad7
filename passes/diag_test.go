package passes

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/adapters"
)

// The diagnostic fixtures in testdata/diag/*.yaml state what they expect on
// the offending line, in the manner of x/tools analysistest:
//
//	shape: [a, b]   # want padding/dimension "not a shape symbol"
//
// The pattern is matched against the message followed by its help lines,
// each introduced by " help: " ("… not declared help: declare it …"). A
// line may carry several expectations. A file may hold several documents
// separated by lines of exactly "---"; each is checked on its own, with its
// line numbers as in the file. The harness fails on a missing diagnostic and
// on an unexpected one.

var wantRE = regexp.MustCompile(`([a-z0-9-]+(?:/[a-z0-9.-]+)?) "((?:[^"\\]|\\.)*)"`)

type expectation struct {
	line int
	rule diag.Rule
	re   *regexp.Regexp
	hit  bool
}

func TestDiagnosticFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "diag", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/diag (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(string(src)) {
			t.Run(fmt.Sprintf("%s#%d", filepath.Base(f), i), func(t *testing.T) {
				checkFixture(t, f, doc, Options{Check: true, Adapters: builtinAdapters})
			})
		}
	}
}

// splitDocuments returns one source per document, each the size of the
// whole file with the other documents' lines blanked, so that positions are
// file positions.
func splitDocuments(src string) []string {
	lines := strings.Split(src, "\n")
	var docs []string
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && lines[i] != "---" {
			continue
		}
		out := make([]string, len(lines))
		copy(out[start:i], lines[start:i])
		if strings.TrimSpace(strings.Join(out, "")) != "" {
			docs = append(docs, strings.Join(out, "\n"))
		}
		start = i + 1
	}
	return docs
}

func expectations(t *testing.T, doc string) []*expectation {
	var out []*expectation
	for i, line := range strings.Split(doc, "\n") {
		_, want, ok := strings.Cut(line, "# want ")
		if !ok {
			continue
		}
		ms := wantRE.FindAllStringSubmatch(want, -1)
		if len(ms) == 0 {
			t.Fatalf("line %d: malformed want comment %q", i+1, want)
		}
		for _, m := range ms {
			re, err := regexp.Compile(strings.ReplaceAll(m[2], `\"`, `"`))
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			out = append(out, &expectation{line: i + 1, rule: diag.Rule(m[1]), re: re})
		}
	}
	return out
}

func checkFixture(t *testing.T, file, doc string, opts Options) {
	wants := expectations(t, doc)
	d, err := CheckSource(file, []byte(doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, dg := range d.Diags() {
		matched := false
		for _, w := range wants {
			if w.line == dg.Line && w.rule == dg.Rule && w.re.MatchString(withHelp(dg)) {
				w.hit, matched = true, true
			}
		}
		if !matched {
			t.Errorf("%s:%d:%d: unexpected %s: %s", file, dg.Line, dg.Column, dg.Rule, dg.Message)
		}
	}
	for _, w := range wants {
		if !w.hit {
			t.Errorf("%s:%d: missing %s matching %q", file, w.line, w.rule, w.re)
		}
	}
}

// withHelp is the text a fixture's pattern is matched against.
func withHelp(dg diag.Diagnostic) string {
	if dg.Help == "" {
		return dg.Message
	}
	return dg.Message + " help: " + strings.ReplaceAll(dg.Help, "\n", " help: ")
}

// TestEveryRuleHasAFixture keeps at least one fixture per rule id of the
// workflow, packed, padding, capacity, emission, preprocess and model
// tables.
func TestEveryRuleHasAFixture(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "diag", "*.yaml"))
	models, _ := filepath.Glob(filepath.Join("testdata", "models", "*.yaml"))
	files = append(files, models...)
	covered := map[diag.Rule]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range expectations(t, string(src)) {
			covered[w.rule] = true
		}
	}
	families := []string{"ssa/", "contract/", "preprocess/", "packed/", "padding/", "capacity/", "emit/", "model/"}
	for _, rule := range diag.Rules {
		if slices.ContainsFunc(families, func(f string) bool { return strings.HasPrefix(string(rule), f) }) && !covered[rule] {
			t.Errorf("no fixture in testdata/diag expects %s", rule)
		}
	}
}

// builtinAdapters loads adapter components with the built-in adapters, as
// the command line's check does.
func builtinAdapters(m *ir.Module) backend.Backend { return adapters.New(m) }
