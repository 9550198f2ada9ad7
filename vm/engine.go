package vm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
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
}

// Engine runs the workflow of a plan for many concurrent requests.
type Engine struct {
	file     *plan.File
	m        *ir.Module
	opts     Options
	backends Backends
	sessions map[string]backend.Session
	groupers map[string]*grouper
	specs    map[string]*componentSpec
	stats    map[string]*counter
	copies   map[string]*Copies
	closing  sync.Once
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
	e := &Engine{file: f, m: m, opts: opts, backends: backends, sessions: map[string]backend.Session{}, groupers: map[string]*grouper{},
		specs: map[string]*componentSpec{}, stats: map[string]*counter{}, copies: map[string]*Copies{}}
	for _, name := range invokedComponents(m) {
		if err := e.load(name, pkgDir); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
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
	spec := &componentSpec{comp: comp, gp: gp, m: e.m}
	e.specs[name] = spec
	e.stats[name] = newCounter(gp)
	e.copies[name] = &Copies{}
	if gp.Grouped {
		ready := e.opts.Declines.Apply(name, sess.Ready())
		e.groupers[name] = newGrouper(spec, sess, ready, e.opts.MaxDelay, e.opts.Solo, e.opts.Queue, e.opts.Workers, e.stats[name], e.copies[name])
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
		for _, s := range e.sessions {
			errs = append(errs, s.Close())
		}
	})
	return errors.Join(errs...)
}

// Stats returns what every component did so far.
func (e *Engine) Stats() Stats {
	out := Stats{Components: map[string]ComponentStats{}}
	for name, s := range e.stats {
		out.Components[name] = s.snapshot(e.copies[name].Bytes())
	}
	return out
}

// Copies returns the copy counters of a component (for tests and stats).
func (e *Engine) Copies(component string) *Copies { return e.copies[component] }

// Request is one request: values for the workflow inputs it supplies.
type Request struct {
	ID     string
	Inputs map[string]*backend.Tensor
}

// Response is a request's result: the workflow outputs it emitted, or the
// error that failed it.
type Response struct {
	ID      string
	Outputs map[string]*backend.Tensor
	Err     error
}

// Run executes the workflow for one request. Many goroutines may call Run
// at once; their items meet in the groupers.
func (e *Engine) Run(ctx context.Context, req Request) Response {
	r := &run{e: e, ctx: ctx, env: map[string]*backend.Tensor{}, outputs: map[string]*backend.Tensor{}}
	err := r.start(req)
	if err == nil {
		err = r.block(e.m.Body)
	}
	if err != nil {
		return Response{ID: req.ID, Err: err}
	}
	return Response{ID: req.ID, Outputs: r.outputs}
}

// RunAll runs requests concurrently and returns their responses in order.
func (e *Engine) RunAll(ctx context.Context, reqs []Request) []Response {
	return e.RunAllLimit(ctx, reqs, 0)
}

// RunAllLimit is RunAll with at most limit requests in flight (0: all).
func (e *Engine) RunAllLimit(ctx context.Context, reqs []Request, limit int) []Response {
	if limit <= 0 {
		limit = len(reqs)
	}
	out := make([]Response, len(reqs))
	slots := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range reqs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			out[i] = e.Run(ctx, reqs[i])
		}()
	}
	wg.Wait()
	return out
}
