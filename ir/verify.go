package ir

import (
	"fmt"
	"slices"
)

// Verify checks the invariants every pass must preserve: dense value ids,
// each value defined exactly once, every resolved use visible where it is
// read (structured-SSA scoping), locations in range, and every step using
// only the fields its op-table entry allows. Unresolved uses (NoValue) are
// allowed: they are a diagnostic's business, not a broken module.
func Verify(m *Module) error {
	v := &verifier{m: m, defined: make([]int, len(m.Values))}
	if v.entries(); v.err != nil {
		return v.err
	}
	v.values()
	v.topLevel()
	v.block(m.Body, v.initialScope())
	for id, n := range v.defined {
		if n != 1 && v.err == nil {
			v.fail("value %%%d (%s) is defined %d times", id, m.Values[id].Name, n)
		}
	}
	return v.err
}

type verifier struct {
	m       *Module
	defined []int // definitions seen per value id
	err     error
}

func (v *verifier) fail(format string, args ...any) {
	if v.err == nil {
		v.err = fmt.Errorf("ir.Verify: "+format, args...)
	}
}

func (v *verifier) loc(l Loc, what string) {
	if l < 0 || int(l) >= len(v.m.Locs) {
		v.fail("%s has location #%d outside the table of %d", what, l, len(v.m.Locs))
	}
}

func (v *verifier) values() {
	if len(v.m.Locs) == 0 {
		v.fail("the location table lacks the unknown location")
	}
	for i, val := range v.m.Values {
		if val == nil || val.ID != ValueID(i) {
			v.fail("value slot %d holds a value with another id", i)
			return
		}
		v.loc(val.Loc, "value "+val.Name)
	}
}

// def records a definition of id of the expected kind.
func (v *verifier) def(id ValueID, kind DefKind, scope map[string]ValueID) {
	val := v.m.Value(id)
	if val == nil {
		v.fail("a definition names value %%%d, which does not exist", id)
		return
	}
	if val.Def != kind {
		v.fail("value %%%d (%s) is a %s value defined by a %s", id, val.Name, val.Def, kind)
	}
	v.defined[id]++
	if scope != nil {
		scope[val.Name] = id
	}
}

// entries refuses a nil entry in any list of the module, which a module
// decoded from a hand-made plan may hold: every other check reads them.
func (v *verifier) entries() {
	nils := func(what string, n int, isNil func(int) bool) {
		for i := range n {
			if isNil(i) {
				v.fail("%s %d is missing (null)", what, i)
			}
		}
	}
	m := v.m
	nils("value", len(m.Values), func(i int) bool { return m.Values[i] == nil })
	nils("input", len(m.Inputs), func(i int) bool { return m.Inputs[i] == nil })
	nils("output", len(m.Outputs), func(i int) bool { return m.Outputs[i] == nil })
	nils("cell", len(m.Cells), func(i int) bool { return m.Cells[i] == nil })
	nils("program", len(m.Programs), func(i int) bool { return m.Programs[i] == nil })
	nils("component", len(m.Components), func(i int) bool { return m.Components[i] == nil })
	for _, c := range m.Components {
		if c != nil {
			nils("input port of component "+c.Name+",", len(c.Inputs), func(i int) bool { return c.Inputs[i] == nil })
			nils("output port of component "+c.Name+",", len(c.Outputs), func(i int) bool { return c.Outputs[i] == nil })
		}
	}
	var steps func(b *Block)
	steps = func(b *Block) {
		if b == nil {
			return
		}
		for i, s := range b.Steps {
			if s == nil {
				v.fail("step %d is missing (null)", i)
				continue
			}
			for _, nb := range s.Blocks() {
				steps(nb)
			}
		}
	}
	steps(m.Body)
}

func (v *verifier) topLevel() {
	for _, in := range v.m.Inputs {
		v.loc(in.Loc, "input "+in.Name)
	}
	for _, c := range v.m.Components {
		v.loc(c.Loc, "component "+c.Name)
	}
	if v.m.Body == nil {
		v.fail("the module has no body")
	}
}

// initialScope defines the inputs and cells, which are visible everywhere.
func (v *verifier) initialScope() map[string]ValueID {
	scope := map[string]ValueID{}
	for _, in := range v.m.Inputs {
		v.def(in.Value, DefInput, scope)
	}
	for _, c := range v.m.Cells {
		v.def(c.Value, DefCell, scope)
	}
	for _, c := range v.m.Cells {
		v.use(&c.Initializer, scope, "the initializer of cell "+c.Name)
	}
	return scope
}

