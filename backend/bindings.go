package backend

import (
	"context"
	"fmt"
	"sync"

	"github.com/genaic/genaic/ir"
)

// Bindings is the backend of `binding` components: Go functions the
// embedding application registers by component name.
type Bindings struct {
	mu    sync.RWMutex
	funcs map[string]Func
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
	return &bindingSession{f: f, ready: Readiness{Ready: true, Provider: "go", OpClass: "binding"}}, nil
}

type bindingSession struct {
	f     Func
	ready Readiness
}

func (s *bindingSession) Run(ctx context.Context, in map[string]*Tensor, outs []string) (res map[string]*Tensor, err error) {
	// A registered function that panics fails the call it was given, as an
	// error would: the runtime then runs that group's requests alone, and
	// only the one that makes it panic fails (run/backend), instead of the
	// process (or, with a deferred Close above it, a hang).
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &RunError{Rule: RunBackend, Message: fmt.Sprintf("the Go function panicked: %v", p)}
		}
	}()
	res, err = s.f(ctx, in)
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
