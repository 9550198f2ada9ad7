package adapters

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// Content roles the image adapter fills.
const (
	rolePixels  = "pixels"
	roleOffsets = "pack_offsets"
	roleOwner   = "pack_owner"
)

// lengthRoles are the content roles of a lengths companion (DESIGN §3.2).
var lengthRoles = []string{"valid_lengths", "frame_lengths", "sample_lengths"}

// Axis positions of an image's channel, height and width in planar order.
const (
	dimC = iota
	dimH
	dimW
)

var dimNames = preprocess.PixelDims

// pixelsPort is an output port filled with images.
type pixelsPort struct {
	name, source string
	rank         int            // 3 (one image) or 4 (items first)
	axes         [3]int         // the port's axis of channels, height and width
	fixed        [3]int64       // fixed extents by planar dimension, -1 when free
	padded       [3]bool        // padded planar dimensions
	layout       ir.LayoutKind  // shared, request_aligned or token_packed
	static       shape          // what the program fixes
	lengths      [3]*lengthPort // the lengths companion of each padded dimension
}

// lengthPort is an output port filled with the lengths of a padded
// dimension of a pixels port.
type lengthPort struct {
	name string
	px   *pixelsPort
	dim  int // dimH or dimW
}

// imageSession runs the image program for one adapter component.
type imageSession struct {
	*encoded
	prog    *imageProgram
	pixels  []*pixelsPort
	offsets []string // ports filled with pack_offsets
	owners  []string // ports filled with pack_owner
	keep    []string // the program values the pixels ports read, by pixels index
	// seqs and grids are the ports of tiles or patches and of their grids;
	// their values follow the pixels ports' in keep.
	seqs       []*seqPort
	grids      []*gridPort
	companions map[string]levelCompanion // level companions of packed seq ports
}

func (b *Backend) loadImage(comp *ir.Component, cp *preprocess.Program) (backend.Session, error) {
	p := compileImage(cp)
	var err error
	s := &imageSession{encoded: newEncoded(b, comp, kind{"image", "image"}), prog: p, companions: map[string]levelCompanion{}}
	if s.in, err = encodedPorts(comp, s.k); err != nil {
		return nil, err
	}
	bound := cp.Ports
	// Lengths ports are matched after the loop: the padding of a pixels
	// port says which one each serves.
	var lengthPorts []*ir.Port
	lengthNames := map[string]bool{}
	for _, port := range comp.Outputs {
		o := bound[port.Name]
		source := o.Source
		if source == "" {
			source = p.last
		}
		_, isSeq := p.seqs[source]
		switch {
		case (o.Content == rolePixels || o.Content == rolePatches || o.Content == roleTiles) && isSeq:
			sp, err := s.seqPort(port, o, source)
			if err != nil {
				return nil, err
			}
			s.seqs = append(s.seqs, sp)
			if sp.lengths != "" {
				lengthNames[sp.lengths] = true
			}
		case o.Content == rolePatches || o.Content == roleTiles:
			return nil, unsupported("preprocessing.image output `%s` (bound to output port `%s` of adapter `%s`) has content role `%s`, but `%s` is an image, not what tile or patchify makes; name a tile or patchify output as its source, or give it content pixels",
				o.Name, port.Name, comp.Name, o.Content, source)
		case o.Content == roleGrid:
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			if !isSeq {
				return nil, unsupported("preprocessing.image output `%s` (bound to output port `%s` of adapter `%s`) is a grid of `%s`, which is an image; a grid is that of a tile or patchify output, so name one as its source",
					o.Name, port.Name, comp.Name, source)
			}
			s.grids = append(s.grids, &gridPort{name: port.Name, source: source})
		case o.Content == rolePixels:
			px, err := s.pixelsPort(port, o)
			if err != nil {
				return nil, err
			}
			s.pixels = append(s.pixels, px)
			s.keep = append(s.keep, px.source)
		case o.Content == roleOffsets:
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			s.offsets = append(s.offsets, port.Name)
		case o.Content == roleOwner:
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			s.owners = append(s.owners, port.Name)
		case slices.Contains(lengthRoles, o.Content):
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			lengthPorts = append(lengthPorts, port)
			lengthNames[port.Name] = true
		default:
			return nil, unsupported("preprocessing.image output `%s` (bound to output port `%s` of adapter `%s`) has content role `%s`; the image adapter fills pixels, patches, tiles, grid, pack_offsets, pack_owner and valid_lengths",
				o.Name, port.Name, comp.Name, o.Content)
		}
	}
	for i, sp := range s.seqs {
		if sp.packed {
			addCompanions(s.companions, i, sp.contract.Layout.Levels, companionPorts(s.b.m, s.comp))
		}
	}
	// A level companion of a packed sequence is filled from its levels;
	// the other offsets and owners are the images'.
	s.offsets = slices.DeleteFunc(s.offsets, func(n string) bool { _, ok := s.companions[n]; return ok })
	s.owners = slices.DeleteFunc(s.owners, func(n string) bool { _, ok := s.companions[n]; return ok })
	for _, sp := range s.seqs {
		s.keep = append(s.keep, sp.source)
	}
	for _, g := range s.grids {
		s.keep = append(s.keep, g.source)
	}
	for _, port := range lengthPorts {
		served := false
		for _, sp := range s.seqs {
			served = served || sp.lengths == port.Name
		}
		for _, px := range s.pixels {
			for _, l := range px.lengths {
				served = served || l != nil && l.name == port.Name
			}
		}
		if !served {
			return nil, unsupported("output port `%s` of adapter `%s` is bound to a lengths output of preprocessing.image, but no pixels port of the adapter pads a dimension with `%s` as its valid_lengths; the image adapter measures padded dimensions only",
				port.Name, comp.Name, port.Name)
		}
	}
	for _, px := range s.pixels {
		for d, l := range px.lengths {
			if l != nil && !lengthNames[l.name] {
				return nil, unsupported("output port `%s` of adapter `%s` pads %s with valid_lengths `%s`, which is not an output port of the adapter bound to a valid_lengths output; the adapter fills lengths only on its own ports, so declare `%s` as one",
					px.name, comp.Name, dimNames[d], l.name, l.name)
			}
		}
	}
	p.plan(s.keep)
	return s, nil
}

