package ir

import "testing"

// TestOpTable: every op has a distinct name that parses back to it, and a
// one-line doc.
func TestOpTable(t *testing.T) {
	seen := map[string]bool{}
	for i, info := range Ops() {
		if info.Name == "" || info.Doc == "" || seen[info.Name] {
			t.Errorf("op %d: %+v", i, info)
		}
		seen[info.Name] = true
		if op, ok := ParseOp(info.Name); !ok || op != Op(i) {
			t.Errorf("ParseOp(%q) = %v, %v", info.Name, op, ok)
		}
	}
	if _, ok := ParseOp("jump"); ok {
		t.Error("an unknown op parsed")
	}
}

// TestVerifyCatchesBrokenModules: each planted defect is found.
func TestVerifyCatchesBrokenModules(t *testing.T) {
	build := func() *Module {
		m := NewModule()
		c := &Contract{DType: "float32", Rank: 1}
		in := m.NewValue("x", DefInput, c, 0)
		m.Inputs = append(m.Inputs, &Input{Name: "x", Value: in, Contract: c})
		out := m.NewValue("y", DefInvoke, c, 0)
		m.Body.Steps = append(m.Body.Steps, &Step{Op: OpInvoke, Component: Ref{Name: "f"},
			Args:    []Arg{{Port: "a", Value: Use{Name: "x", ID: in}}},
			Results: []Result{{Port: "b", Value: out}}},
			&Step{Op: OpEmit, Value: Use{Name: "y", ID: out}, Output: Ref{Name: "o"}, Mode: "replace"})
		return m
	}
	if err := Verify(build()); err != nil {
		t.Fatalf("the sound module: %v", err)
	}
	plants := map[string]func(m *Module){
		"use before definition": func(m *Module) { m.Body.Steps[0], m.Body.Steps[1] = m.Body.Steps[1], m.Body.Steps[0] },
		"defined twice":         func(m *Module) { m.Body.Steps[0].Results = append(m.Body.Steps[0].Results, m.Body.Steps[0].Results[0]) },
		"name disagrees":        func(m *Module) { m.Body.Steps[1].Value.Name = "z" },
		"field of another op":   func(m *Module) { m.Body.Steps[1].Component = Ref{Name: "f"} },
		"location out of range": func(m *Module) { m.Body.Steps[0].Loc = 99 },
		"dangling id":           func(m *Module) { m.Body.Steps[1].Value.ID = 42 },
		"no body":               func(m *Module) { m.Body = nil },
	}
	for name, plant := range plants {
		m := build()
		plant(m)
		if Verify(m) == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
