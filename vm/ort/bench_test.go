//go:build cgo

package ort

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/ortlib"
)

// benchCase is one model and one budget-sized batch of inputs for it.
type benchCase struct {
	name   string
	dir    string
	comp   *ir.Component
	inputs map[string]*backend.Tensor
	// fresh gives the session a copy of the inputs in new buffers at every
	// call (untimed), as a caller that does not reuse its buffers would.
	fresh bool
	// byName calls the session's Run (tensors in maps by name) rather than
	// RunPorts, the call the runtime's runners make.
	byName bool
}

// BenchmarkRunVsDirect times, interleaved call by call, a session's
// RunPorts through the backend seam (the call a runner makes per group)
// and a direct onnxruntime_go Run of the same tensors over pre-created
// input and output values (what a hand-written program does), both on one
// ONNX Runtime thread. It reports both times per call and their ratio
// (session over direct), the figure issue 11 bounds at 1.10. The
// image16-fresh case shows the cost of input buffers the session has not
// seen before, image16-byname that of Run's maps.
func BenchmarkRunVsDirect(b *testing.B) {
	fresh := imageBatch(b, 16, 16)
	fresh.name, fresh.fresh = fresh.name+"-fresh", true
	byName := imageBatch(b, 16, 16)
	byName.name, byName.byName = byName.name+"-byname", true
	for _, c := range []benchCase{imageBatch(b, 16, 16), fresh, byName, embeddingBatch(b, 16)} {
		b.Run(c.name, func(b *testing.B) {
			opts := Options{IntraOpThreads: 1, InterOpThreads: 1}
			s, err := newBackend(b, opts).Load(c.comp, c.dir)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			direct := newDirect(b, filepath.Join(c.dir, c.comp.Artifact), c.inputs, s)
			defer direct.close()
			ps := s.(backend.PortSession)
			inNames, outNames := ps.Ports()
			in, ins, outs := c.inputs, make([]*backend.Tensor, len(inNames)), make([]*backend.Tensor, len(outNames))
			prepare := func() {
				if c.fresh {
					in = cloneInputs(c.inputs)
				}
				for i, name := range inNames {
					ins[i] = in[name]
				}
			}
			interleave(b, prepare, func() {
				var err error
				if c.byName {
					_, err = s.Run(context.Background(), in, nil)
				} else {
					err = ps.RunPorts(context.Background(), ins, nil, outs)
				}
				if err != nil {
					b.Fatal(err)
				}
			}, direct.run)
		})
	}
}

// interleave alternates two calls (swapping which goes first), each
// iteration after an untimed prepare, and reports the mean time of each
// and their ratio.
func interleave(b *testing.B, prepare, session, direct func()) {
	var ts, td time.Duration
	timed := func(f func()) time.Duration {
		t0 := time.Now()
		f()
		return time.Since(t0)
	}
	i := 0
	for b.Loop() {
		prepare()
		if i%2 == 0 {
			ts += timed(session)
			td += timed(direct)
		} else {
			td += timed(direct)
			ts += timed(session)
		}
		i++
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(i), "session-ns/call")
	b.ReportMetric(float64(td.Nanoseconds())/float64(i), "direct-ns/call")
	b.ReportMetric(float64(ts)/float64(td), "session/direct")
}

func cloneInputs(in map[string]*backend.Tensor) map[string]*backend.Tensor {
	out := make(map[string]*backend.Tensor, len(in))
	for name, t := range in {
		c, _ := backend.NewTensor(t.DType, t.Shape)
		c.CopyElems(0, t, 0, t.Len())
		out[name] = c
	}
	return out
}

// direct is a hand-written onnxruntime_go program: one session, its
// input and output values created once and reused by every Run.
type direct struct {
	b         testing.TB
	sess      *ortgo.DynamicAdvancedSession
	ins, outs []ortgo.Value
}

// newDirect opens the graph at path with one thread and wraps inputs and
// output buffers shaped like the outputs s produces for them.
func newDirect(b testing.TB, path string, inputs map[string]*backend.Tensor, s backend.Session) *direct {
	b.Helper()
	ref, err := s.Run(context.Background(), inputs, nil)
	if err != nil {
		b.Fatal(err)
	}
	gi, gout, err := ortgo.GetInputOutputInfo(path)
	if err != nil {
		b.Fatal(err)
	}
	d := &direct{b: b}
	var inNames, outNames []string
	for _, in := range gi {
		inNames = append(inNames, in.Name)
		d.ins = append(d.ins, mustValue(b, inputs[in.Name]))
	}
	for _, o := range gout {
		outNames = append(outNames, o.Name)
		t, err := backend.NewTensor(ref[o.Name].DType, ref[o.Name].Shape)
		if err != nil {
			b.Fatal(err)
		}
		d.outs = append(d.outs, mustValue(b, t))
	}
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		b.Fatal(err)
	}
	defer so.Destroy()
	if err := so.SetIntraOpNumThreads(1); err != nil {
		b.Fatal(err)
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		b.Fatal(err)
	}
	if d.sess, err = ortgo.NewDynamicAdvancedSession(path, inNames, outNames, so); err != nil {
		b.Fatal(err)
	}
	return d
}

func mustValue(b testing.TB, t *backend.Tensor) ortgo.Value {
	b.Helper()
	v, err := ortValue(t)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func (d *direct) run() {
	if err := d.sess.Run(d.ins, d.outs); err != nil {
		d.b.Fatal(err)
	}
}

func (d *direct) close() {
	destroyAll(d.ins)
	destroyAll(d.outs)
	d.sess.Destroy()
}

// imageBatch is a budget-sized group of the image_padded encoder: images
// images of patches patches each, from one request per image.
func imageBatch(b testing.TB, images, patches int64) benchCase {
	b.Helper()
	_, comp := imagePaddedComponent(b)
	return benchCase{
		name:   fmt.Sprintf("image%d", images),
		dir:    filepath.Join(testenv.Root(b), "testdata/packages/image_padded"),
		comp:   comp,
		inputs: imageGroup(images, patches),
	}
}

// imageGroup is the inputs of a group of images of patches patches each
// (image i with 1 + i mod patches valid ones), one request per image.
func imageGroup(images, patches int64) map[string]*backend.Tensor {
	px := make([]float32, images*patches*8)
	for i := range px {
		px[i] = float32(i%13)/8 - 0.75
	}
	lengths := make([]int64, images)
	offsets := make([]int64, images+1)
	owner := make([]int64, images)
	for i := range images {
		lengths[i] = 1 + i%patches
		offsets[i+1] = i + 1
		owner[i] = i
	}
	return map[string]*backend.Tensor{
		"pixel_patches": {DType: "float32", Shape: []int64{images, patches, 8}, Data: px},
		"patch_lengths": {DType: "int64", Shape: []int64{images}, Data: lengths},
		"image_offsets": {DType: "int64", Shape: []int64{images + 1}, Data: offsets},
		"image_owner":   {DType: "int64", Shape: []int64{images}, Data: owner},
	}
}

// embeddingBatch is n windows of the real wakeword embedding model.
func embeddingBatch(b testing.TB, n int) benchCase {
	b.Helper()
	e := embeddingModel(b)
	if _, err := ortlib.Model(e.file); err != nil {
		b.Fatal(err)
	}
	return benchCase{
		name:   "embedding16",
		dir:    e.dir,
		comp:   e.component("embedding"),
		inputs: map[string]*backend.Tensor{e.in: windows(n, 7)},
	}
}