// pixelsPort compiles how a pixels output port is laid out.
func (s *imageSession) pixelsPort(port *ir.Port, o *ir.ProgramOutput) (*pixelsPort, error) {
	comp := s.comp
	c, source, static, err := dataPort(s.encoded, port, o, "pixels", "{ dtype: float32, shape: [images, channels, height, width] }", s.prog.last, s.prog.shapes)
	if err != nil {
		return nil, err
	}
	px := &pixelsPort{name: port.Name, source: source, rank: c.Rank, layout: c.Layout.Kind, static: static, fixed: [3]int64{-1, -1, -1}}
	if px.rank < 0 {
		px.rank = 4
	}
	switch {
	case px.rank != 3 && px.rank != 4:
		return nil, unsupported("output port `%s` of adapter `%s` has rank %d; pixels are [items, channels, height, width] (rank 4) or one image [channels, height, width] (rank 3)", port.Name, comp.Name, px.rank)
	case px.layout == ir.RequestExpanded || px.layout != ir.Shared && c.Layout.Axis != 0:
		return nil, unsupported("output port `%s` of adapter `%s` is %s on axis %d; the image adapter stacks images on axis 0 as shared, request_aligned or token_packed", port.Name, comp.Name, px.layout, c.Layout.Axis)
	case px.layout == ir.TokenPacked && len(c.Layout.Levels) != 1:
		return nil, unsupported("output port `%s` of adapter `%s` declares %d ownership levels; the image adapter produces one (images→rows)", port.Name, comp.Name, len(c.Layout.Levels))
	case px.rank == 3 && px.layout != ir.Shared:
		return nil, unsupported("output port `%s` of adapter `%s` is %s with rank 3; a port that stacks images has an item axis first, rank 4", port.Name, comp.Name, px.layout)
	}
	first := px.rank - 3 // the port's axis of the image's first dimension
	px.axes = [3]int{first, first + 1, first + 2}
	if c.HasShape && len(c.Shape) == px.rank {
		px.axes = preprocess.PixelAxes(c.Shape, static.c)
		for d, axis := range px.axes {
			if dim := c.Shape[axis]; !dim.IsSym() {
				px.fixed[d] = dim.Size
			}
		}
	}
	for _, pad := range c.Padding {
		axis := c.Axis(pad.Dim.Name)
		d := slices.Index(px.axes[:], axis)
		if d != dimH && d != dimW {
			return nil, unsupported("output port `%s` of adapter `%s` pads `%s` (axis %d); the image adapter pads height and width only", port.Name, comp.Name, pad.Dim.Name, axis)
		}
		px.padded[d] = true
		// The padding may name the port, or the value an invoke binds from it.
		px.lengths[d] = &lengthPort{name: companionPorts(s.b.m, s.comp)(pad.Lengths.Name), px: px, dim: d}
	}
	return px, nil
}

