package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/steps"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
)

// Backends run components by implementation kind: ONNX Runtime for onnx,
// the preprocessing adapters for adapter components, Go functions for
// binding components. Package engine makes them by name.
type Backends map[ir.ImplKind]backend.Backend

// Options configure how an Engine groups.
type Options struct {
	// Solo runs every invocation with exactly one request (the reference).
	Solo bool
	// MaxDelay is how long a grouper waits for more items before it closes
	// a group.
	MaxDelay time.Duration
	// Queue bounds each grouper's queue; 0 means 1024.
	Queue int
	// Workers is how many groups of one component may be gathered and run
	// at once; 0 means 1.
	Workers int
	// Declines declines grouped execution by (component, operator class,
	// execution provider), beside what each session answers itself.
	Declines backend.Declines
	// Observer, when set, is told of every queue wait and invocation as it
	// happens (a server's histograms); Stats summarises the same events.
	Observer Observer
	// Execution, when set, is how Workers and the backends' threads were
	// chosen (engine.PlanExecution): Stats reports it.
	Execution *Execution
}

// Observer receives the events Stats counts, one by one. Its methods are
// called from the groupers' goroutines, outside any lock of the engine, and
// must be cheap and safe for concurrent use.
type Observer interface {
	// QueueWait is how long one item waited at component for its group.
	QueueWait(component string, d time.Duration)
	// Invoked is one invocation of component: the requests of its group,
	// the elements of its payload inputs as assembled (padding included)
	// and as the items brought them, and how long it ran (zero for an
	// invocation the engine does not time).
	Invoked(component string, requests int, footprint, real int64, d time.Duration)
}

// Engine runs the workflow of a plan for many concurrent requests.
type Engine struct {
	file     *plan.File
	m        *ir.Module
	opts     Options
	backends Backends
	// inputNames are the workflow's inputs: a request may supply no other.
	inputNames []string
	// companionOf maps each companion (offsets, owner, valid lengths) of
	// a packed input a request gives to that input: what a request that
	// leaves the companion out is told (MissingInput).
	companionOf map[string]string
	contracts   []contractCheck // by workflow input
	// outNames are the workflow's outputs, shared by every response.
	outNames *OutputNames
	// lockstep says RunAll runs requests in lockstep: the workflow is
	// straight-line.
	lockstep bool
	slots    *slots // the environment's names (env.go)
	// runs recycles the interpreter's per-request state, goroutines the
	// goroutines RunAll runs requests on.
	runs       sync.Pool
	batches    sync.Pool // of *batch, for lockstep windows
	records    sync.Pool // of *records, a lockstep window's responses' (lease.go)
	goroutines *pool
	// active counts the requests being run; announced those RunAll has
	// promised and not started; openEnded is set once Run is called from
	// outside, after which more requests may come at any time.
	active, announced atomic.Int64
	openEnded         atomic.Bool
	sessions          map[string]backend.Session
	groupers          map[string]*grouper
	grouperList       []*grouper        // the same, in the order loaded: a finished request tells each
	sites             map[*ir.Step]site // the invoke steps of grouped components
	keyed             []keyedStep       // the invoke steps whose sessions key their inputs
	itemsPlans        itemsPlans        // the itemsPlan of each form of request met
	specs             map[string]*componentSpec
	stats             map[string]*counter
	copies            map[string]*Copies
	closing           sync.Once
}

