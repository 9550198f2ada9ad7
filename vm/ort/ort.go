//go:build cgo

package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/vm/ortlib"
)

// New initializes ONNX Runtime (once per process) and returns a backend.
func New(opts Options) (*Backend, error) {
	if err := opts.checkProvider(); err != nil {
		return nil, err
	}
	if opts.IntraOpThreads < 0 || opts.InterOpThreads < 0 {
		return nil, fmt.Errorf("onnxruntime thread counts must be 0 (the default) or more, got intra-op %d and inter-op %d",
			opts.IntraOpThreads, opts.InterOpThreads)
	}
	path := opts.LibraryPath
	if path == "" {
		p, err := ortlib.Library()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if err := initEnvironment(path); err != nil {
		return nil, err
	}
	opts.LibraryPath = path
	return &Backend{opts: opts}, nil
}

// environment is the process-wide ONNX Runtime state. onnxruntime_go keeps
// one global environment, so every Backend shares it. A mutex rather than a
// sync.Once guards it so that a failed attempt (a wrong path, a library
// that does not load) does not poison the process: the next New may retry
// with a good path. Once initialized, it stays initialized.
var environment struct {
	sync.Mutex
	path string // the library loaded; "" until initialized
}

func initEnvironment(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("ONNX Runtime shared library %s: %w", path, err)
	}
	// A missing or broken file is the more useful answer, even when
	// another library is already loaded.
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return fmt.Errorf("ONNX Runtime shared library not found at %s: run \"make setup\" in the genaic checkout, or set %s to the path of %s",
			abs, ortlib.EnvLib, ortlib.LibName)
	}
	if err := ortlib.Verify(abs); err != nil {
		return err
	}
	environment.Lock()
	defer environment.Unlock()
	if environment.path != "" {
		if environment.path != abs {
			return fmt.Errorf("ONNX Runtime is already initialized in this process from %s and cannot load a second library from %s: use one library path for every backend",
				environment.path, abs)
		}
		return nil
	}
	ortgo.SetSharedLibraryPath(abs)
	// ONNX Runtime logs only what is fatal to the process. Every error it
	// would log at a lower severity (a kernel refusing a request's values,
	// a model that does not load) it also returns, and genaic reports that
	// once, where it belongs: to the request, in the server's structured
	// log, or as a load error. Its own copy would be colored text on the
	// process's standard error, lines a server's JSON log cannot hold,
	// written as often as clients send values a kernel refuses.
	if err := ortgo.InitializeEnvironment(ortgo.WithLogLevelFatal()); err != nil {
		return fmt.Errorf("load ONNX Runtime from %s: %w; run \"make setup\" to fetch a library this build supports, or point %s at one",
			abs, err, ortlib.EnvLib)
	}
	environment.path = abs
	return nil
}

// Load implements backend.Backend: it opens pkgDir/comp.Artifact, checks that the
// graph's inputs and outputs are exactly the component's declared ports, and
// creates the component's session.
func (b *Backend) Load(comp *ir.Component, pkgDir string) (backend.Session, error) {
	if comp == nil {
		return nil, errors.New("onnxruntime: Load was given no component")
	}
	if comp.Impl != ir.ImplONNX {
		return nil, fmt.Errorf("component `%s` is implemented by %s, not by an onnx graph: the onnxruntime backend cannot load it", comp.Name, comp.Impl)
	}
	path, err := artifactPath(comp, pkgDir)
	if err != nil {
		return nil, err
	}
	ins, outs, err := graphPorts(path)
	if err != nil {
		return nil, fmt.Errorf("component `%s`: read the ports of %s: %w", comp.Name, path, err)
	}
	if ins, err = withOverrides(comp, path, ins); err != nil {
		return nil, fmt.Errorf("component `%s`: read the graph inputs of %s: %w", comp.Name, path, err)
	}
	if err := checkPorts(comp, path, ins, outs); err != nil {
		return nil, err
	}
	// A graph output no port declares is not fetched (check allows it,
	// model/port: a classifier's sequence of maps beside its scores).
	outs = slices.DeleteFunc(outs, func(o ortgo.InputOutputInfo) bool {
		return !slices.ContainsFunc(comp.Outputs, func(p *ir.Port) bool { return p != nil && p.Name == o.Name })
	})
	s, err := b.newSession(comp, path, ins, outs)
	if err != nil {
		return nil, fmt.Errorf("component `%s`: create an onnxruntime session for %s: %w", comp.Name, path, err)
	}
	return s, nil
}