// Key implements backend.Keyer: the extents the invocation's images make
// that the ports neither fix nor pad (a keep-aspect resize's width, a
// stacked sequence's unit count), read from each image's header. An image
// whose header the program refuses, or whose extent contradicts a port's
// fixed one, fails here, before any group holds it; so do images of one
// invocation that would make different keys, and more than one image a
// row for a request_aligned port.
func (s *imageSession) Key(inputs map[string]*backend.Tensor) (string, error) {
	data, offs, rows, err := s.items(inputs, nil)
	if err != nil {
		return "", err
	}
	if err := s.oneARow(rows); err != nil {
		return "", err // as Run refuses it, before a group holds it
	}
	key := ""
	for i := 0; i+1 < len(offs); i++ {
		ext, err := s.prog.extents(data[offs[i]:offs[i+1]], s.b.maxPixels(), s.keep)
		if err != nil {
			return "", s.itemError(i, offs, rows, err)
		}
		k, err := s.keyOf(ext)
		if err != nil {
			return "", s.itemError(i, offs, rows, err)
		}
		if i == 0 {
			key = k
			continue
		}
		if k != key {
			return "", s.itemError(i, offs, rows, fmt.Errorf("makes %s after preprocessing.image, but %s 0 makes %s, and the adapter's output ports pad neither, so the two cannot share an invocation; "+
				"send the %ss as items (a request's items of different extents run apart), resize them to one size (resize with height and width), or pad the dimension with valid_lengths where the model reads them",
				k, s.k.item, key, s.k.item))
		}
	}
	if err := s.withinBudget(data, offs, 0, int64(len(offs)-1), "this request", s.footprint); err != nil {
		return "", err
	}
	return key, nil
}

// footprint is the memory decoding one image and running the program on
// it takes, read off its header.
func (s *imageSession) footprint(b []byte) (int64, error) {
	return s.prog.footprint(b, s.b.maxPixels())
}

// keyOf is the key of an image of extents ext (one per kept value, as
// extents returns them): each pixels port's height and width where the
// program leaves them to the image and the port does not pad them, and
// each stacked, unpadded sequence port's unit count. An extent that
// contradicts a fixed one of a port is an error.
func (s *imageSession) keyOf(ext []extent) (string, error) {
	var parts []string
	for i, px := range s.pixels {
		e := ext[i]
		got := [3]int64{int64(e.c), int64(e.h), int64(e.w)}
		for d := range 3 {
			switch {
			case px.fixed[d] >= 0 && got[d] != px.fixed[d]:
				return "", fmt.Errorf("is %s after preprocessing.image, but output port `%s` of adapter `%s` fixes %s (axis %d) at %d",
					e.dims(), px.name, s.comp.Name, dimNames[d], px.axes[d], px.fixed[d])
			case px.keys(d):
				parts = append(parts, fmt.Sprintf("%s %d of `%s`", dimNames[d], got[d], px.name))
			}
		}
	}
	for j, sp := range s.seqs {
		if sp.keys() {
			parts = append(parts, fmt.Sprintf("%d %s of `%s`", ext[len(s.pixels)+j].units, unitName(sp), sp.name))
		}
	}
	return strings.Join(parts, ", "), nil
}

