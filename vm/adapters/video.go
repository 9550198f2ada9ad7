package adapters

import (
	"fmt"

	"github.com/genaic/genaic/preprocess"
)

// videoShape is what Load knows of a video program value: the shape of its
// frames, and whether pad_frames has padded it, to how many frames.
type videoShape struct {
	frame  shape
	padded bool
	target int
}

// temporalOp is the clip-level part of a compiled video transform: a
// per-frame transform has kind "".
type temporalOp struct {
	kind     string // "", "sample_frames" or "pad_frames"
	stride   int    // sample_frames: every stride-th frame (1 keeps all)
	num      int    // sample_frames: at most num frames (0: no cap)
	target   int    // pad_frames: the clip's length after padding
	padValue float32
}

// videoProgram is a compiled preprocessing.video program. Its frames part
// is an image program that runs on each frame alone, with the temporal
// transforms as identities there; temporal, one entry per transform, says
// how each transform changes which frames a clip holds. Temporal
// transforms depend on frame counts only, so a clip's frames are chosen
// before any is decoded, and a frame that sampling drops is never decoded.
type videoProgram struct {
	frames   *imageProgram
	temporal []temporalOp
	shapes   map[string]videoShape
	last     string
}

// keepFrame is a temporal transform seen from one frame: the frame itself.
func keepFrame(p *planar) *planar { return p }

// compileVideo builds the video program the adapter runs from the compiled
// program: per-frame ops take the image kernels, temporal ops become
// identities on a frame and entries of temporal.
func compileVideo(cp *preprocess.Program) *videoProgram {
	fp := &imageProgram{shapes: map[string]shape{}, last: cp.Last}
	fp.format, _ = cp.Ops[0].Word("format")
	p := &videoProgram{frames: fp, shapes: map[string]videoShape{}, last: cp.Last}
	for _, op := range cp.Ops {
		x, tmp := imageOpOf(op), temporalOf(op)
		if tmp.kind != "" {
			x.apply = keepFrame
		}
		fp.ops = append(fp.ops, x)
		p.temporal = append(p.temporal, tmp)
	}
	for name, s := range cp.Shapes {
		fp.shapes[name] = shapeOf(s)
		p.shapes[name] = videoShape{frame: shapeOf(s), padded: s.Padded, target: s.Target}
	}
	return p
}

// temporalOf is the clip-level part of a compiled op (the zero temporalOp
// for a per-frame op). sample_frames reads frame_stride (default 1) and
// num_frames (0: no cap); fps is ignored, as a request's frames carry no
// timestamps.
func temporalOf(op *preprocess.Op) temporalOp {
	switch op.Name {
	case "sample_frames":
		stride, ok := op.Int("frame_stride")
		if !ok {
			stride = 1
		}
		num, _ := op.Int("num_frames")
		return temporalOp{kind: op.Name, stride: stride, num: num}
	case "pad_frames":
		v, _ := op.Number("pad_value")
		return temporalOp{kind: op.Name, target: op.Ints("target_length"), padValue: float32(v)}
	}
	return temporalOp{}
}

// sampleIndices applies sample_frames to a clip's source frames.
func sampleIndices(src []int, stride, num int) []int {
	var strided []int
	for i := 0; i < len(src); i += stride {
		strided = append(strided, src[i])
	}
	n := len(strided)
	if num <= 0 || n <= num {
		return strided
	}
	out := make([]int, num)
	for i := range num {
		out[i] = strided[i*n/num]
	}
	return out
}

// track is a clip value as its frames are chosen: the source frames of its
// real positions, in order, then pad frames of padValue.
type track struct {
	src      []int
	pad      int
	padValue float32
}

// real is the clip's real frame count, its valid length.
func (t track) real() int { return len(t.src) }

// tracks runs the temporal transforms on a clip of n frames (n > 0) and
// returns the track of each value keep names.
func (p *videoProgram) tracks(n int, keep []string) ([]track, error) {
	env := map[string]track{}
	for i, op := range p.frames.ops {
		tmp := p.temporal[i]
		switch {
		case op.op == "decode":
			src := make([]int, n)
			for j := range src {
				src[j] = j
			}
			env[op.out] = track{src: src}
		case tmp.kind == "sample_frames":
			in := env[op.in]
			env[op.out] = track{src: sampleIndices(in.src, tmp.stride, tmp.num)}
		case tmp.kind == "pad_frames":
			in := env[op.in]
			if in.real() > tmp.target {
				return nil, fmt.Errorf("holds %d frames at transform %d (pad_frames), more than its target_length %d; keep at most %d with sample_frames num_frames before padding",
					in.real(), i, tmp.target, tmp.target)
			}
			env[op.out] = track{src: in.src, pad: tmp.target - in.real(), padValue: tmp.padValue}
		default:
			env[op.out] = env[op.in]
		}
	}
	out := make([]track, len(keep))
	for i, k := range keep {
		out[i] = env[k]
	}
	return out, nil
}
