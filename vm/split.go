package vm

import (
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
)

// outputs is one item's share of a group's outputs, by the position of
// the output port in the GroupPlan: a group's shares are cut from one
// slab, with no map per item.
type outputs []*backend.Tensor

// outMap is a share as a map by port name.
func (s *componentSpec) outMap(sh outputs) map[string]*backend.Tensor {
	m := make(map[string]*backend.Tensor, len(sh))
	for k, o := range s.gp.Outputs {
		m[o.Name] = sh[k]
	}
	return m
}

// outSlice is a map of outputs by port name as a share.
func (s *componentSpec) outSlice(m map[string]*backend.Tensor) outputs {
	sh := make(outputs, len(s.gp.Outputs))
	for k, o := range s.gp.Outputs {
		sh[k] = m[o.Name]
	}
	return sh
}

// outNamed returns outs' tensor of output port name (nil when the
// component has no such output).
func (s *componentSpec) outNamed(outs outputs, name string) *backend.Tensor {
	for k := range s.gp.Outputs {
		if s.gp.Outputs[k].Name == name {
			return outs[k]
		}
	}
	return nil
}

// noOutput is the error of an output the component did not return.
func (s *componentSpec) noOutput(name string) error {
	return runErr("run/backend", "component `%s` returned no output `%s`", s.comp.Name, name)
}

// shareSlab holds a group's items' shares, item after item, n outputs
// each, in one allocation.
type shareSlab struct {
	slab  []*backend.Tensor
	n     int
	lease *lease // of the group's outputs the shares view; nil: none
}

// of is item i's share.
func (sh shareSlab) of(i int) outputs { return sh.slab[i*sh.n : (i+1)*sh.n : (i+1)*sh.n] }

// put makes t item i's output k.
func (sh shareSlab) put(i, k int, t *backend.Tensor) { sh.slab[i*sh.n+k] = t }

// putViews hands item i the view of t over spans[i] as its output k.
func (g *group) putViews(sh shareSlab, k int, t *backend.Tensor, spans [][2]int64) {
	var vs []*backend.Tensor
	if r := sh.lease.splitRoom(); r != nil {
		vs = r.views.Append(t, g.scratch.tensors[:0], spans)
	} else {
		vs = t.AppendViews(g.scratch.tensors[:0], spans)
	}
	for i, v := range vs {
		sh.put(i, k, v)
	}
	clear(vs)
	g.scratch.tensors = vs[:0]
}

// split hands each item its share of the group's outputs (§6 Split): row
// and packed shares are views of the group's buffers, delivered offsets are
// rebased, lengths are sliced, owner maps are derived per request. outs
// holds the group's outputs by plan output, l is their lease (nil: none);
// the shares and their views are cut from its split room where it has one.
func (s *componentSpec) split(g *group, outs outputs, l *lease) (shareSlab, error) {
	n := len(s.gp.Outputs)
	shares := shareSlab{n: n, lease: l}
	if r := l.splitRoom(); r != nil {
		r.slab = slices.Grow(r.slab[:0], len(g.items)*n)[:len(g.items)*n]
		shares.slab = r.slab
	} else {
		shares.slab = make([]*backend.Tensor, len(g.items)*n)
	}
	for k := range s.gp.Outputs {
		if err := s.splitPort(g, k, &s.gp.Outputs[k], outs, shares); err != nil {
			return shares, err
		}
	}
	return shares, nil
}

func (s *componentSpec) splitPort(g *group, k int, o *plan.Port, outs outputs, shares shareSlab) error {
	t := outs[k]
	if t == nil {
		return s.noOutput(o.Name)
	}
	switch o.Split {
	case plan.SplitBroadcast:
		t = t.Clipped() // reaching no further than its elements (backend.Buffers)
		for i := range g.items {
			shares.put(i, k, t)
		}
	case plan.SplitRows, plan.SplitExpanded:
		f := max(o.Factor, 1) // rows per request on this output
		if o.Axis >= t.Rank() || t.Shape[o.Axis] != g.rows()*f {
			return runErr("run/extent", "component `%s` output `%s` has shape %v, but the group's %d requests own %d rows each on its axis %d", s.comp.Name, o.Name, t.Shape, g.rows(), f, o.Axis)
		}
		if o.Axis > 0 {
			return s.splitRowsAt(g, k, o.Axis, f, t, shares)
		}
		spans := g.spans()
		for i := range spans {
			spans[i] = [2]int64{int64(i) * f, int64(i+1) * f}
		}
		g.putViews(shares, k, t, spans)
	case plan.SplitPacked:
		return s.splitPacked(g, k, o, outs, shares)
	case plan.SplitCompanion, plan.SplitInternal:
		return s.splitCompanion(g, k, o, outs, shares)
	}
	return nil
}

// splitRowsAt hands each item its f rows of t on axis, an axis after the
// first: such rows are not contiguous (the axes before it interleave the
// requests), so each share is a copy, one block per index of those axes.
// A group of one hands its item t itself.
func (s *componentSpec) splitRowsAt(g *group, k, axis int, f int64, t *backend.Tensor, shares shareSlab) error {
	if g.rows() == 1 {
		shares.put(0, k, t)
		return nil
	}
	outer := backend.Elements(t.Shape[:axis])
	inner := backend.Elements(t.Shape[axis+1:])
	block := f * inner
	var room [8]int64 // NewTensor copies the shape
	shape := append(room[:0], t.Shape...)
	shape[axis] = f
	for i := range g.items {
		share, err := backend.NewTensor(t.DType, shape)
		if err != nil {
			return runErr("run/backend", "component `%s` returned %v: %v", s.comp.Name, t, err)
		}
		from := int64(i) * block
		for o := range outer {
			share.CopyElems(o*block, t, o*t.Shape[axis]*inner+from, block)
		}
		g.copies.Add(CopyUnstack, share.Bytes())
		shares.put(i, k, share)
	}
	return nil
}

