// Package genrt is what executors written by `genaic gen` call besides the
// VM itself: opening an engine on their embedded plan (engine.Open, as
// `genaic run` does), the options of their New, the request and response
// documents of `genaic run`, and the run-time errors of the interpreter,
// word for word.
//
// A generated executor runs its workflow as straight-line Go; every invoke
// goes through vm.Engine.InvokeHolding, so admission, grouping and
// splitting are the VM's own. This package holds the few pieces of the
// interpreter that straight-line code still needs (a branch key, a loop's
// continue test) so that an executor and the VM answer every request
// alike.
package genrt

import (
	"errors"
	"fmt"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// DefaultMaxDelay is how long a group waits for more items unless
// WithMaxDelay says otherwise; it is the default of `genaic run`.
const DefaultMaxDelay = 5 * time.Millisecond

// Option configures a generated executor: the options of engine.Open.
type Option func(*engine.Options)

// WithSolo runs every invocation with exactly one request (the reference
// mode of `genaic run --solo`).
func WithSolo() Option { return func(o *engine.Options) { o.Solo = true } }

// WithMaxDelay sets how long a group waits for more items.
func WithMaxDelay(d time.Duration) Option { return func(o *engine.Options) { o.MaxDelay = d } }

// WithObserver tells o of every queue wait and invocation as it happens
// (a service's metrics: serve.NewEngineMetrics makes such an observer).
func WithObserver(o vm.Observer) Option { return func(opts *engine.Options) { opts.Observer = o } }

// WithQueue bounds each grouped component's queue of waiting items.
func WithQueue(n int) Option { return func(o *engine.Options) { o.Queue = n } }

// WithWorkers lets n groups of one component be formed and run at once.
// Where the backend configuration leaves ONNX Runtime's threads at 0,
// Open divides the cores among the n (engine.Divide), as --workers does:
// left to ONNX Runtime, each worker's threads would take every core.
func WithWorkers(n int) Option { return func(o *engine.Options) { o.Workers = n } }

// WithBackend runs the components of one implementation kind on b: Go
// functions for binding components (a *backend.Bindings), or a test double
// in place of ONNX Runtime.
func WithBackend(kind ir.ImplKind, b backend.Backend) Option {
	return func(o *engine.Options) {
		if o.Use == nil {
			o.Use = map[ir.ImplKind]backend.Backend{}
		}
		o.Use[kind] = b
	}
}

// WithBackendNamed runs the components of one implementation kind on the
// registered backend called name (engine.Registered lists them).
func WithBackendNamed(kind ir.ImplKind, name string) Option {
	return func(o *engine.Options) {
		if o.Backends == nil {
			o.Backends = map[ir.ImplKind]string{}
		}
		o.Backends[kind] = name
	}
}

// WithBackendConfig configures the backends New makes: the execution
// provider, ONNX Runtime's thread counts and library path, Go bindings.
func WithBackendConfig(c engine.Config) Option { return func(o *engine.Options) { o.Config = c } }

// WithDecline declines grouped execution where key matches (component,
// operator class, execution provider; an empty field matches anything):
// those components run one request per invocation and the decline is
// counted with reason.
func WithDecline(key backend.ReadinessKey, reason string) Option {
	return func(o *engine.Options) {
		if o.Declines == nil {
			o.Declines = backend.Declines{}
		}
		o.Declines[key] = reason
	}
}

// WithExecution runs as x says (engine.PlanExecution's choice, or one made
// by hand): its slots, its ONNX Runtime intra-op threads, its ungrouped
// components. It sets the threads of the backend configuration, so it goes
// after WithBackendConfig.
func WithExecution(x *vm.Execution) Option {
	return func(o *engine.Options) { *o = engine.Apply(*o, x) }
}

// Open decodes an executor's embedded plan, checks it against the package
// folder (the metadata document and every artifact must be the files the
// executor was generated from) and opens it with engine.Open, as `genaic
// run` does.
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
	o := engine.Options{Options: vm.Options{MaxDelay: DefaultMaxDelay}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.Workers > 0 && o.Config.IntraOpThreads == 0 && o.Execution == nil {
		o = engine.Apply(o, engine.Divide(o.Workers, 0, engine.CPUs()))
	}
	return engine.Open(f, packageDir, o)
}
