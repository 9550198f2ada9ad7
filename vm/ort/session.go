//go:build cgo

package ort

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/backend"
	ortgo "github.com/yalue/onnxruntime_go"
)

// session is one component's DynamicAdvancedSession.
//
// Run needs no lock: ONNX Runtime documents that one session may run on
// many threads at once, and onnxruntime_go's Run keeps no state of its own
// between calls (each call builds its own value arrays; the name arrays and
// the session handle are only read). The port plans are read-only after
// Load but for each output's missed flag, which is atomic; the input value
// cache has its own lock. Close is the one writer, and the RWMutex keeps it
// from destroying the session under a running call.
type session struct {
	comp    string
	inputs  []inPort
	outputs []outPort
	all     []bool // every output wanted: what a nil outputs list asks for
	// inNames and outNames are the ports' names in graph order (Ports).
	inNames, outNames []string
	ready             backend.Readiness
	// alloc makes a predicted output's Go buffer, with room for extra
	// elements more (backend.NewTensorRoom; tests watch it).
	alloc  func(dtype string, shape []int64, extra int64) (*backend.Tensor, error)
	values valueCache // the inputs' ORT values
	// scratch holds the ORT values small outputs are written into
	// (scratch.go), for outputs of at most scratchMax bytes (tests set it
	// to 0 to see outputs written in place).
	scratch    scratchOutputs
	scratchMax int64
	calls      sync.Pool // of *call, sized for this graph
	// given holds the outputs' memory the runtime gave back (Recycle);
	// RunPorts writes its outputs into it where it can.
	given *backend.Buffers

	mu  sync.RWMutex
	ort *ortgo.DynamicAdvancedSession // nil once closed
	// inORT sums the time runs spent in ONNX Runtime's Run (ns).
	inORT atomic.Int64
	// runs counts the calls into ONNX Runtime's Run, failed ones included:
	// what tests read to see that a failing call runs the graph once.
	runs atomic.Int64
}

var _ backend.Timed = (*session)(nil)

// BackendTime implements backend.Timed: the time runs spent inside ONNX
// Runtime's Run.
func (s *session) BackendTime() time.Duration { return time.Duration(s.inORT.Load()) }

// Ready implements backend.Session.
func (s *session) Ready() backend.Readiness { return s.ready }

// Close implements backend.Session.
func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ort == nil {
		return nil
	}
	err := s.ort.Destroy()
	s.ort = nil
	s.values.close()
	s.scratch.close()
	if err != nil {
		return fmt.Errorf("component `%s`: close the onnxruntime session: %w", s.comp, err)
	}
	return nil
}

// Run implements backend.Session. Inputs are handed to ONNX Runtime without a
// copy (the ORT values point into the callers' Go slices). An output whose
// shape is known before the run (outPort.plan) is allocated in Go memory
// and written there by ONNX Runtime: the returned tensor is that buffer,
// fresh for every call. Any other output is allocated by ONNX Runtime and
// copied once into Go memory. A nil outputs list asks for every graph output.
func (s *session) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	res, err := s.run(ctx, inputs, outputs)
	if err != nil {
		return nil, fmt.Errorf("component `%s`: %w", s.comp, err)
	}
	return res, nil
}

func (s *session) run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := s.calls.Get().(*call)
	defer s.done(c)
	want, err := s.wanted(outputs, c.want)
	if err != nil {
		return nil, err
	}
	if err := s.bind(c, inputs); err != nil {
		return nil, err
	}
	if err := s.execute(ctx, c); err != nil {
		return nil, err
	}
	return s.collect(c, want)
}

var _ backend.PortSession = (*session)(nil)

// Ports implements backend.PortSession.
func (s *session) Ports() (inputs, outputs []string) { return s.inNames, s.outNames }

