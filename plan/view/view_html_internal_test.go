package view

import (
	"testing"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/plan"
)

// TestRuleGlossary: every rule the HTML view links to is in the code's
// catalogue and has its one-line meaning, and every rule a decision names
// is one the glossary explains.
func TestRuleGlossary(t *testing.T) {
	for r, m := range ruleMeaning {
		if !diag.KnownRule(r) {
			t.Errorf("the HTML glossary explains %s, which is not in the catalogue (diag.Rules)", r)
		}
		if m == "" {
			t.Errorf("the HTML glossary has no meaning for %s", r)
		}
	}
	ports := []plan.Port{
		{Role: plan.RolePacked}, {Split: plan.SplitPacked}, {Role: plan.RoleCompanion, Serves: &plan.Serves{Role: "lengths"}},
		{Role: plan.RoleCompanion, Serves: &plan.Serves{Role: "owner"}}, {Role: plan.RoleRows, Padded: []plan.Pad{{}}},
	}
	used := []diag.Rule{diag.CapacityUnreconciled, diag.CapacityUniformCount, diag.RunUniform, diag.CapacityBudgetRoot, diag.CapacityBudgetTooSmall, diag.RunBudget}
	for _, p := range ports {
		used = append(used, portRules(p, p.Split == "")...)
	}
	for _, r := range used {
		if ruleMeaning[r] == "" {
			t.Errorf("a decision links to %s, which the glossary does not explain", r)
		}
	}
}

// TestAnchorID: names that differ give ids that differ, and ids hold only
// characters that need no escaping.
func TestAnchorID(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"a-b", "a_b", "a.b", "a b", "a-2db", "a\u02db", "ä", "", "packed/levels", "packed-levels"} {
		id := anchorID("c", name)
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %q share the id %q", name, other, id)
		}
		seen[id] = name
		for _, r := range id {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				t.Errorf("the id %q of %q holds %q", id, name, r)
			}
		}
	}
}