// artifactPath resolves a component's artifact against its package folder
// and checks that a file is there.
func artifactPath(comp *ir.Component, pkgDir string) (string, error) {
	if comp.Artifact == "" {
		return "", fmt.Errorf("component `%s` names no artifact: declare the .onnx file of its graph", comp.Name)
	}
	path := comp.Artifact
	if !filepath.IsAbs(path) {
		path = filepath.Join(pkgDir, path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("component `%s`: artifact %s not found at %s: add the file to the package, or fix the artifact path (it is relative to the package folder)",
			comp.Name, comp.Artifact, path)
	case err != nil:
		return "", fmt.Errorf("component `%s`: artifact %s: %w", comp.Name, comp.Artifact, err)
	case st.IsDir():
		return "", fmt.Errorf("component `%s`: artifact %s at %s is a directory, not an .onnx file", comp.Name, comp.Artifact, path)
	}
	return path, nil
}

// graphPorts reads a graph's inputs and outputs, in the graph's order.
func graphPorts(path string) (ins, outs []ortgo.InputOutputInfo, err error) {
	// The probe session only answers the port question: skip the graph
	// optimizations, which the real session performs anyway.
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, nil, err
	}
	defer so.Destroy()
	if err := so.SetGraphOptimizationLevel(ortgo.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, err
	}
	return ortgo.GetInputOutputInfoWithOptions(path, so)
}

// withOverrides adds to a graph's inputs (as ONNX Runtime lists them) the
// declared input ports that are graph inputs an initializer backs: ONNX
// Runtime lists those apart, as overridable initializers, and takes a
// value fed for one in its place. check allows declaring them (model/port
// asks only that a declared port be a graph input); their types are read
// from the graph.
func withOverrides(comp *ir.Component, path string, ins []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, error) {
	var g *onnx.Graph
	for _, p := range comp.Inputs {
		if p == nil || slices.ContainsFunc(ins, func(in ortgo.InputOutputInfo) bool { return in.Name == p.Name }) {
			continue
		}
		if g == nil {
			var err error
			if g, err = onnx.Read(path); err != nil {
				return nil, err
			}
		}
		v := g.Input(p.Name)
		if v == nil || !v.Initialized || v.ElemType == 0 {
			continue // checkPorts names it
		}
		dims := make([]int64, len(v.Dims))
		for i, d := range v.Dims {
			dims[i] = -1
			if d.Literal {
				dims[i] = d.Value
			}
		}
		ins = append(ins, ortgo.InputOutputInfo{Name: v.Name, OrtValueType: ortgo.ONNXTypeTensor,
			Dimensions: dims, DataType: ortgo.TensorElementDataType(v.ElemType)})
	}
	return ins, nil
}

// checkPorts demands, as check does (model/port), that every declared port
// is a port of the graph and every graph input ONNX Runtime requires (it
// lists none an initializer backs) is declared, and that every declared
// port is a tensor of the dtype its contract declares, if any. A graph
// output may go undeclared.
func checkPorts(comp *ir.Component, path string, ins, outs []ortgo.InputOutputInfo) error {
	var problems []string
	problems = append(problems, portDiff("input", comp.Inputs, ins, true)...)
	problems = append(problems, portDiff("output", comp.Outputs, outs, false)...)
	if len(problems) > 0 {
		return fmt.Errorf("component `%s`: the graph in %s does not have the declared ports: %s; the graph's inputs are [%s] and its outputs [%s]: declare every input, and ports by the graph's names",
			comp.Name, path, strings.Join(problems, "; "), infoNames(ins), infoNames(outs))
	}
	problems = append(problems, dtypeDiff("input", comp.Inputs, ins)...)
	problems = append(problems, dtypeDiff("output", comp.Outputs, outs)...)
	if len(problems) > 0 {
		return fmt.Errorf("component `%s`: the graph in %s disagrees with the declared contracts: %s", comp.Name, path, strings.Join(problems, "; "))
	}
	return nil
}

// portDiff names the declared ports the graph lacks and, where every
// graph port must be declared (all), the graph's ports that are not.
func portDiff(kind string, ports []*ir.Port, infos []ortgo.InputOutputInfo, all bool) []string {
	declared := map[string]bool{}
	for _, p := range ports {
		if p != nil {
			declared[p.Name] = true
		}
	}
	have := map[string]bool{}
	for _, in := range infos {
		have[in.Name] = true
	}
	var out []string
	for _, p := range ports {
		if p != nil && !have[p.Name] {
			out = append(out, fmt.Sprintf("declared %s port `%s` is not an %s of the graph", kind, p.Name, kind))
		}
	}
	for _, in := range infos {
		if all && !declared[in.Name] {
			out = append(out, fmt.Sprintf("graph %s `%s` is not a declared %s port", kind, in.Name, kind))
		}
	}
	return out
}

