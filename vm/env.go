package vm

import (
	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// slots numbers the names a request's environment binds (workflow inputs,
// state cells, the values steps define), once per engine, so that a
// request holds its values in a slice rather than a map keyed by name.
// Names, not value ids, are the keys, as they always were: a cell and the
// values a loop carries into it share one name and so one slot.
type slots struct {
	byName  map[string]int
	byValue []int // by ValueID: the slot of the value's name
	inputs  []int // by position in Module.Inputs
	cells   []int // by position in Module.Cells
}

func newSlots(m *ir.Module) *slots {
	s := &slots{byName: map[string]int{}}
	slot := func(name string) int {
		k, ok := s.byName[name]
		if !ok {
			k = len(s.byName)
			s.byName[name] = k
		}
		return k
	}
	for _, in := range m.Inputs {
		s.inputs = append(s.inputs, slot(in.Name))
	}
	for _, c := range m.Cells {
		s.cells = append(s.cells, slot(c.Name))
	}
	s.byValue = make([]int, len(m.Values))
	for i, v := range m.Values {
		s.byValue[i] = slot(v.Name)
	}
	return s
}

// use returns the slot a use reads, and false for a name nothing binds.
func (s *slots) use(u ir.Use) (int, bool) {
	if u.ID >= 0 && int(u.ID) < len(s.byValue) {
		return s.byValue[u.ID], true
	}
	k, ok := s.byName[u.Name]
	return k, ok
}

// lookup returns the value bound to name in vals, nil when none is.
func (s *slots) lookup(vals []*backend.Tensor, name string) *backend.Tensor {
	if k, ok := s.byName[name]; ok {
		return vals[k]
	}
	return nil
}

// set binds a value to the slot of its name.
func (r *run) set(name string, t *backend.Tensor) {
	if k, ok := r.e.slots.byName[name]; ok {
		r.vals[k] = t
	}
}

// setValue binds the value a step defines.
func (r *run) setValue(v ir.ValueID, t *backend.Tensor) { r.vals[r.e.slots.byValue[v]] = t }

// lookup is the environment as admission reads it: by name.
func (r *run) lookup(name string) *backend.Tensor { return r.e.slots.lookup(r.vals, name) }

// named is a workflow value a companion names: in its slot, when one was
// found for it, else by name (values).
func (r *run) named(name string, slot int) *backend.Tensor {
	if slot >= 0 {
		return r.vals[slot]
	}
	return r.lookup(name)
}