// Open loads a plan (already checked against its package in pkgDir) and
// every component its workflow invokes, on the given backends. Most
// callers open plans with package engine, which makes the backends.
func Open(f *plan.File, pkgDir string, backends Backends, opts Options) (*Engine, error) {
	m := f.IR
	if m == nil {
		return nil, fmt.Errorf("the plan holds no IR")
	}
	if m.Serving != nil {
		return nil, runErr("run/unsupported", "this workflow declares `serving` (decoder serving state, KV caches); genaic checks such workflows but does not execute them")
	}
	if opts.Queue <= 0 {
		opts.Queue = 1024
	}
	e := &Engine{file: f, m: m, opts: opts, backends: backends,
		inputNames: namesOf(m.Inputs, func(in *ir.Input) string { return in.Name }),
		outNames:   NewOutputNames(namesOf(m.Outputs, func(o *ir.Output) string { return o.Name })...),
		slots:      newSlots(m), goroutines: newPool(), lockstep: straightLine(m.Body),
		sessions: map[string]backend.Session{}, groupers: map[string]*grouper{},
		specs: map[string]*componentSpec{}, stats: map[string]*counter{}, copies: map[string]*Copies{}}
	for _, in := range m.Inputs {
		e.contracts = append(e.contracts, newContractCheck(in.Name, in.Contract))
	}
	e.companionOf = companionsOfInputs(m)
	for _, name := range invokedComponents(m) {
		if err := e.load(name, pkgDir); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.sites = invokeSites(m, e.groupers, e.slots)
	e.keyed = keyedSteps(m, e.specs)
	return e, nil
}

// site is an invoke step of a grouped component: its grouper, where each
// of the step's arguments goes among the component's inputs (-1: to
// none), the slot each is read from (-1: a name nothing binds), and the
// position among the component's outputs of each result (-1: none),
// found once so that a request lays out its arguments and binds its
// results by position.
type site struct {
	g       *grouper
	at      []int
	slots   []int
	results []int
}

func invokeSites(m *ir.Module, groupers map[string]*grouper, sl *slots) map[*ir.Step]site {
	sites := map[*ir.Step]site{}
	m.Body.Walk(func(s *ir.Step) bool {
		if g := groupers[s.Component.Name]; s.Op == ir.OpInvoke && g != nil {
			st := site{g: g, at: g.spec.argsAt(s), slots: make([]int, len(s.Args))}
			for j, a := range s.Args {
				if k, ok := sl.use(a.Value); ok {
					st.slots[j] = k
				} else {
					st.slots[j] = -1
				}
			}
			st.results = make([]int, len(s.Results))
			for j, res := range s.Results {
				st.results[j] = slices.IndexFunc(g.spec.gp.Outputs, func(o plan.Port) bool { return o.Name == res.Port })
			}
			sites[s] = st
		}
		return true
	})
	return sites
}

// namesOf lists the names of xs, in order.
func namesOf[T any](xs []T, name func(T) string) []string {
	names := make([]string, len(xs))
	for i, x := range xs {
		names[i] = name(x)
	}
	return names
}

func invokedComponents(m *ir.Module) []string {
	var names []string
	seen := map[string]bool{}
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke && !seen[s.Component.Name] {
			seen[s.Component.Name] = true
			names = append(names, s.Component.Name)
		}
		return true
	})
	return names
}

func (e *Engine) load(name, pkgDir string) error {
	comp := e.m.Component(name)
	gp := e.file.Component(name)
	if comp == nil || gp == nil {
		return fmt.Errorf("the plan has no component `%s`", name)
	}
	be := e.backends[comp.Impl]
	if be == nil {
		return runErr("run/unsupported", "component `%s` is implemented by %s, and no backend for %s components was given", name, comp.Impl, comp.Impl)
	}
	sess, err := be.Load(comp, pkgDir)
	if err != nil {
		return fmt.Errorf("loading component `%s` on %s: %w", name, be.Name(), err)
	}
	e.sessions[name] = sess
	spec := newComponentSpec(comp, gp, e.m, e.slots)
	spec.keyer, _ = sess.(backend.Keyer)
	decline, err := spec.fixExtents(sess)
	if err != nil {
		return err // Open closes the sessions loaded so far, this one included
	}
	e.specs[name] = spec
	e.stats[name] = newCounter(gp)
	e.stats[name].name, e.stats[name].obs = name, e.opts.Observer
	e.copies[name] = &Copies{}
	if gp.Grouped {
		ready := e.opts.Declines.ApplyOps(name, e.file.Ops(name), sess.Ready())
		if decline != "" && ready.Ready {
			ready.Ready, ready.Reason = false, decline
		}
		e.groupers[name] = newGrouper(e, spec, sess, ready, e.stats[name], e.copies[name])
		e.grouperList = append(e.grouperList, e.groupers[name])
	}
	return nil
}

// Close stops the groupers (failing what still waits) and releases every
// session.
func (e *Engine) Close() error {
	var errs []error
	e.closing.Do(func() {
		for _, g := range e.groupers {
			g.close()
		}
		e.goroutines.stop()
		for _, s := range e.sessions {
			errs = append(errs, s.Close())
		}
	})
	return errors.Join(errs...)
}

