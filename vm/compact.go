package vm

import (
	"fmt"
	"slices"

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
	return compactFrom([]Packed{p}, selection, copies)
}

// unitSpan is a range of units of one source of a compaction.
type unitSpan struct {
	src    int
	lo, hi int64
}

// compactFrom is Compact over the rows of several packed values, numbered
// one after another: row r of sources[1] is row rows(sources[0]) + r.
func compactFrom(sources []Packed, selection []int64, copies *Copies) (Packed, error) {
	if len(sources) == 0 {
		return Packed{}, runErr("run/input", "compaction needs at least one packed value")
	}
	depth := len(sources[0].Levels)
	var rowsOf []int64
	for j, p := range sources {
		if err := p.Check(); err != nil {
			return Packed{}, err
		}
		if len(p.Levels) != depth || p.Payload.DType != sources[0].Payload.DType || !slices.Equal(p.Payload.Shape[1:], sources[0].Payload.Shape[1:]) {
			return Packed{}, runErr("run/input", "packed value %d (%s, %d levels) does not stack with value 0 (%s, %d levels)", j, p.Payload, len(p.Levels), sources[0].Payload, depth)
		}
		rowsOf = append(rowsOf, int64(len(p.Levels[depth-1])-1))
	}
	spans, err := selectRows(rowsOf, selection)
	if err != nil {
		return Packed{}, err
	}
	out := Packed{Levels: make([][]int64, depth)}
	for k := depth - 1; k >= 0; k-- {
		var next []unitSpan
		newOffs := []int64{0}
		for _, s := range spans {
			offs := sources[s.src].Levels[k]
			for u := s.lo; u < s.hi; u++ {
				newOffs = append(newOffs, newOffs[len(newOffs)-1]+offs[u+1]-offs[u])
				next = append(next, unitSpan{s.src, offs[u], offs[u+1]})
			}
		}
		out.Levels[k] = newOffs
		spans = mergeSpans(next)
	}
	if len(sources) == 1 && isPrefix(selection) {
		end := int64(0)
		if len(spans) > 0 {
			end = spans[len(spans)-1].hi
		}
		out.Payload = sources[0].Payload.View(0, end)
		return out, nil
	}
	if out.Payload, err = gatherRows(sources, spans, copies); err != nil {
		return Packed{}, err
	}
	return out, nil
}

// selectRows turns a selection of rows numbered across sources into one
// span of one row each.
func selectRows(rowsOf []int64, selection []int64) ([]unitSpan, error) {
	total := int64(0)
	for _, n := range rowsOf {
		total += n
	}
	spans := make([]unitSpan, len(selection))
	for i, r := range selection {
		if r < 0 || r >= total {
			return nil, runErr("run/extent", "selection[%d] = %d is not a row of this value (it has %d rows)", i, r, total)
		}
		j := 0
		for r >= rowsOf[j] {
			r -= rowsOf[j]
			j++
		}
		spans[i] = unitSpan{j, r, r + 1}
	}
	return spans, nil
}

// mergeSpans joins adjacent spans of one source, so that a gather copies
// runs, not rows.
func mergeSpans(spans []unitSpan) []unitSpan {
	var out []unitSpan
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].src == s.src && out[n-1].hi == s.lo {
			out[n-1].hi = s.hi
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

// gatherRows copies the given row spans of the sources' payloads, in order,
// into a new tensor.
func gatherRows(sources []Packed, spans []unitSpan, copies *Copies) (*backend.Tensor, error) {
	n := int64(0)
	for _, s := range spans {
		n += s.hi - s.lo
	}
	t := sources[0].Payload
	shape := append([]int64{n}, t.Shape[1:]...)
	out, err := backend.NewTensor(t.DType, shape)
	if err != nil {
		return nil, err
	}
	inner := backend.Elements(t.Shape[1:])
	row := int64(0)
	for _, s := range spans {
		out.CopyElems(row*inner, sources[s.src].Payload, s.lo*inner, (s.hi-s.lo)*inner)
		row += s.hi - s.lo
	}
	if copies != nil {
		copies.Add(CopyGather, out.Bytes())
	}
	return out, nil
}
