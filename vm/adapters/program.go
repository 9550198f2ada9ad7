package adapters

import (
	"fmt"
	"image/color"

	"github.com/genaic/genaic/preprocess"
)

// shape is what Load knows of a program value: its channel count always,
// its height and width when the program fixes them (-1 otherwise).
type shape struct{ c, h, w int }

// imageOp is one compiled transform.
type imageOp struct {
	op      string
	in, out string
	apply   func(*planar) *planar // nil for decode
	// dims, for an op that changes the size, gives the height and width it
	// makes of an input of h×w, so that run can refuse a result too large.
	dims func(h, w int) (int, int)
	// refuse, for an op that takes only some inputs, says why it does not
	// take one of h×w.
	refuse func(h, w int) error
	// size, for every op but decode, is the extent of what apply makes of
	// an input of the given extent, without its pixels.
	size func(extent) extent
	// same: apply returns its input itself (a video program's temporal
	// transforms, seen from one frame), so its value takes no memory.
	same bool
	// filter is a resize's kernel.
	filter filter
}

// extent is an image's size without its pixels (planar's c, h and w), and
// after tile or patchify the count of its units.
type extent struct{ c, h, w, units int }

func (e extent) dims() string {
	return fmt.Sprintf("%d×%d×%d (channels×height×width)", e.c, e.h, e.w)
}

func extentOf(p *planar) extent {
	e := extent{c: p.c, h: p.h, w: p.w}
	if p.seq != nil {
		e.units = p.seq.units
	}
	return e
}

// imageProgram is a compiled preprocessing.image program.
type imageProgram struct {
	format string // the format decode demands, "" for any
	ops    []imageOp
	shapes map[string]shape            // every value the program defines
	seqs   map[string]preprocess.Shape // the values tile or patchify made
	last   string                      // the value the last transform defines
	// dies lists, per op, the values no later op reads.
	dies [][]string
}

// compileImage builds the image program the adapter runs from the
// compiled program: the preprocess package has checked every transform and
// parsed its parameters; the adapter adds its kernels.
func compileImage(cp *preprocess.Program) *imageProgram {
	p := &imageProgram{shapes: map[string]shape{}, last: cp.Last}
	p.format, _ = cp.Ops[0].Word("format")
	for _, op := range cp.Ops {
		p.ops = append(p.ops, imageOpOf(op))
	}
	p.seqs = map[string]preprocess.Shape{}
	for name, s := range cp.Shapes {
		p.shapes[name] = shapeOf(s)
		if s.Seq != preprocess.NoSeq {
			p.seqs[name] = s
		}
	}
	return p
}

func shapeOf(s preprocess.Shape) shape { return shape{c: s.C, h: s.H, w: s.W} }

// imageOpOf pairs a compiled op with its kernel (none for decode).
func imageOpOf(op *preprocess.Op) imageOp {
	x := imageOp{op: op.Name, in: op.In, out: op.Out, dims: op.Size, size: func(e extent) extent { return e }}
	if k := imageKernels[op.Name]; k != nil {
		x.apply = k(op)
	}
	switch op.Name {
	case "convert_color":
		mode, _ := op.Word("mode")
		x.size = func(e extent) extent {
			e.c = 3
			if mode == "L" {
				e.c = 1
			}
			return e
		}
	case "resize", "center_crop", "pad":
		if op.Name == "resize" {
			x.filter = resizeFilter(op)
		}
		x.size = func(e extent) extent { e.h, e.w = op.Size(e.h, e.w); return e }
		if op.Name == "pad" {
			x.refuse = func(h, w int) error {
				ph, pw := op.Size(h, w)
				return padRefusal(h, w, ph, pw, op.Index)
			}
		}
	case "tile":
		t := op.Tile()
		x.size = func(e extent) extent {
			n := t.Tiles(e.h, e.w)
			return extent{c: e.c, h: n * t.Size, w: t.Size, units: n}
		}
	case "patchify":
		size := op.Ints("patch_size")
		x.refuse = func(h, w int) error { return patchRefusal(h, w, size, op.Index) }
		x.size = func(e extent) extent {
			n := (e.h / size) * (e.w / size)
			return extent{c: 1, h: n, w: e.c * size * size, units: n}
		}
	}
	return x
}