// dtypeDiff names the declared ports whose graph value is not a tensor, and
// those whose declared dtype differs from the graph's.
func dtypeDiff(kind string, ports []*ir.Port, infos []ortgo.InputOutputInfo) []string {
	var out []string
	for _, in := range infos {
		i := slices.IndexFunc(ports, func(p *ir.Port) bool { return p != nil && p.Name == in.Name })
		if i < 0 {
			continue
		}
		if in.OrtValueType != ortgo.ONNXTypeTensor {
			out = append(out, fmt.Sprintf("%s port `%s` is a tensor, but the graph's %s is not (%v): genaic carries tensors only", kind, in.Name, kind, in.OrtValueType))
			continue
		}
		if ports[i].Contract == nil || ports[i].Contract.DType == "" {
			continue
		}
		graph, ok := dtypeName(in.DataType)
		if !ok {
			continue
		}
		if !ir.SameDType(ports[i].Contract.DType, graph) {
			out = append(out, fmt.Sprintf("%s port `%s` is declared %s, but the graph's %s is %s: declare dtype %s",
				kind, in.Name, ports[i].Contract.DType, kind, graph, graph))
		}
	}
	return out
}

func infoNames(infos []ortgo.InputOutputInfo) string {
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

// newSession creates the component's DynamicAdvancedSession with the
// configured thread counts.
func (b *Backend) newSession(comp *ir.Component, path string, ins, outs []ortgo.InputOutputInfo) (*session, error) {
	so, ready, err := b.providerOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	s := &session{
		comp:       comp.Name,
		inputs:     planInputs(ins),
		outputs:    planOutputs(comp, ins, outs),
		all:        make([]bool, len(outs)),
		ready:      ready,
		alloc:      backend.NewTensorRoom,
		given:      backend.NewBuffers(givenBuffers, givenBytes),
		scratchMax: scratchBytes,
	}
	for i := range s.all {
		s.all[i] = true
	}
	s.calls.New = func() any { return newCall(len(ins), len(outs)) }
	inNames := make([]string, len(ins))
	for i, in := range ins {
		inNames[i] = in.Name
	}
	outNames := make([]string, len(outs))
	for i, o := range outs {
		outNames[i] = o.Name
	}
	s.inNames, s.outNames = inNames, outNames
	s.ort, err = ortgo.NewDynamicAdvancedSession(path, inNames, outNames, so)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// providerOptions returns session options for the configured execution
// provider. When the library lacks it, the options run on the cpu and the
// readiness declines grouped execution, saying why: a missing provider
// costs grouping, never the component.
func (b *Backend) providerOptions() (*ortgo.SessionOptions, backend.Readiness, error) {
	ready := backend.Readiness{Ready: true, Provider: b.opts.provider(), OpClass: OpClass}
	so, err := b.sessionOptions()
	if err != nil {
		return nil, ready, err
	}
	perr := appendProvider(so, ready.Provider)
	if perr == nil {
		return so, ready, nil
	}
	so.Destroy()
	ready.Ready = false
	ready.Reason = fmt.Sprintf("the ONNX Runtime library at %s cannot run the %s execution provider (%v); the component runs on the cpu, one request per invocation",
		b.opts.LibraryPath, ready.Provider, perr)
	so, err = b.sessionOptions()
	return so, ready, err
}

// OpClass is the operator class of every ONNX Runtime session: a graph run
// whole (DESIGN §6 keys readiness by component, operator class and
// execution provider).
const OpClass = "onnx-graph"

// appendProvider asks ONNX Runtime to run a session's graph on provider,
// before the cpu. It fails when the loaded library was built without it.
func appendProvider(so *ortgo.SessionOptions, provider string) error {
	switch provider {
	case "cpu":
		return nil
	case "cuda":
		o, err := ortgo.NewCUDAProviderOptions()
		if err != nil {
			return err
		}
		defer o.Destroy()
		return so.AppendExecutionProviderCUDA(o)
	case "tensorrt":
		o, err := ortgo.NewTensorRTProviderOptions()
		if err != nil {
			return err
		}
		defer o.Destroy()
		return so.AppendExecutionProviderTensorRT(o)
	case "openvino":
		return so.AppendExecutionProviderOpenVINO(map[string]string{})
	case "coreml":
		return so.AppendExecutionProviderCoreMLV2(map[string]string{})
	case "directml":
		return so.AppendExecutionProviderDirectML(0)
	}
	return fmt.Errorf("unknown execution provider %q", provider)
}

// sessionOptions returns session options with the configured thread counts.
func (b *Backend) sessionOptions() (*ortgo.SessionOptions, error) {
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	if err := so.SetIntraOpNumThreads(b.opts.IntraOpThreads); err != nil {
		so.Destroy()
		return nil, err
	}
	if err := so.SetInterOpNumThreads(b.opts.InterOpThreads); err != nil {
		so.Destroy()
		return nil, err
	}
	return so, nil
}
