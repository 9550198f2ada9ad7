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
	"slices"
	"strings"
	"time"

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
	// outputs. The inputs and the list of output names belong to the
	// caller and must not be retained or changed; the outputs belong to
	// the runtime afterwards.
	Run(ctx context.Context, inputs map[string]*Tensor, outputs []string) (map[string]*Tensor, error)
	// Ready answers, before a group is formed, whether grouped execution is
	// ready for this component on this session's execution provider. A
	// session that says no never receives a group of more than one
	// request; the reason is counted.
	Ready() Readiness
	// Close releases the session.
	Close() error
}

// PortSession is implemented by sessions that also run on tensors by
// port position: the runtime's runners call it once per group, with no
// map built, hashed or allocated per call. A run through it is the run
// Run makes of the same tensors.
type PortSession interface {
	Session
	// Ports lists the graph's inputs and outputs in the order RunPorts
	// takes and gives them. The lists are the session's: read, never
	// changed.
	Ports() (inputs, outputs []string)
	// RunPorts invokes the component once on ins (ins[i] is the tensor of
	// input i) and sets outs[j] to output j for every j with want[j] (nil
	// want: every output), leaving the others nil. ins, want and outs
	// belong to the caller, who may reuse them once RunPorts returns; the
	// output tensors belong to the runtime afterwards, as Run's do.
	RunPorts(ctx context.Context, ins []*Tensor, want []bool, outs []*Tensor) error
}

// Recycler is implemented by port sessions whose RunPorts outputs may be
// given back: once nothing reads an output any more (every request that
// got a view of it has released its response), the runtime hands it back
// with Recycle, and a later RunPorts may write its outputs into the same
// memory, which is then warm in the cache and costs the collector
// nothing. Only tensors RunPorts returned are given back, each once, and
// never read again by the runtime.
type Recycler interface {
	PortSession
	Recycle(outs []*Tensor)
}

// ShapeHinter is implemented by sessions that know their outputs' static
// extents (-1 where an extent is dynamic). The runtime uses it to give the
// empty shares of a group it never invokes the graph's own trailing extents.
type ShapeHinter interface {
	OutputShape(name string) []int64
}

// InputShaper is implemented by sessions that know their inputs' static
// extents (-1 where an extent is dynamic). The runtime pads a padded axis
// that the graph fixes (a text encoder exported with its sequence length
// fixed, say) to that extent rather than to its group's longest item, and
// forms no group where the graph fixes the axis requests stack on.
type InputShaper interface {
	InputShape(name string) []int64
}

// Keyer is implemented by sessions whose inputs decide extents of what
// they make that one invocation cannot mix: an image adapter whose resize
// keeps each image's aspect makes every image as wide as its aspect says,
// and a pixels port that does not pad the width stacks images of one width
// only. Key returns the key of an invocation of exactly these inputs ("" when
// anything may share one), reading no more of them than it needs (an
// image's header, not its pixels); it fails with run/input when the
// inputs' own items already disagree. The runtime never puts two requests
// of different keys in one invocation, and splits a request given as items
// into one part per key (DESIGN §9).
type Keyer interface {
	Key(inputs map[string]*Tensor) (string, error)
}

// WholeKeyer is implemented by a Keyer whose unit is what a request
// brings together, not each of its items: a video adapter's clip is all
// the frames a request gives. Where KeysWhole is true, the runtime keys
// such a request whole, at admission, and never packs one of its items
// alone to key it, which would have Key judge a unit that is none (a clip
// of one frame); the request's items then run as one part.
type WholeKeyer interface {
	KeysWhole() bool
}

// KeyDescriber is implemented by a Keyer whose keys follow a rule its
// ports fix when it loads: KeyedBy names, one phrase each, the extents it
// keys an invocation's items by ("width of `lines`"), so that a plan can
// state what its Key will do; none where every item may share.
type KeyDescriber interface {
	KeyedBy() []string
}