// Stats returns what every component did so far.
func (e *Engine) Stats() Stats {
	out := Stats{Components: map[string]ComponentStats{}, Execution: e.opts.Execution}
	for name, s := range e.stats {
		cs := s.snapshot(e.copies[name].Bytes())
		if t, ok := e.sessions[name].(backend.Timed); ok {
			cs.BackendTime = t.BackendTime()
		}
		if g := e.groupers[name]; g != nil {
			cs.Scheduler = g.schedulerStats()
			cs.CallByName = g.call.byName
		}
		out.Components[name] = cs
	}
	return out
}

// Copies returns the copy counters of a component (for tests and stats).
func (e *Engine) Copies(component string) *Copies { return e.copies[component] }

// Request is one request: values for the workflow inputs it supplies.
type Request struct {
	ID     string
	Inputs map[string]*backend.Tensor
	// Items gives token_packed workflow inputs as one tensor per item
	// (items.go): the runtime packs them and derives the offsets, owners
	// and valid lengths their contract declares. An input is given either
	// in Inputs or in Items.
	Items map[string][]Item
	// Err, when set, is why the request could not be read (a malformed
	// tensor of a requests document is run/input): the engine answers the
	// request with it at once and runs nothing for it, so that one bad
	// request fails alone. An error that is no RunError is run/input.
	Err error
	// parts is the gate of the parts of a request its items split, where
	// this is one (parts.go).
	parts *partGate
}

// Unreadable is the error a request that could not be read is answered
// with (Request.Err): its own RunError, or a run/input one wrapping it.
func Unreadable(err error) error {
	var re *backend.RunError
	if errors.As(err, &re) {
		return err
	}
	return &backend.RunError{Rule: backend.RunInput, Message: err.Error(), Err: err}
}

// Response is a request's result: the workflow outputs it emitted, or the
// error that failed it.
type Response struct {
	ID      string
	Outputs Outputs
	// Items holds, for a request that gave items, the outputs packed on
	// its items' levels, one entry per item in the request's order; they
	// and their companions are not in Outputs.
	Items map[string][]Item
	Err   error
	held  *held  // the leases of the group outputs Outputs view (Release)
	use   uint64 // which of held's uses is this response's (lease.go)
}

// Run executes the workflow for one request. Many goroutines may call Run
// at once; their items meet in the groupers. A caller of Run may send
// another request at any time, so groupers judge from the measured arrival
// rate whether waiting for one can help; RunAll knows better.
func (e *Engine) Run(ctx context.Context, req Request) Response {
	if !e.openEnded.Load() {
		e.openEnded.Store(true)
	}
	if len(req.Items) > 0 && req.Err == nil {
		// RunItems of the one request, without its lists.
		parts, rg, err := e.PackItems(req)
		if err != nil {
			return Response{ID: req.ID, Err: err}
		}
		return rg.Join(e.runEach(ctx, parts))
	}
	e.active.Add(1)
	defer e.done(1)
	return e.exec(ctx, req)
}

// runEach runs requests at once, one goroutine each, counted as active;
// a lone request (the one part of a request whose items pack alike) runs
// on the caller's goroutine, which would only wait for it.
func (e *Engine) runEach(ctx context.Context, reqs []Request) []Response {
	out := make([]Response, len(reqs))
	e.active.Add(int64(len(reqs)))
	if len(reqs) == 1 {
		defer e.done(1)
		out[0] = e.exec(ctx, reqs[0])
		return out
	}
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			defer e.done(1)
			out[i] = e.exec(ctx, reqs[i])
		})
	}
	wg.Wait()
	return out
}

// Expect tells the engine that n requests are about to start (through
// Begin), so that groupers wait for them rather than judge from arrival
// rates: generated executors announce a batch of requests this way, as
// RunAll does for the VM.
func (e *Engine) Expect(n int) { e.announced.Add(int64(n)) }

