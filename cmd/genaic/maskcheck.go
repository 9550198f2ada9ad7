package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/vm/ort"
)

// The probe mask-lengths checks a model's masking on: a batch of two rows
// of probeLength positions, the second padded after its first probeValid,
// against that second row alone and unpadded.
const probeLength, probeValid = 6, 3

// probeOther is the extent the probe gives a dimension of another input
// that neither the mask's axes nor the graph fix, in both its runs.
const probeOther = 4

// noBatchOutput says why a masking was not probed where no output has
// the mask's rows first.
const noBatchOutput = "no output has the mask's batch axis first, so the probe has nothing to compare"

// checkMasking runs the model at path on the probe and reports an error
// where the padding the mask marks changes the real positions' outputs:
// the mask's ones do not mean what ones says (valid or padding), or the
// graph does not mask with it, and padding would change a request's
// result. skipped says why it could not tell (an extent it chose that the
// model refuses, a dtype it cannot make, no output it can compare); both
// empty: the masking holds on the probe.
func checkMasking(path string, g *onnx.Graph, mask string, onesMarkPadding bool) (skipped string, err error) {
	mv := g.Input(mask)
	if mv == nil || len(mv.Dims) != 2 {
		return "", fmt.Errorf("input %s is not a mask [batch, sequence]", mask)
	}
	batch, seq := mv.Dims[0], mv.Dims[1]
	if batch.Literal || seq.Literal {
		return fmt.Sprintf("the graph fixes the mask's shape at %s, and the probe takes two rows of its own length", mv.ShapeText()), nil
	}
	comp := &ir.Component{Name: "probe", Impl: ir.ImplONNX, Artifact: filepath.Base(path)}
	type probeInput struct {
		name            string
		dtype           string
		twoRows, oneRow []int64
		seqAxis         int
	}
	var inputs []probeInput
	first := "" // the first input beside the mask with the sequence axis: the ids
	// chosen says which extent the probe chose that neither the mask nor
	// the graph fixes; a model that refuses it is left unprobed.
	chosen := ""
	namedApart := false // an input is shaped as the mask under other names
	for _, v := range g.Inputs {
		if v.Initialized {
			continue
		}
		dt, ok := ir.LookupDType(v.DType())
		if !ok || !v.HasShape || dt.Name == "float16" || dt.Name == "bfloat16" {
			return fmt.Sprintf("input %s is %s %s, which the probe does not make", v.Name, v.DType(), v.ShapeText()), nil
		}
		comp.Inputs = append(comp.Inputs, &ir.Port{Name: v.Name})
		in := probeInput{name: v.Name, dtype: dt.Name, twoRows: make([]int64, len(v.Dims)), oneRow: make([]int64, len(v.Dims)), seqAxis: -1}
		// Shaped as the mask but for its symbols' names: a graph that
		// names each input's axes apart (tf2onnx's unk__N).
		apart := v.Name != mask && slices.EqualFunc(v.Dims, mv.Dims, onnx.Dim.SameButNamed) &&
			!slices.ContainsFunc(v.Dims, func(d onnx.Dim) bool { return d.Same(batch) || d.Same(seq) })
		namedApart = namedApart || apart
		for i, d := range v.Dims {
			switch {
			case d.Same(batch) || apart && i == 0:
				in.twoRows[i], in.oneRow[i] = 2, 1
			case d.Same(seq) || apart && i == 1:
				in.twoRows[i], in.oneRow[i], in.seqAxis = probeLength, probeValid, i
			case d.Literal:
				in.twoRows[i], in.oneRow[i] = d.Value, d.Value
			default:
				// Another input's own extent (a document's beside the
				// query whose mask is probed): the same in both runs.
				in.twoRows[i], in.oneRow[i] = probeOther, probeOther
				if chosen == "" {
					chosen = fmt.Sprintf("input %s's %s (axis %d) at %d", v.Name, d, i, probeOther)
				}
			}
		}
		if first == "" && v.Name != mask && in.seqAxis >= 0 {
			first = v.Name
		}
		inputs = append(inputs, in)
	}
	// probeValues makes the probe's inputs. Every row holds the same values
	// by position, the padded positions zeros; the mask marks the first row
	// whole and the second up to probeValid. An input that varies holds 1
	// to 5 by position, one that does not holds zeros.
	probeValues := func(varies func(name string) bool) (padded, alone map[string]*backend.Tensor, err error) {
		padded, alone = map[string]*backend.Tensor{}, map[string]*backend.Tensor{}
		for _, in := range inputs {
			value := func(shape []int64, padRow bool) (*backend.Tensor, error) {
				t, err := backend.NewTensor(in.dtype, shape)
				if err != nil {
					return nil, err
				}
				at := make([]int64, len(shape))
				for k := range t.Len() {
					pos := int64(0)
					if in.seqAxis >= 0 {
						pos = at[in.seqAxis]
					}
					row := int64(0)
					if len(at) > 0 {
						row = at[0]
					}
					real := !padRow || row == 0 || pos < probeValid
					x := 0.0
					switch {
					case in.name == mask && real != onesMarkPadding:
						x = 1
					case in.name != mask && real && varies(in.name):
						x = float64(1 + pos%5)
					}
					t.SetFloat64At(k, x)
					step(at, shape)
				}
				return t, nil
			}
			if padded[in.name], err = value(in.twoRows, true); err != nil {
				return nil, nil, err
			}
			if alone[in.name], err = value(in.oneRow, false); err != nil {
				return nil, nil, err
			}
		}
		return padded, alone, nil
	}
	// The outputs to compare: those with a batch axis first; their
	// sequence axes (attention weights have two), up to probeValid. An
	// output whose first axis is open under another name, in a graph that
	// names its values' axes apart, is compared where the runs show it
	// the batch, and its open axes that took the sequence's extents
	// (probeLength padded, probeValid alone) as sequence axes.
	type compared struct {
		name     string
		seqDims  []int
		declared bool // its first axis is the mask's batch symbol
	}
	var outs []compared
	for _, o := range g.Outputs {
		if _, ok := ir.LookupDType(o.DType()); !ok || !o.HasShape || len(o.Dims) == 0 || o.Dims[0].Literal || !o.Dims[0].Same(batch) && !namedApart {
			continue
		}
		c := compared{name: o.Name, declared: o.Dims[0].Same(batch)}
		for i, d := range o.Dims[1:] {
			if d.Same(seq) {
				c.seqDims = append(c.seqDims, i+1)
			}
		}
		comp.Outputs = append(comp.Outputs, &ir.Port{Name: o.Name})
		outs = append(outs, c)
	}
	if len(outs) == 0 {
		return noBatchOutput, nil
	}
	b, err := ort.New(ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return "", err
	}
	s, err := b.Load(comp, filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer s.Close()
	wanted := make([]string, len(outs))
	for i, o := range outs {
		wanted[i] = o.name
	}
	// Every input beside the mask varies; where the model refuses that
	// (a token type or segment id past its few embeddings), only the ids
	// do, the rest zeros.
	schemes := []func(string) bool{func(string) bool { return true }}
	if first != "" {
		schemes = append(schemes, func(name string) bool { return name == first })
	}
	var got, want map[string]*backend.Tensor
	var runErr error
	for _, varies := range schemes {
		padded, alone, err := probeValues(varies)
		if err != nil {
			return err.Error(), nil
		}
		if got, runErr = s.Run(context.Background(), padded, wanted); runErr == nil {
			if want, runErr = s.Run(context.Background(), alone, wanted); runErr == nil {
				break
			}
		}
	}
	if runErr != nil && chosen != "" {
		return fmt.Sprintf("the model fails on the probe with %s (%v), an extent the probe chose; compare `genaic run --verify`", chosen, runErr), nil
	}
	if runErr != nil {
		tried := ""
		if len(schemes) > 1 {
			tried = fmt.Sprintf(", then with only %s so, the other inputs zeros", first)
		}
		return "", fmt.Errorf("the model fails on the probe, rows of %d positions holding 1 to 5 by position%s: %w; a model that takes other values is rewritten unprobed with --no-probe",
			probeLength, tried, runErr)
	}
	compares := 0
	for _, o := range outs {
		// The padded row grouped beside a full one, against it alone: as
		// run --verify compares a request, its sequence axes padded.
		g, w := got[o.name], want[o.name]
		if !o.declared {
			if g == nil || w == nil || g.Rank() != w.Rank() || g.Shape[0] != 2 || w.Shape[0] != 1 {
				continue // not rows of the batch
			}
			for i := 1; i < g.Rank(); i++ {
				if g.Shape[i] == probeLength && w.Shape[i] == probeValid && !slices.Contains(o.seqDims, i) {
					o.seqDims = append(o.seqDims, i)
				}
			}
		}
		compares++
		what := "is missing"
		if g != nil && w != nil && g.Rank() > 0 && g.Shape[0] == 2 {
			what = engine.AgreeAlone(g.View(1, 2), w, o.seqDims)
		}
		if what != "" {
			other := map[bool]string{true: "valid", false: "padding"}[onesMarkPadding]
			return "", fmt.Errorf("output %s of a row padded after %d positions differs from the same row alone (it %s): the padding %s marks reaches the real positions; the model does not mask with %s, or the mask's ones mark the other kind of position (--ones %s)",
				o.name, probeValid, what, mask, mask, other)
		}
	}
	if compares == 0 {
		return noBatchOutput, nil
	}
	return "", nil
}

// step advances the row-major coordinates at within shape by one element.
func step(at, shape []int64) {
	for i := len(at) - 1; i >= 0; i-- {
		if at[i]++; at[i] < shape[i] {
			return
		}
		at[i] = 0
	}
}
