package main

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/docs"
)

// maxExplainLines bounds what `genaic explain RULE` prints: a reader gets
// the rule, its fix and one example at a glance.
const maxExplainLines = 16

// TestExplainEveryRule: `genaic explain ID` answers for every id of the
// code's catalogue, short: the rule's meaning and fix on its first three
// lines, then an example that is that rule's own (for a document rule,
// the diagnostic check reports on it, with the line that triggers it).
func TestExplainEveryRule(t *testing.T) {
	rules, err := docs.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(diag.Rules) {
		t.Fatalf("the catalogue has %d rules, the code %d", len(rules), len(diag.Rules))
	}
	for _, r := range rules {
		out, errOut, code := runCLI(t, "explain", r.ID)
		if code != exitOK || errOut != "" {
			t.Errorf("explain %s: exit %d, %s", r.ID, code, errOut)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) < 5 || !strings.HasPrefix(lines[0], r.ID+" (") || lines[1] != "Fires when: "+r.Meaning || lines[2] != "Fix: "+r.Fix || !strings.HasPrefix(lines[4], "Example: ") {
			t.Errorf("explain %s does not open with its meaning and fix, then its example:\n%s", r.ID, out)
		}
		if len(lines) > maxExplainLines {
			t.Errorf("explain %s prints %d lines, more than %d:\n%s", r.ID, len(lines), maxExplainLines, out)
		}
		if r.ExampleLang == "yaml" && !strings.Contains(out, ": error["+r.ID+"]: ") && !strings.Contains(out, ": warning["+r.ID+"]: ") {
			t.Errorf("explain %s shows no diagnostic of its own rule:\n%s", r.ID, out)
		}
	}
	out, _, code := runCLI(t, "explain", "-full", "ssa/unknown-port")
	if code != exitOK || !strings.Contains(out, "    inputs: { imag: image }\n") {
		t.Errorf("-full prints the example document, indented:\n%s", out)
	}
	out, _, code = runCLI(t, "explain")
	if code != exitOK || strings.Count(out, "\n  ") != len(diag.Rules) || !strings.Contains(out, "\n  model/lengths-unseen\n") {
		t.Errorf("explain with no id lists every id:\n%s", out)
	}
	_, errOut, code := runCLI(t, "explain", "ssa/unknwn-port")
	if code != exitUsage || !strings.Contains(errOut, "did you mean `ssa/unknown-port`?") {
		t.Errorf("an unknown id: exit %d, %s", code, errOut)
	}
}
