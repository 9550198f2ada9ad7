package vm

import (
	"context"
	"maps"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/steps"
	"github.com/genaic/genaic/ir"
)

// run is one request's walk through the workflow: the interpreter proper.
type run struct {
	e       *Engine
	ctx     context.Context
	vals    []*backend.Tensor          // values by slot (env.go); nil: unbound
	args    map[string]*backend.Tensor // one invoke's arguments, reused
	pos     []*backend.Tensor          // a grouped invoke's, by input position
	outputs []*backend.Tensor          // emitted workflow outputs, by place in outNames
	leases  []*lease                   // of the group outputs its shares view (lease.go)
}

// start binds the request's inputs after checking them against their
// contracts, and the state cells' initial values.
func (r *run) start(req Request) error {
	found := 0
	for i, in := range r.e.m.Inputs {
		t, ok := req.Inputs[in.Name]
		if !ok {
			if in.Source == "literal" || in.Source == "artifact" {
				return steps.NotLoaded(in.Name, in.Source)
			}
			if in.Required != nil && !*in.Required || in.Contract != nil && in.Contract.Optional {
				continue
			}
			return r.e.MissingInput(in.Name, slices.Collect(maps.Keys(req.Inputs))...)
		}
		found++
		if err := r.e.contracts[i].check(t); err != nil {
			return err
		}
		r.vals[r.e.slots.inputs[i]] = t
	}
	// Every input the request supplies was found by its name: none is
	// unexpected, and the request's map need not be walked.
	if found < len(req.Inputs) {
		if err := steps.Unexpected(req.Inputs, r.e.inputNames...); err != nil {
			return err
		}
	}
	for i, c := range r.e.m.Cells {
		r.vals[r.e.slots.cells[i]] = r.lookup(c.Initializer.Name)
	}
	return nil
}

// contractCheck is a workflow input's contract as a request's tensor is
// checked against it, resolved at Open: its dtype's canonical name (the
// contract may write an alias), and the axes it fixes, so that checking
// a request looks neither up.
type contractCheck struct {
	name     string
	declared string // the dtype as the contract writes it, for messages
	dtype    string // its canonical name; "" when it names none known
	rank     int    // -1: any
	fixed    []fixedAxis
}

// fixedAxis is an axis a contract fixes at size.
type fixedAxis struct {
	axis int
	size int64
}

func newContractCheck(name string, c *ir.Contract) contractCheck {
	k := contractCheck{name: name, rank: -1}
	if c == nil {
		return k
	}
	k.declared, k.rank = c.DType, c.Rank
	if d, ok := ir.LookupDType(c.DType); ok {
		k.dtype = d.Name
	}
	for i, d := range c.Shape {
		if !d.IsSym() {
			k.fixed = append(k.fixed, fixedAxis{axis: i, size: d.Size})
		}
	}
	return k
}

// check checks a request tensor's data, dtype, rank and fixed extents.
func (k *contractCheck) check(t *backend.Tensor) error {
	if t == nil {
		return nil
	}
	if msg := t.Problem(); msg != "" {
		return runErr("run/input", "workflow input `%s` is %s but %s", k.name, t, msg)
	}
	// A tensor that passed Problem names its dtype canonically.
	if k.dtype != "" && t.DType != k.dtype {
		return runErr("run/input", "workflow input `%s` is declared %s, got %s", k.name, k.declared, t)
	}
	if k.rank >= 0 && t.Rank() != k.rank {
		return runErr("run/input", "workflow input `%s` is declared with rank %d, got %s", k.name, k.rank, t)
	}
	for _, f := range k.fixed {
		if f.axis < t.Rank() && t.Shape[f.axis] != f.size {
			return runErr("run/input", "workflow input `%s` fixes axis %d at %d, got %s", k.name, f.axis, f.size, t)
		}
	}
	return nil
}

