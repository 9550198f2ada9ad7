// Package engine opens a compiled plan for serving: it makes the backends
// the workflow needs, each chosen by name from one registry, and starts the
// VM on them. `genaic run`, `genaic bench` and generated executors all open
// plans here, so they run a workflow on the same backends with the same
// options.
package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
	"github.com/genaic/genaic/vm/ort"
)

// Options configure Open.
type Options struct {
	// Options say how the VM groups: solo, max delay, queue, workers, and
	// the readiness table (declines by component, operator class and
	// execution provider).
	vm.Options
	// Backends names the registered backend that runs each implementation
	// kind; a kind left out gets its default (Defaults).
	Backends map[ir.ImplKind]string
	// Use gives ready-made backends for some kinds (tests, applications
	// with a backend of their own); they win over Backends.
	Use map[ir.ImplKind]backend.Backend
	// Config is what registered backends are made with: execution
	// provider, thread counts, library path, Go bindings.
	Config Config
}

// Config is what a registered backend is made with. A backend reads the
// fields that concern it.
type Config struct {
	// Provider is the execution provider (ONNX Runtime: cpu, cuda,
	// tensorrt, ...); "" means cpu.
	Provider string
	// IntraOpThreads and InterOpThreads size ONNX Runtime's thread pools;
	// 0 keeps its defaults.
	IntraOpThreads, InterOpThreads int
	// LibraryPath is the ONNX Runtime shared library; "" finds it as
	// `genaic run` does ($ONNXRUNTIME_LIB, then the cache of make setup).
	LibraryPath string
	// Bindings are the Go functions of binding components.
	Bindings *backend.Bindings
	// MaxMediaBytes is the memory one request's decoded media may take in
	// the preprocessing adapters (adapters.Backend.MaxMediaBytes); 0 keeps
	// their default.
	MaxMediaBytes int64
}

// Factory makes a backend: Name is what Options.Backends and the command
// line call it, Kinds the implementation kinds it runs.
type Factory struct {
	Name  string
	Kinds []ir.ImplKind
	Doc   string
	// New makes the backend for the workflow of m.
	New func(m *ir.Module, c Config) (backend.Backend, error)
}

// Defaults are the registered backends each implementation kind runs on
// unless Options.Backends says otherwise.
var Defaults = map[ir.ImplKind]string{
	ir.ImplONNX:    "onnxruntime",
	ir.ImplAdapter: "preprocess",
	ir.ImplBinding: "go",
}

var registry = struct {
	sync.RWMutex
	byName map[string]Factory
}{byName: map[string]Factory{}}

func init() {
	for _, f := range []Factory{
		{Name: "onnxruntime", Kinds: []ir.ImplKind{ir.ImplONNX}, Doc: "ONNX Runtime through onnxruntime_go, on the configured execution provider",
			New: func(_ *ir.Module, c Config) (backend.Backend, error) {
				return ort.New(ort.Options{IntraOpThreads: c.IntraOpThreads, InterOpThreads: c.InterOpThreads, LibraryPath: c.LibraryPath, Provider: c.Provider})
			}},
		{Name: "preprocess", Kinds: []ir.ImplKind{ir.ImplAdapter}, Doc: "the built-in image, video and audio preprocessing adapters (DESIGN §9), run in Go",
			New: func(m *ir.Module, c Config) (backend.Backend, error) {
				b := adapters.New(m)
				b.MaxMediaBytes = c.MaxMediaBytes
				return b, nil
			}},
		{Name: "go", Kinds: []ir.ImplKind{ir.ImplBinding, ir.ImplONNX}, Doc: "Go functions the application registers (Config.Bindings), by component name",
			New: func(_ *ir.Module, c Config) (backend.Backend, error) {
				if c.Bindings == nil {
					return nil, fmt.Errorf("the go backend runs Go functions the application registers, and none were given: pass a *backend.Bindings in the engine's Config.Bindings")
				}
				return c.Bindings, nil
			}},
	} {
		if err := Register(f); err != nil {
			panic(err)
		}
	}
}

// Register adds a backend to the registry. A name is registered once.
func Register(f Factory) error {
	if f.Name == "" || f.New == nil || len(f.Kinds) == 0 {
		return fmt.Errorf("engine.Register: a backend needs a name, the kinds it runs and a New function")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byName[f.Name]; dup {
		return fmt.Errorf("engine.Register: a backend called %q is already registered", f.Name)
	}
	registry.byName[f.Name] = f
	return nil
}

// Registered returns the registered backends, sorted by name.
func Registered() []Factory {
	registry.RLock()
	defer registry.RUnlock()
	return slices.SortedFunc(maps.Values(registry.byName), func(a, b Factory) int { return strings.Compare(a.Name, b.Name) })
}

// Lookup returns the registered backend called name.
func Lookup(name string) (Factory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.byName[name]
	return f, ok
}

// Open makes the backends the plan's workflow invokes and opens the VM on
// it. Only the kinds the workflow invokes are made, so a workflow without
// onnx components runs where ONNX Runtime is missing. The plan must already
// be checked against its package in pkgDir (plan.Load does it).
func Open(f *plan.File, pkgDir string, opts Options) (*vm.Engine, error) {
	if f.IR == nil {
		return nil, fmt.Errorf("the plan holds no IR")
	}
	bes, err := Backends(f.IR, opts)
	if err != nil {
		return nil, err
	}
	return vm.Open(f, pkgDir, bes, opts.Options)
}

// Backends makes a backend for every implementation kind m invokes.
func Backends(m *ir.Module, opts Options) (vm.Backends, error) {
	out := vm.Backends{}
	for _, kind := range Invoked(m) {
		if b := opts.Use[kind]; b != nil {
			out[kind] = b
			continue
		}
		name := opts.Backends[kind]
		if name == "" {
			name = Defaults[kind]
		}
		fac, ok := Lookup(name)
		if !ok {
			return nil, fmt.Errorf("no backend called %q is registered; registered: %s", name, names())
		}
		if !slices.Contains(fac.Kinds, kind) {
			return nil, fmt.Errorf("backend %q runs %s components, not %s components", name, kindList(fac.Kinds), kind)
		}
		b, err := fac.New(m, opts.Config)
		if err != nil {
			return nil, err
		}
		out[kind] = b
	}
	return out, nil
}

// Invoked returns the implementation kinds of the components m invokes, in
// kind order.
func Invoked(m *ir.Module) []ir.ImplKind {
	seen := map[ir.ImplKind]bool{}
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke {
			if c := m.Component(s.Component.Name); c != nil {
				seen[c.Impl] = true
			}
		}
		return true
	})
	return slices.Sorted(maps.Keys(seen))
}

func names() string {
	var out []string
	for _, f := range Registered() {
		out = append(out, f.Name)
	}
	return strings.Join(out, ", ")
}

func kindList(kinds []ir.ImplKind) string {
	words := make([]string, len(kinds))
	for i, k := range kinds {
		words[i] = k.String()
	}
	return strings.Join(words, " and ")
}
