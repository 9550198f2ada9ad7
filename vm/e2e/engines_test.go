// Package e2e runs one table of end-to-end tests (DESIGN §10, the
// acceptance matrix) against both engines of a workflow: the VM
// interpreting the fixture's plan, compiled in memory, and the fixture's
// committed generated executor (examples/), linked into this binary. Every
// request runs grouped and alone ("solo"), each result compared with the
// other and with the Go reference of internal/testmodels; the two engines
// are compared with each other too (engines_agree_test.go). The fixtures
// and their request generators are package internal/fixtures.
//
// The tests fail, never skip, when ONNX Runtime or a model is missing:
// "make setup" provides both.
package e2e

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/examples/audio"
	"github.com/genaic/genaic/examples/audiomel"
	"github.com/genaic/genaic/examples/control"
	"github.com/genaic/genaic/examples/imagepadded"
	"github.com/genaic/genaic/examples/imagepatches"
	"github.com/genaic/genaic/examples/imagepinned"
	"github.com/genaic/genaic/examples/multimodal"
	"github.com/genaic/genaic/examples/ocrlines"
	"github.com/genaic/genaic/examples/ocrrec"
	"github.com/genaic/genaic/examples/requestexpanded"
	"github.com/genaic/genaic/examples/samplerate"
	"github.com/genaic/genaic/examples/silerovad"
	"github.com/genaic/genaic/examples/solo"
	"github.com/genaic/genaic/examples/text"
	"github.com/genaic/genaic/examples/textpadded"
	"github.com/genaic/genaic/examples/timemajor"
	"github.com/genaic/genaic/examples/tokenmerge"
	"github.com/genaic/genaic/examples/videofixed"
	"github.com/genaic/genaic/examples/videofps"
	"github.com/genaic/genaic/examples/videoframes"
	"github.com/genaic/genaic/examples/vmcontrol"
	"github.com/genaic/genaic/examples/wakeword"
	"github.com/genaic/genaic/examples/wakewordaudio"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ort"
)

// groupDelay is the max_delay of the grouping engines the tests run: long
// enough that concurrent requests meet in one group, short enough that a
// group that cannot fill does not stall a test.
const groupDelay = 60 * time.Millisecond

// Runner is one engine running the workflow of one fixture. *vm.Engine is
// one; a generated executor is one through RunRequest.
type Runner interface {
	Run(ctx context.Context, req vm.Request) vm.Response
	RunAll(ctx context.Context, reqs []vm.Request) []vm.Response
	RunBatch(ctx context.Context, reqs []vm.Request, opts vm.BatchOptions) []vm.Response
	Stats() vm.Stats
	Copies(component string) *vm.Copies
	Close() error
}

// executor is what every generated executor has beside its typed API.
type executor interface {
	RunRequest(ctx context.Context, req vm.Request) vm.Response
	RunAll(ctx context.Context, reqs []vm.Request) []vm.Response
	RunBatch(ctx context.Context, reqs []vm.Request, opts vm.BatchOptions) []vm.Response
	Stats() vm.Stats
	Copies(component string) *vm.Copies
	Close() error
}

type generatedRunner struct{ executor }

func (g generatedRunner) Run(ctx context.Context, req vm.Request) vm.Response {
	return g.RunRequest(ctx, req)
}

// opener opens an engine on a package folder with the options of a
// generated executor's New.
type opener func(dir string, opts ...genrt.Option) (Runner, error)

// generated adapts the New of a generated executor.
func generated[X executor](open func(string, ...genrt.Option) (X, error)) opener {
	return func(dir string, opts ...genrt.Option) (Runner, error) {
		x, err := open(dir, opts...)
		if err != nil {
			return nil, err
		}
		return generatedRunner{x}, nil
	}
}