func (r *run) block(b *ir.Block) error {
	if b == nil {
		return nil
	}
	for _, s := range b.Steps {
		if err := r.ctx.Err(); err != nil {
			return backend.ContextError(err)
		}
		if err := r.step(s); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) step(s *ir.Step) error {
	switch s.Op {
	case ir.OpInvoke:
		return r.invoke(s)
	case ir.OpEmit:
		return r.emit(s)
	case ir.OpSequence:
		return r.block(s.Body)
	case ir.OpBranch:
		return r.branch(s)
	case ir.OpLoop:
		return r.loop(s)
	}
	return runErr("run/unsupported", "step op %s", s.Op)
}

func (r *run) value(u ir.Use) (*backend.Tensor, error) {
	k, ok := r.e.slots.use(u)
	if !ok || r.vals[k] == nil {
		return nil, steps.NoValue(u.Name)
	}
	return r.vals[k], nil
}

func (r *run) invoke(s *ir.Step) error {
	if st, ok := r.e.sites[s]; ok {
		return r.invokeGrouped(s, st)
	}
	name := s.Component.Name
	// A solo session gets a copy of the arguments: one map serves every
	// invoke of the request.
	if r.args == nil {
		r.args = make(map[string]*backend.Tensor, len(s.Args))
	}
	args := r.args
	defer clear(args)
	for _, a := range s.Args {
		t, err := r.value(a.Value)
		if err != nil {
			return err
		}
		args[a.Port] = t
	}
	// A step bound by name goes back in a map that no response follows:
	// its lease is never let go of.
	outs, _, err := r.e.invokeAt(r.ctx, s.Loc, name, args, r)
	if err != nil {
		return err
	}
	for _, res := range s.Results {
		t, err := steps.Result(outs, name, res.Port)
		if err != nil {
			return err
		}
		r.setValue(res.Value, t)
	}
	return nil
}

// invokeGrouped runs a grouped invoke step for the request alone: its
// arguments laid out by input position (admission reads them without
// keeping the list), its share bound by port.
func (r *run) invokeGrouped(s *ir.Step, st site) error {
	args := slices.Grow(r.pos[:0], len(st.g.spec.gp.Inputs))[:len(st.g.spec.gp.Inputs)]
	r.pos = args
	defer clear(args)
	if err := r.layArgs(s, st, args); err != nil {
		return err
	}
	outs, l, err := st.g.runAlone(r.ctx, args, r)
	if err != nil {
		return backend.Located(err, r.e.m.Location(s.Loc))
	}
	r.hold(l)
	return r.results(s, st, outs)
}

// layArgs puts the values of invoke step s's arguments into args, each
// read from its slot and put at its input position (st's, per argument).
func (r *run) layArgs(s *ir.Step, st site, args []*backend.Tensor) error {
	for j, k := range st.slots {
		var t *backend.Tensor
		if k >= 0 {
			t = r.vals[k]
		}
		if t == nil {
			return steps.NoValue(s.Args[j].Value.Name)
		}
		if at := st.at[j]; at >= 0 {
			args[at] = t
		}
	}
	return nil
}

// Invoke runs one request's invocation of a component: through the
// component's grouper when it has a GroupPlan (admission, grouping,
// splitting), else alone. values resolves the workflow-level names a
// port's contract uses for its companions. step is the invoke step's
// location in the plan's IR: a RunError that no port accounts for is
// located there. Its caller's requests are not known to the engine in
// advance, so groupers then judge from the measured arrival rate whether
// to wait for more. The group outputs the results view are never written
// again (see InvokeHolding).
func (e *Engine) Invoke(ctx context.Context, step ir.Loc, component string, args, values map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	return e.InvokeHolding(ctx, step, component, args, values, nil)
}

// InvokeHolding is Invoke for a caller that says when the outputs are
// read no more: the group outputs they view are held by into (where not
// nil), whose Release (or that of the Response it makes) lets the engine
// write later groups' outputs into them. Generated executors call it.
func (e *Engine) InvokeHolding(ctx context.Context, step ir.Loc, component string, args, values map[string]*backend.Tensor, into *Holding) (map[string]*backend.Tensor, error) {
	if !e.openEnded.Load() {
		e.openEnded.Store(true)
	}
	outs, l, err := e.invokeAt(ctx, step, component, args, valueMap(values))
	if l != nil && into != nil {
		into.add(l)
	}
	return outs, err
}

// invokeAt is Invoke for the interpreter, whose requests the engine
// counts: the outputs by port name, and the lease of the group outputs
// they view (nil for none).
func (e *Engine) invokeAt(ctx context.Context, step ir.Loc, component string, args map[string]*backend.Tensor, env values) (map[string]*backend.Tensor, *lease, error) {
	outs, l, err := e.invoke(ctx, component, args, env)
	if err != nil {
		return nil, nil, backend.Located(err, e.m.Location(step))
	}
	return outs, l, nil
}

func (e *Engine) invoke(ctx context.Context, component string, args map[string]*backend.Tensor, env values) (map[string]*backend.Tensor, *lease, error) {
	if _, ok := e.sessions[component]; !ok {
		return nil, nil, runErr("run/unsupported", "component `%s` is not loaded by this engine", component)
	}
	if g := e.groupers[component]; g != nil {
		outs, l, err := g.runAlone(ctx, g.spec.args(args), env)
		if err != nil {
			return nil, nil, err
		}
		return g.spec.outMap(outs), l, nil
	}
	if err := e.specs[component].checkLevels(args, env); err != nil {
		return nil, nil, err
	}
	if err := e.specs[component].checkArgs(args); err != nil {
		return nil, nil, err
	}
	outs, err := e.solo(ctx, component, args)
	return outs, nil, err
}

// CheckInput checks one request input against its workflow input's
// contract (run/input).
func (e *Engine) CheckInput(name string, t *backend.Tensor) error {
	for i, in := range e.m.Inputs {
		if in.Name == name {
			return e.contracts[i].check(t)
		}
	}
	return runErr("run/input", "`%s` is not a workflow input", name)
}

// Submit runs one request; it is Run with the failure as an error.
func (e *Engine) Submit(ctx context.Context, req Request) (Response, error) {
	resp := e.Run(ctx, req)
	return resp, resp.Err
}

// solo invokes an ungrouped component with one request's values.
func (e *Engine) solo(ctx context.Context, name string, args map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	spec := e.specs[name]
	// A Go binding is handed a map of its own: the caller's may be reused.
	outs, err := e.sessions[name].Run(ctx, maps.Clone(args), spec.outputNames())
	if err != nil {
		e.stats[name].fail()
		return nil, backendError(name, 1, err)
	}
	e.stats[name].invoked(1, nil, nil, 0)
	return outs, nil
}

func (r *run) emit(s *ir.Step) error { return r.emitAt(s, r.e.outNames.index(s.Output.Name)) }

// emitAt is emit into the workflow output at place at of outNames (-1: no
// output of the workflow).
func (r *run) emitAt(s *ir.Step, at int) error {
	t, err := r.value(s.Value)
	if err != nil {
		return err
	}
	// A plain replace of a value of rank 1 or more (the usual emit) is
	// the value itself, as steps.Emit would find.
	if s.When == nil && s.ValidLength == nil && s.Axis == nil && at >= 0 && t.Rank() > 0 && s.Mode == "replace" {
		r.outputs[at] = t
		return nil
	}
	var when, validLength *backend.Tensor
	if s.When != nil {
		if when, err = r.value(*s.When); err != nil {
			return err
		}
	}
	if s.ValidLength != nil {
		if validLength, err = r.value(*s.ValidLength); err != nil {
			return err
		}
	}
	axis := int64(-1)
	if s.Axis != nil {
		axis = *s.Axis
	}
	if at < 0 {
		return runErr("run/unsupported", "emit to `%s`, which is no workflow output", s.Output.Name)
	}
	// Only an append reads what was emitted before: a replace need not
	// look it up (when it does not emit, it leaves the output as it is).
	var prev *backend.Tensor
	if s.Mode != "replace" {
		prev = r.outputs[at]
	}
	out, err := steps.Emit(s.Output.Name, prev, t, s.Mode, axis, when, validLength)
	if err != nil {
		return err
	}
	if out != nil {
		r.outputs[at] = out
	}
	return nil
}

func (r *run) branch(s *ir.Step) error {
	p, err := r.value(s.Predicate)
	if err != nil {
		return err
	}
	key, err := steps.Key(p)
	if err != nil {
		return err
	}
	body := s.Default
	for _, c := range s.Cases {
		if c.Key == key {
			body = c.Body
		}
	}
	// With no matching case and no default step, nothing runs; the phis
	// must then take their defaults.
	if err := r.block(body); err != nil {
		return err
	}
	for _, phi := range s.Phis {
		u := phi.Default
		for i := range phi.Inputs {
			if phi.Inputs[i].Key == key {
				u = &phi.Inputs[i].Value
			}
		}
		if u == nil {
			return steps.NoPhi(s.Predicate.Name, key, r.e.m.Values[phi.Value].Name)
		}
		t, err := r.value(*u)
		if err != nil {
			return err
		}
		r.setValue(phi.Value, t)
	}
	return nil
}

func (r *run) loop(s *ir.Step) error {
	for _, c := range s.Carried {
		if c.Initial != nil {
			t, err := r.value(*c.Initial)
			if err != nil {
				return err
			}
			r.set(c.Cell.Name, t)
		}
	}
	if err := r.block(s.Setup); err != nil {
		return err
	}
	for i := int64(0); i < s.MaxIterations; i++ {
		if s.Iteration != nil {
			r.setValue(*s.Iteration, steps.Iteration(i))
		}
		if err := r.block(s.Body); err != nil {
			return err
		}
		for _, c := range s.Carried {
			t, err := r.value(c.Next)
			if err != nil {
				return err
			}
			r.set(c.Cell.Name, t)
		}
		cont, err := r.value(s.ContinueWhen)
		if err != nil {
			return err
		}
		if more, err := steps.Continue(cont); err != nil || !more {
			return err
		}
	}
	return nil
}

// outputNames lists a component's output ports.
func (s *componentSpec) outputNames() []string { return s.outNames }

// emptyOutputs stands in for the outputs of a group with no item, which
// is never invoked: packed outputs are empty with their rank preserved and
// the trailing extents the contract or the graph fixes (0 where neither
// does), produced offsets are all zero, owners empty.
func (s *componentSpec) emptyOutputs(g *group, hint backend.ShapeHinter) outputs {
	out := make(outputs, len(s.gp.Outputs))
	for k, o := range s.gp.Outputs {
		port := s.comp.Output(o.Name)
		rank := 1
		dtype := "float32"
		if port != nil && port.Contract != nil {
			rank = max(port.Contract.Rank, 1)
			if d, ok := ir.LookupDType(port.Contract.DType); ok {
				dtype = d.Name
			}
		}
		shape := make([]int64, rank)
		if port != nil && port.Contract != nil {
			for i, d := range port.Contract.Shape {
				if i > 0 && !d.IsSym() {
					shape[i] = d.Size
				}
			}
		}
		if hint != nil {
			if dims := hint.OutputShape(o.Name); len(dims) == rank {
				for i := 1; i < rank; i++ {
					shape[i] = max(shape[i], dims[i])
				}
			}
		}
		out[k], _ = backend.NewTensor(dtype, shape)
	}
	for _, o := range s.gp.Outputs {
		for k, l := range o.Levels {
			if l.From == nil && l.Offsets.Port != "" {
				n := int64(1)
				if k == len(o.Levels)-1 {
					n = g.rows() + 1
				}
				for j := range s.gp.Outputs {
					if s.gp.Outputs[j].Name == l.Offsets.Port {
						out[j] = &backend.Tensor{DType: "int64", Shape: []int64{n}, Data: make([]int64, n)}
					}
				}
			}
		}
	}
	return out
}