// RunPorts implements backend.PortSession: Run's call on tensors in the
// graph's order, with no map read or made.
func (s *session) RunPorts(ctx context.Context, ins []*backend.Tensor, want []bool, outs []*backend.Tensor) error {
	if err := s.runPorts(ctx, ins, want, outs); err != nil {
		clear(outs)
		return fmt.Errorf("component `%s`: %w", s.comp, err)
	}
	return nil
}

func (s *session) runPorts(ctx context.Context, ins []*backend.Tensor, want []bool, outs []*backend.Tensor) error {
	if len(ins) != len(s.inputs) || len(outs) != len(s.outputs) || want != nil && len(want) != len(s.outputs) {
		return fmt.Errorf("got %d input(s) and room for %d output(s), but the graph takes %d input(s) [%s] and gives %d output(s) [%s]", len(ins), len(outs), len(s.inputs), s.inputNames(), len(s.outputs), s.outputNames())
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if want == nil {
		want = s.all
	}
	c := s.calls.Get().(*call)
	defer s.done(c)
	c.recycling = true
	copy(c.tensors, ins)
	if err := s.check(c); err != nil {
		return err
	}
	if err := s.execute(ctx, c); err != nil {
		return err
	}
	for i := range s.outputs {
		outs[i] = nil
		if want[i] {
			t, err := s.output(c, i)
			if err != nil {
				return err
			}
			outs[i] = t
		}
	}
	return nil
}

// execute runs the graph on a call's bound and checked inputs, leaving
// its outputs in the call.
func (s *session) execute(ctx context.Context, c *call) error {
	if i, err := s.values.fill(c.tensors, c.held); err != nil {
		return fmt.Errorf("input `%s`: %w", s.inputs[i].info.Name, err)
	}
	for i, e := range c.held {
		c.ins[i] = e.v
	}
	if err := s.provide(c); err != nil {
		return err
	}
	if err := s.invokeCall(ctx, c); err != nil {
		return s.explain(err)
	}
	for i, buf := range c.bufs {
		switch {
		case c.scratch[i] != nil:
			buf.CopyElems(0, c.scratch[i].buf, 0, c.scratch[i].buf.Len())
		case buf != nil && len(buf.Shape) == 0:
			if err := readScalar(c.outs[i], buf); err != nil {
				return fmt.Errorf("output `%s`: %w", s.outputs[i].info.Name, err)
			}
		}
	}
	return nil
}

// call holds one run's tensors and ORT values: the inputs' (held from the
// cache) and the outputs'. bufs[i] is the Go tensor output i is returned
// in, nil where ONNX Runtime allocates the output: output i's value was
// made over it, or, where scratch[i] is set, over that scratch value's
// buffer, which is copied into it. Calls are pooled, so that a run's own
// bookkeeping allocates nothing.
type call struct {
	tensors   []*backend.Tensor // the inputs, in graph order
	held      []*cachedValue
	last      []*cachedValue // held by this call's previous run (hits)
	ins, outs []ortgo.Value
	bufs      []*backend.Tensor
	scratch   []*scratchValue
	hints     []*scratchValue // the scratch values its previous run held
	shape     []int64         // scratch for a predicted shape
	want      []bool          // scratch for the wanted outputs
	// recycling says the call is a RunPorts call, whose outputs the
	// runtime may give back: its buffers come from given where they can.
	recycling bool
}

func newCall(inputs, outputs int) *call {
	return &call{
		tensors: make([]*backend.Tensor, inputs),
		held:    make([]*cachedValue, inputs),
		last:    make([]*cachedValue, inputs),
		ins:     make([]ortgo.Value, inputs),
		outs:    make([]ortgo.Value, outputs),
		bufs:    make([]*backend.Tensor, outputs),
		scratch: make([]*scratchValue, outputs),
		hints:   make([]*scratchValue, outputs),
		want:    make([]bool, outputs),
		shape:   make([]int64, 0, maxCachedRank),
	}
}

// done releases a call's ORT values (the Go memory they point into stays
// with its owners: the caller, or the tensors Run returns) and pools it.
func (s *session) done(c *call) {
	s.values.release(c.held, c.last)
	s.dropOutputs(c)
	clear(c.tensors)
	clear(c.held)
	clear(c.ins)
	clear(c.bufs)
	c.recycling = false
	s.calls.Put(c)
}

// dropOutputs releases a call's output values, giving the scratch ones
// back (and keeping them as the next run's hints).
func (s *session) dropOutputs(c *call) {
	for i, v := range c.outs {
		if sv := c.scratch[i]; sv != nil {
			s.scratch.put(sv)
			c.hints[i] = sv
		} else if v != nil {
			v.Destroy()
		}
	}
	clear(c.outs)
	clear(c.scratch)
}

// provide makes a fresh Go buffer for every output whose shape it can
// predict from the call's inputs, and an ORT value over it, or, for a
// small one, takes a scratch value to copy from; the other outputs'
// values stay nil, for ONNX Runtime to allocate.
func (s *session) provide(c *call) error {
	for i := range s.outputs {
		o := &s.outputs[i]
		shape, ok := o.predict(c.tensors, c.shape[:0])
		if !ok {
			continue
		}
		buf, err := s.outputBuffer(c, o.dtype, shape)
		if err != nil {
			return fmt.Errorf("output `%s`: %w", o.info.Name, err)
		}
		c.bufs[i] = buf
		if key, ok := scratchKeyOf(i, buf, s.scratchMax); ok {
			sv, err := s.scratch.take(key, c.hints[i], buf)
			if err != nil {
				return fmt.Errorf("output `%s`: %w", o.info.Name, err)
			}
			if sv != nil {
				c.scratch[i], c.outs[i] = sv, sv.v
				continue
			}
		}
		if c.outs[i], err = newValue(buf); err != nil {
			return fmt.Errorf("output `%s`: %w", o.info.Name, err)
		}
	}
	return nil
}

// invokeCall runs the graph on a call's values. When ONNX Runtime refuses
// an output provided at a predicted shape (it checks a provided output's
// shape against the one it computes), the run is repeated with every
// output allocated by ONNX Runtime, and the outputs whose shape differs
// from the prediction are never predicted again. Any other failure is the
// call's error after one run: the graph failed on its inputs, and running
// it again would only fail (and have ONNX Runtime log the failure) twice.
func (s *session) invokeCall(ctx context.Context, c *call) error {
	err := s.invoke(ctx, c.ins, c.outs)
	if err == nil || !slices.ContainsFunc(c.bufs, func(b *backend.Tensor) bool { return b != nil }) || ctx.Err() != nil || !outputRefused(err) {
		return err
	}
	guess := slices.Clone(c.bufs)
	s.dropOutputs(c)
	clear(c.bufs)
	if err := s.invoke(ctx, c.ins, c.outs); err != nil {
		return err
	}
	s.learn(guess, c.outs)
	return nil
}

// outputRefusals are how ONNX Runtime's errors say that an output the
// caller provided has another shape than the run computes: in the
// releases this backend is built against, and in those before them.
var outputRefusals = []string{"OrtValue provided for output", "OrtValue shape verification failed"}

// outputRefused reports whether a failed run's error is ONNX Runtime
// refusing a provided output.
func outputRefused(err error) bool {
	msg := err.Error()
	return slices.ContainsFunc(outputRefusals, func(p string) bool { return strings.Contains(msg, p) })
}

// learn marks the outputs whose predicted shape (guess) differs from the
// one ONNX Runtime produced; when none differs, the refusal was of the
// provided outputs themselves, and every predicted output is marked.
func (s *session) learn(guess []*backend.Tensor, outs []ortgo.Value) {
	missed := false
	for i, g := range guess {
		if g != nil && !slices.Equal([]int64(outs[i].GetShape()), g.Shape) {
			s.outputs[i].missed.Store(true)
			missed = true
		}
	}
	for i, g := range guess {
		if g != nil && !missed {
			s.outputs[i].missed.Store(true)
		}
	}
}

// collect returns the wanted outputs by name.
func (s *session) collect(c *call, want []bool) (map[string]*backend.Tensor, error) {
	res := make(map[string]*backend.Tensor, len(want))
	for i := range s.outputs {
		if want[i] {
			t, err := s.output(c, i)
			if err != nil {
				return nil, err
			}
			res[s.outputs[i].info.Name] = t
		}
	}
	return res, nil
}

// output returns a call's output i: the Go buffer ONNX Runtime wrote
// into, or a copy of the value it allocated.
func (s *session) output(c *call, i int) (*backend.Tensor, error) {
	if c.bufs[i] != nil {
		return c.bufs[i], nil
	}
	t, err := hostTensor(c.outs[i])
	if err != nil {
		return nil, fmt.Errorf("output `%s`: %w", s.outputs[i].info.Name, err)
	}
	return t, nil
}

// wanted resolves the requested output names to a flag per graph output,
// in want (one per graph output, overwritten).
func (s *session) wanted(outputs []string, want []bool) ([]bool, error) {
	if outputs == nil {
		return s.all, nil
	}
	clear(want)
	for _, name := range outputs {
		i := s.outputIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("output `%s` was requested, but the graph's outputs are [%s]", name, s.outputNames())
		}
		want[i] = true
	}
	return want, nil
}

