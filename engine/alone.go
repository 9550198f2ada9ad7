package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// Divergence is a request whose answer grouped is not its answer alone.
type Divergence struct {
	Request string // the request's id
	// Output is the workflow output that differs, "" where the request
	// failed one way and not the other.
	Output string
	What   string // where and how, in words
	// Shared names the grouped component whose shared output port the
	// output is emitted from, "" where it is none: one value for the
	// whole call, which grouped differs only where the model computes it
	// over the call's items.
	Shared string
}

func (d Divergence) String() string {
	if d.Output == "" {
		return fmt.Sprintf("request %s: %s", d.Request, d.What)
	}
	return fmt.Sprintf("request %s: output %s %s", d.Request, d.Output, d.What)
}

// CompareAlone runs each of reqs alone on e (a group of its own: no other
// request's items beside it, nothing padded past its own extents) and
// returns where its answer differs from grouped, its answer when e ran
// reqs together. check proves what a declaration can break; what it
// cannot see is a model that mixes the items of a call (DivergenceCauses):
// only running it shows that, on the requests at hand. grouped[i] answers
// reqs[i]; the comparison follows AgreeAlone. Once ctx is done it compares
// no more: a request cut short is no answer.
func CompareAlone(ctx context.Context, e *vm.Engine, reqs []vm.Request, grouped []vm.Response) []Divergence {
	var out []Divergence
	for i, req := range reqs {
		alone := e.RunAll(ctx, reqs[i:i+1])[0]
		g := grouped[i]
		if ctx.Err() != nil {
			alone.Release()
			break
		}
		switch {
		case g.Err != nil && alone.Err == nil:
			out = append(out, Divergence{Request: req.ID, What: "failed grouped (" + g.Err.Error() + ") and succeeded alone"})
		case g.Err == nil && alone.Err != nil:
			out = append(out, Divergence{Request: req.ID, What: "succeeded grouped and failed alone (" + alone.Err.Error() + ")"})
		case g.Err == nil:
			for name, want := range alone.Outputs.All() {
				if what := AgreeAlone(g.Outputs.Get(name), want, paddedAxes(e.Module().Output(name))); what != "" {
					out = append(out, Divergence{Request: req.ID, Output: name, What: what, Shared: sharedFrom(e.Module(), name)})
				}
			}
			for _, name := range slices.Sorted(maps.Keys(alone.Items)) {
				if what := itemsAgree(g.Items[name], alone.Items[name], ""); what != "" {
					out = append(out, Divergence{Request: req.ID, Output: name, What: what})
				}
			}
		}
		alone.Release()
	}
	return out
}

// perCallQuantizers are operators that quantize a tensor with a range
// taken over the whole of it: grouped, an item's activations are
// quantized over its group's range, so its answer differs from alone
// within the quantization's error, by the model's design (a dynamically
// quantized transformer's MatMuls).
var perCallQuantizers = []string{"DynamicQuantizeLinear", "DynamicQuantizeMatMul", "DynamicQuantizeLSTM"}

// QuantizesPerCall lists the grouped components of f whose graphs
// quantize per call, each as "COMPONENT (OPERATOR)".
func QuantizesPerCall(f *plan.File) []string {
	var out []string
	for _, g := range f.Components {
		if !g.Grouped {
			continue
		}
		for _, op := range f.Ops(g.Component) {
			if slices.Contains(perCallQuantizers, op) {
				out = append(out, fmt.Sprintf("%s (%s)", g.Component, op))
				break
			}
		}
	}
	return out
}

// QuantizationNote says why a package whose components quantize per call
// (QuantizesPerCall) answers otherwise grouped than alone.
func QuantizationNote(quantizing []string) string {
	return "the model quantizes its activations per call (" + strings.Join(quantizing, ", ") +
		"): grouped, a request's are quantized over its whole group's range, so its answer differs from alone within the quantization's error"
}

// CompareRequests is how many of a document's requests serve and bench
// compare grouped and alone before they serve or measure: enough to group
// short items with long ones, few enough to keep a load quick.
const CompareRequests = 64

// LargestGroup is the most requests one invocation of e has held: below
// two, nothing grouped, and a comparison with alone compared nothing.
func LargestGroup(e *vm.Engine) int {
	most := 0
	for _, c := range e.Stats().Components {
		most = max(most, c.MaxGroupRequests)
	}
	return most
}

// DifferingRequests counts the requests divs names.
func DifferingRequests(divs []Divergence) int {
	seen := map[string]bool{}
	for _, d := range divs {
		seen[d.Request] = true
	}
	return len(seen)
}

// DivergenceCauses says what makes a request's answer grouped differ from
// its answer alone, where check found nothing: the model mixes the items
// of a call.
const DivergenceCauses = "the model mixes the items of a call: a padded model lets the padding reach the real positions " +
	"(a convolution reading past an item's end, a normalization over the whole padded axis such as GroupNorm; " +
	"pad only where the model masks, or list the dimension in uniform_dimensions), " +
	"or an output computed over the whole call (a mean over the batch) is left shared"

