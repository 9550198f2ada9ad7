package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm/ort"
)

// probeExtents are the extents the output probe tries its inputs'
// dynamic dimensions at, one scheme after another where the model refuses
// one: small is the j-th symbol on an input's first axis (a batch, packed
// rows), large the j-th other one, each a pair (first run, second run).
// Every pair differs from every other, and from one plus another, so an
// output dimension matches at most one symbol on both runs. The schemes
// grow for a speech encoder's convolutions, which refuse fewer samples
// than their receptive field; the last is even, in multiples of 32, for
// models that halve a dimension or an image's sides five times.
var probeExtents = []struct{ small, large func(j int64) [2]int64 }{
	{probeSmall, probeOdd(11)},
	{probeSmall, probeOdd(101)},
	{probeSmall, probeOdd(401)},
	{func(j int64) [2]int64 { return [2]int64{2 + 4*j, 4 + 4*j} }, func(j int64) [2]int64 { return [2]int64{64 + 64*j, 96 + 64*j} }},
}

// maxProbeElements bounds the elements of one probe run's inputs: a
// video encoder's frames, height and width at 400 each would be 6 GB.
const maxProbeElements = 1 << 22

func probeSmall(j int64) [2]int64 { return [2]int64{2 + j, 3 + 2*j} }

func probeOdd(base int64) func(int64) [2]int64 {
	return func(j int64) [2]int64 { return [2]int64{base + 2*j, 2*base + 3*j + 1} }
}

// probeOutputs runs the model at path twice on inputs it makes, each
// dynamic dimension of its inputs at another extent the second time, and
// names each dynamic dimension of its outputs by what it did: one that
// took an input dimension's extents both times is that dimension, under
// the input's symbol (an export that named only its inputs' axes calls
// its outputs' Addlast_hidden_state_dim_1); one that kept an extent is
// noted as that constant (a head count the export left dynamic); one that
// did neither is computed per item (frames of samples) and keeps its
// name, but for an input's, which it is not: it is named apart, as
// OUTPUT_dimI. An output of fixed extents whose values changed is noted as
// one the model computes over the whole call (a count over the batch). It
// says why where it could not run the model; init then keeps
// the graph's names.
func probeOutputs(path string, c *initComponent) (skipped string) {
	if !slices.ContainsFunc(c.outputs, func(p initPort) bool {
		return slices.ContainsFunc(p.dims, func(d initDim) bool { return d.sym != "" })
	}) {
		return ""
	}
	// Each input symbol's two extents (probeExtents): small on an input's
	// first axis, large elsewhere.
	extents := func(scheme int) [2]map[string]int64 {
		var small, large []string
		for _, p := range c.inputs {
			for i, d := range p.dims {
				switch {
				case d.sym == "" || slices.Contains(small, d.sym) || slices.Contains(large, d.sym):
				case i == 0:
					small = append(small, d.sym)
				default:
					large = append(large, d.sym)
				}
			}
		}
		large = slices.DeleteFunc(large, func(s string) bool { return slices.Contains(small, s) })
		runs := [2]map[string]int64{{}, {}}
		// Channels an image model leaves open (Hugging Face's
		// num_channels) are three in both runs: its first convolution
		// takes no other count.
		large = slices.DeleteFunc(large, func(s string) bool {
			if namedLike(s, "channel") {
				runs[0][s], runs[1][s] = 3, 3
				return true
			}
			return false
		})
		for j, s := range small {
			e := probeExtents[scheme].small(int64(j))
			runs[0][s], runs[1][s] = e[0], e[1]
		}
		for j, s := range large {
			e := probeExtents[scheme].large(int64(j))
			runs[0][s], runs[1][s] = e[0], e[1]
		}
		return runs
	}

	comp := &ir.Component{Name: c.name, Impl: ir.ImplONNX, Artifact: filepath.Base(path)}
	for _, p := range c.inputs {
		comp.Inputs = append(comp.Inputs, &ir.Port{Name: p.name})
	}
	wanted := make([]string, len(c.outputs))
	for i, p := range c.outputs {
		comp.Outputs = append(comp.Outputs, &ir.Port{Name: p.name})
		wanted[i] = p.name
	}
	b, err := ort.New(ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return err.Error()
	}
	s, err := b.Load(comp, filepath.Dir(path))
	if err != nil {
		return err.Error()
	}
	defer s.Close()
	shape := func(p initPort, ext map[string]int64) []int64 {
		out := make([]int64, len(p.dims))
		for i, d := range p.dims {
			out[i] = d.size
			if d.sym != "" {
				out[i] = ext[d.sym]
			}
		}
		return out
	}
	run := func(ext map[string]int64) (map[string]*backend.Tensor, error) {
		total := int64(0)
		for _, p := range c.inputs {
			total += backend.Elements(shape(p, ext))
		}
		if total > maxProbeElements {
			return nil, fmt.Errorf("its inputs at %v would hold %d elements, more than the probe makes (%d)", ext, total, int64(maxProbeElements))
		}
		in := map[string]*backend.Tensor{}
		for _, p := range c.inputs {
			t, err := backend.NewTensor(p.dtype, shape(p, ext))
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", p.name, err)
			}
			// Ones: a valid id, token type, length and owner; a float a
			// model normalizes without dividing by zero.
			for k := range t.Len() {
				t.SetFloat64At(k, 1)
			}
			in[p.name] = t
		}
		return s.Run(context.Background(), in, wanted)
	}
	c.steady, c.whole = map[string]int64{}, map[string]bool{}
	var outs [2]map[string]*backend.Tensor
	var runs [2]map[string]int64
	probe := func() (err error) {
		for scheme := range probeExtents {
			runs = extents(scheme)
			if outs[0], err = run(runs[0]); err == nil {
				outs[1], err = run(runs[1])
			}
			if err == nil {
				return nil
			}
		}
		return err
	}
	if err = probe(); err != nil {
		// A graph that names each input's axes apart (tf2onnx's unk__N)
		// refuses them apart where they are one axis (ids and their
		// mask): the inputs' axes, outermost first, take one symbol
		// until the model runs, and keep it.
		inputs := c.inputs
		for depth := 1; err != nil && depth <= maxRank(inputs); depth++ {
			renames := unifiedAxes(inputs, depth)
			if len(renames) == 0 {
				continue
			}
			c.inputs = renamed(inputs, renames)
			if probe() == nil {
				err = nil
				for o := range c.outputs {
					c.outputs[o] = renamed(c.outputs[o:o+1], renames)[0]
				}
				c.unified = renames
				break
			}
			c.inputs = inputs
		}
		if err != nil {
			return fmt.Sprintf("the model fails on inputs of ones at every extent tried (%v)", err)
		}
	}
	c.probed = true

	// An axis computed per item under an input's symbol (an export that
	// named a speech encoder's frames as its samples, sequence_length
	// both) is renamed apart: it is not that input's extent. Axes of the
	// same two extents share the first one's new name.
	inputSyms, taken := map[string]bool{}, takenNames(c)
	for _, p := range c.inputs {
		for _, d := range p.dims {
			if d.sym != "" {
				inputSyms[d.sym] = true
			}
		}
	}
	computed := map[[2]int64]string{}
	for o := range c.outputs {
		p := &c.outputs[o]
		a, z := outs[0][p.name], outs[1][p.name]
		if a == nil || z == nil || a.Rank() != len(p.dims) || z.Rank() != len(p.dims) {
			continue
		}
		for i := range p.dims {
			d := &p.dims[i]
			if d.sym == "" {
				continue
			}
			e0, e1 := a.Shape[i], z.Shape[i]
			if s := followed(runs, e0, e1); s != "" {
				d.sym = s
				continue
			}
			switch {
			case e0 == e1:
				c.steady[d.sym] = e0
			case inputSyms[d.sym]:
				if computed[[2]int64{e0, e1}] == "" {
					computed[[2]int64{e0, e1}] = freshName(fmt.Sprintf("%s_dim%d", p.name, i), taken)
				}
				d.sym = computed[[2]int64{e0, e1}]
			}
		}
		if !slices.ContainsFunc(p.dims, func(d initDim) bool { return d.sym != "" }) && !sameValues(a, z) {
			c.whole[p.name] = true
		}
	}
	return ""
}