// imageKernels makes the kernel of each op the image adapter runs on one
// image (decode aside), from the op's parsed parameters.
var imageKernels = map[string]func(op *preprocess.Op) func(*planar) *planar{
	"convert_color": func(op *preprocess.Op) func(*planar) *planar {
		mode, _ := op.Word("mode")
		return func(p *planar) *planar { return convertColor(p, mode) }
	},
	"resize": func(op *preprocess.Op) func(*planar) *planar {
		f := resizeFilter(op)
		return func(p *planar) *planar {
			h, w := op.Size(p.h, p.w)
			return resize(p, h, w, f)
		}
	},
	"center_crop": func(op *preprocess.Op) func(*planar) *planar {
		return func(p *planar) *planar {
			h, w := op.Size(p.h, p.w)
			return centerCrop(p, h, w)
		}
	},
	"pad": func(op *preprocess.Op) func(*planar) *planar {
		v, _ := op.Number("value")
		value := float32(v)
		return func(p *planar) *planar {
			h, w := op.Size(p.h, p.w)
			return padImage(p, h, w, value)
		}
	},
	"rescale": func(op *preprocess.Op) func(*planar) *planar {
		f, _ := op.Number("factor")
		factor := float32(f)
		return func(p *planar) *planar { return rescale(p, factor) }
	},
	"normalize": func(op *preprocess.Op) func(*planar) *planar {
		mean, std := op.Numbers("mean"), op.Numbers("std")
		return func(p *planar) *planar { return normalize(p, mean, std) }
	},
	"tile": func(op *preprocess.Op) func(*planar) *planar {
		t := op.Tile()
		f := filters[t.Interpolation]
		return func(p *planar) *planar { return tileImage(p, t, f) }
	},
	"patchify": func(op *preprocess.Op) func(*planar) *planar {
		size := op.Ints("patch_size")
		return func(p *planar) *planar { return patchify(p, size) }
	},
}

// resizeFilter is the kernel a resize names (bilinear where it names
// none).
func resizeFilter(op *preprocess.Op) filter {
	interp, ok := op.Word("interpolation")
	if !ok {
		interp = "bilinear"
	}
	return filters[interp]
}

// plan records, for each op, the values that die after it: read by no
// later op and not kept for an output. A resize whose result only the
// next op, a center_crop, reads makes just the window the crop keeps
// (resizeForCrop; the crop then finds its input at its size): the same
// values, for a fraction of the work where a pipeline resizes to 256
// and keeps the centre 224×224, as ImageNet's do.
func (p *imageProgram) plan(keep []string) {
	last := map[string]int{}
	for i, op := range p.ops {
		if op.apply != nil {
			last[op.in] = i
		}
		if last[op.out] < i {
			last[op.out] = i
		}
	}
	for _, k := range keep {
		delete(last, k)
	}
	p.dies = make([][]string, len(p.ops))
	for name, i := range last {
		p.dies[i] = append(p.dies[i], name)
	}
	for i := range len(p.ops) - 1 {
		r, c := &p.ops[i], p.ops[i+1]
		if r.op != "resize" || c.op != "center_crop" || c.in != r.out {
			continue
		}
		if at, dies := last[r.out]; !dies || at != i+1 {
			continue // kept, or read by a later op too
		}
		f, size, crop := r.filter, r.dims, c.dims
		r.apply = func(in *planar) *planar {
			h, w := size(in.h, in.w)
			ch, cw := crop(h, w)
			return resizeForCrop(in, h, w, ch, cw, f)
		}
	}
}

