package main

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
)

// TestExplainEveryRule: `genaic explain ID` answers for every id of the
// code's catalogue with its meaning, an example and a fix.
func TestExplainEveryRule(t *testing.T) {
	for _, r := range diag.Rules {
		out, errOut, code := runCLI(t, "explain", string(r))
		if code != exitOK || errOut != "" {
			t.Errorf("explain %s: exit %d, %s", r, code, errOut)
			continue
		}
		for _, want := range []string{string(r) + " (", "\nFires when: ", "\nExample: ", "\nFix: "} {
			if !strings.Contains(out, want) {
				t.Errorf("explain %s lacks %q:\n%s", r, want, out)
			}
		}
	}
	out, _, code := runCLI(t, "explain", "ssa/unknown-port")
	if code != exitOK || !strings.Contains(out, "    inputs: { imag: image }\n") {
		t.Errorf("the example document is printed, indented:\n%s", out)
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
