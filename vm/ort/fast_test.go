//go:build cgo

package ort

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/ir"
)

// watchAlloc records the output buffers a session allocates.
func watchAlloc(t *testing.T, s backend.Session) *[]*backend.Tensor {
	t.Helper()
	sess, ok := s.(*session)
	if !ok {
		t.Fatalf("the session is a %T", s)
	}
	var (
		mu   sync.Mutex
		made []*backend.Tensor
	)
	sess.alloc = func(dtype string, shape []int64, extra int64) (*backend.Tensor, error) {
		buf, err := backend.NewTensorRoom(dtype, shape, extra)
		mu.Lock()
		made = append(made, buf)
		mu.Unlock()
		return buf, err
	}
	return &made
}

func sameData(a, b any) bool { return dataAddr(a) == dataAddr(b) }

// imageInputs is a group of images of patches patches each, filled from seed.
func imageInputs(images, patches int64, seed float32) map[string]*backend.Tensor {
	in := imageGroup(images, patches)
	px := in["pixel_patches"].Float32s()
	for i := range px {
		px[i] += seed
	}
	return in
}

func runImage(t *testing.T, s backend.Session, in map[string]*backend.Tensor) *backend.Tensor {
	t.Helper()
	res, err := s.Run(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res["embeddings"]
}

// TestOutputsWrittenInPlace: an output whose shape the contracts predict,
// larger than a scratch value, is the Go buffer the session allocated,
// written by ONNX Runtime (no copy), fresh for every call, and right.
func TestOutputsWrittenInPlace(t *testing.T) {
	_, s := imagePadded(t)
	s.(*session).scratchMax = 0
	made := watchAlloc(t, s)
	in := imageInputs(5, 3, 0)
	first := runImage(t, s, in)
	second := runImage(t, s, in)
	if len(*made) != 2 {
		t.Fatalf("the session allocated %d output buffers for two calls, want 2", len(*made))
	}
	for i, got := range []*backend.Tensor{first, second} {
		if !sameData(got.Data, (*made)[i].Data) || !reflect.DeepEqual(got.Shape, []int64{5, 4}) {
			t.Errorf("call %d returned %v that is not the buffer the session allocated", i, got)
		}
	}
	if sameData(first.Data, second.Data) {
		t.Error("two calls returned the same output buffer")
	}
	checkImage(t, in, first)

	e := embeddingModel(t)
	es := e.load(t, newBackend(t, Options{}))
	es.(*session).scratchMax = 0
	made = watchAlloc(t, es)
	res, err := es.Run(context.Background(), map[string]*backend.Tensor{e.in: windows(3, 2)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res[e.out]; len(*made) != 1 || !sameData(got.Data, (*made)[0].Data) || !reflect.DeepEqual(got.Shape, []int64{3, 1, 1, 96}) {
		t.Errorf("the embedding output %v is not the buffer the session allocated", got)
	}
}

// TestSmallOutputsScratch: a small predicted output is written into a
// scratch value that later calls of its shape reuse, and copied into the
// fresh buffer the call returns; calls at once hold scratch values of
// their own, the store stays within maxScratch by dropping free values
// of other shapes, and Close destroys them.
func TestSmallOutputsScratch(t *testing.T) {
	_, s := imagePadded(t)
	sess := s.(*session)
	made := watchAlloc(t, s)
	in := imageInputs(5, 3, 0)
	first := runImage(t, s, in)
	second := runImage(t, s, in)
	checkImage(t, in, first)
	checkImage(t, in, second)
	if len(*made) != 2 || !sameData(first.Data, (*made)[0].Data) || !sameData(second.Data, (*made)[1].Data) {
		t.Fatalf("the calls did not return the fresh buffers the session allocated")
	}
	if n := len(sess.scratch.vals); n != 1 {
		t.Errorf("two calls of one shape made %d scratch values, want 1", n)
	}
	for _, sv := range sess.scratch.vals {
		if sameData(sv.buf.Data, first.Data) || sameData(sv.buf.Data, second.Data) {
			t.Error("a call returned its scratch buffer")
		}
	}
	// one call per image count, each a new shape, past the bound
	for i := range maxScratch + 8 {
		in := imageInputs(int64(1+i), 2, float32(i))
		checkImage(t, in, runImage(t, s, in))
		if n := len(sess.scratch.vals); n > maxScratch {
			t.Fatalf("the store holds %d scratch values, more than %d", n, maxScratch)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(sess.scratch.vals); n != 0 {
		t.Errorf("after Close %d scratch values remain", n)
	}
}

// checkImage compares embeddings with the model's plain-Go reference.
func checkImage(t *testing.T, in map[string]*backend.Tensor, got *backend.Tensor) {
	t.Helper()
	if err := compareImage(in, got); err != nil {
		t.Error(err)
	}
}

func compareImage(in map[string]*backend.Tensor, got *backend.Tensor) error {
	ref := map[string]testmodels.Tensor{}
	for name, x := range in {
		if x.DType == "float32" {
			ref[name] = testmodels.Float32(x.Shape, x.Float32s())
		} else {
			ref[name] = testmodels.Int64(x.Shape, x.Int64s())
		}
	}
	want, err := testmodels.Lookup("image_padded").Reference(ref)
	if err != nil {
		return err
	}
	w := want["embeddings"]
	if !reflect.DeepEqual(got.Shape, w.Shape) {
		return fmt.Errorf("embeddings %v, want shape %v", got, w.Shape)
	}
	if j, ok := near(got.Float32s(), w.F32, 1e-5); !ok {
		return fmt.Errorf("embeddings differ from the reference at %d: %v vs %v", j, got.Float32s()[j], w.F32[j])
	}
	return nil
}

// TestPredictionFallback: a contract that predicts a wrong output shape
// makes ONNX Runtime refuse the provided output; the call is repeated with
// the output allocated by ONNX Runtime and still answers right, and the
// output is not predicted again.
func TestPredictionFallback(t *testing.T) {
	_, comp := imagePaddedComponent(t)
	comp.Outputs[0].Contract = contract("float32", "patches", "hidden") // wrong: the graph gives [images, 4]
	dir := filepath.Join(testenv.Root(t), "testdata/packages/image_padded")
	s, err := newBackend(t, Options{}).Load(comp, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	made := watchAlloc(t, s)
	in := imageInputs(5, 3, 0)
	got := runImage(t, s, in)
	checkImage(t, in, got)
	if len(*made) != 1 || sameData(got.Data, (*made)[0].Data) {
		t.Fatalf("allocated %d buffers; want the one refused, not returned", len(*made))
	}
	if !s.(*session).outputs[0].missed.Load() {
		t.Error("the output is still predicted after ONNX Runtime refused the prediction")
	}
	checkImage(t, in, runImage(t, s, in))
	if len(*made) != 1 {
		t.Errorf("the session predicted the output again (%d buffers)", len(*made))
	}
}

// TestPlanOutputs: where each extent of an output comes from.
func TestPlanOutputs(t *testing.T) {
	ins := []ortgo.InputOutputInfo{{Name: "x", Dimensions: ortgo.NewShape(-1, -1, 8)}}
	tests := []struct {
		name  string
		graph []int64
		c     *ir.Contract
		want  []dimSource
	}{
		{"graph and symbol", []int64{-1, 4}, contract("float32", "n", "h"), []dimSource{{in: 0, axis: 0}, {size: 4, in: -1}}},
		{"literal", []int64{-1, -1}, contract("float32", "t", 7), []dimSource{{in: 0, axis: 1}, {size: 7, in: -1}}},
		{"open graph rank", nil, contract("float32", "n"), []dimSource{{in: 0, axis: 0}}},
		{"unbound symbol", []int64{-1, 4}, contract("float32", "m", "h"), nil},
		{"no contract shape", []int64{-1, 4}, &ir.Contract{DType: "float32", Rank: 2}, nil},
		{"rank disagrees", []int64{-1, 4}, contract("float32", "n"), nil},
		{"all static", []int64{2, 4}, nil, []dimSource{{size: 2, in: -1}, {size: 4, in: -1}}},
		{"scalar", []int64{}, nil, []dimSource{}},
		{"declared scalar", []int64{}, contract("float32"), []dimSource{}},
		{"ranked contract", []int64{}, &ir.Contract{DType: "float32", Rank: 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comp := &ir.Component{
				Inputs:  []*ir.Port{{Name: "x", Contract: contract("float32", "n", "t", "f")}},
				Outputs: []*ir.Port{{Name: "y", Contract: tt.c}},
			}
			outs := []ortgo.InputOutputInfo{{Name: "y", OrtValueType: ortgo.ONNXTypeTensor, DataType: ortgo.TensorElementDataTypeFloat, Dimensions: tt.graph}}
			if got := planOutputs(comp, ins, outs)[0].plan; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestInputCache: a buffer passed again reuses its ORT value, and what the
// caller wrote into it since is what the graph reads; another shape over
// the same buffer is another value.
func TestInputCache(t *testing.T) {
	_, s := imagePadded(t)
	sess := s.(*session)
	in := imageInputs(4, 3, 0)
	runImage(t, s, in)
	if n := len(sess.values.entries); n != 4 {
		t.Fatalf("the cache holds %d values after one call of 4 inputs, want 4", n)
	}
	before := maps.Clone(sess.values.entries)
	px := in["pixel_patches"].Float32s()
	for i := range px {
		px[i] = float32(i%7) - 3
	}
	in["patch_lengths"].Int64s()[2] = 1
	got := runImage(t, s, in)
	checkImage(t, in, got)
	if !maps.Equal(sess.values.entries, before) {
		t.Error("a second call with the same buffers made new values")
	}
	view := map[string]*backend.Tensor{
		"pixel_patches": in["pixel_patches"].View(0, 2),
		"patch_lengths": in["patch_lengths"].View(0, 2),
		"image_offsets": {DType: "int64", Shape: []int64{3}, Data: in["image_offsets"].Int64s()[:3]},
		"image_owner":   in["image_owner"].View(0, 2),
	}
	checkImage(t, view, runImage(t, s, view))
	if n := len(sess.values.entries); n != 8 {
		t.Errorf("the cache holds %d values after views of 4 cached buffers, want 8", n)
	}
}

// TestInputCacheEviction: fresh buffers on every call keep the cache
// bounded and every answer right, while the values of a buffer passed
// again and again stay cached; Close empties the cache.
func TestInputCacheEviction(t *testing.T) {
	m, comp := imagePaddedComponent(t)
	s, err := newBackend(t, Options{}).Load(comp, filepath.Join(testenv.Root(t), filepath.Dir(m.Path())))
	if err != nil {
		t.Fatal(err)
	}
	sess := s.(*session)
	hot := imageInputs(3, 2, 0)
	runImage(t, s, hot)
	hotValues := maps.Clone(sess.values.entries)
	for i := range 3 * valueCacheSize {
		in := imageInputs(int64(1+i%5), 2, float32(i))
		checkImage(t, in, runImage(t, s, in))
		checkImage(t, hot, runImage(t, s, hot))
		if n := len(sess.values.entries); n > valueCacheSize {
			t.Fatalf("the cache holds %d values, more than %d", n, valueCacheSize)
		}
	}
	for k, e := range hotValues {
		if sess.values.entries[k] != e {
			t.Errorf("the value of a buffer passed at every call was evicted by fresh ones (%+v)", k)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(sess.values.entries); n != 0 || !sess.values.closed {
		t.Errorf("after Close the cache holds %d values", n)
	}
}

// TestInputCacheBytesBound: inputs of a megabyte each, fresh at every
// call, fill the cache up to its bound on memory, never past it, and the
// cache's count of what it holds stays exact.
func TestInputCacheBytesBound(t *testing.T) {
	_, s := imagePadded(t)
	sess := s.(*session)
	for i := range maxCacheBytes>>20 + 8 {
		in := imageInputs(64, 512, float32(i)) // 64×512×8 float32: 1 MiB
		checkImage(t, in, runImage(t, s, in))
		var held int64
		for _, e := range sess.values.entries {
			held += e.bytes
		}
		if held != sess.values.bytes || held > maxCacheBytes {
			t.Fatalf("call %d: the cache holds %d bytes and counts %d; its bound is %d", i, held, sess.values.bytes, maxCacheBytes)
		}
	}
	if sess.values.bytes < maxCacheBytes-(2<<20) {
		t.Errorf("the cache holds %d bytes of fresh megabyte inputs: it did not fill up to its bound %d", sess.values.bytes, maxCacheBytes)
	}
}

// TestConcurrentCachedRuns runs one session from many goroutines, some
// sharing input buffers (cache hits on one value), some bringing fresh
// buffers every call (misses and evictions under the others' feet), and
// checks every answer (run it with -race).
func TestConcurrentCachedRuns(t *testing.T) {
	_, s := imagePadded(t)
	shared := imageInputs(6, 4, 0.5)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Go(func() {
			for i := range 3 * valueCacheSize / 8 {
				in := shared
				if w%2 == 1 {
					in = imageInputs(int64(1+(w+i)%6), 3, float32(w*100+i))
				}
				res, err := s.Run(context.Background(), in, []string{"embeddings"})
				if err != nil {
					errs <- err
					return
				}
				if err := compareImage(in, res["embeddings"]); err != nil {
					errs <- fmt.Errorf("worker %d call %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestInputCacheKeys: one buffer seen as two dtypes gets a value of each
// dtype (the second uncached: one entry per address and shape), and an
// entry found under a key's sum serves only its own key.
func TestInputCacheKeys(t *testing.T) {
	newBackend(t, Options{})
	var c valueCache
	defer c.close()
	bits := []uint16{1, 2, 3, 4}
	asUint := &backend.Tensor{DType: "uint16", Shape: []int64{4}, Data: bits}
	asHalf := &backend.Tensor{DType: "float16", Shape: []int64{4}, Data: bits}
	held, last := make([]*cachedValue, 2), make([]*cachedValue, 2)
	if i, err := c.acquire([]*backend.Tensor{asUint, asHalf}, held, last); err != nil {
		t.Fatalf("input %d: %v", i, err)
	}
	if _, ok := held[0].v.(*ortgo.Tensor[uint16]); !ok {
		t.Errorf("the uint16 view got a %T", held[0].v)
	}
	if _, ok := held[1].v.(*ortgo.CustomDataTensor); !ok {
		t.Errorf("the float16 view of the same buffer got a %T, the uint16 view's value", held[1].v)
	}
	c.release(held, last)
	if len(c.entries) != 1 {
		t.Errorf("the cache holds %d entries for one buffer and shape, want 1", len(c.entries))
	}
	clear(held)
	// last[0] is the uint16 value, cached: it is not the float16 view's.
	if i, err := c.acquire([]*backend.Tensor{asHalf}, held[:1], last[:1]); err != nil {
		t.Fatalf("input %d: %v", i, err)
	}
	if _, ok := held[0].v.(*ortgo.CustomDataTensor); !ok {
		t.Errorf("the float16 view of a cached uint16 buffer got a %T", held[0].v)
	}
	c.release(held[:1], last[:1])

	// An entry under another key's sum (a collision, which the mix makes
	// rare) is not that key's.
	other := &backend.Tensor{DType: "uint16", Shape: []int64{2, 2}, Data: bits}
	k, _ := keyOf(other)
	for _, e := range c.entries {
		c.entries[k.sum()] = e
	}
	clear(held)
	c.hits([]*backend.Tensor{other}, held[:1], last[:1]) // last[0]: the [4] view's
	delete(c.entries, k.sum())
	if held[0] != nil {
		t.Errorf("a [2, 2] view was served the [4] view's value")
	}
}

// TestInputCacheLast: a call's next run finds the values it held through
// last, the same cached value for the same buffer and shape, never an
// evicted one, nor one over another buffer.
func TestInputCacheLast(t *testing.T) {
	newBackend(t, Options{})
	var c valueCache
	defer c.close()
	x := &backend.Tensor{DType: "int64", Shape: []int64{3}, Data: []int64{1, 2, 3}}
	held, last := make([]*cachedValue, 1), make([]*cachedValue, 1)
	run := func(ts *backend.Tensor) *cachedValue {
		t.Helper()
		if _, err := c.acquire([]*backend.Tensor{ts}, held, last); err != nil {
			t.Fatal(err)
		}
		e := held[0]
		c.release(held, last)
		clear(held)
		return e
	}
	first := run(x)
	if last[0] != first || run(x) != first {
		t.Fatalf("the second run did not get the first's cached value through last")
	}
	c.mu.Lock()
	c.evictAt(slices.Index(c.ring, first))
	c.mu.Unlock()
	if last[0] != first || !first.evicted {
		t.Fatal("the set-up did not evict the value last holds")
	}
	if again := run(x); again == first || again.evicted {
		t.Errorf("the run after an eviction was given the evicted value")
	}
	y := &backend.Tensor{DType: "int64", Shape: []int64{3}, Data: []int64{1, 2, 3}}
	if other := run(y); other.key.addr != dataAddr(y.Data) {
		t.Errorf("another buffer of the same shape was given x's value")
	}
}

// portCall opens the padded image encoder and gives its session, as a
// PortSession too, and an input of five images by name and in the
// graph's input order.
func portCall(t *testing.T) (backend.Session, backend.PortSession, map[string]*backend.Tensor, []*backend.Tensor) {
	_, s := imagePadded(t)
	ps := s.(backend.PortSession)
	in := imageInputs(5, 3, 0)
	names, _ := ps.Ports()
	ins := make([]*backend.Tensor, len(names))
	for i, name := range names {
		ins[i] = in[name]
	}
	return s, ps, in, ins
}

// TestRunPortsIsRun: RunPorts on the graph's inputs in its order gives
// Run's outputs, leaves an output not wanted nil, and refuses a wrong
// count of tensors naming the graph's ports.
func TestRunPortsIsRun(t *testing.T) {
	s, ps, in, ins := portCall(t)
	ctx := context.Background()
	inNames, outNames := ps.Ports()
	want, err := s.Run(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]*backend.Tensor, len(outNames))
	if err := ps.RunPorts(ctx, ins, nil, outs); err != nil {
		t.Fatal(err)
	}
	for j, name := range outNames {
		if w := want[name]; outs[j] == nil || !reflect.DeepEqual(outs[j].Shape, w.Shape) || !reflect.DeepEqual(outs[j].Data, w.Data) {
			t.Errorf("output %s: RunPorts gave %v, Run %v", name, outs[j], w)
		}
	}
	if err := ps.RunPorts(ctx, ins, make([]bool, len(outNames)), outs); err != nil {
		t.Fatal(err)
	}
	for j, o := range outs {
		if o != nil {
			t.Errorf("output %s was not wanted, but RunPorts gave %v", outNames[j], o)
		}
	}
	err = ps.RunPorts(ctx, ins[1:], nil, outs)
	if err == nil || !strings.Contains(err.Error(), inNames[0]) {
		t.Errorf("RunPorts with an input short: %v, want an error naming the graph's inputs", err)
	}
}

// TestReusedInputRechecked: a call skips checking an input over the very
// buffer, dtype, shape and length its last run passed there (a runner's
// group buffers), but a tensor over that buffer that no longer holds its
// shape's elements is checked, and refused, as a fresh one is.
func TestReusedInputRechecked(t *testing.T) {
	_, ps, _, ins := portCall(t)
	ctx := context.Background()
	inNames, outNames := ps.Ports()
	outs := make([]*backend.Tensor, len(outNames))
	for range 2 { // the second run finds every input as the first left it
		if err := ps.RunPorts(ctx, ins, nil, outs); err != nil {
			t.Fatal(err)
		}
	}
	x := slices.Index(inNames, "pixel_patches")
	full := ins[x]
	short := *full
	short.Data = full.Data.([]float32)[:full.Len()-1]
	ins[x] = &short
	err := ps.RunPorts(ctx, ins, nil, outs)
	if err == nil || !strings.Contains(err.Error(), "elements") {
		t.Fatalf("an input over the last run's buffer, one element short: %v, want it refused", err)
	}
	ins[x] = full
	if err := ps.RunPorts(ctx, ins, nil, outs); err != nil {
		t.Fatalf("the whole input again: %v", err)
	}
}

// TestBackendTime: a session counts the time its runs spent inside ONNX
// Runtime, which grows with every run and never exceeds the runs' own.
func TestBackendTime(t *testing.T) {
	_, ps, _, ins := portCall(t)
	timed := ps.(backend.Timed)
	_, outNames := ps.Ports()
	outs := make([]*backend.Tensor, len(outNames))
	if got := timed.BackendTime(); got != 0 {
		t.Fatalf("a session that ran nothing counts %v", got)
	}
	var wall time.Duration
	last := time.Duration(0)
	for range 5 {
		start := time.Now()
		if err := ps.RunPorts(context.Background(), ins, nil, outs); err != nil {
			t.Fatal(err)
		}
		wall += time.Since(start)
		got := timed.BackendTime()
		if got <= last || got > wall {
			t.Fatalf("after runs of %v in all, the backend's time went from %v to %v", wall, last, got)
		}
		last = got
	}
}
