package vm

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// f32 is a float32 tensor of shape whose elements count up from first.
func f32(first float32, shape ...int64) *backend.Tensor {
	n := backend.Elements(shape)
	data := make([]float32, n)
	for i := range data {
		data[i] = first + float32(i)
	}
	return &backend.Tensor{DType: "float32", Shape: shape, Data: data}
}

// imageMean is what imageBinding answers for one image (patches ×
// features): twice the mean of its patches.
func imageMean(x *backend.Tensor) []float32 {
	p, f := x.Shape[0], x.Shape[1]
	out := make([]float32, f)
	for t := range p {
		for k := range f {
			out[k] += 2 * x.Float32s()[t*f+k] / float32(p)
		}
	}
	return out
}

// rowsMean is what videoBinding answers for one clip (frames × features).
func rowsMean(x *backend.Tensor, f int64) []float32 {
	out := make([]float32, f)
	n := x.Shape[0]
	for r := range n {
		for k := range f {
			out[k] += x.Float32s()[r*f+k] / float32(n)
		}
	}
	return out
}

// checkItems fails the test unless output name came back as one item per
// want, each equal to it.
func checkItems(t *testing.T, resp Response, name string, want [][]float32) {
	t.Helper()
	got := Tensors(resp.Items[name])
	if len(got) != len(want) {
		t.Errorf("output %s: %d items, want %d (items of %v; outputs %v)", name, len(got), len(want), keys(resp.Items), keys(resp.Outputs.Map()))
		return
	}
	for i, g := range got {
		v := g.Float32s()
		if len(v) != len(want[i]) {
			t.Errorf("output %s item %d: %v, want %v", name, i, v, want[i])
			continue
		}
		for k := range v {
			if math.Abs(float64(v[k]-want[i][k])) > 1e-4 {
				t.Errorf("output %s item %d: %v, want %v", name, i, v, want[i])
				break
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestItemsSeveralInputs: a request that gives three inputs as items, each
// on its own levels and with its own count (two images, three clips, one
// segment), gets each per-item output back following the input whose
// levels it shares, and none of them, nor their companions, packed.
func TestItemsSeveralInputs(t *testing.T) {
	e := multimodalEngine(t, Options{MaxDelay: time.Millisecond})
	img0, img1 := f32(1, 2, 4), f32(10, 3, 4)
	clip0, clip1, clip2 := f32(2, 1, 4), f32(5, 2, 4), f32(0, 0, 4)
	req := Request{ID: "three", Items: map[string][]Item{
		"px":     TensorItems(img0, img1),
		"frames": TensorItems(clip0, clip1, clip2),
		"tokens": TensorItems(&backend.Tensor{DType: "int64", Shape: []int64{3}, Data: []int64{4, 5, 6}}),
	}}
	resp := e.Run(context.Background(), req)
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	checkItems(t, resp, "image_emb", [][]float32{imageMean(img0), imageMean(img1)})
	checkItems(t, resp, "clip_emb", [][]float32{rowsMean(clip0, 4), rowsMean(clip1, 4), make([]float32, 4)})
	checkItems(t, resp, "seg_emb", [][]float32{{15}})
	if resp.Outputs.Len() != 0 {
		t.Errorf("outputs %v left packed beside the items", keys(resp.Outputs.Map()))
	}
}

// pairedEngine opens testdata/paired.yaml: two items inputs on one level.
func pairedEngine(t testing.TB) *Engine {
	t.Helper()
	b := &backend.Bindings{}
	b.Register("image", imageBinding)
	return bindingEngine(t, "paired.yaml", b, Options{MaxDelay: time.Millisecond})
}

// TestItemsSeveralInputsSplit: the items of two inputs that differ in an
// unpadded extent (features) run as separate requests when they split
// alike, item by item, and each output is reassembled in item order; when
// they split otherwise (or only one of them splits), the request is
// refused with run/input that names both inputs.
func TestItemsSeveralInputsSplit(t *testing.T) {
	e := pairedEngine(t)
	px := []*backend.Tensor{f32(1, 2, 4), f32(3, 3, 6), f32(7, 1, 4)}
	qx := []*backend.Tensor{f32(2, 1, 2), f32(4, 2, 3), f32(9, 3, 2)}
	resp := e.Run(context.Background(), Request{ID: "alike", Items: map[string][]Item{"px": TensorItems(px...), "qx": TensorItems(qx...)}})
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	var wantP, wantQ [][]float32
	for i := range px {
		wantP, wantQ = append(wantP, imageMean(px[i])), append(wantQ, imageMean(qx[i]))
	}
	checkItems(t, resp, "p_emb", wantP)
	checkItems(t, resp, "q_emb", wantQ)
	if s := e.Stats().Components["image"]; s.Invocations < 4 {
		t.Errorf("%d invocations of image, want the two extents of each input apart (4)", s.Invocations)
	}
	for name, q := range map[string][]*backend.Tensor{
		"unlike":   {f32(2, 1, 2), f32(4, 2, 2), f32(9, 3, 3)},
		"one part": {f32(2, 1, 2), f32(4, 2, 2), f32(9, 3, 2)},
	} {
		resp := e.Run(context.Background(), Request{ID: name, Items: map[string][]Item{"px": TensorItems(px...), "qx": TensorItems(q...)}})
		if resp.Err == nil || AsRunError(resp.Err).Rule != backend.RunInput || !strings.Contains(resp.Err.Error(), "`px`") || !strings.Contains(resp.Err.Error(), "`qx`") {
			t.Errorf("%s: %v, want %s naming px and qx", name, resp.Err, backend.RunInput)
		}
	}
}
