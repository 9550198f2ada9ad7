package vm

import (
	"fmt"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// Compact builds, from the values of a packed workflow output in one or
// more responses, the value holding the rows selection names (DESIGN §5.2):
// destination row i holds row selection[i], the rows of from[0] first, then
// those of from[1], and so on; rows may repeat or be dropped. This is how an
// application regroups results (keeps the rows still wanted, repeats a row
// for each consumer of it, stacks the answers of several requests for a
// downstream batch) without re-deriving companions.
//
// from holds each response's outputs: the packed output and, by the names
// its contract gives them, the offsets of every level (which the emit rules
// publish as workflow outputs). The result holds the compacted output, every
// level's offsets recomputed from the selected spans and, where from[0]
// holds them, the owners derived from those offsets; companions are never
// gathered. A selection that keeps a prefix of one response's rows in order
// is a view of it; anything else is one copy of the selected payload.
func (e *Engine) Compact(output string, from []map[string]*backend.Tensor, selection []int64) (map[string]*backend.Tensor, error) {
	o := e.m.Output(output)
	if o == nil || o.Contract == nil || o.Contract.Layout.Kind != ir.TokenPacked || len(o.Contract.Layout.Levels) == 0 {
		return nil, runErr("run/input", "workflow output `%s` is not a token_packed output with ownership levels; only such an output is compacted by rows", output)
	}
	levels := o.Contract.Layout.Levels
	sources := make([]Packed, len(from))
	for j, outs := range from {
		p, err := packedOutput(output, levels, outs)
		if err != nil {
			return nil, runErr("run/input", "response %d: %v", j, err)
		}
		sources[j] = p
	}
	c, err := compactFrom(sources, selection, nil)
	if err != nil {
		return nil, err
	}
	res := map[string]*backend.Tensor{output: c.Payload}
	for k, l := range levels {
		res[l.Offsets.Name] = vector(c.Levels[k])
		if len(from) > 0 && from[0][l.Owner.Name] != nil {
			res[l.Owner.Name] = vector(ownersFromOffsets(c.Levels[k]))
		}
	}
	return res, nil
}

// packedOutput reads a packed output and the offsets of its levels from a
// response's outputs.
func packedOutput(output string, levels []ir.Level, outs map[string]*backend.Tensor) (Packed, error) {
	p := Packed{Payload: outs[output]}
	if p.Payload == nil || p.Payload.Rank() == 0 {
		return Packed{}, fmt.Errorf("it holds no value of `%s`, or a scalar", output)
	}
	for _, l := range levels {
		offs := outs[l.Offsets.Name]
		if offs == nil || offs.DType != "int64" || offs.Rank() != 1 {
			return Packed{}, fmt.Errorf("it holds no int64 offsets vector `%s` for a level of `%s` (got %v)", l.Offsets.Name, output, offs)
		}
		p.Levels = append(p.Levels, offs.Int64s())
	}
	return p, nil
}

func vector(v []int64) *backend.Tensor {
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(v))}, Data: v}
}