// executors are the committed executors of the fixtures, by package name.
var executors = map[string]opener{
	"imagepadded": generated(imagepadded.New), "imagepinned": generated(imagepinned.New),
	"videoframes": generated(videoframes.New), "videofixed": generated(videofixed.New),
	"audio": generated(audio.New), "text": generated(text.New), "tokenmerge": generated(tokenmerge.New),
	"audiomel": generated(audiomel.New), "imagepatches": generated(imagepatches.New),
	"videofps": generated(videofps.New), "textpadded": generated(textpadded.New),
	"requestexpanded": generated(requestexpanded.New), "solo": generated(solo.New), "wakeword": generated(wakeword.New),
	"timemajor": generated(timemajor.New), "samplerate": generated(samplerate.New), "wakewordaudio": generated(wakewordaudio.New),
	"ocrlines": generated(ocrlines.New), "ocrrec": generated(ocrrec.New), "silerovad": generated(silerovad.New),
	"vmcontrol": generated(vmcontrol.New), "multimodal": generated(multimodal.New), "control": generated(control.New),
}

// engineKind is one axis value of the table: how a fixture is opened.
type engineKind struct {
	name string
	open func(t testing.TB, fx fixtures.Fixture) opener
	// committedOnly: the engine runs only the fixtures whose executor is
	// committed.
	committedOnly bool
}

// runs says whether the engine runs a fixture: the generated engine runs
// those whose executor is committed; the executors of the others, the
// committed ones' code under other names (fixtures.Fixture.SameCode), are
// built and checked against the VM by codegen's differential test.
func (e engineKind) runs(fx fixtures.Fixture) bool {
	return !e.committedOnly || fx.Committed()
}

// among is the fixtures of list the engine runs.
func (e engineKind) among(list []fixtures.Fixture) []fixtures.Fixture {
	var out []fixtures.Fixture
	for _, fx := range list {
		if e.runs(fx) {
			out = append(out, fx)
		}
	}
	return out
}

// engines are the two engines every test of the table runs on.
var engines = []engineKind{
	{"vm", func(t testing.TB, fx fixtures.Fixture) opener {
		f, _ := fixtures.Compile(t, fx)
		return func(dir string, opts ...genrt.Option) (Runner, error) {
			o := engine.Options{Options: vm.Options{MaxDelay: genrt.DefaultMaxDelay}}
			for _, opt := range opts {
				opt(&o)
			}
			return engine.Open(f, dir, o)
		}
	}, false},
	{"generated", func(t testing.TB, fx fixtures.Fixture) opener {
		open := executors[fx.Exec]
		if open == nil {
			t.Fatalf("no executor of %s is linked into the tests: add examples/%s to executors", fx.Name, fx.Exec)
		}
		return open
	}, true},
}

// forEachEngine runs a test once per engine, as a subtest named after it.
func forEachEngine(t *testing.T, test func(t *testing.T, e engineKind)) {
	forEachEngineOf(t, nil, test)
}

// forEachEngineOf runs a test once per engine that runs all of fxs.
func forEachEngineOf(t *testing.T, fxs []fixtures.Fixture, test func(t *testing.T, e engineKind)) {
	for _, e := range engines {
		if len(e.among(fxs)) == len(fxs) {
			t.Run(e.name, func(t *testing.T) { test(t, e) })
		}
	}
}

// start opens an engine on a fixture, closed when the test ends. ONNX
// Runtime runs on one thread, so that results do not depend on how it
// splits work; binding components run the fixture's Go functions. opts
// come after those and may replace them.
func (e engineKind) start(t testing.TB, fx fixtures.Fixture, opts ...genrt.Option) Runner {
	t.Helper()
	_, dir := fixtures.Compile(t, fx)
	cfg := engine.Config{IntraOpThreads: 1, InterOpThreads: 1}
	if fx.Bindings != nil {
		cfg.Bindings = fx.Bindings()
	}
	r, err := e.open(t, fx)(dir, append([]genrt.Option{genrt.WithBackendConfig(cfg)}, opts...)...)
	if err != nil {
		t.Fatalf("open %s on the %s engine: %v: %s", fx.Name, e.name, err, fixtures.FixSetup)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close %s: %v", fx.Name, err)
		}
	})
	return r
}

// grouped and solo open the two engines every differential test compares;
// rec, when not nil, records the grouped engine's invocations.
func (e engineKind) grouped(t testing.TB, fx fixtures.Fixture, rec *recorder) Runner {
	t.Helper()
	return e.start(t, fx, withRecorder(genrt.WithMaxDelay(groupDelay), rec)...)
}