// levelOffsets returns the group offsets of each level of an output port,
// innermost first: a preserved level's come from the input level it keeps,
// a produced level's from the graph's own companion, checked on this read.
func (s *componentSpec) levelOffsets(g *group, o *plan.Port, outs outputs) ([][]int64, error) {
	levels := slices.Grow(g.scratch.levels[:0], len(o.Levels))[:len(o.Levels)]
	g.scratch.levels = levels
	children := s.outNamed(outs, o.Name).Shape[0]
	for k, l := range o.Levels {
		if l.From != nil {
			levels[k] = g.offsets[l.From.Port][l.From.Level]
		} else {
			t := s.outNamed(outs, l.Offsets.Port)
			if t == nil || t.DType != "int64" || t.Rank() != 1 {
				return nil, runErr("run/extent", "component `%s` produced level %d offsets `%s` as %v; it must be an int64 vector", s.comp.Name, k, l.Offsets.Name(), t)
			}
			levels[k] = t.Int64s()
		}
		if err := checkOffsets(l.Offsets.Name(), k, levels[k], children); err != nil {
			err.(*backend.RunError).Message = "component `" + s.comp.Name + "` output `" + o.Name + "`: " + err.(*backend.RunError).Message
			return nil, err
		}
		children = int64(len(levels[k]) - 1)
	}
	if children != g.rows() {
		return nil, runErr("run/extent", "component `%s` output `%s`: its outermost level counts %d rows, but the group holds %d requests", s.comp.Name, o.Name, children, g.rows())
	}
	return levels, nil
}

// span descends an item's row through the levels down to level stop
// (exclusive), returning its unit range there.
func span(levels [][]int64, row int64, stop int) (lo, hi int64) {
	lo, hi = row, row+1
	for k := len(levels) - 1; k >= stop; k-- {
		lo, hi = levels[k][lo], levels[k][hi]
	}
	return lo, hi
}

func (s *componentSpec) splitPacked(g *group, k int, o *plan.Port, outs outputs, shares shareSlab) error {
	levels, err := s.levelOffsets(g, o, outs)
	if err != nil {
		return err
	}
	spans := g.spans()
	for i := range spans {
		lo, hi := span(levels, int64(i), 0)
		spans[i] = [2]int64{lo, hi}
	}
	g.putViews(shares, k, outs[k], spans)
	return nil
}

// splitCompanion delivers an output companion: offsets rebased to the
// item's own span, owners derived from those, lengths sliced.
func (s *componentSpec) splitCompanion(g *group, k int, o *plan.Port, outs outputs, shares shareSlab) error {
	served := s.gp.Output(o.Serves.Port)
	if served == nil {
		return runErr("run/unsupported", "output `%s` serves `%s`, which is not an output", o.Name, o.Serves.Port)
	}
	if o.Serves.Role == "lengths" {
		return s.splitLengths(g, k, o, served, outs, shares)
	}
	levels, err := s.levelOffsets(g, served, outs)
	if err != nil {
		return err
	}
	level := o.Serves.Level
	for i := range g.items {
		lo, hi := span(levels, int64(i), level+1)
		offs := rebase(levels[level][lo : hi+1])
		data := offs
		if o.Serves.Role == "owner" {
			data = ownersFromOffsets(offs)
		}
		shares.put(i, k, &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data})
	}
	return nil
}

// splitLengths slices a lengths output along with the value it measures.
func (s *componentSpec) splitLengths(g *group, k int, o *plan.Port, served *plan.Port, outs outputs, shares shareSlab) error {
	t := outs[k]
	var levels [][]int64
	if served.Split == plan.SplitPacked {
		var err error
		if levels, err = s.levelOffsets(g, served, outs); err != nil {
			return err
		}
	}
	f := max(served.Factor, 1)
	if levels == nil && served.Axis > 0 {
		// The lengths of rows on an inner axis have that axis too (they
		// cover the axes before the padded one).
		if served.Axis >= t.Rank() || t.Shape[served.Axis] != g.rows()*f {
			return runErr("run/lengths", "component `%s` output lengths `%s` has shape %v, but the group's %d requests own %d rows each on its axis %d", s.comp.Name, o.Name, t.Shape, g.rows(), f, served.Axis)
		}
		return s.splitRowsAt(g, k, served.Axis, f, t, shares)
	}
	spans := g.spans()
	for i := range spans {
		lo, hi := int64(i)*f, int64(i+1)*f
		if levels != nil {
			lo, hi = span(levels, int64(i), 0)
		}
		if t.Rank() == 0 || hi > t.Shape[0] {
			return runErr("run/lengths", "component `%s` output lengths `%s` has shape %v, too short for the group's %d positions", s.comp.Name, o.Name, t.Shape, hi)
		}
		spans[i] = [2]int64{lo, hi}
	}
	g.putViews(shares, k, t, spans)
	return nil
}
