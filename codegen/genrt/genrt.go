// Package genrt is what executors written by `genaic gen` call besides the
// VM itself: opening an engine on their embedded plan, the options of their
// New, the request and response documents of `genaic run`, and the
// run-time errors of the interpreter, word for word.
//
// A generated executor runs its workflow as straight-line Go; every invoke
// goes through vm.Engine.Invoke, so admission, grouping and splitting are
// the VM's own. This package holds the few pieces of the interpreter that
// straight-line code still needs (a branch key, a loop's continue test) so
// that an executor and the VM answer every request alike.
package genrt

import (
	"errors"
	"fmt"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/backends"
	"github.com/genaic/genaic/vm/ort"
)

// DefaultMaxDelay is how long a group waits for more items unless
// WithMaxDelay says otherwise; it is the default of `genaic run`.
const DefaultMaxDelay = 5 * time.Millisecond

// Config is what the options of a generated New set.
type Config struct {
	// Backends run components by implementation kind. ONNX Runtime runs
	// onnx components unless a backend for them is given.
	Backends map[ir.ImplKind]backend.Backend
	// ORT configures the ONNX Runtime backend New creates.
	ORT ort.Options
	// Solo runs every invocation with exactly one request.
	Solo bool
	// MaxDelay is how long a grouper waits for more items.
	MaxDelay time.Duration
	// Queue bounds each grouper's queue; 0 means the VM's default.
	Queue int
}

// Option configures a generated executor.
type Option func(*Config)

// WithSolo runs every invocation with exactly one request (the reference
// mode of `genaic run --solo`).
func WithSolo() Option { return func(c *Config) { c.Solo = true } }

// WithMaxDelay sets how long a group waits for more items.
func WithMaxDelay(d time.Duration) Option { return func(c *Config) { c.MaxDelay = d } }

// WithQueue bounds each grouped component's queue of waiting items.
func WithQueue(n int) Option { return func(c *Config) { c.Queue = n } }

// WithBackend runs the components of one implementation kind on b: Go
// functions for binding components (a *backend.Bindings), or a test double in
// place of ONNX Runtime.
func WithBackend(kind ir.ImplKind, b backend.Backend) Option {
	return func(c *Config) {
		if c.Backends == nil {
			c.Backends = map[ir.ImplKind]backend.Backend{}
		}
		c.Backends[kind] = b
	}
}

// WithORTOptions configures the ONNX Runtime backend: thread counts, the
// library path, the readiness table.
func WithORTOptions(o ort.Options) Option { return func(c *Config) { c.ORT = o } }

// Open decodes an executor's embedded plan, checks it against the package
// folder (the metadata document and every artifact must be the files the
// executor was generated from) and opens an engine on it. ONNX Runtime is
// found as `genaic run` finds it ($ONNXRUNTIME_LIB, then the cache of
// "make setup") when the workflow invokes an onnx component and no backend
// for them was given.
func Open(planJSON []byte, packageDir string, opts []Option) (*vm.Engine, error) {
	f, err := plan.Decode("the embedded plan", planJSON)
	if err != nil {
		return nil, err
	}
	if err := f.CheckPackage(packageDir); err != nil {
		if errors.Is(err, plan.ErrStale) {
			return nil, fmt.Errorf("%w; then regenerate the executor with `genaic gen`", err)
		}
		return nil, err
	}
	cfg := Config{MaxDelay: DefaultMaxDelay}
	for _, o := range opts {
		o(&cfg)
	}
	backends, err := backendsFor(f, cfg)
	if err != nil {
		return nil, err
	}
	return vm.Open(f, packageDir, vm.Options{Backends: backends, Solo: cfg.Solo, MaxDelay: cfg.MaxDelay, Queue: cfg.Queue})
}

// backendsFor adds ONNX Runtime to the given backends when the workflow
// needs it and none was given.
func backendsFor(f *plan.File, cfg Config) (map[ir.ImplKind]backend.Backend, error) {
	m := f.IR
	return backends.For(m, cfg.ORT, cfg.Backends)
}
