package adapters

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/genaic/genaic/ir"
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
}

// imageProgram is a compiled preprocessing.image program.
type imageProgram struct {
	format string // the format decode demands, "" for any
	ops    []imageOp
	shapes map[string]shape // every value the program defines
	last   string           // the value the last transform defines
	// dies lists, per op, the values no later op reads.
	dies [][]string
}

// imageOps are the transforms the image adapter runs.
var imageOps = "decode, convert_color, resize, center_crop, rescale and normalize"

// compileImage checks a program against what the image adapter runs and
// compiles its transforms, tracking what Load can know of each value's
// shape.
func compileImage(prog *ir.Program) (*imageProgram, error) {
	p := &imageProgram{shapes: map[string]shape{}}
	last, err := compileTransforms(prog, "image", "encoded bytes", imageOps, p.shapes, func(st transformStep, s shape) (shape, bool, error) {
		t := st.t
		op := imageOp{op: t.Op, in: st.in, out: st.out}
		var err error
		if t.Op == "decode" {
			p.format, err = decodeFormat(t)
			s = shape{c: 3, h: -1, w: -1}
		} else if s, err = compileImageOp(t, &op, s); err == errNotImageOp {
			return s, false, nil
		}
		p.ops = append(p.ops, op)
		return s, true, err
	})
	if err != nil {
		return nil, err
	}
	p.last = last
	return p, nil
}

// errNotImageOp is compileImageOp's answer for an op it does not compile.
var errNotImageOp = errors.New("not an image op")

// compileImageOp compiles a transform on one image other than decode into
// op, returning the shape of its result.
func compileImageOp(t ir.Transform, op *imageOp, s shape) (shape, error) {
	var err error
	switch t.Op {
	case "convert_color":
		op.apply, s, err = compileColor(t, s)
	case "resize":
		op.dims, s, err = compileResize(t, s)
		op.apply = resizer(op.dims, t)
	case "center_crop":
		op.dims, s, err = compileCrop(t, s)
		op.apply = cropper(op.dims)
	case "rescale":
		op.apply, err = compileRescale(t)
	case "normalize":
		op.apply, err = compileNormalize(t, s)
	default:
		return s, errNotImageOp
	}
	return s, err
}

// transformStep is one transform of a program as compileTransforms hands
// it on: its index, the value it reads and the value it defines.
type transformStep struct {
	i       int
	t       ir.Transform
	in, out string
}

