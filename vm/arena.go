package vm

import (
	"reflect"
	"slices"
	"unsafe"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/sched"
)

// arena keeps one runner's group input buffers from one group to the next,
// one per input port. A runner assembles its next group only after it has
// split the previous one, so the buffers are free again by then; reusing
// them spares an allocation and a zero fill per group, keeps the heap
// (and the collector) quiet, and lets a backend that keeps state over its
// input buffers (vm/ort caches the ONNX Runtime values made over them)
// find the same memory again. A buffer grows to the largest group the
// runner has assembled, which the budgets bound.
//
// Besides the input buffers the arena keeps what assembling a group needs
// and nobody reads once it is split: the group itself, its items, the
// offsets composed for it and the owners derived from them, and its
// footprint sums. A group is assembled, invoked and split before the
// runner assembles the next, so each of these is written afresh per group.
type arena struct {
	bufs []*backend.Tensor // by input port; nil until first needed
	// views are the tensors handed to the backend, by input port: one
	// header per port, re-pointed at each group's buffer and shape.
	views []*backend.Tensor

	grp   group
	batch []*pending // the group's items, as the scheduler formed it
	items []*item
	// ints are the int64 vectors handed out for the group being
	// assembled, in order; used counts them.
	ints  [][]int64
	used  int
	sum   sched.Sum
	peaks []int64
	call  callRoom
}

func newArena(ports int) *arena {
	return &arena{bufs: make([]*backend.Tensor, ports), views: make([]*backend.Tensor, ports)}
}

// group returns the arena's group, emptied, for items and a component of
// inputs input ports (a fresh one from a nil arena).
func (a *arena) group(items []*item, inputs int) *group {
	if a == nil {
		return &group{items: items, ins: make([]*backend.Tensor, inputs), offsets: map[string][][]int64{}}
	}
	if a.grp.ins == nil {
		a.grp.ins, a.grp.offsets = make([]*backend.Tensor, inputs), map[string][][]int64{}
	}
	a.emptyGroup()
	a.grp.items, a.used = items, 0
	return &a.grp
}

// emptyGroup empties the arena's group, keeping its lists and map.
func (a *arena) emptyGroup() {
	clear(a.grp.ins)
	clear(a.grp.offsets)
	sc := a.grp.scratch
	clear(sc.tensors[:cap(sc.tensors)])
	clear(sc.levels[:cap(sc.levels)])
	a.grp = group{ins: a.grp.ins, offsets: a.grp.offsets, scratch: sc}
}

// int64s returns an int64 vector of length n for the group being
// assembled: one of the arena's, reused from earlier groups, or a new
// one it keeps (always new from a nil arena). Its contents are stale.
func (a *arena) int64s(n int) []int64 {
	if a == nil {
		return make([]int64, n)
	}
	if a.used == len(a.ints) {
		a.ints = append(a.ints, nil)
	}
	v := a.ints[a.used]
	if cap(v) < n {
		v = make([]int64, n)
		a.ints[a.used] = v
	}
	a.used++
	return v[:n]
}

// itemsOf returns the items of batch in a slice of the arena's.
func (a *arena) itemsOf(batch []*pending) []*item {
	items := a.items[:0]
	for _, p := range batch {
		items = append(items, p.it)
	}
	a.items = items
	return items
}

// forget drops the arena's references to the group it last assembled
// (its items and inputs), so that it keeps no request's tensors alive.
func (a *arena) forget() {
	clear(a.items)
	a.emptyGroup()
}

// footprints measures every budget on items (§3.5), into the arena's sums,
// and returns the first budget the group exceeds (-1: none).
func (a *arena) footprints(spec *componentSpec, items []*item) (peaks []int64, over int) {
	if a.peaks == nil {
		a.sum, a.peaks = spec.budgets.Sum(), make([]int64, spec.budgets.Len())
	}
	a.sum.Clear()
	for _, it := range items {
		a.sum.Add(spec.terms(it))
	}
	for i := range a.peaks {
		a.peaks[i] = a.sum.Total(i)
	}
	return a.peaks, a.sum.Over()
}