// bind puts the call's tensors in the graph's input order into the call,
// each checked against its input.
func (s *session) bind(c *call, inputs map[string]*backend.Tensor) error {
	tensors := c.tensors
	found := 0
	for i := range s.inputs {
		if tensors[i] = inputs[s.inputs[i].info.Name]; tensors[i] != nil {
			found++
		}
	}
	if found < len(inputs) {
		if err := s.unknownInputs(inputs); err != nil {
			return err
		}
	}
	return s.check(c)
}

// check compares each of a call's tensors, in the graph's input order,
// with its input, once it has taken the cached values over them
// (valueCache.hits). A tensor over the very buffer this call's last run
// passed at the same position, as the same dtype, shape and length (a
// runner's group buffers, a caller's reused inputs), was checked then, by
// this session against this input, and is not checked again.
func (s *session) check(c *call) error {
	for i, t := range c.tensors {
		if t == nil {
			return fmt.Errorf("input `%s` is missing: every graph input [%s] needs a tensor", s.inputs[i].info.Name, s.inputNames())
		}
	}
	again := s.values.hits(c.tensors, c.held, c.last)
	for i, t := range c.tensors {
		if i < 64 && again&(1<<i) != 0 {
			continue
		}
		in := &s.inputs[i]
		if err := in.check(t); err != nil {
			return fmt.Errorf("input `%s`: %w", in.info.Name, err)
		}
	}
	return nil
}