func (e engineKind) solo(t testing.TB, fx fixtures.Fixture) Runner {
	t.Helper()
	return e.start(t, fx, genrt.WithSolo())
}

// withRecorder adds the option that runs the fixture's components through
// rec, when there is one.
func withRecorder(opt genrt.Option, rec *recorder) []genrt.Option {
	if rec == nil {
		return []genrt.Option{opt}
	}
	return []genrt.Option{opt, genrt.WithBackend(rec.kind, rec)}
}

// runAll runs requests concurrently with the engine's RunAll, so that their
// items meet in the groupers, and returns their responses in order.
func runAll(ctx context.Context, r Runner, reqs []vm.Request) []vm.Response {
	return r.RunAll(ctx, reqs)
}

// ortBackend returns the ONNX Runtime backend, failing the test when the
// runtime is missing. One intra-op thread keeps results independent of how
// ONNX Runtime splits work between threads.
func ortBackend(t testing.TB) *ort.Backend {
	t.Helper()
	return backendWith(t, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
}

func backendWith(t testing.TB, opts ort.Options) *ort.Backend {
	t.Helper()
	b, err := ort.New(opts)
	if err != nil {
		t.Fatalf("ONNX Runtime is not available (%v): %s", err, fixtures.FixSetup)
	}
	return b
}

// session loads one component of a fixture package straight on a backend,
// outside any engine (the "one direct call" of the benchmarks and the
// real-model guard).
func session(t testing.TB, fx fixtures.Fixture, component string, be backend.Backend) backend.Session {
	t.Helper()
	f, dir := fixtures.Compile(t, fx)
	comp := f.IR.Component(component)
	if comp == nil {
		t.Fatalf("%s has no component %s", fx.Name, component)
	}
	s, err := be.Load(comp, dir)
	if err != nil {
		t.Fatalf("load %s/%s: %v: %s", fx.Name, component, err, fixtures.FixSetup)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder is a backend that runs components on another backend and
// remembers every invocation: copies of the inputs the runtime assembled
// and the outputs it received, so that tests can look inside a group. It
// stands in for the fixture's backend on either engine.
type recorder struct {
	kind  ir.ImplKind
	inner backend.Backend
	mu    sync.Mutex
	calls []call
}

type call struct {
	component string
	inputs    map[string]*backend.Tensor // deep copies
	outputs   map[string]*backend.Tensor // the backend's own tensors, as returned
}

// newRecorder records the components of a fixture: on ONNX Runtime, or on
// its Go bindings.
func newRecorder(t testing.TB, fx fixtures.Fixture) *recorder {
	t.Helper()
	if fx.Bindings != nil {
		return &recorder{kind: ir.ImplBinding, inner: fx.Bindings()}
	}
	return &recorder{kind: ir.ImplONNX, inner: ortBackend(t)}
}

func (r *recorder) Name() string { return "recorder(" + r.inner.Name() + ")" }

func (r *recorder) Load(comp *ir.Component, dir string) (backend.Session, error) {
	s, err := r.inner.Load(comp, dir)
	if err != nil {
		return nil, err
	}
	return &recSession{Session: s, rec: r, component: comp.Name}, nil
}

// invocations returns the calls made so far.
func (r *recorder) invocations() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

type recSession struct {
	backend.Session
	rec       *recorder
	component string
}

func (s *recSession) Run(ctx context.Context, in map[string]*backend.Tensor, outs []string) (map[string]*backend.Tensor, error) {
	c := call{component: s.component, inputs: map[string]*backend.Tensor{}}
	for name, t := range in {
		c.inputs[name] = clone(t)
	}
	res, err := s.Session.Run(ctx, in, outs)
	if err != nil {
		return nil, err
	}
	c.outputs = res
	s.rec.mu.Lock()
	s.rec.calls = append(s.rec.calls, c)
	s.rec.mu.Unlock()
	return res, nil
}

// clone deep-copies a tensor.
func clone(t *backend.Tensor) *backend.Tensor {
	src := reflect.ValueOf(t.Data)
	dst := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
	reflect.Copy(dst, src)
	return &backend.Tensor{DType: t.DType, Shape: slices.Clone(t.Shape), Data: dst.Interface()}
}
