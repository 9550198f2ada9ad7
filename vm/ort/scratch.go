//go:build cgo

package ort

import (
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
)

// A small predicted output is written by ONNX Runtime into a session's
// scratch buffer, whose ORT value lives as long as the session, and
// copied into the fresh Go buffer the call returns.
//
// Every call returns fresh output memory (the VM's split views alias it,
// and they outlive the call), so an output written in place needs an ORT
// value made over a new buffer at every call: a cgo call to create it and
// one to release it, about 3,300 instructions (callgrind), more than
// copying a few kilobytes. Above scratchBytes the copy costs more and the
// output is written in place.
const scratchBytes = 4 << 10

// maxScratch bounds the scratch values a session keeps: one per output
// shape a workload's groups take (a group's size is in its output shape)
// and per call running at once.
const maxScratch = 64

type scratchKey struct {
	out int // the graph output
	shape
}

// scratchValue is an ORT value over a Go buffer that only the call
// holding it uses.
type scratchValue struct {
	key  scratchKey
	buf  *backend.Tensor
	v    ortgo.Value
	busy bool // held by a call
	gone bool // evicted and destroyed: a call's hint to it is stale
}

// scratchOutputs keeps the scratch values, free and held. They are few
// (maxScratch), and a call first tries the one it held last time for the
// same output (its hint), which a runner passing groups of one shape
// finds every time: a lookup costs a comparison, not a hash.
type scratchOutputs struct {
	mu     sync.Mutex
	vals   []*scratchValue // made and not destroyed, free or held
	closed bool
}

// scratchKeyOf is the key of output out for buf, the call's output
// buffer, or false when buf is larger than most bytes (or of too high a
// rank) for a scratch value, or a scalar, whose value holds its own
// element (scalarValue) and is read back into buf directly.
func scratchKeyOf(out int, buf *backend.Tensor, most int64) (scratchKey, bool) {
	sh, ok := shapeOf(buf.Shape)
	if !ok || buf.Bytes() > most || len(buf.Shape) == 0 {
		return scratchKey{}, false
	}
	return scratchKey{out: out, shape: sh}, true
}

// take hands out a free scratch value of key, hint when it is one, or
// makes one like buf; nil when the session is closed or every value is
// held by a running call.
func (s *scratchOutputs) take(key scratchKey, hint *scratchValue, like *backend.Tensor) (*scratchValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil
	}
	if hint != nil && !hint.busy && !hint.gone && hint.key == key {
		hint.busy = true
		return hint, nil
	}
	for _, sv := range s.vals {
		if !sv.busy && sv.key == key {
			sv.busy = true
			return sv, nil
		}
	}
	if len(s.vals) >= maxScratch && !s.evictOne() {
		return nil, nil
	}
	buf, err := backend.NewTensor(like.DType, like.Shape)
	if err != nil {
		return nil, err
	}
	v, err := newValue(buf)
	if err != nil {
		return nil, err
	}
	sv := &scratchValue{key: key, buf: buf, v: v, busy: true}
	s.vals = append(s.vals, sv)
	return sv, nil
}

// evictOne destroys, under the lock, a free value (of another shape than
// the caller wants: it found none free of its own); false when none is
// free.
func (s *scratchOutputs) evictOne() bool {
	for i, sv := range s.vals {
		if sv.busy {
			continue
		}
		sv.gone = true
		sv.v.Destroy()
		last := len(s.vals) - 1
		s.vals[i] = s.vals[last]
		s.vals[last] = nil
		s.vals = s.vals[:last]
		return true
	}
	return false
}

// put gives a held value back; after close it is destroyed.
func (s *scratchOutputs) put(sv *scratchValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv.busy = false
	if s.closed {
		sv.gone = true
		sv.v.Destroy()
	}
}

// close destroys the free values; a held one is destroyed when its call
// puts it back.
func (s *scratchOutputs) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sv := range s.vals {
		if !sv.busy {
			sv.gone = true
			sv.v.Destroy()
		}
	}
	s.vals = nil
}
