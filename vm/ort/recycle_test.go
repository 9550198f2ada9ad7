//go:build cgo

package ort

import (
	"context"
	"reflect"
	"testing"

	"github.com/genaic/genaic/backend"
)

// TestRecycledOutputs: outputs given back (Recycle) hold the next
// RunPorts call's outputs, written whole (the same values as a fresh
// call's), while Run's outputs stay fresh; outputs not given back are
// never written again.
func TestRecycledOutputs(t *testing.T) {
	s, ps, in, ins := portCall(t)
	rec, ok := ps.(backend.Recycler)
	if !ok {
		t.Fatalf("the session (%T) takes no outputs back", ps)
	}
	s.(*session).scratchMax = 0 // every output written in place
	ctx := context.Background()
	_, outNames := ps.Ports()
	want, err := s.Run(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func() []*backend.Tensor {
		t.Helper()
		outs := make([]*backend.Tensor, len(outNames))
		if err := ps.RunPorts(ctx, ins, nil, outs); err != nil {
			t.Fatal(err)
		}
		for j, name := range outNames {
			if !reflect.DeepEqual(outs[j].Shape, want[name].Shape) || !reflect.DeepEqual(outs[j].Data, want[name].Data) {
				t.Fatalf("output %s: %v, want %v", name, outs[j], want[name])
			}
		}
		return outs
	}
	first := run()
	kept := run() // first not given back: fresh buffers
	for j := range first {
		if dataAddr(kept[j].Data) == dataAddr(first[j].Data) {
			t.Fatalf("output %s was written over an output not given back", outNames[j])
		}
	}
	// Scribbled over and given back: the next call writes every element.
	at := map[uintptr]bool{}
	for _, o := range first {
		if d, ok := o.Data.([]float32); ok {
			for i := range d {
				d[i] = -1e9
			}
		}
		at[dataAddr(o.Data)] = true
	}
	rec.Recycle(first)
	again := run()
	for j := range again {
		if !at[dataAddr(again[j].Data)] {
			t.Errorf("output %s was not written into a buffer given back", outNames[j])
		}
	}
	rec.Recycle(again) // given back, and still not Run's
	if r, err := s.Run(ctx, in, nil); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range r {
			if at[dataAddr(o.Data)] {
				t.Errorf("Run's output was written into a buffer given back to RunPorts")
			}
		}
	}
}
