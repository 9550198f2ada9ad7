package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/passes"
)

// TestCatalogueMatchesCodeAndSpec keeps docs/rules.md equal to the code's
// catalogue (diag.Rules, in order) and to the public RULES.md beside the
// checkout: the same ids in the same order, each under the same family
// heading, with the same "fires when" wording and rule number.
func TestCatalogueMatchesCodeAndSpec(t *testing.T) {
	rs, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	var code []string
	for _, r := range diag.Rules {
		code = append(code, string(r))
	}
	if !slices.Equal(ids, code) {
		t.Errorf("docs/rules.md lists\n%v\nbut diag.Rules is\n%v", ids, code)
	}
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "..", "shared", "spec", "RULES.md"))
	if err != nil {
		t.Fatalf("the public catalogue is missing beside the checkout: %v", err)
	}
	spec := specRules(string(b))
	if len(spec) != len(rs) {
		t.Errorf("RULES.md has %d rules, docs/rules.md %d", len(spec), len(rs))
	}
	for i, r := range rs {
		if i >= len(spec) {
			break
		}
		if s := spec[i]; s != (Rule{ID: r.ID, Family: r.Family, Section: r.Section, Meaning: r.Meaning}) {
			t.Errorf("entry %d differs from RULES.md:\n docs: %q %q %q %q\n spec: %q %q %q %q", i, r.ID, r.Family, r.Section, r.Meaning, s.ID, s.Family, s.Section, s.Meaning)
		}
	}
}

// specRules reads the rule tables of RULES.md.
func specRules(md string) []Rule {
	var out []Rule
	family := ""
	row := regexp.MustCompile("^\\| `([a-z0-9./-]+)` \\|(.*)\\|$")
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			family = strings.TrimPrefix(line, "## ")
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cols := strings.Split(m[2], " | ")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		r := Rule{ID: m[1], Family: family, Meaning: cols[len(cols)-1]}
		if len(cols) == 2 {
			r.Section = cols[0]
		}
		out = append(out, r)
	}
	return out
}

// TestExamplesTriggerTheirRules checks every example document and expects
// its rule among the diagnostics. An example that names models describes
// their graphs in `# graph FILE: in NAME DTYPE [dims]; out ...` comments,
// which the check reads them from. Runtime rules have no document.
func TestExamplesTriggerTheirRules(t *testing.T) {
	rs, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		t.Run(r.ID, func(t *testing.T) {
			if strings.HasPrefix(r.ID, "run/") {
				if r.ExampleLang != "text" {
					t.Errorf("a runtime rule's example is a request described in text, not %q", r.ExampleLang)
				}
				return
			}
			if r.ExampleLang != "yaml" {
				t.Fatalf("the example is %q, want a yaml document", r.ExampleLang)
			}
			models, err := r.Graphs()
			if err != nil {
				t.Fatal(err)
			}
			d, err := passes.CheckSource("example.yaml", []byte(r.Example), passes.Options{Check: true, Models: models})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(d.Diags().Rules(), diag.Rule(r.ID)) {
				t.Errorf("the example does not trigger %s; it reports %v", r.ID, d.Diags())
			}
		})
	}
}