// unknownInputs names the inputs that are not the graph's.
func (s *session) unknownInputs(inputs map[string]*backend.Tensor) error {
	var unknown []string
	for name := range inputs {
		if !slices.ContainsFunc(s.inputs, func(in inPort) bool { return in.info.Name == name }) {
			unknown = append(unknown, "`"+name+"`")
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("input %s is not an input of the graph, whose inputs are [%s]", strings.Join(unknown, ", "), s.inputNames())
}

// check compares a tensor with what the graph declares, so that a mistake
// reads in genaic's terms rather than ONNX Runtime's.
func (in *inPort) check(t *backend.Tensor) error {
	if in.dtype != "" && in.dtype != t.DType {
		return fmt.Errorf("the tensor is %s, but the graph takes %s", t.DType, in.dtype)
	}
	if dims := in.info.Dimensions; len(dims) > 0 {
		if len(dims) != len(t.Shape) {
			return fmt.Errorf("got %s (rank %d), but the graph takes rank %d, shape %v", t, len(t.Shape), len(dims), dims)
		}
		for i, d := range dims {
			if d > 0 && t.Shape[i] != d {
				return fmt.Errorf("got %s, but the graph fixes axis %d at %d (shape %v)", t, i, d, dims)
			}
		}
	}
	return checkData(t)
}

func (s *session) inputNames() string { return strings.Join(s.inNames, ", ") }

func (s *session) outputNames() string { return strings.Join(s.outNames, ", ") }

// outputIndex is the graph position of an output, or -1.
func (s *session) outputIndex(name string) int {
	for i := range s.outputs {
		if s.outputs[i].info.Name == name {
			return i
		}
	}
	return -1
}

// invoke runs the graph. When ctx can be cancelled, a cancellation sets
// ONNX Runtime's terminate flag, so that a long run stops early.
func (s *session) invoke(ctx context.Context, ins, outs []ortgo.Value) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ort == nil {
		return errors.New("the session is closed")
	}
	s.runs.Add(1)
	start := time.Now()
	defer func() { s.inORT.Add(int64(time.Since(start))) }()
	if ctx.Done() == nil {
		return forgetNil(outs, s.ort.Run(ins, outs))
	}
	opts, err := ortgo.NewRunOptions()
	if err != nil {
		return err
	}
	terminated := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(terminated)
		opts.Terminate()
	})
	err = forgetNil(outs, s.ort.RunWithOptions(ins, outs, opts))
	if !stop() {
		<-terminated // Terminate is running: let it finish before Destroy
	}
	opts.Destroy()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("run cancelled: %w", ctx.Err())
	}
	return err
}

