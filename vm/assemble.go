package vm

import (
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
)

// group is one assembled invocation: the items in order, the tensors passed
// to the component, and what splitting needs to find each item's share.
type group struct {
	items []*item
	// ins holds the tensors passed to the component, by input position.
	ins []*backend.Tensor
	// offsets holds the group's recomputed offsets per packed input port
	// and level.
	offsets map[string][][]int64
	// padded and real count elements of padded inputs (padding overhead).
	padded, real int64
	// elems counts the elements of every payload input as assembled
	// (padding included), realElems those the items brought.
	elems, realElems int64
	// scratch is working room that assembling and splitting reuse, port
	// after port; an arena's group keeps it from one group to the next.
	scratch groupScratch
	// copies counts what assembling and splitting the group copy.
	copies *Copies
}

// groupScratch holds lists that live only through one step of assembling
// or splitting a port.
type groupScratch struct {
	tensors []*backend.Tensor
	flags   []bool
	spans   [][2]int64
	levels  [][]int64
}

// tensorsOf lists the items' tensors of input port at, or their lengths
// tensors of padding entry pad when pad >= 0, in the scratch.
func (g *group) tensorsOf(items []*item, at, pad int) []*backend.Tensor {
	ts := g.scratch.tensors[:0]
	for _, it := range items {
		if pad >= 0 {
			ts = append(ts, it.ports[at].lengths[pad])
		} else {
			ts = append(ts, it.ports[at].t)
		}
	}
	g.scratch.tensors = ts
	return ts
}

// padAxes returns n flags in the scratch, all false.
func (g *group) padAxes(n int) []bool {
	f := slices.Grow(g.scratch.flags[:0], n)[:n]
	clear(f)
	g.scratch.flags = f
	return f
}

// spans returns room for one span per item in the scratch.
func (g *group) spans() [][2]int64 {
	sp := slices.Grow(g.scratch.spans[:0], len(g.items))[:len(g.items)]
	g.scratch.spans = sp
	return sp
}

// assemble builds one invocation from compatible items (§6 Assembly):
// packed ports are concatenated and their companions recomputed, padded
// dimensions are allocated at the group's maximum with zero fill, rows are
// stacked, and shared inputs are passed once. Stacked, packed and padded
// inputs go into the buffers of a (nil: fresh ones).
func (s *componentSpec) assemble(items []*item, copies *Copies, a *arena) (*group, error) {
	g := a.group(items, len(s.gp.Inputs))
	g.copies = copies
	for i := range s.gp.Inputs {
		in := &s.gp.Inputs[i]
		switch in.Role {
		case plan.RoleBroadcast:
			g.ins[i] = items[0].ports[i].t
		case plan.RoleRows, plan.RoleExpanded, plan.RolePacked:
			var padTo []int64
			if i < len(s.padTo) {
				padTo = s.padTo[i]
			}
			t, err := g.concat(i, in, items, padTo, copies, a)
			if err != nil {
				return nil, err
			}
			g.ins[i] = t
		}
	}
	for i := range s.gp.Inputs {
		if in := &s.gp.Inputs[i]; in.Role == plan.RolePacked {
			g.composeLevels(i, in, items, a)
		}
	}
	for i := range s.gp.Inputs {
		if in := &s.gp.Inputs[i]; in.Role == plan.RoleCompanion {
			t, err := g.companion(s, i, in, items, copies, a)
			if err != nil {
				return nil, err
			}
			g.ins[i] = t
		}
	}
	return g, nil
}

// rows is the group's request rows: one per item.
func (g *group) rows() int64 { return int64(len(g.items)) }

// empty reports whether the group holds no item at all: every packed
// input's outermost level counts zero units under its rows. Such a group is
// never invoked; every request gets empty spans. (A group with units but
// no positions, such as a clip of zero frames, is invoked: what an empty
// unit maps to is the graph's to say.)
func (g *group) empty() bool {
	if len(g.offsets) == 0 {
		return false
	}
	for _, levels := range g.offsets {
		top := levels[len(levels)-1]
		if top[len(top)-1] != 0 {
			return false
		}
	}
	return true
}