// sameValues reports whether a and z hold the same shape and elements.
func sameValues(a, z *backend.Tensor) bool {
	if !slices.Equal(a.Shape, z.Shape) {
		return false
	}
	for k := range a.Len() {
		va, oka := a.Float64At(k)
		vz, okz := z.Float64At(k)
		if oka != okz || va != vz && !(math.IsNaN(va) && math.IsNaN(vz)) {
			return false
		}
	}
	return true
}

// followed is the input symbol whose extents were e0 and e1 in the two
// runs; "" where none was. A symbol of one extent in both runs (an image's
// channels) is followed by nothing: a constant output axis matches it.
func followed(runs [2]map[string]int64, e0, e1 int64) string {
	for s, v := range runs[0] {
		if v == e0 && runs[1][s] == e1 && e0 != e1 {
			return s
		}
	}
	return ""
}

// unifiedAxes renames, for each axis below depth, every input's dynamic
// dimension there to the symbol the first input with a dynamic dimension
// there has; a symbol that is some axis's first keeps its name.
func unifiedAxes(inputs []initPort, depth int) map[string]string {
	first := map[int]string{}
	for _, p := range inputs {
		for i, d := range p.dims {
			if _, ok := first[i]; !ok && i < depth && d.sym != "" {
				first[i] = d.sym
			}
		}
	}
	kept := slices.Collect(maps.Values(first))
	out := map[string]string{}
	for _, p := range inputs {
		for i, d := range p.dims {
			if s, ok := first[i]; ok && d.sym != "" && d.sym != s && !slices.Contains(kept, d.sym) {
				out[d.sym] = s
			}
		}
	}
	return out
}

// renamed is a copy of ports with their symbols renamed.
func renamed(ports []initPort, renames map[string]string) []initPort {
	out := make([]initPort, len(ports))
	for i, p := range ports {
		p.dims = slices.Clone(p.dims)
		for j, d := range p.dims {
			if to, ok := renames[d.sym]; ok {
				p.dims[j].sym = to
			}
		}
		out[i] = p
	}
	return out
}

func maxRank(ports []initPort) int {
	most := 0
	for _, p := range ports {
		most = max(most, len(p.dims))
	}
	return most
}