func (v *verifier) use(u *Use, scope map[string]ValueID, where string) {
	v.loc(u.Loc, where)
	if u.ID == NoValue {
		return
	}
	val := v.m.Value(u.ID)
	if val == nil {
		v.fail("%s uses value %%%d, which does not exist", where, u.ID)
		return
	}
	if val.Name != u.Name {
		v.fail("%s names %q but uses value %%%d (%s)", where, u.Name, u.ID, val.Name)
	}
	if scope[u.Name] != u.ID {
		v.fail("%s uses %%%d (%s), which is not visible there", where, u.ID, u.Name)
	}
}

// block verifies b in scope, which it extends in place with what b defines.
func (v *verifier) block(b *Block, scope map[string]ValueID) {
	if b == nil {
		return
	}
	for i, s := range b.Steps {
		v.step(s, scope, fmt.Sprintf("step %d (%s)", i, s.Op))
	}
}

func (v *verifier) step(s *Step, scope map[string]ValueID, where string) {
	v.loc(s.Loc, where)
	v.shape(s, where)
	switch s.Op {
	case OpSequence:
		v.block(s.Body, scope)
	case OpBranch:
		v.branch(s, scope, where)
		return
	case OpLoop:
		inner := maps(scope)
		v.block(s.Setup, inner)
		if s.Iteration != nil {
			v.def(*s.Iteration, DefIteration, inner)
		}
		v.block(s.Body, inner)
		v.use(&s.ContinueWhen, inner, where+" continue_when")
		for i := range s.Carried {
			c := &s.Carried[i]
			if c.Initial != nil {
				v.use(c.Initial, scope, where+" carried initial")
			}
			v.use(&c.Next, inner, where+" carried next")
		}
		return
	}
	for _, u := range s.Uses() {
		if s.Op == OpBranch && u == &s.Predicate {
			continue
		}
		v.use(u, scope, where)
	}
	for _, r := range s.Results {
		v.def(r.Value, DefInvoke, scope)
	}
	for _, p := range s.Phis {
		v.def(p.Value, DefPhi, scope)
	}
}

// branch verifies each case in a scope of its own; a phi reads each input
// in the scope of its case, and only the phis escape.
func (v *verifier) branch(s *Step, scope map[string]ValueID, where string) {
	v.use(&s.Predicate, scope, where+" predicate")
	cases := map[string]map[string]ValueID{}
	for _, c := range s.Cases {
		cases[c.Key] = maps(scope)
		v.block(c.Body, cases[c.Key])
	}
	def := maps(scope)
	v.block(s.Default, def)
	for i := range s.Phis {
		p := &s.Phis[i]
		for j := range p.Inputs {
			in := &p.Inputs[j]
			sc, ok := cases[in.Key]
			if !ok {
				sc = scope
			}
			v.use(&in.Value, sc, where+" phi input")
		}
		if p.Default != nil {
			v.use(p.Default, def, where+" phi default")
		}
	}
	for _, p := range s.Phis {
		v.def(p.Value, DefPhi, scope)
	}
}

// shape checks that s uses only the fields its op allows.
func (v *verifier) shape(s *Step, where string) {
	info := s.Op.Info()
	if info.Name == "?" {
		v.fail("%s has unknown op %d", where, s.Op)
		return
	}
	check := func(allowed, present bool, field string) {
		if present && !allowed {
			v.fail("%s sets %s, which a %s step does not have", where, field, info.Name)
		}
	}
	check(info.Component, s.Component.Name != "", "component")
	check(info.Args, len(s.Args) > 0, "args")
	check(info.Results, len(s.Results) > 0, "results")
	check(info.Emit, s.Output.Name != "" || s.Mode != "" || s.When != nil || s.ValidLength != nil || s.Axis != nil, "emit fields")
	check(info.Body, s.Body != nil, "body")
	check(info.Branch, s.Predicate.Name != "" || len(s.Cases) > 0 || s.Default != nil || len(s.Phis) > 0, "branch fields")
	check(info.Loop, s.Setup != nil || s.ContinueWhen.Name != "" || len(s.Carried) > 0 || s.MaxIterations != 0, "loop fields")
	if !info.Loop && s.Iteration != nil {
		v.fail("%s sets an iteration value, which a %s step does not have", where, info.Name)
	}
	if info.Body && s.Body == nil {
		v.fail("%s has no body", where)
	}
	if info.Branch && slices.ContainsFunc(s.Cases, func(c Case) bool { return c.Body == nil }) {
		v.fail("%s has a case without a body", where)
	}
}

func maps(scope map[string]ValueID) map[string]ValueID {
	out := make(map[string]ValueID, len(scope))
	for k, v := range scope {
		out[k] = v
	}
	return out
}
