package preprocess

import (
	"fmt"
	"math"
	"slices"
)

// Shape is what compile time knows of a program value. An image, or each
// frame of a video clip, has C channels and, when the program fixes them,
// H×W pixels (-1 otherwise). An audio value is samples, or after `frame`,
// frames of Window samples. A clip pad_frames has padded holds Target
// frames.
type Shape struct {
	C, H, W int
	Framed  bool
	Window  int
	Padded  bool
	Target  int
}

// paramError is a shape function's complaint about one parameter, so that
// it is positioned there.
type paramError struct {
	param string
	msg   string
}

func (e *paramError) Error() string { return e.msg }

func errParam(param, format string, args ...any) error {
	return &paramError{param, fmt.Sprintf(format, args...)}
}

func same(_ *Op, in Shape) (Shape, error) { return in, nil }

func decodeShape(op *Op, _ Shape) (Shape, error) {
	f, _ := op.Word("format")
	switch {
	case op.Modality == "audio" && f != "" && f != "wav":
		return Shape{}, errParam("format", "format `%s` is not decoded by the audio adapter, which decodes wav (or auto)", f)
	case op.Modality == "audio":
		return Shape{}, nil
	case slices.Contains(containers, f):
		return Shape{}, errParam("format", "format `%s` is a video container; the %s adapter reads each %s as an encoded image, png, jpeg (jpg) or gif, or any of them with auto, and does not demux video containers\nsend the clip's frames", f, op.Modality, item(op.Modality))
	case f == "wav":
		return Shape{}, errParam("format", "format `wav` is audio; the %s adapter decodes each %s as png, jpeg (jpg) or gif, or any of them with auto", op.Modality, item(op.Modality))
	}
	return Shape{C: 3, H: -1, W: -1}, nil
}

func item(modality string) string {
	if modality == "video" {
		return "frame"
	}
	return "image"
}

func colorShape(op *Op, in Shape) (Shape, error) {
	switch mode, _ := op.Word("mode"); mode {
	case "RGB":
		in.C = 3
	case "L":
		in.C = 1
	}
	return in, nil
}

func resizeShape(op *Op, in Shape) (Shape, error) {
	size, hasSize := op.Int("size")
	height, hasH := op.Int("height")
	width, hasW := op.Int("width")
	maxSize, hasMax := op.Int("max_size")
	switch {
	case hasSize && (hasH || hasW):
		return in, errParam("size", "both `size` and `height`/`width` are given\nwrite size for a square, or height and width")
	case hasMax && (hasSize || hasH || hasW):
		return in, errParam("max_size", "`max_size` is combined with a target size; resize reads max_size alone (shrink until the longer side fits)")
	case hasSize:
		op.Size = func(int, int) (int, int) { return size, size }
	case hasH && hasW:
		op.Size = func(int, int) (int, int) { return height, width }
	case hasH:
		op.Size = func(h, w int) (int, int) { return height, scaled(w, height, h) }
	case hasW:
		op.Size = func(h, w int) (int, int) { return scaled(h, width, w), width }
	case hasMax:
		op.Size = func(h, w int) (int, int) {
			if long := max(h, w); long > maxSize {
				return scaled(h, maxSize, long), scaled(w, maxSize, long)
			}
			return h, w
		}
	default:
		return in, fmt.Errorf("has no target size\nwrite size, height and width, height, width, or max_size")
	}
	return sized(op, in, hasSize || hasH, hasSize || hasW), nil
}

// sized is the shape op.Size makes of in: a side the op fixes is known, and
// so is every side when both of in's are.
func sized(op *Op, in Shape, fixesH, fixesW bool) Shape {
	h, w := op.Size(max(in.H, 1), max(in.W, 1))
	if in.H < 0 || in.W < 0 {
		if !fixesH {
			h = -1
		}
		if !fixesW {
			w = -1
		}
	}
	in.H, in.W = h, w
	return in
}

// scaled is n×num/den rounded, at least 1.
func scaled(n, num, den int) int {
	return max(1, int(math.Round(float64(n)*float64(num)/float64(den))))
}

func cropShape(op *Op, in Shape) (Shape, error) {
	size, hasSize := op.Int("size")
	height, hasH := op.Int("height")
	width, hasW := op.Int("width")
	switch {
	case hasSize && (hasH || hasW):
		return in, errParam("size", "both `size` and `height`/`width` are given\nwrite size for a square, or height and width")
	case hasSize:
		height, width, hasH, hasW = size, size, true, true
	case !hasH && !hasW:
		return in, fmt.Errorf("has no crop size\nwrite size, or height and width")
	}
	op.Size = func(h, w int) (int, int) {
		if hasH {
			h = height
		}
		if hasW {
			w = width
		}
		return h, w
	}
	return sized(op, in, hasH, hasW), nil
}

func normalizeShape(op *Op, in Shape) (Shape, error) {
	for _, key := range []string{"mean", "std"} {
		if n := len(op.Numbers(key)); n != 1 && n != in.C {
			return in, errParam(key, "`%s` lists %d numbers, but the %s has %d channel(s) here\nlist one per channel, or one for all", key, n, item(op.Modality), in.C)
		}
	}
	for i, x := range op.Numbers("std") {
		if x == 0 {
			return in, errParam("std", "`std` holds 0 at index %d; a standard deviation divides, so it must not be 0", i)
		}
	}
	return in, nil
}

func sampleShape(op *Op, in Shape) (Shape, error) {
	_, hasStride := op.Int("frame_stride")
	_, hasNum := op.Int("num_frames")
	_, hasFPS := op.Number("fps")
	switch {
	case in.Padded:
		return in, fmt.Errorf("samples a clip that pad_frames has already padded\nsample the frames before padding them")
	case !hasStride && !hasNum && hasFPS:
		return in, errParam("fps", "samples by `fps` alone, but the frames of a request carry no timestamps, so the video adapter cannot sample by time\ngive num_frames or frame_stride (fps is then accepted and ignored)")
	case !hasStride && !hasNum:
		return in, fmt.Errorf("has no `num_frames` or `frame_stride`\nwrite how many frames to keep, or every how many frames to take one")
	}
	return in, nil
}

func padShape(op *Op, in Shape) (Shape, error) {
	if in.Padded {
		return in, fmt.Errorf("pads a clip that pad_frames has already padded (to %d frames)\npad once", in.Target)
	}
	if v, ok := op.Number("pad_value"); ok && math.Abs(v) > math.MaxFloat32 {
		return in, errParam("pad_value", "`pad_value` is %g, outside the float32 range the frames hold", v)
	}
	in.Padded, in.Target = true, op.Ints("target_length")
	return in, nil
}

func resampleShape(_ *Op, in Shape) (Shape, error) {
	if in.Framed {
		return in, fmt.Errorf("reads framed audio\nresample before frame")
	}
	return in, nil
}

func frameShape(op *Op, in Shape) (Shape, error) {
	if in.Framed {
		return in, fmt.Errorf("reads a value that is already framed\nframe once")
	}
	return Shape{Framed: true, Window: op.Ints("window")}, nil
}
