package passes

import (
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/compiler/diag"
)

// TestPipelineOrder proves that every pass a pass requires runs earlier and
// that every constraint of PassOrder holds (init checks the same at start-up).
func TestPipelineOrder(t *testing.T) {
	if err := CheckPipeline(Pipeline, PassOrder); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineOrderViolated shows a broken constraint caught with its reason.
func TestPipelineOrderViolated(t *testing.T) {
	swapped := slices.Clone(Pipeline)
	i, j := slices.Index(swapped, PackedPass), slices.Index(swapped, PaddingPass)
	swapped[i], swapped[j] = swapped[j], swapped[i]
	err := CheckPipeline(swapped, PassOrder)
	if err == nil || !strings.Contains(err.Error(), "packed must run before padding") || !strings.Contains(err.Error(), "packed/double-spelling") {
		t.Fatalf("err = %v", err)
	}
	if err := CheckPipeline(Pipeline[1:], PassOrder); err == nil || !strings.Contains(err.Error(), "reads the result of scopes") {
		t.Fatalf("a pipeline without the scopes every pass requires: err = %v", err)
	}
}

// TestEveryCheckRuleIsDeclared: every catalogue rule of the check families
// is declared by a pass or the front end, so the catalogue and what check
// can report stay one list.
func TestEveryCheckRuleIsDeclared(t *testing.T) {
	declared := map[diag.Rule]bool{}
	for _, r := range compiler.Rules {
		declared[r] = true
	}
	for _, p := range Pipeline {
		for _, r := range p.Rules {
			declared[r] = true
		}
	}
	families := []string{"syntax", "version/", "retired/", "schema/", "ssa/", "contract/", "preprocess/", "packed/", "padding/", "capacity/", "emit/"}
	for _, r := range diag.Rules {
		if !slices.ContainsFunc(families, func(f string) bool { return strings.HasPrefix(string(r), f) }) {
			continue
		}
		if !declared[r] {
			t.Errorf("rule %s is declared by no pass and not by the front end", r)
		}
	}
}

// TestUndeclaredRuleIsAPassBug: a pass that reports a rule it does not
// declare fails as a genaic bug naming the pass and the rule.
func TestUndeclaredRuleIsAPassBug(t *testing.T) {
	saved := Pipeline
	defer func() { Pipeline = saved }()
	liar := &Pass{Name: "liar", Doc: "reports what it does not declare", Rules: []diag.Rule{diag.EmitAxis}, Run: func(c *Context) (any, error) {
		c.Report(diag.EmitRowAxis, 0, "never declared")
		return nil, nil
	}}
	Pipeline = []*Pass{ScopesPass, liar}
	_, err := CheckSource("x.yaml", []byte("schema_version: v1.1\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "pass liar reports rule emit/row-axis, which it does not declare") {
		t.Fatalf("err = %v", err)
	}
}

// TestPanicNamesThePass: a pass that panics is a genaic bug, reported as an
// error naming the pass, never a crash.
func TestPanicNamesThePass(t *testing.T) {
	saved := Pipeline
	defer func() { Pipeline = saved }()
	Pipeline = []*Pass{ScopesPass, {Name: "boom", Doc: "panics", Run: func(*Context) (any, error) { panic("index out of range") }}}
	_, err := CheckSource("x.yaml", []byte("schema_version: v1.1\n"), Options{Check: true})
	if err == nil || !strings.Contains(err.Error(), "pass boom panicked: index out of range") {
		t.Fatalf("err = %v", err)
	}
}

// TestVerifyRunsAfterEveryPass: a pass that breaks an IR invariant is caught
// under Check, with the pass named.
func TestVerifyRunsAfterEveryPass(t *testing.T) {
	saved := Pipeline
	defer func() { Pipeline = saved }()
	breaker := &Pass{Name: "breaker", Doc: "breaks the IR", Run: func(c *Context) (any, error) {
		c.Module.Body = nil
		return nil, nil
	}}
	Pipeline = []*Pass{ScopesPass, breaker}
	_, err := CheckSource("x.yaml", []byte("schema_version: v1.1\n"), Options{Check: true})
	if err == nil || !strings.Contains(err.Error(), "after pass breaker") {
		t.Fatalf("err = %v", err)
	}
	if _, err := CheckSource("x.yaml", []byte("schema_version: v1.1\n"), Options{}); err != nil {
		t.Fatalf("without Check the invariant is not verified, got %v", err)
	}
}
