package backend

import (
	"fmt"
	"sync"
)

// Buffers keeps tensors' memory given back for reuse: a session that
// implements Recycler puts its returned outputs here and takes the
// memory of its next outputs from here. It holds at most a fixed number
// of buffers and of bytes (what would exceed either is left to the
// collector), of any dtype, and hands out the smallest that holds a
// shape. Its methods may be called from many goroutines at once.
type Buffers struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64 // held now
	free     []buffer
}

// buffer is memory given back: a typed slice at its full capacity.
type buffer struct {
	dtype        string
	data         any
	elems, bytes int64
}

// NewBuffers returns a Buffers that keeps at most max buffers of
// maxBytes in all.
func NewBuffers(max int, maxBytes int64) *Buffers { return &Buffers{max: max, maxBytes: maxBytes} }

// Take returns a tensor of dtype and shape over memory given back, or
// nil when none is large enough. The memory is not cleared: it holds what
// its last user wrote, so the caller writes every element before anyone
// reads one. Its data may have room beyond the shape's elements; a view
// (View, AppendViews, Clipped) never reaches it.
func (b *Buffers) Take(dtype string, shape []int64) *Tensor {
	n := Elements(shape)
	b.mu.Lock()
	best := -1
	for i, f := range b.free {
		if f.dtype == dtype && f.elems >= n && (best < 0 || f.elems < b.free[best].elems) {
			best = i
		}
	}
	if best < 0 {
		b.mu.Unlock()
		return nil
	}
	f := b.free[best]
	b.bytes -= f.bytes
	last := len(b.free) - 1
	b.free[best], b.free[last] = b.free[last], buffer{}
	b.free = b.free[:last]
	b.mu.Unlock()
	return withShape(dtype, shape, resize(f.data, n))
}

// NewTensorRoom allocates a tensor of dtype and shape as NewTensor does,
// with room for extra more elements beyond them, so that once given back
// (Buffers) its memory can hold a slightly larger shape too.
func NewTensorRoom(dtype string, shape []int64, extra int64) (*Tensor, error) {
	n := Elements(shape)
	data, err := makeData(dtype, int(n+extra))
	if err != nil {
		return nil, err
	}
	return withShape(dtype, shape, resize(data, n)), nil
}

// Put gives t's memory back. A tensor of a dtype with no host
// representation here, or one that would take Buffers past its bounds, is
// left to the collector.
func (b *Buffers) Put(t *Tensor) {
	if t == nil || t.Data == nil {
		return
	}
	full, elems, ok := fullCapacity(t.Data)
	if !ok || elems == 0 {
		return
	}
	size := elems * max(elemSizeOf(full), 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.free) < b.max && b.bytes+size <= b.maxBytes {
		b.free = append(b.free, buffer{dtype: t.DType, data: full, elems: elems, bytes: size})
		b.bytes += size
	}
}

// Len is how many buffers b holds.
func (b *Buffers) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.free)
}

// withShape is a tensor of dtype and shape over data, with its shape in
// the same allocation where the rank allows (as NewTensor's).
func withShape(dtype string, shape []int64, data any) *Tensor {
	if len(shape) == 0 || len(shape) > inlineRank {
		return &Tensor{DType: dtype, Shape: append([]int64(nil), shape...), Data: data}
	}
	t := &struct {
		t    Tensor
		dims [inlineRank]int64
	}{}
	k := copy(t.dims[:], shape)
	t.t = Tensor{DType: dtype, Shape: t.dims[:k:k], Data: data}
	return &t.t
}

// resize returns data's first n elements, keeping its capacity.
func resize(data any, n int64) any {
	d, _, ok := resliced(data, n)
	if !ok {
		panic(fmt.Sprintf("backend: unsupported tensor data %T", data))
	}
	return d
}

// fullCapacity returns data at its full capacity and that capacity, for
// the typed slices makeData makes.
func fullCapacity(data any) (any, int64, bool) { return resliced(data, -1) }

// resliced returns data's first n elements (n < 0: all its capacity)
// and its capacity, false for a slice makeData does not make.
func resliced(data any, n int64) (any, int64, bool) {
	switch d := data.(type) {
	case []float32:
		return reslice(d, n)
	case []float64:
		return reslice(d, n)
	case []int64:
		return reslice(d, n)
	case []int32:
		return reslice(d, n)
	case []int16:
		return reslice(d, n)
	case []int8:
		return reslice(d, n)
	case []uint8:
		return reslice(d, n)
	case []uint16:
		return reslice(d, n)
	case []uint32:
		return reslice(d, n)
	case []uint64:
		return reslice(d, n)
	case []bool:
		return reslice(d, n)
	}
	return nil, 0, false
}

func reslice[T any](d []T, n int64) (any, int64, bool) {
	if n < 0 {
		n = int64(cap(d))
	}
	return d[:n], int64(cap(d)), true
}

// Clipped is t with its data's capacity cut to its elements: handed to a
// reader, it reaches no memory beyond the tensor's (memory Buffers hands
// out may hold more).
func (t *Tensor) Clipped() *Tensor {
	if t == nil || t.Data == nil {
		return t
	}
	if _, elems, ok := fullCapacity(t.Data); !ok || elems == DataLen(t.Data) {
		return t
	}
	n := DataLen(t.Data)
	v := &view{Tensor: Tensor{DType: t.DType, Shape: t.Shape}}
	v.Data = sliceInto(&v.hdr, t.Data, 0, n)
	return &v.Tensor
}