// Causes is DivergenceCauses for divs, led by the cause their shapes
// show: a request's output longer grouped on an axis the output does not
// pad is a dimension the model computes from its items (frames of padded
// samples) that takes the group's extent, which check warns of.
func Causes(divs []Divergence) string {
	for _, d := range divs {
		if d.Shared != "" {
			return fmt.Sprintf("output `%s` comes from a shared output port of component `%s`, one value for the whole call, which the model computes over the call's items (a count or a mean over the batch): "+
				"leave the port out of the component (a graph output no port declares is not fetched), or the component ungrouped; or %s", d.Output, d.Shared, DivergenceCauses)
		}
	}
	for _, d := range divs {
		if strings.HasPrefix(d.What, "has shape ") {
			return "an output's dimension the model computes per item is not padded, so it takes the group's extent " +
				"(pad it with the lengths the model outputs: check's capacity/unreconciled warning says how); or " + DivergenceCauses
		}
	}
	return DivergenceCauses
}

// sharedFrom names the grouped component from whose shared output port
// the workflow emits output name, "" where it emits it from anything
// else.
func sharedFrom(m *ir.Module, name string) string {
	var emitted ir.ValueID = ir.NoValue
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpEmit && s.Output.Name == name {
			emitted = s.Value.ID
		}
		return true
	})
	from := ""
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op != ir.OpInvoke || emitted == ir.NoValue {
			return true
		}
		for _, r := range s.Results {
			c := m.Component(s.Component.Name)
			if r.Value != emitted || c == nil || c.Capacity == nil {
				continue
			}
			if p := c.Output(r.Port); p != nil && p.Contract != nil && p.Contract.Layout.Kind == ir.Shared {
				from = c.Name
			}
		}
		return true
	})
	return from
}

// paddedAxes are the axes an output declares padded, where a request's
// value grouped keeps the group's extent; nil for an output the module
// does not declare.
func paddedAxes(o *ir.Output) []int {
	if o == nil || o.Contract == nil {
		return nil
	}
	var axes []int
	for _, pd := range o.Contract.Padding {
		if ax := o.Contract.Axis(pd.Dim.Name); ax >= 0 {
			axes = append(axes, ax)
		}
	}
	return axes
}

// AgreeAlone says how grouped differs from alone, a request's value of one
// output run grouped and alone, or "" where it does not. On the padded
// axes grouped may be longer (a padded output keeps the group's extent,
// and its lengths say where the request's values end; anyAxis: on every
// axis, as an item's value may be); elsewhere the shapes are equal. Every
// element alone has must be there. Floats agree within aloneTolerance of
// the larger of 1 and the value alone (float16 and bfloat16 within
// halfTolerance): ONNX Runtime's kernels may sum a batch of many rows in
// another order than a batch of one, and nothing a wrong grouping does
// comes that close. Other dtypes agree exactly.
func AgreeAlone(grouped, alone *backend.Tensor, padded []int) string {
	switch {
	case grouped == nil:
		return "is missing grouped"
	case grouped.DType != alone.DType || grouped.Rank() != alone.Rank():
		return fmt.Sprintf("is %s %v grouped and %s %v alone", grouped.DType, grouped.Shape, alone.DType, alone.Shape)
	}
	for i, n := range alone.Shape {
		longer := slices.Contains(padded, anyAxis) || slices.Contains(padded, i)
		if grouped.Shape[i] < n || grouped.Shape[i] > n && !longer {
			return fmt.Sprintf("has shape %v grouped and %v alone", grouped.Shape, alone.Shape)
		}
	}
	tol := aloneTolerance
	switch alone.DType {
	case "float16", "bfloat16":
		tol = halfTolerance
	case "float32", "float64":
	default:
		tol = 0
	}
	at := make([]int64, len(alone.Shape))
	for k := range alone.Len() {
		off := int64(0)
		for i, c := range at {
			off = off*grouped.Shape[i] + c
		}
		g, gok := grouped.Float64At(off)
		a, aok := alone.Float64At(k)
		if !gok || !aok {
			return fmt.Sprintf("holds %T grouped and %T alone", grouped.Data, alone.Data)
		}
		if !(math.Abs(g-a) <= tol*max(1, math.Abs(a))) && !(g == a) && !(math.IsNaN(g) && math.IsNaN(a)) {
			return fmt.Sprintf("differs at %v: %.7g grouped, %.7g alone", at, g, a)
		}
		for i := len(at) - 1; i >= 0; i-- {
			if at[i]++; at[i] < alone.Shape[i] {
				break
			}
			at[i] = 0
		}
	}
	return ""
}

// anyAxis, among AgreeAlone's padded axes, lets grouped be longer on
// every axis.
const anyAxis = -1

// The tolerances of AgreeAlone, relative to the larger of 1 and the value
// alone.
const (
	aloneTolerance = 1e-4
	halfTolerance  = 1e-2
)

// itemsAgree is AgreeAlone over the items a request gave, item by item and
// level by level; prefix locates the items' parent ("2." for those of
// item 2, "" at the top).
func itemsAgree(grouped, alone []vm.Item, prefix string) string {
	if len(grouped) != len(alone) {
		return fmt.Sprintf("has %d items grouped and %d alone", len(grouped), len(alone))
	}
	for i := range alone {
		at := fmt.Sprintf("%s%d", prefix, i)
		if alone[i].Tensor != nil {
			if what := AgreeAlone(grouped[i].Tensor, alone[i].Tensor, []int{anyAxis}); what != "" {
				return what + " in item " + at
			}
		}
		if what := itemsAgree(grouped[i].Items, alone[i].Items, at+"."); what != "" {
			return what
		}
	}
	return ""
}
