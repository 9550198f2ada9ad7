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
	key scratchKey
	buf *backend.Tensor
	v   ortgo.Value
}

// scratchOutputs keeps the free scratch values by output and shape.
type scratchOutputs struct {
	mu     sync.Mutex
	free   map[scratchKey][]*scratchValue
	count  int // the values made and not destroyed, free or held
	closed bool
}

// scratchKeyOf is the key of output out for buf, the call's output
// buffer, or false when buf is larger than most bytes (or of too high a
// rank) for a scratch value.
func scratchKeyOf(out int, buf *backend.Tensor, most int64) (scratchKey, bool) {
	sh, ok := shapeOf(buf.Shape)
	if !ok || buf.Bytes() > most {
		return scratchKey{}, false
	}
	return scratchKey{out: out, shape: sh}, true
}

// take hands out a free scratch value of key, or makes one like buf; nil
// when the session is closed or every value is held by a running call.
func (s *scratchOutputs) take(key scratchKey, like *backend.Tensor) (*scratchValue, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil
	}
	if list := s.free[key]; len(list) > 0 {
		sv := list[len(list)-1]
		s.free[key] = list[:len(list)-1]
		s.mu.Unlock()
		return sv, nil
	}
	var victim *scratchValue
	if s.count >= maxScratch {
		// Make room by dropping a free value of another shape, if any.
		victim = s.evictOne()
		if victim == nil {
			s.mu.Unlock()
			return nil, nil
		}
	}
	s.count++
	s.mu.Unlock()
	if victim != nil {
		victim.v.Destroy()
	}
	buf, err := backend.NewTensor(like.DType, like.Shape)
	if err == nil {
		var v ortgo.Value
		if v, err = newValue(buf); err == nil {
			return &scratchValue{key: key, buf: buf, v: v}, nil
		}
	}
	s.mu.Lock()
	s.count--
	s.mu.Unlock()
	return nil, err
}

// evictOne removes, under the lock, some free value from the store and
// returns it for the caller to destroy; nil when none is free.
func (s *scratchOutputs) evictOne() *scratchValue {
	for key, list := range s.free {
		if len(list) == 0 {
			continue
		}
		sv := list[len(list)-1]
		if len(list) == 1 {
			delete(s.free, key)
		} else {
			s.free[key] = list[:len(list)-1]
		}
		s.count--
		return sv
	}
	return nil
}

// put gives a held value back; after close it is destroyed.
func (s *scratchOutputs) put(sv *scratchValue) {
	s.mu.Lock()
	if s.closed {
		s.count--
		s.mu.Unlock()
		sv.v.Destroy()
		return
	}
	if s.free == nil {
		s.free = map[scratchKey][]*scratchValue{}
	}
	s.free[sv.key] = append(s.free[sv.key], sv)
	s.mu.Unlock()
}

// close destroys the free values; a held one is destroyed when its call
// puts it back.
func (s *scratchOutputs) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, list := range s.free {
		for _, sv := range list {
			sv.v.Destroy()
			s.count--
		}
	}
	s.free = nil
}