// concat stacks the items' tensors of one port along its request axis
// (axis 0 for a packed port), padding the padded axes to the group
// maximum, or to the extent the graph fixes (padTo, by axis; 0 where it
// does not). A group of one passes its item's tensor through where that
// is already its own group's shape.
func (g *group) concat(at int, in *plan.Port, items []*item, padTo []int64, copies *Copies, a *arena) (*backend.Tensor, error) {
	if len(items) == 1 && !shortOf(items[0].ports[at].t, padTo) {
		t := items[0].ports[at].t
		g.elems += t.Len()
		g.realElems += t.Len()
		if len(in.Padded) > 0 {
			g.padded += t.Len()
			g.real += t.Len()
		}
		return t, nil
	}
	tensors := g.tensorsOf(items, at, -1)
	padAxes := g.padAxes(tensors[0].Rank())
	padded := false
	for _, p := range in.Padded {
		if p.Axis < len(padAxes) {
			padAxes[p.Axis], padded = true, true
		}
	}
	axis := 0
	if in.Role != plan.RolePacked {
		axis = in.Axis
	}
	var room [8]int64
	shape, err := groupShape(room[:0], tensors, padAxes, axis)
	if err != nil {
		return nil, err
	}
	for ax, n := range padTo {
		if n > 0 && ax < len(shape) && ax != axis {
			shape[ax] = max(shape[ax], n)
		}
	}
	// Only a reused buffer some item leaves short needs zero fill: the
	// items overwrite all of it otherwise.
	short := padded && slices.ContainsFunc(tensors, func(t *backend.Tensor) bool { return !sameBeside(t.Shape, shape, axis) })
	out, err := a.tensor(at, tensors[0].DType, shape, short)
	if err != nil {
		return nil, err
	}
	reason := CopyStack
	if in.Role == plan.RolePacked {
		reason = CopyPack
	}
	if padded {
		reason = CopyPad
		g.padded += out.Len()
	}
	row, copied := int64(0), int64(0)
	g.elems += out.Len()
	for _, t := range tensors {
		copied += placeInto(out, row, t, axis)
		row += t.Shape[axis]
		g.realElems += t.Len()
		if padded {
			g.real += t.Len()
		}
	}
	copies.AddCopies(reason, copied, int64(len(tensors)))
	return out, nil
}

// concatVectors concatenates int64 vectors (the valid lengths of items
// padded on their axis 1) into port at's buffer: what the general path
// does for them, without its per-axis bookkeeping. ok is false unless
// every tensor is such a vector.
func concatVectors(ts []*backend.Tensor, at int, a *arena) (*backend.Tensor, bool) {
	var n int64
	for _, t := range ts {
		if t.Rank() != 1 || t.DType != "int64" {
			return nil, false
		}
		n += t.Shape[0]
	}
	room := [1]int64{n}
	out, err := a.tensor(at, "int64", room[:], false)
	if err != nil {
		return nil, false
	}
	d, row := out.Int64s(), 0
	for _, t := range ts {
		row += copy(d[row:], t.Int64s())
	}
	return out, true
}

// shortOf reports whether t is shorter than the extent padTo fixes on some
// axis (padTo: by axis, 0 where none is fixed).
func shortOf(t *backend.Tensor, padTo []int64) bool {
	for ax, n := range padTo {
		if n > 0 && ax < t.Rank() && t.Shape[ax] < n {
			return true
		}
	}
	return false
}

// sameBeside reports whether two shapes agree on every axis but axis.
func sameBeside(a, b []int64, axis int) bool {
	return slices.Equal(a[:axis], b[:axis]) && slices.Equal(a[axis+1:], b[axis+1:])
}

// groupShape is the group's shape of one port: the sum of the items'
// extents on the stacking axis, the maximum of padded axes, and the
// (equal) extent of every other axis. padAxes[a] says whether axis a is
// padded. The shape is appended to dst.
func groupShape(dst []int64, ts []*backend.Tensor, padAxes []bool, axis int) ([]int64, error) {
	if axis >= ts[0].Rank() {
		return nil, runErr("run/input", "items of one group have rank %d, without their request axis %d: %v", ts[0].Rank(), axis, ts[0])
	}
	shape := append(dst, ts[0].Shape...)
	shape[axis] = 0
	for _, t := range ts {
		if t.Rank() != len(shape) {
			return nil, runErr("run/uniform", "items of one group disagree on rank: %v and %v", ts[0], t)
		}
		shape[axis] += t.Shape[axis]
		for a := range shape {
			switch {
			case a == axis:
			case a < len(padAxes) && padAxes[a]:
				shape[a] = max(shape[a], t.Shape[a])
			case t.Shape[a] != shape[a]:
				return nil, runErr("run/uniform", "items of one group disagree on axis %d (%d vs %d), which is neither padded nor packed", a, shape[a], t.Shape[a])
			}
		}
	}
	return shape, nil
}

