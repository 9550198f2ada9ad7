package vm

import (
	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
)

// split hands each item its share of the group's outputs (§6 Split): row
// and packed shares are views of the group's buffers, delivered offsets are
// rebased, lengths are sliced, owner maps are derived per request.
func (s *componentSpec) split(g *group, outs map[string]*backend.Tensor) ([]map[string]*backend.Tensor, error) {
	shares := make([]map[string]*backend.Tensor, len(g.items))
	for i := range shares {
		shares[i] = make(map[string]*backend.Tensor, len(s.gp.Outputs))
	}
	for _, o := range s.gp.Outputs {
		if err := s.splitPort(g, o, outs, shares); err != nil {
			return nil, err
		}
	}
	return shares, nil
}

func (s *componentSpec) splitPort(g *group, o plan.Port, outs map[string]*backend.Tensor, shares []map[string]*backend.Tensor) error {
	t := outs[o.Name]
	if t == nil {
		return runErr("run/backend", "component `%s` returned no output `%s`", s.comp.Name, o.Name)
	}
	switch o.Split {
	case plan.SplitBroadcast:
		for i := range shares {
			shares[i][o.Name] = t
		}
	case plan.SplitRows, plan.SplitExpanded:
		f := max(o.Factor, 1) // rows per request on this output
		if t.Rank() == 0 || t.Shape[0] != g.rows()*f {
			return runErr("run/extent", "component `%s` output `%s` has %v rows on axis 0, but the group's %d requests own %d rows each", s.comp.Name, o.Name, t.Shape, g.rows(), f)
		}
		for i := range g.items {
			shares[i][o.Name] = t.View(int64(i)*f, int64(i+1)*f)
		}
	case plan.SplitPacked:
		return s.splitPacked(g, o, outs, shares)
	case plan.SplitCompanion, plan.SplitInternal:
		return s.splitCompanion(g, o, outs, shares)
	}
	return nil
}

// levelOffsets returns the group offsets of each level of an output port,
// innermost first: a preserved level's come from the input level it keeps,
// a produced level's from the graph's own companion, checked on this read.
func (s *componentSpec) levelOffsets(g *group, o plan.Port, outs map[string]*backend.Tensor) ([][]int64, error) {
	levels := make([][]int64, len(o.Levels))
	children := outs[o.Name].Shape[0]
	for k, l := range o.Levels {
		if l.From != nil {
			levels[k] = g.offsets[l.From.Port][l.From.Level]
		} else {
			t := outs[l.Offsets.Port]
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

func (s *componentSpec) splitPacked(g *group, o plan.Port, outs map[string]*backend.Tensor, shares []map[string]*backend.Tensor) error {
	levels, err := s.levelOffsets(g, o, outs)
	if err != nil {
		return err
	}
	t := outs[o.Name]
	for i := range g.items {
		lo, hi := span(levels, int64(i), 0)
		shares[i][o.Name] = t.View(lo, hi)
	}
	return nil
}

// splitCompanion delivers an output companion: offsets rebased to the
// item's own span, owners derived from those, lengths sliced.
func (s *componentSpec) splitCompanion(g *group, o plan.Port, outs map[string]*backend.Tensor, shares []map[string]*backend.Tensor) error {
	served := s.gp.Output(o.Serves.Port)
	if served == nil {
		return runErr("run/unsupported", "output `%s` serves `%s`, which is not an output", o.Name, o.Serves.Port)
	}
	if o.Serves.Role == "lengths" {
		return s.splitLengths(g, o, served, outs, shares)
	}
	levels, err := s.levelOffsets(g, *served, outs)
	if err != nil {
		return err
	}
	k := o.Serves.Level
	for i := range g.items {
		lo, hi := span(levels, int64(i), k+1)
		offs := rebase(levels[k][lo : hi+1])
		data := offs
		if o.Serves.Role == "owner" {
			data = ownersFromOffsets(offs)
		}
		shares[i][o.Name] = &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
	}
	return nil
}

// splitLengths slices a lengths output along with the value it measures.
func (s *componentSpec) splitLengths(g *group, o plan.Port, served *plan.Port, outs map[string]*backend.Tensor, shares []map[string]*backend.Tensor) error {
	t := outs[o.Name]
	var levels [][]int64
	if served.Split == plan.SplitPacked {
		var err error
		if levels, err = s.levelOffsets(g, *served, outs); err != nil {
			return err
		}
	}
	f := max(served.Factor, 1)
	for i := range g.items {
		lo, hi := int64(i)*f, int64(i+1)*f
		if levels != nil {
			lo, hi = span(levels, int64(i), 0)
		}
		if t.Rank() == 0 || hi > t.Shape[0] {
			return runErr("run/lengths", "component `%s` output lengths `%s` has shape %v, too short for the group's %d positions", s.comp.Name, o.Name, t.Shape, hi)
		}
		shares[i][o.Name] = t.View(lo, hi)
	}
	return nil
}