// extents reads one image's header and returns the extents of the values
// keep names, in order, as run would make them, without decoding a pixel:
// what run refuses for its size (maxPixels, patchify's multiples), it
// refuses too. TestExtentsAgreeWithRun keeps the two alike.
func (p *imageProgram) extents(data []byte, maxPixels int64, keep []string) ([]extent, error) {
	env, _, err := p.measure(data, maxPixels)
	if err != nil {
		return nil, err
	}
	out := make([]extent, len(keep))
	for i, k := range keep {
		out[i] = env[k]
	}
	return out, nil
}

// footprint is the most memory run takes for one image, read off its
// header without decoding a pixel (mediaBytes).
func (p *imageProgram) footprint(data []byte, maxPixels int64) (int64, error) {
	_, bytes, err := p.measure(data, maxPixels)
	return bytes, err
}

// measure reads one image's header and returns the extent of every value
// the program makes of it, and their memory: the decoder's image
// (decodedBytes) and every value as float32, all counted as if alive at
// once (run frees values no later op reads, and holds 8-bit images as
// bytes, so it holds less).
func (p *imageProgram) measure(data []byte, maxPixels int64) (map[string]extent, int64, error) {
	env := map[string]extent{}
	var bytes int64
	for i, op := range p.ops {
		in := env[op.in]
		if op.apply == nil {
			cfg, _, err := decodeHeader(data, p.format, maxPixels)
			if err != nil {
				return nil, 0, err
			}
			env[op.out] = extent{c: 3, h: cfg.Height, w: cfg.Width}
			bytes += int64(cfg.Width) * int64(cfg.Height) * decodedBytes(cfg.ColorModel)
		} else {
			if err := p.admits(i, in.h, in.w, maxPixels); err != nil {
				return nil, 0, err
			}
			if op.refuse != nil {
				if err := op.refuse(in.h, in.w); err != nil {
					return nil, 0, err
				}
			}
			env[op.out] = op.size(in)
		}
		if e := env[op.out]; !op.same {
			bytes += int64(e.c) * int64(e.h) * int64(e.w) * 4
		}
	}
	return env, bytes, nil
}

// decodedBytes is what the decoder's own image holds per pixel at most,
// by the colour model of the header: four 16-bit channels where the model
// has 16 bits, four 8-bit ones otherwise (grey and paletted images take
// less).
func decodedBytes(m color.Model) int64 {
	switch m {
	case color.RGBA64Model, color.NRGBA64Model, color.Gray16Model, color.Alpha16Model:
		return 8
	}
	return 4
}

// admits refuses an input of h×w to op i whose result would exceed
// maxPixels.
func (p *imageProgram) admits(i, h, w int, maxPixels int64) error {
	op := p.ops[i]
	if op.dims == nil {
		return nil
	}
	if oh, ow := op.dims(h, w); int64(oh)*int64(ow) > maxPixels {
		return fmt.Errorf("is %d×%d pixels (height×width) before transform %d (%s), which would make it %d×%d, more than the %d pixels this adapter holds", h, w, i, op.op, oh, ow, maxPixels)
	}
	return nil
}

// run decodes one image and runs the program on it, returning the values
// keep names, in order. No value may exceed maxPixels.
func (p *imageProgram) run(data []byte, maxPixels int64, keep []string) ([]*planar, error) {
	env := map[string]*planar{}
	for i, op := range p.ops {
		switch in := env[op.in]; {
		case op.apply == nil:
			img, err := decodeImage(data, p.format, maxPixels)
			if err != nil {
				return nil, err
			}
			env[op.out] = img
		case op.dims != nil:
			if err := p.admits(i, in.h, in.w, maxPixels); err != nil {
				return nil, err
			}
			fallthrough
		default:
			if op.refuse != nil {
				if err := op.refuse(in.h, in.w); err != nil {
					return nil, err
				}
			}
			out := op.apply(in)
			if out.seq == nil {
				out.seq = in.seq // rescale and normalize keep the tiles
			}
			env[op.out] = out
		}
		if p.dies != nil {
			for _, name := range p.dies[i] {
				delete(env, name)
			}
		}
	}
	out := make([]*planar, len(keep))
	for i, k := range keep {
		out[i] = env[k]
	}
	return out, nil
}
