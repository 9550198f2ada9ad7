// Package backends assembles the backends a workflow needs: ONNX Runtime
// for onnx components, the built-in preprocessing adapters for adapter
// components. The CLI and generated executors share it, so both run the
// same workflow on the same backends.
package backends

import (
	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/adapters"
	"github.com/genaic/genaic/vm/ort"
)

// For returns a backend for every implementation kind m invokes, except
// those given in overrides (which are kept as they are). ONNX Runtime is
// started only when an onnx component is invoked, so a workflow without
// one runs where the library is missing. Binding components need the
// application's functions: pass a *backend.Bindings in overrides.
func For(m *ir.Module, ortOpts ort.Options, overrides map[ir.ImplKind]backend.Backend) (map[ir.ImplKind]backend.Backend, error) {
	out := map[ir.ImplKind]backend.Backend{}
	for k, b := range overrides {
		out[k] = b
	}
	kinds := Invoked(m)
	if kinds[ir.ImplONNX] && out[ir.ImplONNX] == nil {
		b, err := ort.New(ortOpts)
		if err != nil {
			return nil, err
		}
		out[ir.ImplONNX] = b
	}
	if kinds[ir.ImplAdapter] && out[ir.ImplAdapter] == nil {
		out[ir.ImplAdapter] = adapters.New(m)
	}
	return out, nil
}

// Invoked returns the implementation kinds of the components m invokes.
func Invoked(m *ir.Module) map[ir.ImplKind]bool {
	kinds := map[ir.ImplKind]bool{}
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke {
			if c := m.Component(s.Component.Name); c != nil {
				kinds[c.Impl] = true
			}
		}
		return true
	})
	return kinds
}
