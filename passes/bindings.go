package passes

import (
	"reflect"

	"github.com/genaic/genaic/ir"
)

// BindingsPass records which value each step binds to each port and output,
// and which names steps read, once for every pass that asks.
var BindingsPass = &Pass{
	Name:       "bindings",
	Doc:        "record which value each invoke binds to each port, which output each emit writes, and which names steps read",
	Kind:       Check,
	ResultType: reflect.TypeFor[*Bindings](),
	Run:        func(c *Context) (any, error) { return buildBindings(c.Module), nil },
}

// Binding is one value an invoke binds to a port of its component: an
// argument to an input port, or a result from an output port.
type Binding struct {
	Step      *ir.Step
	Component string      // as the invoke names it
	Side      ir.SiteKind // ir.SitePortIn or ir.SitePortOut
	Port      string
	Value     string     // the value's name
	ID        ir.ValueID // ir.NoValue for an argument that names no visible value
	Loc       ir.Loc
}

// Bindings is the result of the bindings pass. Every list is in step order
// (document order, nested blocks after the step that holds them).
type Bindings struct {
	Invokes []Binding  // every invoke binding
	Emits   []*ir.Step // every emit step
	byPort  map[bindingKey][]int
	byValue map[string][]int
	writers map[string][]*ir.Step
	read    map[string]bool
}

type bindingKey struct {
	component string
	side      ir.SiteKind
	port      string
}

func buildBindings(m *ir.Module) *Bindings {
	b := &Bindings{byPort: map[bindingKey][]int{}, byValue: map[string][]int{},
		writers: map[string][]*ir.Step{}, read: readNames(m)}
	m.Body.Walk(func(s *ir.Step) bool {
		switch s.Op {
		case ir.OpInvoke:
			for _, a := range s.Args {
				b.add(Binding{Step: s, Component: s.Component.Name, Side: ir.SitePortIn, Port: a.Port, Value: a.Value.Name, ID: a.Value.ID, Loc: a.Loc})
			}
			for _, r := range s.Results {
				if v := m.Value(r.Value); v != nil {
					b.add(Binding{Step: s, Component: s.Component.Name, Side: ir.SitePortOut, Port: r.Port, Value: v.Name, ID: r.Value, Loc: r.Loc})
				}
			}
		case ir.OpEmit:
			b.Emits = append(b.Emits, s)
			b.writers[s.Output.Name] = append(b.writers[s.Output.Name], s)
		}
		return true
	})
	return b
}

func (b *Bindings) add(x Binding) {
	i := len(b.Invokes)
	b.Invokes = append(b.Invokes, x)
	k := bindingKey{x.Component, x.Side, x.Port}
	b.byPort[k] = append(b.byPort[k], i)
	b.byValue[x.Value] = append(b.byValue[x.Value], i)
}

func (b *Bindings) pick(is []int) []Binding {
	out := make([]Binding, len(is))
	for j, i := range is {
		out[j] = b.Invokes[i]
	}
	return out
}

// ToPort returns what every invoke of component binds to its port on side
// (ir.SitePortIn or ir.SitePortOut).
func (b *Bindings) ToPort(component string, side ir.SiteKind, port string) []Binding {
	return b.pick(b.byPort[bindingKey{component, side, port}])
}

// OfValue returns every port the value called name is bound to.
func (b *Bindings) OfValue(name string) []Binding { return b.pick(b.byValue[name]) }

// PortOf returns the port of component that a name in one of its contracts
// on side stands for through invoke bindings: the port the first invoke of
// the component binding the value called name binds it to, or "".
func (b *Bindings) PortOf(component string, side ir.SiteKind, name string) string {
	for _, i := range b.byValue[name] {
		if x := b.Invokes[i]; x.Component == component && x.Side == side {
			return x.Port
		}
	}
	return ""
}

// ResultNames returns the names of the values that invokes of component
// take from its output port, in step order: for an adapter, the workflow
// names its preprocessing outputs arrive under.
func (b *Bindings) ResultNames(component, port string) []string {
	var out []string
	for _, x := range b.ToPort(component, ir.SitePortOut, port) {
		out = append(out, x.Value)
	}
	return out
}

// Writers returns the emit steps that write the output called name.
func (b *Bindings) Writers(name string) []*ir.Step { return b.writers[name] }

// Read reports whether some step, cell initializer or serving declaration
// reads the value called name.
func (b *Bindings) Read(name string) bool { return b.read[name] }

// readNames returns the names of the values that some step, cell
// initializer or serving declaration reads.
func readNames(m *ir.Module) map[string]bool {
	read := map[string]bool{}
	if sv := m.Serving; sv != nil {
		read[sv.Active.Name], read[sv.Done.Name], read[sv.AcceptedLen.Name] = true, true, true
	}
	m.Body.Walk(func(s *ir.Step) bool {
		for _, u := range s.Uses() {
			read[u.Name] = true
		}
		return true
	})
	for _, c := range m.Cells {
		read[c.Initializer.Name] = true
	}
	return read
}
