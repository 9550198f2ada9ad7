package vm

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
)

// Outputs are the workflow outputs a request emitted, by name.
//
// The responses of one engine share its table of output names and each
// holds one value per name (nil where the request emitted nothing), carved
// with its lockstep window's others from one slice: answering a request
// allocates no map. Iteration follows the workflow's order of outputs. The
// zero value holds none.
type Outputs struct {
	names *OutputNames
	vals  []*backend.Tensor
}

// OutputNames is a table of output names, shared by the Outputs of many
// responses (an engine's, or a generated executor's).
type OutputNames struct {
	list []string
	at   map[string]int // nil where the list is short enough to scan
}

// scanNames is the longest list of names looked up by scanning it.
const scanNames = 8

// NewOutputNames makes a table of the given names, which it keeps.
func NewOutputNames(list ...string) *OutputNames {
	n := &OutputNames{list: list}
	if len(list) > scanNames {
		n.at = make(map[string]int, len(list))
		for i, name := range list {
			n.at[name] = i
		}
	}
	return n
}

// Outputs holds vals, one per name of the table in its order (nil where
// none was emitted); it keeps vals.
func (n *OutputNames) Outputs(vals []*backend.Tensor) Outputs {
	return Outputs{names: n, vals: vals[:len(n.list):len(n.list)]}
}

// index is where name's value is, or -1.
func (n *OutputNames) index(name string) int {
	if n.at != nil {
		if i, ok := n.at[name]; ok {
			return i
		}
		return -1
	}
	for i, s := range n.list {
		if s == name {
			return i
		}
	}
	return -1
}

// OutputsOf holds the outputs of m (nil values left out), in the order of
// their names.
func OutputsOf(m map[string]*backend.Tensor) Outputs {
	var names []string
	for name, t := range m {
		if t != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return Outputs{}
	}
	slices.Sort(names)
	vals := make([]*backend.Tensor, len(names))
	for i, name := range names {
		vals[i] = m[name]
	}
	return NewOutputNames(names...).Outputs(vals)
}

// Lookup returns the output named name and whether the request emitted it.
func (o Outputs) Lookup(name string) (*backend.Tensor, bool) {
	if o.names == nil {
		return nil, false
	}
	i := o.names.index(name)
	if i < 0 || o.vals[i] == nil {
		return nil, false
	}
	return o.vals[i], true
}

// Get returns the output named name, or nil if the request emitted none.
func (o Outputs) Get(name string) *backend.Tensor {
	t, _ := o.Lookup(name)
	return t
}

// Len is the number of outputs the request emitted.
func (o Outputs) Len() int {
	n := 0
	for _, t := range o.vals {
		if t != nil {
			n++
		}
	}
	return n
}

// All yields every output the request emitted with its name.
func (o Outputs) All() iter.Seq2[string, *backend.Tensor] {
	return func(yield func(string, *backend.Tensor) bool) {
		for i, t := range o.vals {
			if t != nil && !yield(o.names.list[i], t) {
				return
			}
		}
	}
}

// Names yields the names of the outputs the request emitted.
func (o Outputs) Names() iter.Seq[string] {
	return func(yield func(string) bool) {
		for name := range o.All() {
			if !yield(name) {
				return
			}
		}
	}
}

// Map returns the outputs in a new map (nil when there are none).
func (o Outputs) Map() map[string]*backend.Tensor {
	if o.Len() == 0 {
		return nil
	}
	return maps.Collect(o.All())
}

// keep returns the outputs whose names pass, in new values over the same
// names.
func (o Outputs) keep(pass func(name string) bool) Outputs {
	if o.names == nil {
		return o
	}
	vals := make([]*backend.Tensor, len(o.vals))
	for i, t := range o.vals {
		if t != nil && pass(o.names.list[i]) {
			vals[i] = t
		}
	}
	return Outputs{names: o.names, vals: vals}
}

// MarshalJSON encodes the outputs as the map of their names they stand
// for, as a response's map encoded before.
func (o Outputs) MarshalJSON() ([]byte, error) {
	if o.Len() == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(o.Map())
}

// String formats the outputs as a map of their names.
func (o Outputs) String() string {
	var b strings.Builder
	b.WriteString("map[")
	sep := ""
	for name, t := range o.All() {
		fmt.Fprintf(&b, "%s%s:%v", sep, name, t)
		sep = " "
	}
	b.WriteString("]")
	return b.String()
}
