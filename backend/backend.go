// Package backend is the one seam between genaic's runtime and what runs a
// component: the host Tensor, the Backend that loads a component into a
// Session, a session's Readiness for grouped execution, and the RunError
// that fails one request with a rule id of the catalogue. The ONNX Runtime
// backend, the preprocessing adapters and Go bindings implement it; the VM
// and generated executors call it. It imports only ir and the standard
// library.
package backend

import (
	"context"
	"fmt"
	"sync"

	"github.com/genaic/genaic/ir"
)

// Backend runs components. It is the one seam between the runtime and what
// executes a graph: ONNX Runtime (vm/ort), the preprocessing
// adapters (vm/adapters), Go functions (Bindings), or a
// test double.
type Backend interface {
	// Name identifies the backend in stats and messages.
	Name() string
	// Load prepares a component; pkgDir is the package folder its artifact
	// path is relative to.
	Load(comp *ir.Component, pkgDir string) (Session, error)
}

// Session is a loaded component.
type Session interface {
	// Run invokes the component once on named inputs and returns the named
	// outputs. The inputs belong to the caller and must not be retained;
	// the outputs belong to the runtime afterwards.
	Run(ctx context.Context, inputs map[string]*Tensor, outputs []string) (map[string]*Tensor, error)
	// Ready answers, before a group is formed, whether grouped execution is
	// ready for this component on this session's execution provider. A
	// session that says no never receives a group of more than one
	// request; the reason is counted.
	Ready() Readiness
	// Close releases the session.
	Close() error
}

// ShapeHinter is implemented by sessions that know their outputs' static
// extents (-1 where an extent is dynamic). The runtime uses it to give the
// empty shares of a group it never invokes the graph's own trailing extents.
type ShapeHinter interface {
	OutputShape(name string) []int64
}

// Readiness is a backend's answer about grouped execution.
type Readiness struct {
	Ready    bool
	Provider string // execution provider, such as cpu
	OpClass  string // operator class, such as encoder
	Reason   string // why not, when not ready
}

// Func is a component implemented in Go: a `binding` component, or a test
// double of an ONNX graph.
type Func func(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error)

// Bindings is the backend of `binding` components: Go functions the
// embedding application registers by component name.
type Bindings struct {
	mu    sync.RWMutex
	funcs map[string]Func
	// NotReady lists components whose grouped execution is declined, with
	// the reason (a readiness table for tests and configuration).
	NotReady map[string]string
}

// Register adds the function that implements component name.
func (b *Bindings) Register(name string, f Func) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.funcs == nil {
		b.funcs = map[string]Func{}
	}
	b.funcs[name] = f
}

// Name implements Backend.
func (b *Bindings) Name() string { return "binding" }

// Load implements Backend.
func (b *Bindings) Load(comp *ir.Component, _ string) (Session, error) {
	b.mu.RLock()
	f, ok := b.funcs[comp.Name]
	b.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no Go function is registered for component `%s`; register one with Bindings.Register(%q, f)", comp.Name, comp.Name)
	}
	r := Readiness{Ready: true, Provider: "go", OpClass: "binding"}
	if why, no := b.NotReady[comp.Name]; no {
		r.Ready, r.Reason = false, why
	}
	return &bindingSession{f: f, ready: r}, nil
}

type bindingSession struct {
	f     Func
	ready Readiness
}

func (s *bindingSession) Run(ctx context.Context, in map[string]*Tensor, outs []string) (map[string]*Tensor, error) {
	res, err := s.f(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if res[o] == nil {
			return nil, fmt.Errorf("the function returned no output %q", o)
		}
	}
	return res, nil
}

func (s *bindingSession) Ready() Readiness { return s.ready }
func (s *bindingSession) Close() error     { return nil }
