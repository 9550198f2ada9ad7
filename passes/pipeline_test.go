package passes

import (
	"slices"
	"strings"
	"testing"
)

// TestPipelineOrder proves that every pass a pass requires runs earlier.
func TestPipelineOrder(t *testing.T) {
	for i, p := range Pipeline {
		if p.Name == "" || p.Doc == "" || p.Run == nil {
			t.Errorf("pass %d is missing a name, doc or Run", i)
		}
		for _, r := range p.Requires {
			j := slices.Index(Pipeline, r)
			if j < 0 || j >= i {
				t.Errorf("pass %s requires %s, which runs at %d, not before %d", p.Name, r.Name, j, i)
			}
		}
		if Lookup(p.Name) != p {
			t.Errorf("pass name %s is not unique", p.Name)
		}
	}
	seenPlan := false
	for _, p := range Pipeline {
		if p.Kind == Plan {
			seenPlan = true
		} else if seenPlan {
			t.Errorf("check pass %s runs after a plan pass", p.Name)
		}
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
