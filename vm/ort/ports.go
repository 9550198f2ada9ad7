//go:build cgo

package ort

import (
	"maps"
	"slices"
	"sync/atomic"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// inPort is a graph input with what Load learned of it, so that a call
// checks a tensor against it without looking anything up.
type inPort struct {
	info  ortgo.InputOutputInfo
	dtype string // the dtype the graph takes; "" where genaic has no name for it
}

// outPort is a graph output and, where Load could work it out, how to know
// its shape before a run (plan), so that the session allocates the output
// in Go memory and ONNX Runtime writes straight into it.
type outPort struct {
	info  ortgo.InputOutputInfo
	dtype string
	// plan is nil where some extent is known only once the graph has run,
	// and empty (not nil) for a scalar.
	plan []dimSource
	// missed is set when ONNX Runtime refused a predicted shape: the
	// output is then allocated by ONNX Runtime, as an unplanned one.
	missed atomic.Bool
}

// dimSource says where one extent of an output comes from: a fixed size
// (in < 0), or the extent of axis axis of the call's input in, less less
// (the units of an offsets vector: its entries less one).
type dimSource struct {
	size     int64
	in, axis int
	less     int64
}

// planInputs pairs each graph input with its dtype name.
func planInputs(ins []ortgo.InputOutputInfo) []inPort {
	ports := make([]inPort, len(ins))
	for i, in := range ins {
		ports[i].info = in
		ports[i].dtype, _ = dtypeName(in.DataType)
	}
	return ports
}

// planOutputs works out, for each graph output, where each of its extents
// comes from. An extent the graph fixes is taken first; else the contract's
// literal; else the contract's symbol, when an input's contract names the
// same symbol (its extent is then bound by the call's tensors). An output
// that is a graph input passed through is never planned: ONNX Runtime
// writes nothing into a buffer given for it, and hands back the input's
// value when it allocates the output itself.
func planOutputs(comp *ir.Component, ins, outs []ortgo.InputOutputInfo) []outPort {
	syms := inputSymbols(comp, ins)
	ports := make([]outPort, len(outs))
	for i, o := range outs {
		ports[i].info = o
		ports[i].dtype, _ = dtypeName(o.DataType)
		passed := slices.ContainsFunc(ins, func(in ortgo.InputOutputInfo) bool { return in.Name == o.Name })
		if _, host := hostTypes[ports[i].dtype]; host && o.OrtValueType == ortgo.ONNXTypeTensor && !passed {
			c := contractOf(comp.Outputs, o.Name)
			ports[i].plan = planShape(o.Dimensions, c, withUnits(syms, c, comp, ins))
		}
	}
	return ports
}

// inputSymbols maps each shape symbol of the input contracts to the first
// input axis it names, where the contract's rank agrees with the graph's.
func inputSymbols(comp *ir.Component, ins []ortgo.InputOutputInfo) map[string]dimSource {
	syms := map[string]dimSource{}
	for i, in := range ins {
		c := contractOf(comp.Inputs, in.Name)
		if c == nil || !rankAgrees(in.Dimensions, c) {
			continue
		}
		for axis, d := range c.Shape {
			if _, seen := syms[d.Sym]; d.IsSym() && !seen {
				syms[d.Sym] = dimSource{in: i, axis: axis}
			}
		}
	}
	return syms
}

// withUnits adds to syms, for a token-packed output whose packed extent
// no input names, where that extent comes from: its innermost level
// preserves an input level, so its rows are the units below that level,
// which the input's offsets one level down count (their entries less one).
// A text encoder's segment embeddings are packed over segment offsets, and
// the tokens' offsets, a graph input, have one entry per segment and one
// more. A wrong guess costs nothing but the guess: a shape ONNX Runtime
// refuses turns the prediction off (outPort.missed).
func withUnits(syms map[string]dimSource, c *ir.Contract, comp *ir.Component, ins []ortgo.InputOutputInfo) map[string]dimSource {
	if c == nil || c.Layout.Kind != ir.TokenPacked || len(c.Layout.Levels) == 0 || int(c.Layout.Axis) >= len(c.Shape) {
		return syms
	}
	d := c.Shape[c.Layout.Axis]
	if _, known := syms[d.Sym]; !d.IsSym() || known {
		return syms
	}
	inner := c.Layout.Levels[0]
	if inner.Extent != ir.ExtentPreserved {
		return syms
	}
	for _, p := range comp.Inputs {
		if p.Contract == nil || p.Contract.Layout.Kind != ir.TokenPacked {
			continue
		}
		levels := p.Contract.Layout.Levels
		for k := 1; k < len(levels); k++ {
			if levels[k].Offsets.Name != inner.Offsets.Name {
				continue
			}
			if at := slices.IndexFunc(ins, func(in ortgo.InputOutputInfo) bool { return in.Name == levels[k-1].Offsets.Name }); at >= 0 {
				with := maps.Clone(syms)
				with[d.Sym] = dimSource{in: at, axis: 0, less: 1}
				return with
			}
		}
	}
	return syms
}

// planShape returns the sources of an output's extents, or nil when one
// of them is unknown before the run. An output of no extents (the graph's
// are none, and the contract declares no rank above 0) is planned as a
// scalar, with an empty plan: onnxruntime_go v1.27.0 returns a rank-0
// output only in a value made for it before the run (scalarValue). A graph
// output whose rank the graph leaves open may read as no extents too: a
// prediction of rank 0 that turns out wrong is refused by ONNX Runtime and
// not made again (outPort.missed).
func planShape(dims []int64, c *ir.Contract, syms map[string]dimSource) []dimSource {
	var shape []ir.Dim
	if c != nil && rankAgrees(dims, c) {
		shape = c.Shape
	}
	rank := max(len(dims), len(shape))
	if rank == 0 {
		if c != nil && c.Rank > 0 {
			return nil
		}
		return []dimSource{}
	}
	plan := make([]dimSource, rank)
	for i := range plan {
		src, ok := dimOf(dims, shape, i, syms)
		if !ok {
			return nil
		}
		plan[i] = src
	}
	return plan
}

// dimOf is the source of extent i of an output.
func dimOf(dims []int64, shape []ir.Dim, i int, syms map[string]dimSource) (dimSource, bool) {
	if i < len(dims) && dims[i] > 0 {
		return dimSource{size: dims[i], in: -1}, true
	}
	if i >= len(shape) {
		return dimSource{}, false
	}
	if d := shape[i]; !d.IsSym() && d.Size > 0 {
		return dimSource{size: d.Size, in: -1}, true
	}
	src, ok := syms[shape[i].Sym]
	return src, ok && shape[i].IsSym()
}

// rankAgrees reports whether a contract declares a shape of the graph's
// rank (any rank, where the graph leaves it open).
func rankAgrees(dims []int64, c *ir.Contract) bool {
	return len(c.Shape) > 0 && (len(dims) == 0 || len(dims) == len(c.Shape))
}

func contractOf(ports []*ir.Port, name string) *ir.Contract {
	for _, p := range ports {
		if p != nil && p.Name == name {
			return p.Contract
		}
	}
	return nil
}

// predict returns the output's shape for a call's inputs (in graph order),
// or false when the session should let ONNX Runtime allocate it: no plan,
// a plan that failed before, or an empty output (nothing to save, and
// onnxruntime_go cannot wrap an empty 16-bit float buffer).
// The shape is appended to scratch.
func (o *outPort) predict(ins []*backend.Tensor, scratch []int64) ([]int64, bool) {
	if o.plan == nil || o.missed.Load() {
		return nil, false
	}
	shape := scratch
	for _, d := range o.plan {
		if d.in < 0 {
			shape = append(shape, d.size)
			continue
		}
		in := ins[d.in].Shape
		if d.axis >= len(in) || in[d.axis] < d.less {
			return nil, false
		}
		shape = append(shape, in[d.axis]-d.less)
	}
	return shape, backend.Elements(shape) > 0
}
