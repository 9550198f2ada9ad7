package vm

import (
	"fmt"

	"github.com/genaic/genaic/backend"
)

// Packed is a packed value with its ownership chain: levels hold the
// offsets of each level, innermost first; the outermost level's units are
// request rows.
type Packed struct {
	Payload *backend.Tensor
	Levels  [][]int64
}

// Owners derives the owner map of level k from its offsets: positions,
// never identities.
func (p Packed) Owners(k int) []int64 { return ownersFromOffsets(p.Levels[k]) }

// Check validates the chain: every level's offsets well-formed over the
// level below, the innermost over the payload's packed axis.
func (p Packed) Check() error {
	children := p.Payload.Shape[0]
	for k, offs := range p.Levels {
		if err := checkOffsets(fmt.Sprintf("levels[%d]", k), k, offs, children); err != nil {
			return err
		}
		children = int64(len(offs) - 1)
	}
	return nil
}

// Compact applies a row selection to a packed value (§5.2): destination
// row i holds source row selection[i]; rows may repeat or be dropped. The
// selection is lifted through the ownership chain, outermost level inward,
// into a packed-position permutation; every level's offsets are recomputed
// from the selected spans, never gathered. An order-preserving selection
// of a prefix of the rows is a free reslice: the payload is a view, not a
// copy. copies may be nil.
func Compact(p Packed, selection []int64, copies *Copies) (Packed, error) {
	if err := p.Check(); err != nil {
		return Packed{}, err
	}
	top := len(p.Levels) - 1
	rows := int64(len(p.Levels[top]) - 1)
	for i, r := range selection {
		if r < 0 || r >= rows {
			return Packed{}, runErr("run/extent", "selection[%d] = %d is not a row of this value (it has %d rows)", i, r, rows)
		}
	}
	out := Packed{Levels: make([][]int64, len(p.Levels))}
	// spans are the selected unit ranges at the current level, in order.
	spans := make([][2]int64, len(selection))
	for i, r := range selection {
		spans[i] = [2]int64{r, r + 1}
	}
	for k := top; k >= 0; k-- {
		offs := p.Levels[k]
		next := make([][2]int64, 0, len(spans))
		newOffs := []int64{0}
		for _, s := range spans {
			for u := s[0]; u < s[1]; u++ {
				newOffs = append(newOffs, newOffs[len(newOffs)-1]+offs[u+1]-offs[u])
				next = append(next, [2]int64{offs[u], offs[u+1]})
			}
		}
		out.Levels[k] = newOffs
		spans = mergeSpans(next)
	}
	if isPrefix(selection) {
		end := int64(0)
		if len(spans) > 0 {
			end = spans[len(spans)-1][1]
		}
		out.Payload = p.Payload.View(0, end)
		return out, nil
	}
	payload, err := gatherRows(p.Payload, spans, copies)
	if err != nil {
		return Packed{}, err
	}
	out.Payload = payload
	return out, nil
}

// mergeSpans joins adjacent spans, so that a gather copies runs, not rows.
func mergeSpans(spans [][2]int64) [][2]int64 {
	var out [][2]int64
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1][1] == s[0] {
			out[n-1][1] = s[1]
			continue
		}
		out = append(out, s)
	}
	return out
}

// isPrefix reports whether a selection keeps rows 0..n-1 in order.
func isPrefix(selection []int64) bool {
	for i, r := range selection {
		if r != int64(i) {
			return false
		}
	}
	return true
}

// gatherRows copies the given row spans of t, in order, into a new tensor.
func gatherRows(t *backend.Tensor, spans [][2]int64, copies *Copies) (*backend.Tensor, error) {
	n := int64(0)
	for _, s := range spans {
		n += s[1] - s[0]
	}
	shape := append([]int64{n}, t.Shape[1:]...)
	out, err := backend.NewTensor(t.DType, shape)
	if err != nil {
		return nil, err
	}
	inner := backend.Elements(t.Shape[1:])
	row := int64(0)
	for _, s := range spans {
		out.CopyElems(row*inner, t, s[0]*inner, (s[1]-s[0])*inner)
		row += s[1] - s[0]
	}
	if copies != nil {
		copies.Add(CopyGather, out.Bytes())
	}
	return out, nil
}
