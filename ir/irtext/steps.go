package irtext

import (
	"strconv"

	"github.com/genaic/genaic/ir"
)

// siteKey names a contract site as a value's "@kind a [b]" does.
type siteKey struct{ kind, a, b string }

// siteContracts maps each site key to the contract of the first site with
// that key, in the order ir.Print writes the sites.
func siteContracts(m *ir.Module) map[siteKey]*ir.Contract {
	sites := map[siteKey]*ir.Contract{}
	add := func(k siteKey, c *ir.Contract) {
		if _, ok := sites[k]; !ok {
			sites[k] = c
		}
	}
	for _, x := range m.Inputs {
		add(siteKey{"input", x.Name, ""}, x.Contract)
	}
	for _, x := range m.Cells {
		add(siteKey{"cell", x.Name, ""}, x.Contract)
	}
	for _, x := range m.Outputs {
		add(siteKey{"output", x.Name, ""}, x.Contract)
	}
	portSites(m, add)
	return sites
}

func portSites(m *ir.Module, add func(siteKey, *ir.Contract)) {
	for _, comp := range m.Components {
		for _, p := range comp.Inputs {
			add(siteKey{"in", comp.Name, p.Name}, p.Contract)
		}
		for _, p := range comp.Outputs {
			add(siteKey{"out", comp.Name, p.Name}, p.Contract)
		}
	}
	for _, pr := range m.Programs {
		for _, o := range pr.Outputs {
			add(siteKey{"program", pr.Modality, o.Name}, o.Contract)
		}
	}
}

func (c *converter) values(vs []*value) {
	sites := siteContracts(c.m)
	for _, v := range vs {
		val := &ir.Value{ID: ir.ValueID(v.ID), Name: string(v.Name), Def: defOf(v.Def), Loc: ir.Loc(v.Loc)}
		if v.Site != nil {
			val.Contract = c.site(sites, v.Site)
		} else {
			val.Contract = contractOf(v.Contract)
		}
		c.m.Values = append(c.m.Values, val)
	}
}

// defOf reads a def word; the grammar admits only the words of ir's table.
func defOf(s string) ir.DefKind {
	for k := ir.DefKind(0); k.String() != "?"; k++ {
		if k.String() == s {
			return k
		}
	}
	return 0
}

// site resolves a value's reference to the contract of a site.
func (c *converter) site(sites map[siteKey]*ir.Contract, r *siteRef) *ir.Contract {
	var k siteKey
	if r.Single != nil {
		k = siteKey{kind: r.Single.Kind, a: string(r.Single.A)}
	} else {
		k = siteKey{kind: r.Pair.Kind, a: string(r.Pair.A), b: string(r.Pair.B)}
	}
	ct, ok := sites[k]
	if !ok {
		c.fail(r.Pos, "%s names no %s of this module: declare it before the values, or write the contract itself", k, k.kind)
	} else if ct == nil {
		c.fail(r.Pos, "%s names a site without a contract: write the contract itself, or none", k)
	}
	return ct
}

// String writes k as the text form does, for messages.
func (k siteKey) String() string {
	s := "@" + k.kind + " " + strconv.Quote(k.a)
	if k.kind == "in" || k.kind == "out" || k.kind == "program" {
		s += " " + strconv.Quote(k.b)
	}
	return s
}

func blockOf(steps []*step) *ir.Block {
	return &ir.Block{Steps: mapAll(steps, stepOf)}
}

func optBlockOf(b *block) *ir.Block {
	if b == nil {
		return nil
	}
	return blockOf(b.Steps)
}

func stepOf(f *step) *ir.Step {
	switch {
	case f.Invoke != nil:
		return invokeOf(f.Invoke)
	case f.Emit != nil:
		return emitOf(f.Emit)
	case f.Sequence != nil:
		return &ir.Step{Op: ir.OpSequence, Loc: ir.Loc(f.Sequence.Loc), Body: blockOf(f.Sequence.Body.Steps)}
	case f.Branch != nil:
		return branchOf(f.Branch)
	default:
		return loopOf(f.Loop)
	}
}

func invokeOf(f *invoke) *ir.Step {
	return &ir.Step{Op: ir.OpInvoke, Loc: ir.Loc(f.Loc), Component: refOf(f.Component),
		Args: mapAll(f.Args, func(a *arg) ir.Arg {
			return ir.Arg{Port: string(a.Port), Value: useOf(a.Value), Loc: ir.Loc(a.Loc)}
		}),
		Results: mapAll(f.Results, func(r *result) ir.Result {
			return ir.Result{Port: string(r.Port), Value: ir.ValueID(r.Value), Loc: ir.Loc(r.Loc)}
		})}
}

func emitOf(f *emit) *ir.Step {
	s := &ir.Step{Op: ir.OpEmit, Loc: ir.Loc(f.Loc), Mode: string(f.Mode), Value: useOf(f.Value),
		Output: refOf(f.Output), When: optUseOf(f.When), ValidLength: optUseOf(f.ValidLength)}
	if f.Axis != nil {
		a := int64(f.Axis.N)
		s.Axis, s.AxisLoc = &a, ir.Loc(f.Axis.Loc)
	}
	return s
}

func branchOf(f *branch) *ir.Step {
	return &ir.Step{Op: ir.OpBranch, Loc: ir.Loc(f.Loc), Predicate: useOf(f.Predicate),
		Cases: mapAll(f.Cases, func(k *caseArm) ir.Case {
			return ir.Case{Key: string(k.Key), Body: blockOf(k.Body.Steps), Loc: ir.Loc(k.Loc)}
		}),
		Default: optBlockOf(f.Default),
		Phis:    mapAll(f.Phis, phiOf)}
}

func phiOf(f *phi) ir.Phi {
	return ir.Phi{Value: ir.ValueID(f.Value), Default: optUseOf(f.Default), Loc: ir.Loc(f.Loc),
		Inputs: mapAll(f.Inputs, func(in *phiInput) ir.PhiInput {
			return ir.PhiInput{Key: string(in.Key), Value: useOf(in.Value)}
		})}
}

func loopOf(f *loop) *ir.Step {
	s := &ir.Step{Op: ir.OpLoop, Loc: ir.Loc(f.Loc), MaxIterations: int64(f.Max), Setup: optBlockOf(f.Setup),
		Body: blockOf(f.Body.Steps), ContinueWhen: useOf(f.While),
		Carried: mapAll(f.Carried, func(c *carry) ir.Carry {
			return ir.Carry{Cell: refOf(c.Cell), Initial: optUseOf(c.Initial), Next: useOf(c.Next), Loc: ir.Loc(c.Loc)}
		})}
	if f.Iteration != nil {
		id := ir.ValueID(*f.Iteration)
		s.Iteration = &id
	}
	return s
}