// Begin counts a request a generated executor starts running, the first of
// those Expect announced; End counts it finished. A request counted this
// way, and not yet waiting at a component, is one a group may wait for.
func (e *Engine) Begin() {
	e.active.Add(1)
	for {
		n := e.announced.Load()
		if n <= 0 || e.announced.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// End counts a request Begin counted as finished.
func (e *Engine) End() { e.done(1) }

// done counts n requests finished and tells the groupers: a group that
// waits for the requests still running may now close.
func (e *Engine) done(n int) {
	e.active.Add(int64(-n))
	for _, g := range e.grouperList {
		g.s.RequestDone()
	}
}

// getRun returns a request's interpreter state, recycled: its value map
// keeps its storage between requests; its outputs are the response's.
func (e *Engine) getRun(ctx context.Context) *run {
	r, _ := e.runs.Get().(*run)
	if r == nil {
		r = e.newRun()
	}
	r.ctx, r.outputs = ctx, e.newOutputs()
	return r
}

func (e *Engine) newRun() *run {
	return &run{e: e, vals: make([]*backend.Tensor, len(e.slots.byName))}
}

// newOutputs is a request's values of the workflow outputs, by their
// place in outNames: its response's.
func (e *Engine) newOutputs() []*backend.Tensor {
	return make([]*backend.Tensor, len(e.outNames.list))
}

// response holds a run's emitted outputs and the leases of the group
// outputs they view, kept in h where h is not nil.
func (e *Engine) response(id string, r *run, h *held) Response {
	h = r.heldBy(h)
	return Response{ID: id, Outputs: Outputs{names: e.outNames, vals: r.outputs}, held: h, use: h.use()}
}

// putRun recycles a run whose outputs the caller has taken.
func (e *Engine) putRun(r *run) {
	r.reset()
	e.runs.Put(r)
}

// reset empties a run whose outputs the caller has taken.
func (r *run) reset() {
	if len(r.leases) > 0 {
		r.letGo() // a failed request's: its response took none
	}
	clear(r.vals)
	r.ctx, r.outputs = nil, nil
}

// exec runs one request's program.
func (e *Engine) exec(ctx context.Context, req Request) (resp Response) {
	if req.Err != nil {
		return Response{ID: req.ID, Err: Unreadable(req.Err)}
	}
	if req.parts != nil {
		var finish func(error)
		ctx, finish = WithPart(ctx, req)
		defer func() { finish(resp.Err) }()
	}
	r := e.getRun(ctx)
	err := r.start(req)
	if err == nil {
		err = r.block(e.m.Body)
	}
	if err != nil {
		r.letGo()
	}
	resp = e.response(req.ID, r, nil)
	e.putRun(r)
	if err != nil {
		return Response{ID: req.ID, Err: failure(err)}
	}
	return resp
}

// RunAll runs requests concurrently and returns their responses in order.
func (e *Engine) RunAll(ctx context.Context, reqs []Request) []Response {
	return e.RunAllLimit(ctx, reqs, 0)
}

// RunAllLimit is RunAll with at most limit requests in flight (0: all).
// The requests are announced to the groupers, so that a group closes as
// soon as no request of the batch can still join it, and they run on a
// pool of limit goroutines rather than one goroutine each.
func (e *Engine) RunAllLimit(ctx context.Context, reqs []Request, limit int) []Response {
	return e.RunBatch(ctx, reqs, BatchOptions{Limit: limit})
}

// companionsOfInputs maps the companions of the workflow's packed inputs
// (their levels' offsets and owners, their padded dimensions' lengths)
// to the first input that has each.
func companionsOfInputs(m *ir.Module) map[string]string {
	of := map[string]string{}
	for _, in := range m.Inputs {
		c := in.Contract
		if c == nil || c.Layout.Kind != ir.TokenPacked {
			continue
		}
		for _, name := range c.Companions() {
			if _, ok := of[name]; !ok && name != in.Name {
				of[name] = in.Name
			}
		}
	}
	return of
}

// MissingInput is the error of a request that leaves out required
// workflow input name, giving the inputs have: where name is a companion
// of a packed input, it says how to give it. A nil engine knows no
// companions.
func (e *Engine) MissingInput(name string, have ...string) error {
	if of, ok := e.companions()[name]; ok {
		return steps.MissingCompanion(name, of, have...)
	}
	return steps.Missing(name, have...)
}

func (e *Engine) companions() map[string]string {
	if e == nil {
		return nil
	}
	return e.companionOf
}
