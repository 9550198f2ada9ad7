package vm

import (
	"reflect"

	"github.com/genaic/genaic/backend"
)

// arena keeps one runner's group input buffers from one group to the next,
// one per input port. A runner assembles its next group only after it has
// split the previous one, so the buffers are free again by then; reusing
// them spares an allocation and a zero fill per group, keeps the heap
// (and the collector) quiet, and lets a backend that keeps state over its
// input buffers (vm/ort caches the ONNX Runtime values made over them)
// find the same memory again. A buffer grows to the largest group the
// runner has assembled, which the budgets bound.
type arena struct {
	bufs []*backend.Tensor // by input port; nil until first needed
}

func newArena(ports int) *arena { return &arena{bufs: make([]*backend.Tensor, ports)} }

// tensor returns a tensor of dtype and shape over port's buffer, grown
// when too small. zero clears it: padded inputs rely on zero fill, while
// stacked and packed ones are overwritten whole. A nil arena allocates.
func (a *arena) tensor(port int, dtype string, shape []int64, zero bool) (*backend.Tensor, error) {
	if a == nil {
		return backend.NewTensor(dtype, shape)
	}
	n := backend.Elements(shape)
	if b := a.bufs[port]; b != nil && b.DType == dtype {
		if data, ok := reslice(b.Data, n, zero); ok {
			return &backend.Tensor{DType: dtype, Shape: append(b.Shape[:0:0], shape...), Data: data}, nil
		}
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, err
	}
	a.bufs[port] = t
	return t, nil
}

// release forgets every buffer that outs share memory with: a backend that
// returns an input (or a view of one) as an output hands the group's buffer
// to the requests' results, so it is theirs now and never written again.
func (a *arena) release(outs map[string]*backend.Tensor) {
	if a == nil {
		return
	}
	for i, b := range a.bufs {
		if b == nil {
			continue
		}
		for _, o := range outs {
			if o != nil && overlaps(o.Data, b.Data) {
				a.bufs[i] = nil
				break
			}
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

// overlaps reports whether two typed slices' backing arrays (up to their
// capacities) share any memory.
func overlaps(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != reflect.Slice || vb.Kind() != reflect.Slice || va.Cap() == 0 || vb.Cap() == 0 {
		return false
	}
	loA, loB := va.Pointer(), vb.Pointer()
	hiA := loA + uintptr(va.Cap())*va.Type().Elem().Size()
	hiB := loB + uintptr(vb.Cap())*vb.Type().Elem().Size()
	return loA < hiB && loB < hiA
}
