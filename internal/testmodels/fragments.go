package testmodels

import (
	"fmt"
	"strings"
)

// Graph fragments shared by the models. Each names its values after the
// prefix it is given, so a model can use a fragment more than once.

// constInt returns a rank-0 int64 constant.
func (g *graph) constInt(v int64) string {
	name := fmt.Sprintf("const.i64.%d", v)
	if g.names[name] {
		return name
	}
	return g.ints(name, nil, []int64{v})
}

// constInts returns a rank-1 int64 constant.
func (g *graph) constInts(vs ...int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	name := "const.i64s." + strings.Join(parts, "_")
	if g.names[name] {
		return name
	}
	return g.ints(name, []int64{int64(len(vs))}, vs)
}

// constFloat returns a rank-0 float32 constant.
func (g *graph) constFloat(v float32) string {
	name := fmt.Sprintf("const.f32.%v", v)
	if g.names[name] {
		return name
	}
	return g.floats(name, nil, []float32{v})
}

// weights adds the model's initializer called name, with the values
// Model.Weights gives, and returns its name.
func (g *graph) weights(m *Model, name string, dims ...int64) string {
	return g.floats(name, dims, m.Weights(name, int(numel(dims))))
}

// linearLayer is x·W + b over the last axis of x, with W [in, out] and b [out]
// initializers named prefix.weight and prefix.bias.
func linearLayer(m *Model, g *graph, prefix, x string, in, out int64) string {
	w := g.weights(m, prefix+".weight", in, out)
	b := g.weights(m, prefix+".bias", out)
	xw := g.op("MatMul", prefix+".matmul", []string{x, w})
	return g.op("Add", prefix, []string{xw, b})
}

// maskedMean pools h [N, P, D] over axis 1, keeping the positions p with
// p < lengths[n] (lengths [N], int64): the sum of the kept rows divided by
// max(kept, 1). Padded positions are selected away with Where before the
// sum, so whatever they hold (NaN and infinities included) never reaches
// the result.
func maskedMean(g *graph, prefix, h, lengths string) string {
	extent := g.op("Shape", prefix+".extent", []string{h}, attrInt("start", 1), attrInt("end", 2))
	p := g.op("Squeeze", prefix+".extent_scalar", []string{extent})
	pos := g.op("Range", prefix+".positions", []string{g.constInt(0), p, g.constInt(1)})
	lens := g.op("Unsqueeze", prefix+".lengths", []string{lengths, g.constInts(1)})
	valid := g.op("Less", prefix+".valid", []string{pos, lens})
	valid3 := g.op("Unsqueeze", prefix+".valid3", []string{valid, g.constInts(2)})
	kept := g.op("Where", prefix+".kept", []string{valid3, h, g.constFloat(0)})
	sum := g.op("ReduceSum", prefix+".sum", []string{kept, g.constInts(1)}, attrInt("keepdims", 0))
	validF := g.op("Cast", prefix+".valid_f32", []string{valid}, attrInt("to", onnxFloat))
	count := g.op("ReduceSum", prefix+".count", []string{validF, g.constInts(1)}, attrInt("keepdims", 1))
	den := g.op("Max", prefix+".den", []string{count, g.constFloat(1)})
	return g.op("Div", prefix, []string{sum, den})
}

// membership returns the [U, P] bool matrix (owner[p] == u) for the U units
// that offsets ([U+1], int64) delimits and the level's owner ([P], int64).
// An owner outside [0, U) belongs to no unit.
func membership(g *graph, prefix, offsets, owner string) string {
	n := g.op("Shape", prefix+".offsets_len", []string{offsets})
	u := g.op("Sub", prefix+".units", []string{n, g.constInts(1)})
	us := g.op("Squeeze", prefix+".units_scalar", []string{u})
	ids := g.op("Range", prefix+".unit_ids", []string{g.constInt(0), us, g.constInt(1)})
	col := g.op("Unsqueeze", prefix+".unit_col", []string{ids, g.constInts(1)})
	return g.op("Equal", prefix, []string{col, owner})
}

// unitMean pools h [P, D] into [U, D]: each unit's mean over the positions
// it owns (member [U, P] bool), all zeros for a unit that owns none.
func unitMean(g *graph, prefix, member, h string) string {
	mf := g.op("Cast", prefix+".member_f32", []string{member}, attrInt("to", onnxFloat))
	sum := g.op("MatMul", prefix+".sum", []string{mf, h})
	count := g.op("ReduceSum", prefix+".count", []string{mf, g.constInts(1)}, attrInt("keepdims", 1))
	den := g.op("Max", prefix+".den", []string{count, g.constFloat(1)})
	return g.op("Div", prefix, []string{sum, den})
}
