package codegen

import (
	"fmt"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/genaic/genaic/ir"
)

// branch becomes a switch on the predicate's key. The VM takes the last
// case of a key (and a phi the last input of it); a key no case names runs
// the default step, or nothing when there is none, and then the phis take
// their defaults.
func (p *pass) branch(s *ir.Step) ([]jen.Code, error) {
	code, err := p.check(s.Predicate)
	if err != nil {
		return nil, err
	}
	key := p.names.claim("key")
	code = append(code, jen.List(jen.Id(key), jen.Err()).Op(":=").Add(genrtCall("Key", p.ref(s.Predicate.Name))),
		jen.If(jen.Err().Op("!=").Nil()).Block(retErr()))
	var keys []string
	bodies := map[string]*ir.Block{}
	for _, c := range s.Cases {
		if _, ok := bodies[c.Key]; !ok {
			keys = append(keys, c.Key)
		}
		bodies[c.Key] = c.Body
	}
	checked := p.checked
	var clauses []jen.Code
	for _, k := range keys {
		p.checked = checked
		arm, err := p.arm(s, bodies[k], jen.Lit(k), func(phi ir.Phi) *ir.Use { return phiInput(phi, k) })
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, jen.Case(jen.Lit(k)).Block(arm...))
	}
	p.checked = checked
	def, err := p.defaultArm(s, key, bodies)
	if err != nil {
		return nil, err
	}
	if len(def) > 0 {
		clauses = append(clauses, jen.Default().Block(def...))
	}
	p.checked = false
	return append(code, jen.Switch(jen.Id(key)).Block(clauses...)), nil
}

// phiInput is the value a phi takes for key: its last input of that key,
// else its default (nil when it has none).
func phiInput(phi ir.Phi, key string) *ir.Use {
	u := phi.Default
	for i := range phi.Inputs {
		if phi.Inputs[i].Key == key {
			u = &phi.Inputs[i].Value
		}
	}
	return u
}

// arm runs a case's body, then sets the branch outputs for its key.
func (p *pass) arm(s *ir.Step, body *ir.Block, key jen.Code, input func(ir.Phi) *ir.Use) ([]jen.Code, error) {
	code, err := p.block(body, false)
	if err != nil {
		return nil, err
	}
	for _, phi := range s.Phis {
		pc, stop, err := p.phi(s, phi, input(phi), key)
		if err != nil {
			return nil, err
		}
		code = append(code, pc...)
		if stop {
			break
		}
	}
	return code, nil
}

// phi sets a branch output from u, or fails when it has none for the key
// the branch took; stop says the code after it is unreachable.
func (p *pass) phi(s *ir.Step, phi ir.Phi, u *ir.Use, key jen.Code) (code []jen.Code, stop bool, err error) {
	name, err := p.valueName(phi.Value)
	if err != nil {
		return nil, false, err
	}
	if u == nil {
		return []jen.Code{failWith(genrtCall("NoPhi", jen.Lit(s.Predicate.Name), key, jen.Lit(name)))}, true, nil
	}
	code, err = p.check(*u)
	if err != nil {
		return nil, false, err
	}
	if p.kept(name) {
		code = append(code, p.def(name).Op("=").Add(p.ref(u.Name)))
	}
	return code, false, nil
}

// defaultArm runs the default body (if any) for a key no case names. A
// phi may still have an input of that key: those keys get a switch of
// their own.
func (p *pass) defaultArm(s *ir.Step, key string, cases map[string]*ir.Block) ([]jen.Code, error) {
	dyn := jen.Id(key)
	code, err := p.block(s.Default, false)
	if err != nil {
		return nil, err
	}
	for _, phi := range s.Phis {
		var extra []string
		seen := map[string]bool{}
		for _, in := range phi.Inputs {
			if _, isCase := cases[in.Key]; !isCase && !seen[in.Key] {
				seen[in.Key] = true
				extra = append(extra, in.Key)
			}
		}
		if len(extra) == 0 {
			pc, stop, err := p.phi(s, phi, phi.Default, dyn)
			if err != nil {
				return nil, err
			}
			code = append(code, pc...)
			if stop {
				break
			}
			continue
		}
		var clauses []jen.Code
		for _, k := range extra {
			pc, _, err := p.phi(s, phi, phiInput(phi, k), jen.Lit(k))
			if err != nil {
				return nil, err
			}
			clauses = append(clauses, jen.Case(jen.Lit(k)).Block(pc...))
		}
		pc, _, err := p.phi(s, phi, phi.Default, dyn)
		if err != nil {
			return nil, err
		}
		code = append(code, jen.Switch(dyn.Clone()).Block(append(clauses, jen.Default().Block(pc...))...))
	}
	return code, nil
}

// loop becomes a for loop of at most max_iterations: carried cells take
// their initial values, the setup runs once, and after each iteration the
// cells take their next values and continue_when decides.
func (p *pass) loop(s *ir.Step) ([]jen.Code, error) {
	var code []jen.Code
	for _, c := range s.Carried {
		if c.Initial == nil {
			continue
		}
		cc, err := p.carry(c.Cell.Name, *c.Initial)
		if err != nil {
			return nil, err
		}
		code = append(code, cc...)
	}
	setup, err := p.block(s.Setup, false)
	if err != nil {
		return nil, err
	}
	code = append(code, setup...)
	i := p.names.claim("i")
	var iter []jen.Code
	if s.Iteration != nil {
		name, err := p.valueName(*s.Iteration)
		if err != nil {
			return nil, err
		}
		if p.kept(name) {
			iter = append(iter, p.def(name).Op("=").Add(genrtCall("Iteration", jen.Id(i))))
		}
	}
	body, err := p.block(s.Body, true)
	if err != nil {
		return nil, err
	}
	iter = append(iter, body...)
	for _, c := range s.Carried {
		cc, err := p.carry(c.Cell.Name, c.Next)
		if err != nil {
			return nil, err
		}
		iter = append(iter, cc...)
	}
	checks, err := p.check(s.ContinueWhen)
	if err != nil {
		return nil, err
	}
	more := p.names.claim("more")
	iter = append(iter, checks...)
	iter = append(iter,
		jen.List(jen.Id(more), jen.Err()).Op(":=").Add(genrtCall("Continue", p.ref(s.ContinueWhen.Name))),
		jen.If(jen.Err().Op("!=").Nil()).Block(retErr()),
		jen.If(jen.Op("!").Id(more)).Block(jen.Break()))
	p.checked = false
	return append(code, jen.For(jen.Id(i).Op(":=").Int64().Call(jen.Lit(0)), jen.Id(i).Op("<").Op(strconv.FormatInt(s.MaxIterations, 10)), jen.Id(i).Op("++")).Block(iter...)), nil
}

// carry sets a carried cell from u.
func (p *pass) carry(cell string, u ir.Use) ([]jen.Code, error) {
	code, err := p.check(u)
	if err != nil {
		return nil, err
	}
	if _, ok := p.g.locals[cell]; !ok {
		return nil, errNoCell(cell)
	}
	if p.kept(cell) {
		code = append(code, p.def(cell).Op("=").Add(p.ref(u.Name)))
	}
	return code, nil
}

func errNoCell(cell string) error {
	return fmt.Errorf("a loop carries `%s`, which is not a workflow state cell", cell)
}
