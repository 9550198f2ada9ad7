package genrt

import (
	"context"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// Executor is the part of a generated executor that no workflow changes:
// its engine, and the ways of running requests given by input name. A
// generated Executor embeds it and adds what its workflow alone has: the
// typed Run, and run, the function of one plain request by name that
// NewExecutor takes. It is safe for concurrent use.
type Executor struct {
	engine *vm.Engine
	run    vm.RunFunc
}

// NewExecutor opens an executor's embedded plan on the package folder
// packageDir (Open) and runs a plain request given by input name with run,
// which its caller counts as running.
func NewExecutor(planJSON []byte, packageDir string, opts []Option, run vm.RunFunc) (*Executor, error) {
	e, err := Open(planJSON, packageDir, opts)
	if err != nil {
		return nil, err
	}
	return &Executor{engine: e, run: run}, nil
}

// Engine is the VM engine the executor's invokes go through.
func (x *Executor) Engine() *vm.Engine { return x.engine }

// Close stops the groupers, failing the requests that still wait, and
// releases the components.
func (x *Executor) Close() error { return x.engine.Close() }

// Stats returns what every component did so far: invocations, group sizes,
// padding, copies, queue waits.
func (x *Executor) Stats() vm.Stats { return x.engine.Stats() }

// Copies returns the host copies the groups of one component made so far,
// by reason (pack, pad, stack, companion, gather): splits are views, so a
// split never adds to them.
func (x *Executor) Copies(component string) *vm.Copies { return x.engine.Copies(component) }

// RunJSON runs the requests document of `genaic run`
// ({"requests":[{"id","inputs":{NAME: TENSOR}}]}) with its requests
// concurrent, and returns the responses document `genaic run` writes
// without --stats. A request that fails is a response with an error;
// RunJSON itself fails only on a document it cannot read. Paths of .npy
// tensors are relative to the working directory.
func (x *Executor) RunJSON(ctx context.Context, requests []byte) ([]byte, error) {
	return RunJSON(ctx, requests, x.RunAll)
}

// RunAll runs requests given by input name concurrently, as
// vm.Engine.RunAll does: RunBatch with no limit, no stop and no report.
func (x *Executor) RunAll(ctx context.Context, reqs []vm.Request) []vm.Response {
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
func (x *Executor) RunBatch(ctx context.Context, reqs []vm.Request, opts vm.BatchOptions) []vm.Response {
	return x.engine.RunBatchWith(ctx, reqs, opts, x.run)
}

// RunRequest runs one request given by input name, as vm.Engine.Run takes
// it (a request of a requests document, or of a table that drives the VM
// and executors alike): its inputs are checked in the order the VM checks
// them, then the names it supplies. A failed request is a response with an
// error.
func (x *Executor) RunRequest(ctx context.Context, r vm.Request) vm.Response {
	if len(r.Items) > 0 {
		return RunItems(ctx, x.engine, r, x.RunRequest)
	}
	// Counted as running until it returns, so that a group may wait for
	// it rather than judge from arrival rates.
	x.engine.Begin()
	defer x.engine.End()
	return x.run(ctx, r)
}

// An Input is one workflow input as a request's are checked.
type Input struct {
	Name string
	// Optional: a request may leave it out.
	Optional bool
	// Unloaded is the source ("literal", "artifact") of an input this
	// runtime does not load yet, which a request must therefore supply;
	// empty for the others.
	Unloaded string
}

// Inputs are a workflow's inputs, in the order the VM checks them.
type Inputs []Input

// Check checks a request's values (one per input, in the same order) as
// the VM does before it runs the workflow: each present unless it is
// optional, and each against its contract.
func (ins Inputs) Check(e *vm.Engine, values ...*backend.Tensor) error {
	for i, in := range ins {
		v := values[i]
		switch {
		case v != nil:
		case in.Unloaded != "":
			return NotLoaded(in.Name, in.Unloaded)
		case in.Optional:
			continue
		default:
			return Missing(in.Name, ins.present(values)...)
		}
		if err := e.CheckInput(in.Name, v); err != nil {
			return err
		}
	}
	return nil
}

// Unexpected reports the first name a request supplies, in sorted order,
// that is not one of the inputs, or nil.
func (ins Inputs) Unexpected(given map[string]*backend.Tensor) error {
	for name := range given {
		if !ins.has(name) {
			return Unexpected(given, ins.names()...)
		}
	}
	return nil
}

func (ins Inputs) has(name string) bool {
	for _, in := range ins {
		if in.Name == name {
			return true
		}
	}
	return false
}

// present names the inputs a request's values give.
func (ins Inputs) present(values []*backend.Tensor) []string {
	var names []string
	for i, in := range ins {
		if values[i] != nil {
			names = append(names, in.Name)
		}
	}
	return names
}

func (ins Inputs) names() []string {
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Name
	}
	return names
}

// Run runs one typed request as every executor's Run does: check first
// (a nil request is one with no inputs), then run, while the engine counts
// the request as running, so that a group may wait for it rather than
// judge from arrival rates.
func Run[Req, Resp any](ctx context.Context, e *vm.Engine, req *Req, check func(*Req) error, run func(context.Context, *Req) (*Resp, error)) (*Resp, error) {
	if req == nil {
		req = new(Req)
	}
	if err := check(req); err != nil {
		return nil, err
	}
	e.Begin()
	defer e.End()
	return run(ctx, req)
}

// Put sets inputs[name] to t unless t is nil: a typed request's field as
// a request by name has it, where a nil field is an input left out.
func Put(inputs map[string]*backend.Tensor, name string, t *backend.Tensor) {
	if t != nil {
		inputs[name] = t
	}
}

// ReleaseFailed releases what h holds once a request has failed (*err is
// set): a failed request's outputs are read no more. A generated run
// defers it.
func ReleaseFailed(err *error, h *vm.Holding) {
	if *err != nil {
		h.Release()
	}
}
