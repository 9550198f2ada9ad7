//go:build cgo

package ort

import (
	"context"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// TestScalarPorts: a graph with a rank-0 int64 input (the sample rate)
// and a rank-0 int64 output runs by name and by port position. The
// scalar's ORT value holds a copy of its element, so it is made again at
// every call: a caller that rewrites the scalar in its buffer (a runner's
// reused group input) is seen anew, and the output comes back rank 0.
func TestScalarPorts(t *testing.T) {
	s := fixtureSession(t, "sample_rate", nil)
	audio := &backend.Tensor{DType: "float32", Shape: []int64{2, 4}, Data: []float32{1, 2, 3, 4, 0.5, 0, -1, 2}}
	sr := &backend.Tensor{DType: "int64", Shape: []int64{}, Data: []int64{16000}}
	res, err := s.Run(context.Background(), map[string]*backend.Tensor{"audio": audio, "sr": sr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hop := res["hop"]; hop.Rank() != 0 || hop.Int64s()[0] != 160 {
		t.Errorf("hop at 16 kHz is %v %v, want rank-0 160", hop, hop.Int64s())
	}
	ins, outs := []*backend.Tensor{audio, sr}, make([]*backend.Tensor, 2)
	for _, rate := range []int64{16000, 8000, 8000, 16000} {
		sr.Int64s()[0] = rate
		if err := s.RunPorts(context.Background(), ins, nil, outs); err != nil {
			t.Fatal(err)
		}
		if hop := outs[1]; hop.Rank() != 0 || hop.Int64s()[0] != rate/100 {
			t.Errorf("hop at %d Hz is %v %v, want rank-0 %d", rate, hop, hop.Int64s(), rate/100)
		}
		if same := sameSpeech(outs[0], res["speech"]); same != (rate == 16000) {
			t.Errorf("speech at %d Hz %v, at 16 kHz %v: the rate did not reach the graph", rate, outs[0].Float32s(), res["speech"].Float32s())
		}
	}
}

func sameSpeech(a, b *backend.Tensor) bool {
	_, ok := near(a.Float32s(), b.Float32s(), 0)
	return ok
}

// TestScalarOutputUnplanned: a rank-0 output the session does not plan as
// a scalar (its port declares a rank of 1) is allocated by ONNX Runtime,
// which onnxruntime_go cannot hold: the call fails saying which output is
// a scalar and what to declare. onnxruntime_go leaves a nil pointer in the
// output it failed to convert; the session drops it without calling its
// Destroy (which would panic), call after call.
func TestScalarOutputUnplanned(t *testing.T) {
	s := fixtureSession(t, "sample_rate", func(comp *ir.Component) {
		comp.Outputs = slices.Clone(comp.Outputs)
		for i, p := range comp.Outputs {
			if p.Name == "hop" {
				q := *p
				q.Contract = contract("int64", "hops")
				comp.Outputs[i] = &q
			}
		}
	})
	in := map[string]*backend.Tensor{
		"audio": {DType: "float32", Shape: []int64{1, 4}, Data: []float32{1, 2, 3, 4}},
		"sr":    {DType: "int64", Shape: []int64{}, Data: []int64{8000}},
	}
	for range 2 {
		_, err := s.Run(context.Background(), in, nil)
		wantErr(t, err, "graph output `hop` is a scalar", "declare its port with shape []")
	}
}
