package adapters

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/genaic/genaic/ir"
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

// videoOps are the transforms the video adapter runs.
var videoOps = "decode, convert_color, resize, center_crop, rescale and normalize on every frame, and sample_frames and pad_frames on every clip"

// keepFrame is a temporal transform seen from one frame: the frame itself.
func keepFrame(p *planar) *planar { return p }

// compileVideo checks a program against what the video adapter runs and
// compiles its transforms.
func compileVideo(prog *ir.Program) (*videoProgram, error) {
	fp := &imageProgram{shapes: map[string]shape{}}
	p := &videoProgram{frames: fp, shapes: map[string]videoShape{}}
	last, err := compileTransforms(prog, "video", "encoded frames", videoOps, p.shapes, func(st transformStep, s videoShape) (videoShape, bool, error) {
		t := st.t
		op := imageOp{op: t.Op, in: st.in, out: st.out}
		tmp := temporalOp{}
		fs := s.frame
		var err error
		switch t.Op {
		case "decode":
			fp.format, err = videoDecodeFormat(t)
			s = videoShape{}
			fs = shape{c: 3, h: -1, w: -1}
		case "sample_frames":
			op.apply = keepFrame
			tmp, err = compileSample(t, s)
		case "pad_frames":
			op.apply = keepFrame
			if tmp, err = compilePad(t, s); err == nil {
				s.padded, s.target = true, tmp.target
			}
		default:
			if fs, err = compileImageOp(t, &op, fs); err == errNotImageOp {
				return s, false, nil
			}
		}
		s.frame = fs
		fp.ops = append(fp.ops, op)
		fp.shapes[st.out] = fs
		p.temporal = append(p.temporal, tmp)
		return s, true, err
	})
	if err != nil {
		return nil, err
	}
	fp.last, p.last = last, last
	return p, nil
}

// videoDecodeFormat reads decode's format: the frames are encoded images.
func videoDecodeFormat(t ir.Transform) (string, error) {
	f, ok := param(t, "format")
	if !ok || strings.EqualFold(f, "auto") {
		return "", nil
	}
	name, ok := formatNames[strings.ToLower(f)]
	if !ok {
		return "", fmt.Errorf("format %q is not decoded here; the video adapter reads each frame as an encoded image, png, jpeg (jpg) or gif, or any of them with auto, and does not demux video containers: send the clip's frames", f)
	}
	return name, nil
}

// compileSample reads sample_frames: frame_stride k keeps frames 0, k, 2k,
// ...; num_frames m then keeps, of the n frames left, m evenly spaced ones
// when n > m (index floor(i·n/m) for i in [0, m)), and all n otherwise.
// fps is accepted beside them and ignored: a request's frames carry no
// timestamps, so there is no clock to sample against.
func compileSample(t ir.Transform, s videoShape) (temporalOp, error) {
	op := temporalOp{kind: "sample_frames", stride: 1}
	if s.padded {
		return op, fmt.Errorf("samples a clip that pad_frames has already padded; sample the frames before padding them")
	}
	stride, hasStride, err := positive(t, "frame_stride")
	if err != nil {
		return op, err
	}
	num, hasNum, err := positive(t, "num_frames")
	if err != nil {
		return op, err
	}
	fps, hasFPS := param(t, "fps")
	if hasFPS {
		if x, perr := strconv.ParseFloat(fps, 64); perr != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return op, fmt.Errorf("`fps` is %q; it must be a positive number", fps)
		}
	}
	switch {
	case !hasStride && !hasNum && hasFPS:
		return op, fmt.Errorf("samples by `fps` alone, but the frames of a request carry no timestamps, so the video adapter cannot sample by time; give num_frames or frame_stride (fps is then accepted and ignored)")
	case !hasStride && !hasNum:
		return op, fmt.Errorf("no `num_frames` or `frame_stride`; write how many frames to keep, or every how many frames to take one")
	}
	if hasStride {
		op.stride = stride
	}
	if hasNum {
		op.num = num
	}
	return op, nil
}

// compilePad reads pad_frames: target_length and pad_value (default 0).
func compilePad(t ir.Transform, s videoShape) (temporalOp, error) {
	op := temporalOp{kind: "pad_frames"}
	if s.padded {
		return op, fmt.Errorf("pads a clip that pad_frames has already padded (to %d frames); pad once", s.target)
	}
	target, ok, err := positive(t, "target_length")
	if err != nil {
		return op, err
	}
	if !ok {
		return op, fmt.Errorf("no `target_length`; write the number of frames every clip is padded to")
	}
	op.target = target
	if v, ok := param(t, "pad_value"); ok {
		x, perr := strconv.ParseFloat(v, 64)
		if perr != nil || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
			return op, fmt.Errorf("`pad_value` is %q; it must be a finite number", v)
		}
		op.padValue = float32(x)
	}
	return op, nil
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