// Timed is implemented by sessions that count the time their runs spent
// in the backend's own work (for ONNX Runtime, inside its Run): what is
// left of a component's run time is the runtime's. BackendTime is the sum
// since the session was loaded; it may be read while runs go on.
type Timed interface {
	BackendTime() time.Duration
}

// Readiness is a backend's answer about grouped execution of one
// component: ready or not (and why), on which execution provider, for
// which class of operator.
type Readiness struct {
	Ready    bool
	Provider string // execution provider, such as cpu or cuda
	OpClass  string // operator class, such as onnx-graph or preprocess-image
	Reason   string // why not, when not ready
}

// ReadinessKey is what a readiness decision is keyed by (DESIGN §6): the
// component, the operator class and the execution provider. An empty field
// of a key in a Declines table matches any value.
type ReadinessKey struct {
	Component, OpClass, Provider string
}

func (k ReadinessKey) String() string {
	word := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	return word(k.Component) + "/" + word(k.OpClass) + "/" + word(k.Provider)
}

// matches reports whether k, whose empty fields are wildcards, covers key.
func (k ReadinessKey) matches(key ReadinessKey) bool {
	return (k.Component == "" || k.Component == key.Component) &&
		(k.OpClass == "" || k.OpClass == key.OpClass) &&
		(k.Provider == "" || k.Provider == key.Provider)
}

// before orders matching keys: more fields set first, then by String.
func (k ReadinessKey) before(o ReadinessKey) bool {
	if a, b := k.set(), o.set(); a != b {
		return a > b
	}
	return k.String() < o.String()
}

func (k ReadinessKey) set() int {
	n := 0
	for _, f := range []string{k.Component, k.OpClass, k.Provider} {
		if f != "" {
			n++
		}
	}
	return n
}

// ParseReadinessKey reads COMPONENT[/OPCLASS[/PROVIDER]], where * (or an
// empty field) matches anything.
func ParseReadinessKey(s string) (ReadinessKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) > 3 || s == "" {
		return ReadinessKey{}, fmt.Errorf("want COMPONENT[/OPCLASS[/PROVIDER]] (* matches anything), got %q", s)
	}
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	for i, p := range parts {
		if p == "*" {
			parts[i] = ""
		}
	}
	return ReadinessKey{Component: parts[0], OpClass: parts[1], Provider: parts[2]}, nil
}

// Declines is a readiness table configured by an operator: grouped
// execution is declined wherever a key matches, for the reason it gives.
// A component whose grouped execution is declined still runs, one request
// per invocation; the decline is counted with its reason.
type Declines map[ReadinessKey]string

// Apply returns a session's readiness for component with the table's
// declines applied: a backend's own "not ready" stands; otherwise the most
// specific matching key (the most fields set; then the least String)
// declines with its reason.
func (d Declines) Apply(component string, r Readiness) Readiness {
	return d.ApplyOps(component, nil, r)
}

// ApplyOps is Apply for a component whose graph uses the operator types
// ops (the plan's, plan.File.Ops): a key's operator class matches the
// session's own class or any of these types, so an operator can decline
// grouped execution of every graph that uses it on a provider ("*/Conv/cuda",
// "*/com.microsoft:Attention/cpu").
func (d Declines) ApplyOps(component string, ops []string, r Readiness) Readiness {
	if !r.Ready {
		return r
	}
	var match *ReadinessKey
	for k := range d {
		if !k.matches(ReadinessKey{Component: component, OpClass: r.OpClass, Provider: r.Provider}) &&
			!slices.ContainsFunc(ops, func(op string) bool {
				return k.OpClass != "" && k.matches(ReadinessKey{Component: component, OpClass: op, Provider: r.Provider})
			}) {
			continue
		}
		if match == nil || k.before(*match) {
			match = &k
		}
	}
	if match != nil {
		r.Ready, r.Reason = false, d[*match]
	}
	return r
}

// Func is a component implemented in Go: a `binding` component, or a test
// double of an ONNX graph.
type Func func(ctx context.Context, inputs map[string]*Tensor) (map[string]*Tensor, error)
