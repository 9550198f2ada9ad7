package vm

import (
	"slices"

	"github.com/genaic/genaic/backend"
)

// runErr is backend.Errorf: the runtime's errors fail one request.
var runErr = backend.Errorf

// checkOffsets checks a level's offsets vector: it starts at 0, never
// decreases, and ends at the child count (§4 r9).
func checkOffsets(value string, level int, offs []int64, children int64) error {
	if len(offs) == 0 {
		return runErr("run/extent", "level %d offsets `%s` is empty; an offsets vector holds units+1 entries, starting with 0", level, value)
	}
	if offs[0] != 0 {
		return runErr("run/offsets", "level %d offsets `%s` starts at %d at index 0; offsets start at 0", level, value, offs[0])
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return runErr("run/offsets", "level %d offsets `%s` decreases at index %d: %d after %d; offsets never decrease", level, value, i, offs[i], offs[i-1])
		}
	}
	if last := offs[len(offs)-1]; last != children {
		return runErr("run/offsets", "level %d offsets `%s` ends at %d at index %d, but the level below holds %d entries; the last offset is the child count",
			level, value, last, len(offs)-1, children)
	}
	return nil
}

// checkOwner checks a level's owner map against its offsets: entry j is the
// position of the unit whose span holds child j.
func checkOwner(value string, level int, owner, offs []int64) error {
	children := offs[len(offs)-1]
	if int64(len(owner)) != children {
		return runErr("run/extent", "level %d owner `%s` has %d entries, but its offsets cover %d children; an owner map has one entry per child",
			level, value, len(owner), children)
	}
	// offs was checked (checkOffsets): each unit's span lies in owner.
	units := int64(len(offs) - 1)
	for u := int64(0); u < units; u++ {
		for j, w := range owner[offs[u]:offs[u+1]] {
			if w != u {
				return ownerError(value, level, w, offs[u]+int64(j), u, units)
			}
		}
	}
	return nil
}

// ownerError is why entry j of an owner map, w, is not its unit u.
func ownerError(value string, level int, w, j, u, units int64) error {
	if w < 0 || w >= units {
		return runErr("run/owner", "level %d owner `%s` holds %d at index %d, outside [0, %d)", level, value, w, j, units)
	}
	return runErr("run/owner", "level %d owner `%s` holds %d at index %d, but its offsets place index %d in unit %d", level, value, w, j, j, u)
}

// ownersFromOffsets derives an owner map from offsets: positions, never
// identities. The map is made zeroed, so the first unit's children, all
// of them where there is one unit (a request's one image: an owner per
// byte), are not written again.
func ownersFromOffsets(offs []int64) []int64 {
	if len(offs) == 0 {
		return nil
	}
	return ownersInto(make([]int64, offs[len(offs)-1]), offs[1:], 1)
}

// ownersInto is ownersFromOffsets into owner, which holds exactly one
// entry per child, numbering the units from first.
func ownersInto(owner, offs []int64, first int64) []int64 {
	for u := 0; u+1 < len(offs); u++ {
		for j := offs[u]; j < offs[u+1]; j++ {
			owner[j] = first + int64(u)
		}
	}
	return owner
}

// concatOffsets composes the offsets of several items into the group's: each
// item's vector is shifted by the children before it, sharing the joints.
func concatOffsets(items [][]int64) []int64 {
	n := 1
	for _, offs := range items {
		n += max(len(offs)-1, 0)
	}
	out, base := make([]int64, 1, n), int64(0)
	for _, offs := range items {
		out, base = appendShifted(out, base, offs)
	}
	return out
}

// composeOffsets is concatOffsets of the items' offsets of port at, level
// k, into out, which has room for exactly the group's entries.
func composeOffsets(out []int64, items []*item, at, k int) []int64 {
	out, base := append(out[:0], 0), int64(0)
	for _, it := range items {
		out, base = appendShifted(out, base, it.ports[at].levels[k])
	}
	return out
}

// appendShifted appends one item's offsets past their leading 0, shifted
// by base (the children before it), and returns the new base.
func appendShifted(out []int64, base int64, offs []int64) ([]int64, int64) {
	if len(offs) == 0 {
		return out, base
	}
	for _, o := range offs[1:] {
		out = append(out, base+o)
	}
	return out, base + offs[len(offs)-1]
}

// rebase returns a span of a group's offsets shifted to start at 0.
func rebase(offs []int64) []int64 {
	out := make([]int64, len(offs))
	for i, o := range offs {
		out[i] = o - offs[0]
	}
	return out
}

// checkLengths checks a valid_lengths vector: its shape is the value's axes
// outer to the padded one, and every entry lies in [0, padded extent].
func checkLengths(value, dim string, lengths *backend.Tensor, outer []int64, extent int64) error {
	if !slices.Equal(lengths.Shape, outer) {
		return runErr("run/lengths", "valid_lengths `%s` of dimension `%s` has shape %v, but the padded value's outer axes are %v", value, dim, lengths.Shape, outer)
	}
	for i, n := range lengths.Int64s() {
		if n < 0 || n > extent {
			return runErr("run/lengths", "valid_lengths `%s` holds %d at index %d, outside [0, %d], the padded extent of `%s`", value, n, i, extent, dim)
		}
	}
	return nil
}
