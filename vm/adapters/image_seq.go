package adapters

import (
	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// Content roles of the sequences tile and patchify make, and of their
// grids.
const (
	rolePatches = "patches"
	roleTiles   = "tiles"
	roleGrid    = "grid"
)

// seqPort is an output port filled with the tiles or patches of each
// image: packed on axis 0 (one level, units→rows, or two, units→images and
// images→rows) or stacked per image on a new axis 0 with the units axis
// padded to the longest and measured by a lengths port.
type seqPort struct {
	name, source string
	static       preprocess.Shape
	unit         []int64 // the shape of one tile or patch
	packed       bool
	levels       int
	lengths      string // stacked: the valid_lengths port of axis 1
	contract     *ir.Contract
}

// gridPort is an output port filled with each image's grid: [images, 2],
// the rows and columns of its tiles or patches.
type gridPort struct {
	name, source string
}

func (s *imageSession) seqPort(port *ir.Port, o *ir.ProgramOutput, source string) (*seqPort, error) {
	comp := s.comp
	c := port.Contract
	static := s.prog.seqs[source]
	sp := &seqPort{name: port.Name, source: source, static: static, contract: c}
	if err := s.dataDType(port, o.Content); err != nil {
		return nil, err
	}
	what := "patches [patches, features]"
	sp.unit = []int64{int64(static.Features)}
	if static.Seq == preprocess.SeqTiles {
		what = "tiles [tiles, channels, height, width]"
		sp.unit = []int64{int64(static.C), int64(static.H), int64(static.W)}
	}
	sp.packed = c.Layout.Kind == ir.TokenPacked
	want := len(sp.unit) + 2
	if sp.packed {
		want--
		sp.levels = len(c.Layout.Levels)
	}
	rank := c.Rank
	if rank < 0 {
		rank = want
	}
	switch {
	case c.Layout.Kind == ir.RequestExpanded || c.Layout.Kind != ir.Shared && c.Layout.Axis != 0:
		return nil, unsupported("output port `%s` of adapter `%s` is %s on axis %d; the image adapter packs or stacks %s on axis 0 as token_packed, shared or request_aligned", port.Name, comp.Name, c.Layout.Kind, c.Layout.Axis, o.Content)
	case rank != want && sp.packed:
		return nil, unsupported("output port `%s` of adapter `%s` packs rank %d, but `%s` holds %s, so the packed port has rank %d", port.Name, comp.Name, rank, source, what, want)
	case rank != want:
		return nil, unsupported("output port `%s` of adapter `%s` stacks rank %d, but `%s` holds %s, so the stacked port has rank %d ([images, ...])", port.Name, comp.Name, rank, source, what, want)
	case sp.packed && (sp.levels < 1 || sp.levels > 2):
		return nil, unsupported("output port `%s` of adapter `%s` declares %d ownership levels; the image adapter produces one (%s→rows) or two (%s→images, images→rows)", port.Name, comp.Name, sp.levels, o.Content, o.Content)
	}
	if c.HasShape && len(c.Shape) == rank {
		for i, u := range sp.unit {
			if d := c.Shape[rank-len(sp.unit)+i]; !d.IsSym() && d.Size != u && u > 0 {
				return nil, unsupported("output port `%s` of adapter `%s` fixes axis %d at %d, but preprocessing.image makes %s of `%s` %d there; make the two agree",
					port.Name, comp.Name, rank-len(sp.unit)+i, d.Size, o.Content, source, u)
			}
		}
	}
	for _, pad := range c.Padding {
		if axis := c.Axis(pad.Dim.Name); sp.packed || axis != 1 {
			return nil, unsupported("output port `%s` of adapter `%s` pads `%s` (axis %d); the image adapter pads the %s of stacked images (axis 1) only", port.Name, comp.Name, pad.Dim.Name, axis, o.Content)
		}
		sp.lengths = companionPorts(s.b.m, s.comp)(pad.Lengths.Name)
	}
	return sp, nil
}

// fillSeq lays out the tiles or patches of the images on a sequence port
// and returns its level offsets, innermost first (packed ports).
func (s *imageSession) fillSeq(sp *seqPort, items []*planar, rows []int64, out map[string]*backend.Tensor) ([][]int64, error) {
	per := backend.Elements(sp.unit)
	units := []int64{0}
	for _, p := range items {
		units = append(units, units[len(units)-1]+int64(p.seq.units))
	}
	total := units[len(units)-1]
	if sp.packed {
		t, err := backend.NewTensor("float32", append([]int64{total}, sp.unit...))
		if err != nil {
			return nil, err
		}
		dst := t.Float32s()
		for i, p := range items {
			unitMajor(dst[units[i]*per:], p)
		}
		out[sp.name] = t
		if sp.levels == 2 {
			return [][]int64{units, rows}, nil
		}
		perRow := make([]int64, len(rows))
		for r, c := range rows {
			perRow[r] = units[c]
		}
		return [][]int64{perRow}, nil
	}
	longest := int64(0)
	for i, p := range items {
		n := int64(p.seq.units)
		if sp.lengths == "" && i > 0 && n != int64(items[0].seq.units) {
			return nil, fail("run/input", "image %d makes %d %s, but image 0 makes %d, and output port `%s` of adapter `%s` does not pad axis 1; pad it with valid_lengths, or pack them (token_packed)",
				i, n, unitName(sp), items[0].seq.units, sp.name, s.comp.Name)
		}
		longest = max(longest, n)
	}
	t, err := backend.NewTensor("float32", append([]int64{int64(len(items)), longest}, sp.unit...))
	if err != nil {
		return nil, err
	}
	dst := t.Float32s()
	lengths := make([]int64, len(items))
	for i, p := range items {
		unitMajor(dst[int64(i)*longest*per:], p)
		lengths[i] = int64(p.seq.units)
	}
	out[sp.name] = t
	if sp.lengths != "" {
		out[sp.lengths] = ints(lengths)
	}
	return nil, nil
}

func unitName(sp *seqPort) string {
	if sp.static.Seq == preprocess.SeqTiles {
		return "tiles"
	}
	return "patches"
}

// fillGrid writes each image's grid, [images, 2].
func fillGrid(items []*planar) *backend.Tensor {
	data := make([]int64, 0, 2*len(items))
	for _, p := range items {
		data = append(data, int64(p.seq.grid[0]), int64(p.seq.grid[1]))
	}
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(items)), 2}, Data: data}
}

// unitMajor writes an image's tiles or patches to dst one unit after the
// other. Patches are already so; tiles are held channel-major over the
// stacked tiles (c × (tiles·size) × size), so each tile gathers its
// channels.
func unitMajor(dst []float32, p *planar) {
	p = p.floats()
	if p.seq.kind == preprocess.SeqPatches {
		copy(dst, p.pix)
		return
	}
	n := p.seq.units
	plane := p.w * p.w // one tile of one channel
	for i := range n {
		for k := range p.c {
			copy(dst[(i*p.c+k)*plane:(i*p.c+k+1)*plane], p.pix[(k*n+i)*plane:(k*n+i+1)*plane])
		}
	}
}
