package adapters

import (
	"fmt"

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
	// take one.
	refuse func(*planar) error
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
	x := imageOp{op: op.Name, in: op.In, out: op.Out, dims: op.Size}
	if k := imageKernels[op.Name]; k != nil {
		x.apply = k(op)
	}
	if op.Name == "patchify" {
		size := op.Ints("patch_size")
		x.refuse = func(p *planar) error { return patchRefusal(p, size, op.Index) }
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
		interp, ok := op.Word("interpolation")
		if !ok {
			interp = "bilinear"
		}
		f := filters[interp]
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

// plan records, for each op, the values that die after it: read by no
// later op and not kept for an output.
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
			if h, w := op.dims(in.h, in.w); int64(h)*int64(w) > maxPixels {
				return nil, fmt.Errorf("is %d×%d pixels (height×width) before transform %d (%s), which would make it %d×%d, more than the %d pixels this adapter holds", in.h, in.w, i, op.op, h, w, maxPixels)
			}
			fallthrough
		default:
			if op.refuse != nil {
				if err := op.refuse(in); err != nil {
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
