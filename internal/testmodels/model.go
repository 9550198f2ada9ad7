// Package testmodels builds the tiny ONNX encoders of the end-to-end
// fixtures under testdata/packages and computes, in plain Go, the function
// each of them implements.
//
// testdata/models/gen writes the models (go run ./testdata/models/gen); its
// package comment describes every model, its ports and its function. The
// tests of this package keep the committed bytes equal to what Models
// generates and check each model in ONNX Runtime against its Reference.
//
// The package builds without cgo: only its tests load ONNX Runtime.
package testmodels

import (
	"fmt"
	"hash/fnv"
	"slices"
)

// Model is one fixture model: the component of a package under
// testdata/packages that it implements, its ports and its function.
type Model struct {
	// Package is the fixture's folder under testdata/packages.
	Package string
	// Component is the workflow component the model implements.
	Component string
	// Artifact is the model's file name inside the package folder.
	Artifact string
	// Summary says in one line what the model computes.
	Summary string
	// Inputs and Outputs are the model's graph inputs and outputs, in
	// order; their names are the component's port names.
	Inputs, Outputs []Port

	build     func(m *Model, g *graph)
	reference func(m *Model, in map[string]Tensor) (map[string]Tensor, error)
}

// Port is a graph input or output of a model.
type Port struct {
	Name  string
	DType string // "float32" or "int64", spelled as in the metadata
	Dims  []Dim
}

// Dim is one dimension of a port.
type Dim struct {
	// Sym is the metadata's shape symbol; empty where the metadata writes
	// a fixed extent.
	Sym string
	// Size is the extent the model fixes (the metadata may still name it
	// with a symbol, as it does for uniform dimensions the weights fix),
	// or 0 when the model takes any extent.
	Size int64
}

// Path returns the model's path relative to the repository root.
func (m *Model) Path() string {
	return "testdata/packages/" + m.Package + "/" + m.Artifact
}

// Bytes returns the model's ONNX ModelProto. The bytes are a pure function
// of the package's source: no clock, no randomness, no map order.
func (m *Model) Bytes() []byte {
	g := newGraph(m.Package+"."+m.Component, m.Summary, m.Inputs, m.Outputs)
	m.build(m, g)
	return g.encode()
}

// Reference computes the model's outputs from its inputs in plain Go (in
// float64, rounded to float32 at the end). It returns an error when an
// input is missing or its dtype or shape cannot be read as the model's
// input; it does not validate companions beyond what the function needs.
func (m *Model) Reference(in map[string]Tensor) (map[string]Tensor, error) {
	for _, p := range m.Inputs {
		t, ok := in[p.Name]
		if !ok {
			return nil, fmt.Errorf("%s: input %s is missing", m.Package, p.Name)
		}
		if err := t.conforms(p); err != nil {
			return nil, fmt.Errorf("%s: input %s: %w", m.Package, p.Name, err)
		}
	}
	return m.reference(m, in)
}

// Models returns every fixture model, in a fixed order.
func Models() []*Model {
	return []*Model{
		imagePadded(),
		imagePinned(),
		videoFrames(),
		videoFixed(),
		audioWindows(),
		textSegments(),
		tokenMerge(),
		textPacked(),
		textPadded(),
		requestExpanded(),
		timeMajor(),
		solo(),
		ocrLines(),
		audioMel(),
		imagePatches(),
		imageTiles(),
		videoFPS(),
		sampleRate(),
	}
}

// Fixing returns a copy of m whose graph fixes every dimension called sym
// to n, as a graph exported with a static batch does: the same function
// on the same weights, for the tests of what a runtime makes of such a
// graph.
func (m *Model) Fixing(sym string, n int64) *Model {
	c := *m
	fix := func(ports []Port) []Port {
		out := make([]Port, len(ports))
		for i, p := range ports {
			p.Dims = append([]Dim(nil), p.Dims...)
			for k, d := range p.Dims {
				if d.Sym == sym {
					p.Dims[k].Size = n
				}
			}
			out[i] = p
		}
		return out
	}
	c.Inputs, c.Outputs = fix(m.Inputs), fix(m.Outputs)
	return &c
}

// Lookup returns the model of the package called name, or nil.
func Lookup(name string) *Model {
	models := Models()
	if i := slices.IndexFunc(models, func(m *Model) bool { return m.Package == name }); i >= 0 {
		return models[i]
	}
	return nil
}

// Weights returns the model's initializer called name as the graph holds
// it: count values in [-1, 1), each a multiple of 1/32 so that it is exact
// in float32, drawn from a linear congruential generator seeded by the
// package and tensor names.
func (m *Model) Weights(name string, count int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(m.Package + "/" + name))
	state := h.Sum64()
	w := make([]float32, count)
	for i := range w {
		state = state*6364136223846793005 + 1442695040888963407
		w[i] = float32(int64(state>>58)-32) / 32
	}
	return w
}

// sym is a dimension the model leaves to the caller.
func sym(s string) Dim { return Dim{Sym: s} }

// fixed is a dimension the metadata names with a symbol and the model fixes.
func fixed(s string, n int64) Dim { return Dim{Sym: s, Size: n} }

// literal is a dimension the metadata writes as a fixed extent.
func literal(n int64) Dim { return Dim{Size: n} }

func f32(name string, dims ...Dim) Port { return Port{Name: name, DType: "float32", Dims: dims} }
func i64(name string, dims ...Dim) Port { return Port{Name: name, DType: "int64", Dims: dims} }

func (p Port) onnxType() int {
	if p.DType == "int64" {
		return onnxInt64
	}
	return onnxFloat
}