// tensor returns a tensor of dtype and shape over port's buffer, grown
// when too small. zero clears it: padded inputs rely on zero fill, while
// stacked and packed ones are overwritten whole. A nil arena allocates.
func (a *arena) tensor(port int, dtype string, shape []int64, zero bool) (*backend.Tensor, error) {
	if a == nil {
		return backend.NewTensor(dtype, slices.Clone(shape))
	}
	n := backend.Elements(shape)
	if b := a.bufs[port]; b != nil && b.DType == dtype {
		if data, ok := reslice(b.Data, n, zero); ok {
			return a.view(port, dtype, shape, data), nil
		}
	}
	t, err := backend.NewTensor(dtype, slices.Clone(shape))
	if err != nil {
		return nil, err
	}
	a.bufs[port] = t
	return a.view(port, dtype, shape, t.Data), nil
}

// view returns port's tensor for this group: dtype and shape over data
// (a new tensor from a nil arena).
func (a *arena) view(port int, dtype string, shape []int64, data any) *backend.Tensor {
	if a == nil {
		return &backend.Tensor{DType: dtype, Shape: slices.Clone(shape), Data: data}
	}
	v := a.views[port]
	if v == nil {
		v = &backend.Tensor{}
		a.views[port] = v
	}
	v.DType, v.Shape, v.Data = dtype, append(v.Shape[:0], shape...), data
	return v
}

// release forgets every buffer that outs share memory with: a backend that
// returns an input (or a view of one) as an output hands the group's buffer
// to the requests' results, so it is theirs now and never written again.
func (a *arena) release(outs outputs) {
	if a == nil {
		return
	}
	var room, shapeRoom [8]memSpan
	var tensorRoom [8]*backend.Tensor
	spans, shapes, tensors := room[:0], shapeRoom[:0], tensorRoom[:0]
	for _, o := range outs {
		if o != nil {
			spans, shapes = append(spans, spanOf(o.Data)), append(shapes, sliceSpan(o.Shape))
			tensors = append(tensors, o)
		}
	}
	for i, b := range a.bufs {
		if b != nil && spanOf(b.Data).overlapsAny(spans) {
			a.bufs[i] = nil
		}
	}
	for i, v := range a.ints[:a.used] {
		if sliceSpan(v).overlapsAny(spans) {
			a.ints[i] = nil
		}
	}
	// A backend may hand back an input tensor itself, or an output shaped
	// by an input's shape slice; the port's header is then the results'.
	for i, v := range a.views {
		if v != nil && (slices.Contains(tensors, v) || sliceSpan(v.Shape).overlapsAny(shapes)) {
			a.views[i] = nil
		}
	}
}

// reslice returns the first n elements of data's backing array, cleared
// when zero, or false when its capacity is short of n.
func reslice(data any, n int64, zero bool) (any, bool) {
	switch d := data.(type) {
	case []float32:
		return grow(d, n, zero)
	case []float64:
		return grow(d, n, zero)
	case []int64:
		return grow(d, n, zero)
	case []int32:
		return grow(d, n, zero)
	case []int16:
		return grow(d, n, zero)
	case []int8:
		return grow(d, n, zero)
	case []uint8:
		return grow(d, n, zero)
	case []uint16:
		return grow(d, n, zero)
	case []uint32:
		return grow(d, n, zero)
	case []uint64:
		return grow(d, n, zero)
	case []bool:
		return grow(d, n, zero)
	}
	return nil, false
}

func grow[T any](d []T, n int64, zero bool) (any, bool) {
	if int64(cap(d)) < n {
		return nil, false
	}
	d = d[:n]
	if zero {
		clear(d)
	}
	return d, true
}

// memSpan is the memory of a typed slice's backing array, up to its
// capacity: [lo, hi), empty for an empty slice.
type memSpan struct{ lo, hi uintptr }

func spanOf(data any) memSpan {
	switch d := data.(type) {
	case []float32:
		return sliceSpan(d)
	case []int64:
		return sliceSpan(d)
	case []int32:
		return sliceSpan(d)
	case []uint8:
		return sliceSpan(d)
	}
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Slice || v.Cap() == 0 {
		return memSpan{}
	}
	lo := v.Pointer()
	return memSpan{lo: lo, hi: lo + uintptr(v.Cap())*v.Type().Elem().Size()}
}

// sliceSpan is spanOf for a slice of known type.
func sliceSpan[T any](v []T) memSpan {
	if cap(v) == 0 {
		return memSpan{}
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	var t T
	return memSpan{lo: lo, hi: lo + uintptr(cap(v))*unsafe.Sizeof(t)}
}

// overlapsAny reports whether m shares memory with one of spans.
func (m memSpan) overlapsAny(spans []memSpan) bool {
	for _, o := range spans {
		if m.lo < o.hi && o.lo < m.hi {
			return true
		}
	}
	return false
}
