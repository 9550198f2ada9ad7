package ir

import "slices"

// Contract is a tensor contract (DESIGN §2.2).
type Contract struct {
	DType string `json:"dtype,omitempty"`
	// Rank is the number of axes, or -1 when neither shape nor rank is
	// declared. With a shape, Rank is len(Shape) unless the document wrote
	// a rank that disagrees (contract/shape reports it).
	Rank     int       `json:"rank,omitempty"`
	HasShape bool      `json:"has_shape,omitempty"`
	Shape    []Dim     `json:"shape,omitempty"`
	Optional bool      `json:"optional,omitempty"`
	Layout   Layout    `json:"layout,omitzero"`
	Padding  []Padding `json:"padding,omitempty"`
	Loc      Loc       `json:"loc,omitempty"`
	DTypeLoc Loc       `json:"dtype_loc,omitempty"`
	RankLoc  Loc       `json:"rank_loc,omitempty"` // where an explicit rank is written; 0 when absent
}

// Dim is one dimension: a shape symbol or a fixed extent.
type Dim struct {
	Sym  string `json:"sym,omitempty"`  // non-empty for a symbol
	Size int64  `json:"size,omitempty"` // the fixed extent when Sym is empty
	Loc  Loc    `json:"loc,omitempty"`
}

// IsSym reports whether d is a shape symbol.
func (d Dim) IsSym() bool { return d.Sym != "" }

// LayoutKind is a batch layout kind.
type LayoutKind uint8

// Batch layouts.
const (
	Shared          LayoutKind = iota // the same for every request of an invocation
	RequestAligned                    // one row per request on Axis
	RequestExpanded                   // Factor contiguous rows per request on Axis
	TokenPacked                       // items of all requests concatenated on axis 0
)

var layoutNames = [...]string{"shared", "request_aligned", "request_expanded", "token_packed"}

func (k LayoutKind) String() string {
	if int(k) < len(layoutNames) {
		return layoutNames[k]
	}
	return "?"
}

// ParseLayoutKind reads a layout word.
func ParseLayoutKind(s string) (LayoutKind, bool) {
	for i, n := range layoutNames {
		if n == s {
			return LayoutKind(i), true
		}
	}
	return 0, false
}

// Layout is a value's batch layout. The zero Layout is shared.
type Layout struct {
	Kind   LayoutKind `json:"kind"`
	Axis   int64      `json:"axis,omitempty"`
	Factor int64      `json:"factor,omitempty"`
	Levels []Level    `json:"levels,omitempty"` // token_packed: innermost first
	Loc    Loc        `json:"loc,omitempty"`    // 0 when the layout was not written (shared by default)
	// AxisLoc is where the axis is written.
	AxisLoc Loc `json:"axis_loc,omitempty"`
}

// Extent says who produces an output level's units.
type Extent uint8

// Level extents. Input levels have none.
const (
	ExtentNone      Extent = iota // not written (input levels)
	ExtentPreserved               // units correspond one-to-one with an input level's units
	ExtentProduced                // the graph decides the count and produces the companions
)

var extentNames = [...]string{"", "preserved", "produced"}

func (e Extent) String() string {
	if int(e) < len(extentNames) {
		return extentNames[e]
	}
	return "?"
}

// ParseExtent reads an extent word ("" is ExtentNone).
func ParseExtent(s string) (Extent, bool) {
	for i, n := range extentNames {
		if n == s {
			return Extent(i), true
		}
	}
	return 0, false
}

// Level is one ownership level over the packed axis.
type Level struct {
	Offsets Ref    `json:"offsets,omitzero"`
	Owner   Ref    `json:"owner,omitzero"`
	Extent  Extent `json:"extent,omitempty"`
	Loc     Loc    `json:"loc,omitempty"`
}

// Padding says that a dimension is right-padded, with a lengths companion.
type Padding struct {
	Dim     Ref `json:"dim,omitzero"`     // the padded shape symbol
	Lengths Ref `json:"lengths,omitzero"` // the valid_lengths value
	Loc     Loc `json:"loc,omitempty"`
}

// Axis returns the index of symbol sym in c's shape, or -1.
func (c *Contract) Axis(sym string) int {
	for i, d := range c.Shape {
		if d.Sym == sym {
			return i
		}
	}
	return -1
}

// RequestAxis returns the request axis of a request_aligned or
// request_expanded contract, or -1.
func (c *Contract) RequestAxis() int {
	switch c.Layout.Kind {
	case RequestAligned, RequestExpanded:
		return int(c.Layout.Axis)
	}
	return -1
}

// Packed reports whether c is token_packed.
func (c *Contract) Packed() bool { return c.Layout.Kind == TokenPacked }

// Companions names the values that accompany c's packed layout: each
// level's offsets and owner, then each padded dimension's valid lengths
// (those named).
func (c *Contract) Companions() []string {
	var out []string
	for _, l := range c.Layout.Levels {
		out = append(out, l.Offsets.Name, l.Owner.Name)
	}
	for _, p := range c.Padding {
		out = append(out, p.Lengths.Name)
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// PackedSym returns the symbol of the packed axis (axis 0), or "".
func (c *Contract) PackedSym() string {
	if !c.Packed() || len(c.Shape) == 0 {
		return ""
	}
	return c.Shape[0].Sym
}