// compileTransforms checks what every adapter demands of a program: decode
// first and once, transforms of one input and one output, each reading a
// value an earlier transform defines. It calls step on each transform with
// the shape of the value it reads (the zero shape for decode), and records
// the shape step returns as the shape of the value the transform defines.
// step reports known false for an op the modality's adapter does not run
// (ops lists those it does); source says what decode starts from. It returns the
// value the last transform defines.
func compileTransforms[S any](prog *ir.Program, modality, source, ops string, shapes map[string]S, step func(st transformStep, s S) (out S, known bool, err error)) (string, error) {
	if len(prog.Transforms) == 0 || prog.Transforms[0].Op != "decode" {
		first := "no transform"
		if len(prog.Transforms) > 0 {
			first = "`" + prog.Transforms[0].Op + "`"
		}
		return "", unsupported("preprocessing.%s starts with %s; the %s adapter starts from %s, so the first transform is `decode`", modality, first, modality, source)
	}
	prev := ""
	for i, t := range prog.Transforms {
		where := fmt.Sprintf("preprocessing.%s transform %d (%s)", modality, i, t.Op)
		if len(t.Inputs) > 1 || len(t.Outputs) > 1 {
			return "", unsupported("%s reads %d values and defines %d; the %s adapter runs transforms of one input and one output", where, len(t.Inputs), len(t.Outputs), modality)
		}
		in := prev
		if len(t.Inputs) == 1 {
			in = t.Inputs[0]
		}
		out := fmt.Sprintf("#%d", i)
		if len(t.Outputs) == 1 {
			out = t.Outputs[0]
		}
		if t.Op == "decode" && i > 0 {
			return "", unsupported("%s decodes again; the %s adapter decodes once, in the first transform", where, modality)
		}
		s, ok := shapes[in]
		if t.Op != "decode" && !ok {
			return "", unsupported("%s reads `%s`, which no earlier transform defines; name an earlier transform's output", where, in)
		}
		s, known, err := step(transformStep{i: i, t: t, in: in, out: out}, s)
		if !known {
			return "", unsupported("%s is not run by the %s adapter, which runs %s", where, modality, ops)
		}
		if err != nil {
			return "", unsupported("%s: %v", where, err)
		}
		shapes[out] = s
		prev = out
	}
	return prev, nil
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
			env[op.out] = op.apply(in)
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

func decodeFormat(t ir.Transform) (string, error) {
	f, ok := param(t, "format")
	if !ok || strings.EqualFold(f, "auto") {
		return "", nil
	}
	name, ok := formatNames[strings.ToLower(f)]
	if !ok {
		return "", fmt.Errorf("format %q is not decoded here; the image adapter decodes png, jpeg (jpg) and gif, or any of them with auto", f)
	}
	return name, nil
}

func compileColor(t ir.Transform, s shape) (func(*planar) *planar, shape, error) {
	mode, ok := param(t, "mode")
	if !ok {
		return nil, s, fmt.Errorf("no `mode`; write mode: RGB, BGR or L")
	}
	switch strings.ToUpper(mode) {
	case "RGB":
		s.c = 3
		return func(p *planar) *planar { return convertColor(p, "RGB") }, s, nil
	case "BGR":
		return func(p *planar) *planar { return convertColor(p, "BGR") }, s, nil
	case "L", "GRAY", "GREY", "GRAYSCALE":
		s.c = 1
		return func(p *planar) *planar { return convertColor(p, "L") }, s, nil
	}
	return nil, s, fmt.Errorf("mode %q is not converted here; the image adapter converts to RGB, BGR and L (grayscale)", mode)
}

// positive reads a parameter that is a positive integer; ok is false when
// it is absent.
func positive(t ir.Transform, key string) (n int, ok bool, err error) {
	v, ok := param(t, key)
	if !ok {
		return 0, false, nil
	}
	x, perr := strconv.ParseInt(v, 10, 32)
	if perr != nil || x <= 0 {
		return 0, true, fmt.Errorf("`%s` is %q; it must be a positive integer", key, v)
	}
	return int(x), true, nil
}

// sides reads the size parameters of resize and center_crop.
func sides(t ir.Transform) (size, height, width int, hasSize, hasH, hasW bool, err error) {
	if size, hasSize, err = positive(t, "size"); err != nil {
		return
	}
	if height, hasH, err = positive(t, "height"); err != nil {
		return
	}
	if width, hasW, err = positive(t, "width"); err != nil {
		return
	}
	if hasSize && (hasH || hasW) {
		err = fmt.Errorf("both `size` and `height`/`width` are given; write size for a square, or height and width")
	}
	return
}

// scaled is n×num/den rounded, at least 1.
func scaled(n, num, den int) int {
	return max(1, int(math.Round(float64(n)*float64(num)/float64(den))))
}

// resizer resamples an image to the size dims gives, with the transform's
// interpolation (compileResize has checked it).
func resizer(dims func(h, w int) (int, int), t ir.Transform) func(*planar) *planar {
	interp := "bilinear"
	if v, ok := param(t, "interpolation"); ok {
		interp = strings.ToLower(v)
	}
	f := filters[interp]
	return func(p *planar) *planar {
		h, w := dims(p.h, p.w)
		return resize(p, h, w, f)
	}
}

// cropper cuts the centred window of the size dims gives.
func cropper(dims func(h, w int) (int, int)) func(*planar) *planar {
	return func(p *planar) *planar {
		h, w := dims(p.h, p.w)
		return centerCrop(p, h, w)
	}
}

// compileResize reads resize's parameters: the size it makes of an input
// and what Load then knows of the result.
func compileResize(t ir.Transform, s shape) (func(h, w int) (int, int), shape, error) {
	size, height, width, hasSize, hasH, hasW, err := sides(t)
	if err != nil {
		return nil, s, err
	}
	maxSize, hasMax, err := positive(t, "max_size")
	if err != nil {
		return nil, s, err
	}
	interp := "bilinear"
	if v, ok := param(t, "interpolation"); ok {
		interp = strings.ToLower(v)
	}
	if _, ok := filters[interp]; !ok {
		return nil, s, fmt.Errorf("interpolation %q is not run here; the image adapter resizes with bilinear, bicubic or nearest", interp)
	}
	if hasMax && (hasSize || hasH || hasW) {
		return nil, s, fmt.Errorf("`max_size` is combined with a target size; the image adapter reads max_size alone (shrink until the longer side fits)")
	}
	var target func(h, w int) (int, int)
	switch {
	case hasSize:
		target = func(int, int) (int, int) { return size, size }
		s.h, s.w = size, size
	case hasH && hasW:
		target = func(int, int) (int, int) { return height, width }
		s.h, s.w = height, width
	case hasH:
		target = func(h, w int) (int, int) { return height, scaled(w, height, h) }
		s.h, s.w = height, -1
	case hasW:
		target = func(h, w int) (int, int) { return scaled(h, width, w), width }
		s.h, s.w = -1, width
	case hasMax:
		target = func(h, w int) (int, int) {
			if long := max(h, w); long > maxSize {
				return scaled(h, maxSize, long), scaled(w, maxSize, long)
			}
			return h, w
		}
		if s.h >= 0 && s.w >= 0 {
			s.h, s.w = target(s.h, s.w)
		} else {
			s.h, s.w = -1, -1
		}
	default:
		return nil, s, fmt.Errorf("no target size; write size, height and width, height, width, or max_size")
	}
	return target, s, nil
}

// compileCrop reads center_crop's parameters: the window it cuts of an
// input and what Load then knows of the result.
func compileCrop(t ir.Transform, s shape) (func(h, w int) (int, int), shape, error) {
	size, height, width, hasSize, hasH, hasW, err := sides(t)
	if err != nil {
		return nil, s, err
	}
	switch {
	case hasSize:
		height, width, hasH, hasW = size, size, true, true
	case !hasH && !hasW:
		return nil, s, fmt.Errorf("no crop size; write size, or height and width")
	}
	if hasH {
		s.h = height
	}
	if hasW {
		s.w = width
	}
	return func(h, w int) (int, int) {
		if hasH {
			h = height
		}
		if hasW {
			w = width
		}
		return h, w
	}, s, nil
}

func compileRescale(t ir.Transform) (func(*planar) *planar, error) {
	v, ok := param(t, "factor")
	if !ok {
		return nil, fmt.Errorf("no `factor`; write the number every value is multiplied by, such as 0.00392156862745098 (1/255)")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("`factor` is %q; it must be a finite number", v)
	}
	factor := float32(f)
	return func(p *planar) *planar { return rescale(p, factor) }, nil
}

// numbers reads a list parameter as the lowering writes it: "[a, b, c]".
func numbers(t ir.Transform, key string) ([]float64, error) {
	v, ok := param(t, key)
	if !ok {
		return nil, fmt.Errorf("no `%s`; write one number per channel", key)
	}
	inner, ok := strings.CutPrefix(v, "[")
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return nil, fmt.Errorf("`%s` is %q; it must be a list of numbers", key, v)
	}
	var out []float64
	for _, part := range strings.Split(inner, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("`%s` holds %q, which is not a finite number", key, strings.TrimSpace(part))
		}
		out = append(out, x)
	}
	return out, nil
}

func compileNormalize(t ir.Transform, s shape) (func(*planar) *planar, error) {
	mean, err := numbers(t, "mean")
	if err != nil {
		return nil, err
	}
	std, err := numbers(t, "std")
	if err != nil {
		return nil, err
	}
	for _, l := range []struct {
		key  string
		list []float64
	}{{"mean", mean}, {"std", std}} {
		if len(l.list) != 1 && len(l.list) != s.c {
			return nil, fmt.Errorf("`%s` lists %d numbers, but the image has %d channel(s) here; list one per channel, or one for all", l.key, len(l.list), s.c)
		}
	}
	for i, x := range std {
		if x == 0 {
			return nil, fmt.Errorf("`std` holds 0 at index %d; a standard deviation divides, so it must not be 0", i)
		}
	}
	return func(p *planar) *planar { return normalize(p, mean, std) }, nil
}
