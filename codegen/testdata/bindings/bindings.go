// Package bindings holds the Go functions of the binding components of
// codegen/testdata/control, so that the tests of generated executors run
// the VM and a generated executor (built in a module of its own) on the
// same components.
package bindings

import (
	"context"
	"fmt"

	"github.com/genaic/genaic/backend"
)

// Control returns the bindings of the control fixture: double (b = 2a),
// add (c = a + b), step (b = a + n, again = sum(b) < 40) and the grouped
// scale (scaled = 3 items).
func Control() *backend.Bindings {
	b := &backend.Bindings{}
	b.Register("double", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		out, err := mapF32(in["a"], func(v float32) float32 { return 2 * v })
		return map[string]*backend.Tensor{"b": out}, err
	})
	b.Register("add", add)
	b.Register("step", step)
	b.Register("scale", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		out, err := mapF32(in["items"], func(v float32) float32 { return 3 * v })
		return map[string]*backend.Tensor{"scaled": out}, err
	})
	return b
}

func mapF32(t *backend.Tensor, f func(float32) float32) (*backend.Tensor, error) {
	if t == nil || t.Float32s() == nil && t.Len() > 0 {
		return nil, fmt.Errorf("want a float32 tensor, got %v", t)
	}
	out, err := backend.NewTensor("float32", t.Shape)
	if err != nil {
		return nil, err
	}
	o := out.Float32s()
	for i, v := range t.Float32s() {
		o[i] = f(v)
	}
	return out, nil
}

func add(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	a, b := in["a"], in["b"]
	if a == nil || b == nil || a.Len() != b.Len() {
		return nil, fmt.Errorf("add wants two float32 tensors of one shape, got %v and %v", a, b)
	}
	bs := b.Float32s()
	i := -1
	out, err := mapF32(a, func(v float32) float32 { i++; return v + bs[i] })
	return map[string]*backend.Tensor{"c": out}, err
}

func step(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	var n []int64
	if in["n"] != nil {
		n = in["n"].Int64s()
	}
	if len(n) != 1 {
		return nil, fmt.Errorf("step wants an int64 scalar n, got %v", in["n"])
	}
	out, err := mapF32(in["a"], func(v float32) float32 { return v + float32(n[0]) })
	if err != nil {
		return nil, err
	}
	var sum float32
	for _, v := range out.Float32s() {
		sum += v
	}
	again := &backend.Tensor{DType: "bool", Shape: []int64{}, Data: []bool{sum < 40}}
	return map[string]*backend.Tensor{"b": out, "again": again}, nil
}

// VMControl returns bindings for the VM's own control-flow fixture,
// vm/testdata/control.yaml: double (b = 2a, more = sum(b) <= 100) and
// negate (b = -a).
func VMControl() *backend.Bindings {
	b := &backend.Bindings{}
	b.Register("double", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		out, err := mapF32(in["a"], func(v float32) float32 { return 2 * v })
		if err != nil {
			return nil, err
		}
		var sum float32
		for _, v := range out.Float32s() {
			sum += v
		}
		return map[string]*backend.Tensor{"b": out, "more": {DType: "bool", Shape: []int64{1}, Data: []bool{sum <= 100}}}, nil
	})
	b.Register("negate", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		out, err := mapF32(in["a"], func(v float32) float32 { return -v })
		return map[string]*backend.Tensor{"b": out}, err
	})
	return b
}

// Multimodal returns bindings for the VM's fixture of three modalities in
// one engine, vm/testdata/multimodal.yaml: image (the mean of each image's
// valid patches), video (the mean of each clip's frames) and text (the sum
// of each segment's token ids).
func Multimodal() *backend.Bindings {
	b := &backend.Bindings{}
	b.Register("image", image)
	b.Register("video", video)
	b.Register("text", text)
	return b
}

func image(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x, lengths := in["px"], in["px_len"]
	if x == nil || lengths == nil || x.Rank() != 3 {
		return nil, fmt.Errorf("image wants px [images, patches, features] and px_len, got %v and %v", x, lengths)
	}
	n, p, f := x.Shape[0], x.Shape[1], x.Shape[2]
	data, ls := x.Float32s(), lengths.Int64s()
	out := make([]float32, n*f)
	for i := range n {
		for t := range ls[i] {
			for k := range f {
				out[i*f+k] += data[(i*p+t)*f+k] / float32(ls[i])
			}
		}
	}
	return map[string]*backend.Tensor{"emb": {DType: "float32", Shape: []int64{n, f}, Data: out}}, nil
}

func video(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x, offs := in["frames"], in["frame_off"]
	if x == nil || offs == nil || x.Rank() != 2 {
		return nil, fmt.Errorf("video wants frames [frames, features] and frame_off, got %v and %v", x, offs)
	}
	o, f := offs.Int64s(), x.Shape[1]
	clips := int64(len(o) - 1)
	out := make([]float32, clips*f)
	for c := range clips {
		for r := o[c]; r < o[c+1]; r++ {
			for k := range f {
				out[c*f+k] += x.Float32s()[r*f+k] / float32(o[c+1]-o[c])
			}
		}
	}
	return map[string]*backend.Tensor{"emb": {DType: "float32", Shape: []int64{clips, f}, Data: out}}, nil
}

func text(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	ids, offs := in["tokens"], in["tok_off"]
	if ids == nil || offs == nil {
		return nil, fmt.Errorf("text wants tokens and tok_off, got %v and %v", ids, offs)
	}
	o := offs.Int64s()
	segs := int64(len(o) - 1)
	out := make([]float32, segs)
	for s := range segs {
		for _, id := range ids.Int64s()[o[s]:o[s+1]] {
			out[s] += float32(id)
		}
	}
	return map[string]*backend.Tensor{"emb": {DType: "float32", Shape: []int64{segs, 1}, Data: out}}, nil
}
