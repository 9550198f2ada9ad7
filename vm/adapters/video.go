package adapters

import (
	"fmt"
	"math"

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
	kind     string  // "", "sample_frames" or "pad_frames"
	fps      float64 // sample_frames: by time, when the frames have times (0: not)
	stride   int     // sample_frames: every stride-th frame (1 keeps all)
	num      int     // sample_frames: at most num frames (0: no cap)
	target   int     // pad_frames: the clip's length after padding
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

// byTime reports whether a transform samples by fps, so that a clip needs
// its frames' times.
func (p *videoProgram) byTime() bool {
	for _, t := range p.temporal {
		if t.fps > 0 {
			return true
		}
	}
	return false
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
			x.apply, x.same = keepFrame, true
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
// for a per-frame op). sample_frames reads fps where the adapter reads
// frame times (it is ignored otherwise), frame_stride (default 1) and
// num_frames (0: no cap).
func temporalOf(op *preprocess.Op) temporalOp {
	switch op.Name {
	case "sample_frames":
		stride, ok := op.Int("frame_stride")
		if !ok {
			stride = 1
		}
		num, _ := op.Int("num_frames")
		x := temporalOp{kind: op.Name, stride: stride, num: num}
		if op.Timed {
			x.fps, _ = op.Number("fps")
		}
		return x
	case "pad_frames":
		v, _ := op.Number("pad_value")
		return temporalOp{kind: op.Name, target: op.Ints("target_length"), padValue: float32(v)}
	}
	return temporalOp{}
}

// sampleByTime keeps, of a clip's source frames with their times (in
// seconds, non-decreasing), the frame nearest to each instant t0 + k/fps
// from the first frame's time t0 to the last's, ties to the earlier
// frame, each kept frame once. It walks the frames, not the instants: a
// frame is kept when an instant falls in the span of times nearer to it
// than to its neighbours, so the work is one step per frame whatever fps.
func sampleByTime(src []int, times []float64, fps float64) []int {
	n := len(src)
	if n == 0 {
		return nil
	}
	t0 := times[src[0]]
	last := math.Floor((times[src[n-1]] - t0) * fps) // the last instant's k
	var out []int
	for j := range n {
		// Frame j is nearest to the instants in (mid(j-1, j), mid(j, j+1)].
		lo, hi := 0.0, last
		if j > 0 {
			mid := (times[src[j-1]] + times[src[j]]) / 2
			lo = math.Floor((mid-t0)*fps) + 1
		}
		if j+1 < n {
			mid := (times[src[j]] + times[src[j+1]]) / 2
			hi = min(hi, math.Floor((mid-t0)*fps))
		}
		if max(lo, 0) <= hi {
			out = append(out, src[j])
		}
	}
	return out
}

// sampleIndices applies sample_frames' stride and count to a clip's source
// frames.
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

// tracks runs the temporal transforms on a clip of n frames (n > 0), whose
// times are times (nil where the adapter reads none), and returns the
// track of each value keep names.
func (p *videoProgram) tracks(n int, times []float64, keep []string) ([]track, error) {
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
			src := env[op.in].src
			if tmp.fps > 0 {
				src = sampleByTime(src, times, tmp.fps)
			}
			env[op.out] = track{src: sampleIndices(src, tmp.stride, tmp.num)}
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