// forgetNil returns a run's error, first clearing, where the run failed,
// the outputs onnxruntime_go left as a nil pointer in a non-nil Value: an
// output ONNX Runtime allocated and onnxruntime_go failed to convert (a
// scalar it cannot hold). Dropping the call's outputs then never destroys
// one.
func forgetNil(outs []ortgo.Value, err error) error {
	if err == nil {
		return nil
	}
	for i, v := range outs {
		if rv := reflect.ValueOf(v); v != nil && rv.Kind() == reflect.Pointer && rv.IsNil() {
			outs[i] = nil
		}
	}
	return err
}

// explain adds what genaic knows to a failed run: onnxruntime_go v1.27.0
// cannot hold a rank-0 output that ONNX Runtime allocated, and says only
// that a shape has no dimensions. The session makes a scalar output's value
// before the run wherever it plans the output as one (planShape), which a
// contract of a positive rank, or an earlier refusal, rules out.
func (s *session) explain(err error) error {
	if !errors.Is(err, ortgo.ZeroShapeLengthError) {
		return err
	}
	for i := range s.outputs {
		if o := &s.outputs[i]; len(o.info.Dimensions) == 0 && o.info.OrtValueType == ortgo.ONNXTypeTensor && (o.plan == nil || o.missed.Load()) {
			if slices.Contains(s.inNames, o.info.Name) {
				return fmt.Errorf("%w (graph output `%s` is a scalar input passed through, which onnxruntime_go v1.27.0 cannot return: leave the output undeclared, the caller has its value)", err, o.info.Name)
			}
			return fmt.Errorf("%w (graph output `%s` is a scalar, which onnxruntime_go v1.27.0 returns only into a value made before the run: declare its port with shape [])", err, o.info.Name)
		}
	}
	return err
}

func destroyAll(vals []ortgo.Value) {
	for _, v := range vals {
		if v != nil {
			v.Destroy()
		}
	}
}

// InputShape implements backend.InputShaper: the graph's static extents of
// an input, -1 where dynamic, or nil for an unknown input.
func (s *session) InputShape(name string) []int64 {
	for i := range s.inputs {
		if s.inputs[i].info.Name == name {
			return append([]int64(nil), s.inputs[i].info.Dimensions...)
		}
	}
	return nil
}

// OutputShape implements backend.ShapeHinter: the graph's static extents of an
// output, -1 where dynamic, or nil for an unknown output.
func (s *session) OutputShape(name string) []int64 {
	if i := s.outputIndex(name); i >= 0 {
		return append([]int64(nil), s.outputs[i].info.Dimensions...)
	}
	return nil
}