// placeInto copies src into dst starting at row on axis stack, each other
// axis into the prefix of dst's; it returns the bytes copied. Below the
// innermost axis on which src is shorter than dst both are laid out alike,
// so src is copied as one contiguous block per index of the axes above it.
func placeInto(dst *backend.Tensor, row int64, src *backend.Tensor, stack int) int64 {
	n := src.Len()
	if n == 0 {
		return 0
	}
	a := len(src.Shape) - 1
	for a > 0 && src.Shape[a] == dst.Shape[a] {
		a--
	}
	block := backend.Elements(src.Shape[a:])
	var room [16]int64
	buf := room[:]
	if 2*a > len(room) {
		buf = make([]int64, 2*a)
	}
	// idx is a block's index on axes 0..a-1 of src, strides dst's there.
	idx, strides := buf[:a], buf[a:2*a]
	clear(idx)
	stride := backend.Elements(dst.Shape[a:])
	for k := a - 1; k >= 0; k-- {
		strides[k] = stride
		stride *= dst.Shape[k]
	}
	// The stacking axis is at or above a wherever src is one of several
	// (shorter there), so its offset is the same for every block.
	base := row * backend.Elements(dst.Shape[stack+1:])
	for so := int64(0); so < n; so += block {
		at := base
		for k, i := range idx {
			at += i * strides[k]
		}
		dst.CopyElems(at, src, so, block)
		for k := a - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < src.Shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return src.Bytes()
}

// composeLevels recomputes a packed port's offsets for the group, level by
// level: each item's offsets shifted by the children before it.
func (g *group) composeLevels(at int, in *plan.Port, items []*item, a *arena) {
	if len(items) == 1 {
		g.offsets[in.Name] = items[0].ports[at].levels
		return
	}
	levels := make([][]int64, len(in.Levels))
	for k := range in.Levels {
		n := 1
		for _, it := range items {
			n += len(it.ports[at].levels[k]) - 1
		}
		levels[k] = composeOffsets(a.int64s(n), items, at, k)
	}
	g.offsets[in.Name] = levels
}

// companion computes a companion port's group value from the port it
// serves: offsets composed, owners derived from offsets, lengths
// concatenated (and padded where the lengths are themselves ragged).
func (g *group) companion(spec *componentSpec, at int, in *plan.Port, items []*item, copies *Copies, a *arena) (*backend.Tensor, error) {
	s := in.Serves
	switch s.Role {
	case "offsets", "owner":
		offs := g.offsets[s.Port][s.Level]
		if len(items) == 1 {
			// A group of one passes the request's own companions.
			if s.Role == "offsets" {
				return a.view(at, "int64", []int64{int64(len(offs))}, offs), nil
			}
			if ws := items[0].ports[spec.at(s.Port)].owners; s.Level < len(ws) && ws[s.Level] != nil {
				return ws[s.Level], nil
			}
		}
		data := offs
		if s.Role == "owner" && len(offs) > 0 {
			data = ownersInto(a.int64s(int(offs[len(offs)-1])), offs, 0)
		}
		copies.Add(CopyCompanion, int64(len(data))*8)
		return a.view(at, "int64", []int64{int64(len(data))}, data), nil
	}
	served := spec.at(s.Port)
	entry := slices.IndexFunc(spec.gp.Inputs[served].Padded, func(p plan.Pad) bool { return p.Dimension == s.Dimension })
	if len(items) == 1 {
		return items[0].ports[served].lengths[entry], nil
	}
	ts := g.tensorsOf(items, served, entry)
	// The lengths cover the axes before the padded one, so they stack on
	// the request axis of the port they measure (axis 0 when packed).
	stack := 0
	if p := &spec.gp.Inputs[served]; p.Role != plan.RolePacked {
		stack = p.Axis
	}
	if stack == 0 {
		if out, ok := concatVectors(ts, at, a); ok {
			copies.AddCopies(CopyCompanion, out.Bytes(), int64(len(ts)))
			return out, nil
		}
	}
	padAxes := g.padAxes(ts[0].Rank())
	for ax := range padAxes {
		padAxes[ax] = ax != stack
	}
	var room [8]int64
	shape, err := groupShape(room[:0], ts, padAxes, stack)
	if err != nil {
		return nil, err
	}
	out, err := a.tensor(at, "int64", shape, true)
	if err != nil {
		return nil, err
	}
	row, copied := int64(0), int64(0)
	for _, t := range ts {
		copied += placeInto(out, row, t, stack)
		row += t.Shape[stack]
	}
	copies.AddCopies(CopyCompanion, copied, int64(len(ts)))
	return out, nil
}
