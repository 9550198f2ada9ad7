package genrt

import (
	"context"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// Ports are what a generated executor tells Executor about its workflow:
// its typed Request and Response field by field, with the workflow's names
// of their inputs and outputs, and the workflow itself. Every accessor
// returns the address of a field, so that Executor maps a request given by
// name onto the typed one (and back) with no reflection.
type Ports[Req, Resp any] struct {
	// In are the workflow's inputs, in the order the VM checks them: a
	// request may supply no other.
	In []In[Req]
	// Out are the workflow's outputs, in the order the VM's responses
	// hold them.
	Out []Out[Resp]
	// Held is a response's holding of the group outputs its tensors view.
	Held func(*Resp) *vm.Holding
	// Run is the workflow, step by step. Its callers have checked the
	// request and count it as running, so that a group may wait for it
	// rather than judge from arrival rates.
	Run func(context.Context, *Executor[Req, Resp], *Req) (*Resp, error)
}

// In is one workflow input: how a request is checked for it, and its field.
type In[Req any] struct {
	Name string
	// Optional: a request may leave it out.
	Optional bool
	// Unloaded is the source ("literal", "artifact") of an input this
	// runtime does not load yet, which a request must therefore supply;
	// empty for the others.
	Unloaded string
	Field    func(*Req) **backend.Tensor
	// Tensors or Bytes, for an input a request may give as items, is its
	// items field (nil where the request gives none).
	Tensors func(*Req) []*backend.Tensor
	Bytes   func(*Req) [][]byte
}

// hasItems reports whether a request gives the input as items.
func (in *In[Req]) hasItems(req *Req) bool {
	return in.Tensors != nil && in.Tensors(req) != nil || in.Bytes != nil && in.Bytes(req) != nil
}

// items are the items a request gives for the input, or nil.
func (in *In[Req]) items(req *Req) []vm.Item {
	switch {
	case !in.hasItems(req):
		return nil
	case in.Tensors != nil:
		return vm.TensorItems(in.Tensors(req)...)
	}
	return vm.ByteItems(in.Bytes(req)...)
}

// Out is one workflow output and its Response fields.
type Out[Resp any] struct {
	Name  string
	Field func(*Resp) **backend.Tensor
	// Items, for an output answered per item when the request gave items,
	// is that field.
	Items func(*Resp) *[]*backend.Tensor
}

// Executor is a generated executor: its engine, and the ways of running
// requests, typed (Run) or given by input name. A generated package names
// it Executor, for its own Request and Response. It is safe for concurrent
// use.
type Executor[Req, Resp any] struct {
	engine *vm.Engine
	ports  *Ports[Req, Resp]
	// inputs and outputs are the names of ports.In and ports.Out.
	inputs  []string
	outputs *vm.OutputNames
}

// New opens an executor's embedded plan on the package folder packageDir
// (Open), to run the workflow that ports describe.
func New[Req, Resp any](planJSON []byte, packageDir string, opts []Option, ports *Ports[Req, Resp]) (*Executor[Req, Resp], error) {
	e, err := Open(planJSON, packageDir, opts)
	if err != nil {
		return nil, err
	}
	return newExecutor(e, ports), nil
}

// newExecutor is the executor of ports on the engine e.
func newExecutor[Req, Resp any](e *vm.Engine, ports *Ports[Req, Resp]) *Executor[Req, Resp] {
	x := &Executor[Req, Resp]{engine: e, ports: ports}
	for _, in := range ports.In {
		x.inputs = append(x.inputs, in.Name)
	}
	var outputs []string
	for _, o := range ports.Out {
		outputs = append(outputs, o.Name)
	}
	x.outputs = vm.NewOutputNames(outputs...)
	return x
}

// Engine is the VM engine the executor's invokes go through.
func (x *Executor[Req, Resp]) Engine() *vm.Engine { return x.engine }

// Close stops the groupers, failing the requests that still wait, and
// releases the components.
func (x *Executor[Req, Resp]) Close() error { return x.engine.Close() }

// Stats returns what every component did so far: invocations, group sizes,
// padding, copies, queue waits.
func (x *Executor[Req, Resp]) Stats() vm.Stats { return x.engine.Stats() }

// Copies returns the host copies the groups of one component made so far,
// by reason (pack, pad, stack, companion, gather): splits are views, so a
// split never adds to them.
func (x *Executor[Req, Resp]) Copies(component string) *vm.Copies {
	return x.engine.Copies(component)
}

// Run executes the workflow for one request (nil is one with no inputs).
// Many goroutines may call it at once. A failed request returns an error;
// a *backend.RunError carries the rule and message `genaic run` reports.
func (x *Executor[Req, Resp]) Run(ctx context.Context, req *Req) (*Resp, error) {
	if req == nil {
		req = new(Req)
	}
	if x.hasItems(req) {
		return x.runItems(ctx, req)
	}
	if err := x.check(req); err != nil {
		return nil, err
	}
	x.engine.Begin()
	defer x.engine.End()
	return x.ports.Run(ctx, x, req)
}

// RunJSON runs the requests document of `genaic run`
// ({"requests":[{"id","inputs":{NAME: TENSOR}}]}) with its requests
// concurrent, and returns the responses document `genaic run` writes
// without --stats. A request that fails is a response with an error;
// RunJSON itself fails only on a document it cannot read. Paths of .npy
// tensors are relative to the working directory.
func (x *Executor[Req, Resp]) RunJSON(ctx context.Context, requests []byte) ([]byte, error) {
	return RunJSON(ctx, requests, x.RunAll)
}

// RunAll runs requests given by input name concurrently, as
// vm.Engine.RunAll does: RunBatch with no limit, no stop and no report.
func (x *Executor[Req, Resp]) RunAll(ctx context.Context, reqs []vm.Request) []vm.Response {
	return x.RunBatch(ctx, reqs, vm.BatchOptions{})
}

// RunBatch runs requests given by input name concurrently, as
// vm.Engine.RunBatch does, and returns their responses in order: at most
// opts.Limit in flight (0: all), none started once opts.Stop closes (a
// request never started is answered with an error vm.NotStarted
// recognises, while those started finish), and opts.Finished told of each
// response as soon as it is known. The engine is told how many are coming,
// so that a group never waits for more than the batch holds. A request
// that gives items is packed into the plain requests its items make and
// answered once they all are.
func (x *Executor[Req, Resp]) RunBatch(ctx context.Context, reqs []vm.Request, opts vm.BatchOptions) []vm.Response {
	return x.engine.RunBatchWith(ctx, reqs, opts, x.runByName)
}

// RunRequest runs one request given by input name, as vm.Engine.Run takes
// it (a request of a requests document, or of a table that drives the VM
// and executors alike): its inputs are checked in the order the VM checks
// them, then the names it supplies. A failed request is a response with an
// error.
func (x *Executor[Req, Resp]) RunRequest(ctx context.Context, r vm.Request) vm.Response {
	if len(r.Items) > 0 {
		return RunItems(ctx, x.engine, r, x.RunRequest)
	}
	x.engine.Begin()
	defer x.engine.End()
	return x.runByName(ctx, r)
}

// runByName runs one plain request given by input name, which its caller
// counts as running.
func (x *Executor[Req, Resp]) runByName(ctx context.Context, r vm.Request) vm.Response {
	req := new(Req)
	for i := range x.ports.In {
		in := &x.ports.In[i]
		*in.Field(req) = r.Inputs[in.Name]
	}
	if err := x.check(req); err != nil {
		return vm.Response{ID: r.ID, Err: err}
	}
	if err := x.unexpected(r.Inputs); err != nil {
		return vm.Response{ID: r.ID, Err: err}
	}
	resp, err := x.ports.Run(ctx, x, req)
	if err != nil {
		return vm.Response{ID: r.ID, Err: err}
	}
	vals := make([]*backend.Tensor, len(x.ports.Out))
	for i := range x.ports.Out {
		vals[i] = *x.ports.Out[i].Field(resp)
	}
	return x.ports.Held(resp).Respond(r.ID, x.outputs.Outputs(vals))
}

// hasItems reports whether a request gives an input as items.
func (x *Executor[Req, Resp]) hasItems(req *Req) bool {
	for i := range x.ports.In {
		if x.ports.In[i].hasItems(req) {
			return true
		}
	}
	return false
}

// runItems runs a typed request that gives inputs as items: by input
// name, as RunRequest takes it, which packs the items, derives their
// companions, and answers per item.
func (x *Executor[Req, Resp]) runItems(ctx context.Context, req *Req) (*Resp, error) {
	r := vm.Request{Inputs: map[string]*backend.Tensor{}, Items: map[string][]vm.Item{}}
	for i := range x.ports.In {
		in := &x.ports.In[i]
		if t := *in.Field(req); t != nil {
			r.Inputs[in.Name] = t
		}
		if items := in.items(req); items != nil {
			r.Items[in.Name] = items
		}
	}
	resp := x.RunRequest(ctx, r)
	if resp.Err != nil {
		return nil, resp.Err
	}
	typed := new(Resp)
	for _, o := range x.ports.Out {
		*o.Field(typed) = resp.Outputs.Get(o.Name)
		if o.Items != nil {
			*o.Items(typed) = vm.Tensors(resp.Items[o.Name])
		}
	}
	x.ports.Held(typed).Take(resp)
	return typed, nil
}

// check checks a request's inputs as the VM does before it runs the
// workflow: each present unless it is optional, and each against its
// contract.
func (x *Executor[Req, Resp]) check(req *Req) error {
	for i := range x.ports.In {
		in := &x.ports.In[i]
		v := *in.Field(req)
		switch {
		case v != nil:
		case in.Unloaded != "":
			return NotLoaded(in.Name, in.Unloaded)
		case in.Optional:
			continue
		default:
			return x.engine.MissingInput(in.Name, x.present(req)...)
		}
		if err := x.engine.CheckInput(in.Name, v); err != nil {
			return err
		}
	}
	return nil
}

// present names the inputs a request gives.
func (x *Executor[Req, Resp]) present(req *Req) []string {
	var names []string
	for i := range x.ports.In {
		if *x.ports.In[i].Field(req) != nil {
			names = append(names, x.ports.In[i].Name)
		}
	}
	return names
}

// unexpected reports the first name a request supplies, in sorted order,
// that is not one of the inputs, or nil.
func (x *Executor[Req, Resp]) unexpected(given map[string]*backend.Tensor) error {
	for name := range given {
		if !slices.Contains(x.inputs, name) {
			return Unexpected(given, x.inputs...)
		}
	}
	return nil
}

// ReleaseFailed releases what h holds once a request has failed (*err is
// set): a failed request's outputs are read no more. A generated run
// defers it.
func ReleaseFailed(err *error, h *vm.Holding) {
	if *err != nil {
		h.Release()
	}
}
