//go:build cgo

package ort

import "github.com/genaic/genaic/backend"

// Outputs given back.
//
// A predicted output is written by ONNX Runtime into a Go buffer that the
// runtime splits into its requests' views. Fresh for every call, that
// buffer costs an allocation the collector later sweeps, and memory not
// in the cache for ONNX Runtime to write; for small, frequent calls those
// cost more than the rest of the runtime's own work. So RunPorts, whose
// outputs the runtime gives back once every request that read them is done
// (backend.Recycler; vm/lease.go), takes its buffers from those given
// back where one is large enough, and makes new ones with room for a
// group somewhat larger (outputRoom). Run's outputs are the caller's for
// good: always fresh.

// givenBuffers bounds the buffers a session keeps: enough for each
// output of a few groups in flight (runners, and groups whose requests
// have not yet released their responses); the rest go to the collector.
const givenBuffers = 16

// givenBytes bounds their bytes, so that a graph of large outputs (a
// feature map per image) keeps no more than a few of them.
const givenBytes = 64 << 20

// outputRoom is the share of an output's elements a new buffer has room
// for beyond them (1/outputRoom): groups' sizes vary with their requests,
// and a buffer made for one group then serves the next a few rows larger.
const outputRoom = 8

// outputBuffer is the Go buffer of a predicted output of shape for call
// c: one given back if c is a RunPorts call and one holds shape, else a
// new one.
func (s *session) outputBuffer(c *call, dtype string, shape []int64) (*backend.Tensor, error) {
	if !c.recycling {
		return s.alloc(dtype, shape, 0)
	}
	if t := s.given.Take(dtype, shape); t != nil {
		return t, nil
	}
	return s.alloc(dtype, shape, backend.Elements(shape)/outputRoom)
}

// Recycle implements backend.Recycler: outs, outputs RunPorts returned
// that nothing reads any more, hold the outputs of later calls.
func (s *session) Recycle(outs []*backend.Tensor) {
	for _, t := range outs {
		s.given.Put(t)
	}
}
