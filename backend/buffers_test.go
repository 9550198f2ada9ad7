package backend

import (
	"sync"
	"testing"
)

// TestBuffers: Take hands out the smallest buffer of the dtype that holds
// the shape, with the tensor's data exactly the shape's elements; nothing
// when none fits; Put keeps at most the bound; and the capacity a buffer
// had comes back with it.
func TestBuffers(t *testing.T) {
	b := NewBuffers(3, 1<<20)
	if got := b.Take("float32", []int64{2, 3}); got != nil {
		t.Fatalf("an empty Buffers handed out %v", got)
	}
	small, _ := NewTensorRoom("float32", []int64{2, 3}, 2) // room for 8
	large, _ := NewTensorRoom("float32", []int64{4, 4}, 0)
	ints, _ := NewTensorRoom("int64", []int64{100}, 0)
	if n := DataLen(small.Data); n != 6 {
		t.Fatalf("NewTensorRoom's data holds %d elements, want the shape's 6", n)
	}
	b.Put(large)
	b.Put(small)
	b.Put(ints)
	extra, _ := NewTensor("float32", []int64{64})
	b.Put(extra) // beyond the bound: left to the collector
	if n := b.Len(); n != 3 {
		t.Fatalf("Buffers holds %d buffers, want its bound 3", n)
	}
	got := b.Take("float32", []int64{7})
	if got == nil || dataAddr(got.Data) != dataAddr(small.Data) {
		t.Fatalf("Take(7) did not hand out the smallest buffer that fits (room for 8): %v", got)
	}
	if DataLen(got.Data) != 7 || got.Len() != 7 {
		t.Errorf("Take(7) gave data of %d elements, shape %v", DataLen(got.Data), got.Shape)
	}
	if got := b.Take("float32", []int64{17}); got != nil {
		t.Errorf("Take(17) handed out a buffer of 16: %v", got)
	}
	if got := b.Take("float64", []int64{1}); got != nil {
		t.Errorf("Take of float64 handed out a buffer of another dtype: %v", got)
	}
	// Given back at 7 elements, the buffer still holds 8.
	b.Put(got)
	if again := b.Take("float32", []int64{2, 2, 2}); again == nil || dataAddr(again.Data) != dataAddr(small.Data) {
		t.Errorf("a buffer given back after a smaller use lost its room: %v", again)
	}
}

// TestBuffersBytes: Buffers keeps no more bytes than its bound.
func TestBuffersBytes(t *testing.T) {
	b := NewBuffers(8, 100)
	a, _ := NewTensor("float32", []int64{20}) // 80 bytes
	c, _ := NewTensor("float32", []int64{10}) // 40 more: past 100
	b.Put(a)
	b.Put(c)
	if n := b.Len(); n != 1 {
		t.Fatalf("Buffers holds %d buffers, want 1 within 100 bytes", n)
	}
	if b.Take("float32", []int64{20}) == nil {
		t.Fatal("the buffer kept was not handed out")
	}
	b.Put(c) // room again once taken
	if n := b.Len(); n != 1 {
		t.Errorf("Buffers holds %d buffers after one was taken and another given back, want 1", n)
	}
}

// TestClipped: a tensor over memory with room beyond it, clipped, reaches
// no further than its elements; one without room is itself.
func TestClipped(t *testing.T) {
	roomy, _ := NewTensorRoom("float32", []int64{3}, 5)
	c := roomy.Clipped()
	if d := c.Float32s(); len(d) != 3 || cap(d) != 3 || dataAddr(c.Data) != dataAddr(roomy.Data) {
		t.Errorf("Clipped: len %d cap %d over the same memory %v", len(d), cap(d), dataAddr(c.Data) == dataAddr(roomy.Data))
	}
	exact, _ := NewTensor("int64", []int64{4})
	if exact.Clipped() != exact {
		t.Errorf("Clipped copied a tensor with no room beyond it")
	}
}

// TestBuffersConcurrent: buffers taken and given back from many
// goroutines are each held by one at a time (go test -race).
func TestBuffersConcurrent(t *testing.T) {
	b := NewBuffers(4, 1<<20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				x := b.Take("float32", []int64{16})
				if x == nil {
					x, _ = NewTensorRoom("float32", []int64{16}, 0)
				}
				d := x.Float32s()
				for k := range d {
					d[k] = float32(g*1000 + i)
				}
				for k := range d {
					if d[k] != float32(g*1000+i) {
						t.Errorf("a buffer was written by another goroutine while held")
						return
					}
				}
				b.Put(x)
			}
		})
	}
	wg.Wait()
}