// keys reports whether images are keyed by their extent d in the port:
// the program leaves it to the image, and the port neither pads nor
// fixes it.
func (px *pixelsPort) keys(d int) bool {
	static := [3]int{px.static.c, px.static.h, px.static.w}
	return !px.padded[d] && static[d] < 0 && px.fixed[d] < 0
}

// keys reports whether images are keyed by the units they make in the
// port: it stacks them unpadded.
func (sp *seqPort) keys() bool { return !sp.packed && sp.lengths == "" }

// oneARow checks that every row of an invocation brings one image where
// a port is request_aligned, one image a row.
func (s *imageSession) oneARow(rows []int64) error {
	for _, px := range s.pixels {
		if px.layout == ir.RequestAligned {
			if err := s.onePerRow(px.name, "image", rows); err != nil {
				return err
			}
		}
	}
	for _, sp := range s.seqs {
		if sp.contract.Layout.Kind == ir.RequestAligned {
			if err := s.onePerRow(sp.name, "image", rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// KeyedBy implements backend.KeyDescriber: what keyOf keys an image by.
func (s *imageSession) KeyedBy() []string {
	var parts []string
	for _, px := range s.pixels {
		for d := range 3 {
			if px.keys(d) {
				parts = append(parts, fmt.Sprintf("%s of `%s`", dimNames[d], px.name))
			}
		}
	}
	for _, sp := range s.seqs {
		if sp.keys() {
			parts = append(parts, fmt.Sprintf("count of %s of `%s`", unitName(sp), sp.name))
		}
	}
	return parts
}

// Run implements backend.Session: it splits the encoded bytes into images, runs
// the program on each, and fills every output port.
func (s *imageSession) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	data, offs, rows, err := s.items(inputs, outputs)
	if err != nil {
		return nil, err
	}
	n := len(offs) - 1
	if err := s.rowsWithinBudget(data, offs, rows, s.footprint); err != nil {
		return nil, err
	}
	if err := s.oneARow(rows); err != nil {
		return nil, err // before any image is decoded
	}
	imgs := make([][]*planar, n)
	err = s.each(ctx, data, offs, rows, func(i int, b []byte) error {
		var err error
		imgs[i], err = s.prog.run(b, s.b.maxPixels(), s.keep)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]*backend.Tensor{}
	for i, px := range s.pixels {
		items := make([]*planar, n)
		for j := range n {
			items[j] = imgs[j][i]
		}
		t, err := s.fill(px, items)
		if err != nil {
			return nil, err
		}
		out[px.name] = t
		for _, l := range px.lengths {
			if l != nil {
				out[l.name] = measure(l, t, items)
			}
		}
	}
	levels := make([][][]int64, len(s.seqs))
	at := len(s.pixels)
	for i, sp := range s.seqs {
		items := make([]*planar, n)
		for j := range n {
			items[j] = imgs[j][at+i]
		}
		if levels[i], err = s.fillSeq(sp, items, rows, out); err != nil {
			return nil, err
		}
	}
	s.fillCompanions(s.companions, levels, out)
	at += len(s.seqs)
	for i, g := range s.grids {
		items := make([]*planar, n)
		for j := range n {
			items[j] = imgs[j][at+i]
		}
		out[g.name] = fillGrid(items)
	}
	for _, name := range s.offsets {
		out[name] = ints(slices.Clone(rows))
	}
	for _, name := range s.owners {
		out[name] = ints(ownersOf(rows))
	}
	s.narrowData(out)
	return out, nil
}

// fill lays the images out on a pixels port: stacked on the item axis,
// padded dimensions at the largest extent with zeros.
func (s *imageSession) fill(px *pixelsPort, items []*planar) (*backend.Tensor, error) {
	ext := [3]int64{int64(px.static.c), int64(px.static.h), int64(px.static.w)}
	for d := range 3 {
		if px.fixed[d] >= 0 {
			ext[d] = px.fixed[d]
		}
		if len(items) > 0 || ext[d] < 0 {
			ext[d] = 0
		}
	}
	for i, p := range items {
		got := [3]int64{int64(p.c), int64(p.h), int64(p.w)}
		for d := range 3 {
			switch {
			case px.fixed[d] >= 0 && got[d] != px.fixed[d]:
				return nil, fail("run/input", "image %d is %s after preprocessing.image, but output port `%s` of adapter `%s` fixes %s (axis %d) at %d",
					i, p.dims(), px.name, s.comp.Name, dimNames[d], px.axes[d], px.fixed[d])
			case px.padded[d]:
				ext[d] = max(ext[d], got[d])
			case i > 0 && got[d] != ext[d]:
				return nil, fail("run/input", "image %d is %s after preprocessing.image, but image 0 is %s, and output port `%s` of adapter `%s` does not pad %s; send the images as items (a request's items of different extents run apart), resize them to one size (resize with height and width), or pad `%s` with valid_lengths where the model reads them",
					i, p.dims(), items[0].dims(), px.name, s.comp.Name, dimNames[d], dimNames[d])
			default:
				ext[d] = got[d]
			}
		}
	}
	shape := make([]int64, px.rank)
	if px.rank == 4 {
		shape[0] = int64(len(items))
	}
	for d, axis := range px.axes {
		shape[axis] = ext[d]
	}
	// Run checked one image a row where the port is request_aligned
	// (oneARow).
	if px.rank == 3 && len(items) != 1 {
		return nil, fail("run/input", "output port `%s` of adapter `%s` holds one image (rank 3), but the invocation brings %d", px.name, s.comp.Name, len(items))
	}
	t, err := backend.NewTensor("float32", shape)
	if err != nil {
		return nil, err
	}
	dst := t.Float32s()
	strides := stridesOf(shape)
	for i, p := range items {
		base := int64(0)
		if px.rank == 4 {
			base = int64(i) * strides[0]
		}
		place(dst, p, base, strides, px.axes)
	}
	return t, nil
}

// stridesOf is the row-major strides of a shape.
func stridesOf(shape []int64) []int64 {
	strides := make([]int64, len(shape))
	acc := int64(1)
	for a := len(shape) - 1; a >= 0; a-- {
		strides[a] = acc
		acc *= shape[a]
	}
	return strides
}

// place writes image p into dst from base on, its channels, rows and
// columns along the port's axes (channels, height, width) of the strides.
func place(dst []float32, p *planar, base int64, strides []int64, axes [3]int) {
	sc, sy, sx := strides[axes[dimC]], strides[axes[dimH]], strides[axes[dimW]]
	for k := range p.c {
		for y := range p.h {
			at := base + int64(k)*sc + int64(y)*sy
			if p.is8() {
				for x, v := range p.pix8[(k*p.h+y)*p.w : (k*p.h+y+1)*p.w] {
					dst[at+int64(x)*sx] = float32(v)
				}
				continue
			}
			row := p.pix[(k*p.h+y)*p.w : (k*p.h+y+1)*p.w]
			if sx == 1 {
				copy(dst[at:at+int64(p.w)], row)
				continue
			}
			for x, v := range row {
				dst[at+int64(x)*sx] = v
			}
		}
	}
}

// measure builds the lengths companion of a padded dimension: shaped as the
// pixels' axes outer to the padded one, each entry its image's extent.
func measure(l *lengthPort, pixels *backend.Tensor, items []*planar) *backend.Tensor {
	axis := l.px.axes[l.dim]
	shape := slices.Clone(pixels.Shape[:axis])
	total := backend.Elements(shape)
	data := make([]int64, total)
	per := total
	if l.px.rank == 4 && len(items) > 0 {
		per = total / int64(len(items))
	}
	for i, p := range items {
		v := int64(p.h)
		if l.dim == dimW {
			v = int64(p.w)
		}
		for j := int64(i) * per; j < int64(i+1)*per && j < total; j++ {
			data[j] = v
		}
	}
	return &backend.Tensor{DType: "int64", Shape: shape, Data: data}
}
