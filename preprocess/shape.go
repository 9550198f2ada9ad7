package preprocess

import (
	"fmt"
	"math"
	"slices"

	"github.com/genaic/genaic/ir"
)

// Shape is what compile time knows of a program value. An image, or each
// frame of a video clip, has C channels and, when the program fixes them,
// H×W pixels (-1 otherwise). A clip pad_frames has padded holds Target
// frames.
//
// An audio value is samples; after `frame` of samples or
// `mel_spectrogram`, frames of Window values each (samples or mel bands);
// after `frame` of frames, windows of Window rows of Row values each.
// Units is the extent of its first axis (samples, frames or windows) where
// the program fixes it (pad_or_trim, and what follows it), else 0.
//
// After `tile` an image is a sequence of tiles (Seq SeqTiles), each C×H×W;
// after `patchify` a sequence of patches (Seq SeqPatches) of Features
// values each, H×W patches when the program fixes the image's size.
type Shape struct {
	C, H, W  int
	Framed   bool
	Window   int
	Row      int
	Units    int
	Padded   bool
	Target   int
	Seq      Seq
	Features int
}

// AudioRank is the rank of one clip's audio value: 1 for samples, 2 for
// frames, 3 for windows of rows.
func (s Shape) AudioRank() int {
	switch {
	case s.Row > 0:
		return 3
	case s.Framed:
		return 2
	}
	return 1
}

// Unit is the extents of each unit of an audio value past its first axis:
// none for samples, [Window] for frames, [Window, Row] for windows.
func (s Shape) Unit() []int {
	switch {
	case s.Row > 0:
		return []int{s.Window, s.Row}
	case s.Framed:
		return []int{s.Window}
	}
	return nil
}

// Seq says what sequence an image has become.
type Seq uint8

// The sequences.
const (
	NoSeq      Seq = iota
	SeqTiles       // tiles, each an image
	SeqPatches     // flattened patches
)

// Bounds of tile and patchify.
const (
	MaxTiles    = 64
	MaxTileSize = 4096
	MaxPatch    = 256
)

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
		return Shape{}, errParam("format", "format `%s` is a video container; the %s adapter reads each %s as an encoded image, png, jpeg (jpg), gif or webp, or any of them with auto, and does not demux video containers\nsend the clip's frames", f, op.Modality, item(op.Modality))
	case f == "wav":
		return Shape{}, errParam("format", "format `wav` is audio; the %s adapter decodes each %s as png, jpeg (jpg), gif or webp, or any of them with auto", op.Modality, item(op.Modality))
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
	_, hasRounding := op.Word("rounding")
	maxW, hasMaxW := op.Int("max_width")
	maxH, hasMaxH := op.Int("max_height")
	multiple, hasMultiple := op.Int("multiple")
	short, hasShort := op.Int("shortest_edge")
	scaled := scaler(op)
	switch {
	case hasShort && (hasSize || hasH || hasW || hasMax || hasMultiple):
		return in, errParam("shortest_edge", "`shortest_edge` is combined with another target (size, height, width, max_size or multiple); resize reads shortest_edge alone (the shorter side to it, the longer following the aspect ratio)")
	case hasMultiple && (hasSize || hasH && hasW):
		return in, errParam("multiple", "`multiple` is given, but this resize fixes both sides; multiple rounds the sides a keep-aspect resize (height, width or max_size alone) derives, so remove it or write the sides as multiples")
	case hasMaxW && (!hasH || hasW || hasSize || hasMax):
		return in, errParam("max_width", "`max_width` caps the width that a resize to `height` alone derives from the aspect ratio, and this resize is not one\nwrite height and max_width: the width follows the aspect ratio up to max_width, and a wider image is squeezed to it")
	case hasMaxH && (!hasW || hasH || hasSize || hasMax):
		return in, errParam("max_height", "`max_height` caps the height that a resize to `width` alone derives from the aspect ratio, and this resize is not one\nwrite width and max_height: the height follows the aspect ratio up to max_height, and a taller image is squeezed to it")
	case hasRounding && (hasSize || hasH && hasW):
		return in, errParam("rounding", "`rounding` is given, but this resize fixes both sides; rounding applies to the side a keep-aspect resize (height, width or max_size alone) derives, so remove it")
	case hasSize && (hasH || hasW):
		return in, errParam("size", "both `size` and `height`/`width` are given\nwrite size for a square, or height and width")
	case hasMax && (hasSize || hasH || hasW):
		return in, errParam("max_size", "`max_size` is combined with a target size; resize reads max_size alone (shrink until the longer side fits)")
	case hasSize:
		op.Size = func(int, int) (int, int) { return size, size }
	case hasH && hasW:
		op.Size = func(int, int) (int, int) { return height, width }
	case hasShort:
		op.Size = func(h, w int) (int, int) {
			if h <= w {
				return short, scaled(w, short, h)
			}
			return scaled(h, short, w), short
		}
	case hasH:
		op.Size = func(h, w int) (int, int) { return height, capped(scaled(w, height, h), maxW, hasMaxW) }
	case hasW:
		op.Size = func(h, w int) (int, int) { return capped(scaled(h, width, w), maxH, hasMaxH), width }
	case hasMax:
		op.Size = func(h, w int) (int, int) {
			if long := max(h, w); long > maxSize {
				return scaled(h, maxSize, long), scaled(w, maxSize, long)
			}
			return h, w
		}
	default:
		return in, fmt.Errorf("has no target size\nwrite size, height and width, height, width, shortest_edge, or max_size")
	}
	if hasMultiple {
		size := op.Size
		op.Size = func(h, w int) (int, int) {
			h, w = size(h, w)
			if !hasH {
				h = nearestMultiple(h, multiple)
			}
			if !hasW {
				w = nearestMultiple(w, multiple)
			}
			return h, w
		}
	}
	return sized(op, in, hasSize || hasH, hasSize || hasW), nil
}

// nearestMultiple is the multiple of m nearest to n, halves to the even
// multiple (as Python's round(n / m) * m, which PaddleOCR's detector
// pre-processing computes), and at least m.
func nearestMultiple(n, m int) int {
	q, r := n/m, n%m
	if 2*r > m || 2*r == m && q%2 == 1 {
		q++
	}
	return max(q, 1) * m
}

// capped is n, at most most where a cap is given.
func capped(n, most int, given bool) int {
	if given {
		return min(n, most)
	}
	return n
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

// scaler returns the function that scales the derived side of a
// keep-aspect resize: n×num/den rounded as the op's rounding says (to the
// nearest, halves away from zero, by default), at least 1.
func scaler(op *Op) func(n, num, den int) int {
	round := math.Round
	switch r, _ := op.Word("rounding"); r {
	case "floor":
		round = math.Floor
	case "ceil":
		round = math.Ceil
	}
	return func(n, num, den int) int {
		// n×num is exact in an int64; the quotient is rounded once.
		q, rem := int64(n)*int64(num)/int64(den), int64(n)*int64(num)%int64(den)
		v := float64(q) + float64(rem)/float64(den)
		return max(1, int(round(v)))
	}
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
	op.Size = sides(height, width, hasH, hasW)
	return sized(op, in, hasH, hasW), nil
}

// sides is the size function of an op that sets the sides it names,
// height where hasH and width where hasW, and keeps the others.
func sides(height, width int, hasH, hasW bool) func(h, w int) (int, int) {
	return func(h, w int) (int, int) {
		if hasH {
			h = height
		}
		if hasW {
			w = width
		}
		return h, w
	}
}

// padToShape: pad lengthens the sides it names to their extents, the
// image at the top left. An image already larger on such a side is
// refused here where the program fixes that side, else at run time (the
// adapter's refusal, run/input).
func padToShape(op *Op, in Shape) (Shape, error) {
	height, hasH := op.Int("height")
	width, hasW := op.Int("width")
	switch v, _ := op.Number("value"); {
	case !hasH && !hasW:
		return in, fmt.Errorf("has no target size\nwrite height, width or both: the %s is padded below and to its right up to them", item(op.Modality))
	case math.Abs(v) > math.MaxFloat32:
		return in, errParam("value", "`value` is %g, outside the float32 range the %s holds", v, item(op.Modality))
	case hasH && in.H > height:
		return in, errParam("height", "the %s is %d rows high here, more than `height` %d, and pad only adds rows\nresize it to at most %d rows first", item(op.Modality), in.H, height, height)
	case hasW && in.W > width:
		return in, errParam("width", "the %s is %d columns wide here, more than `width` %d, and pad only adds columns\nresize it to at most %d columns first (resize with height and max_width keeps the aspect up to a width)", item(op.Modality), in.W, width, width)
	}
	op.Size = sides(height, width, hasH, hasW)
	in.H, in.W = op.Size(in.H, in.W) // a side pad does not name stays as it is, known or not
	return in, nil
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
	case !hasStride && !hasNum && hasFPS && !op.Timed:
		return in, errParam("fps", "samples by `fps` alone, but the video adapter has no timestamps input port, so its frames carry no times to sample by\ndeclare a float32 or float64 vector input port of each frame's time in seconds and bind it, or give num_frames or frame_stride (fps is then ignored)")
	case !hasStride && !hasNum && !hasFPS:
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
		return in, fmt.Errorf("reads framed audio or features\nresample the samples, before frame or mel_spectrogram")
	}
	// The clip's length after resampling depends on its rate, known only
	// when it is decoded.
	return Shape{}, nil
}

// Bounds of mel_spectrogram, so that a program cannot ask the adapter for
// an unbounded transform or filter bank.
const (
	MaxFFT  = 1 << 16
	MaxMels = 1024
)

// Mel is a mel_spectrogram's parameters with their defaults filled in.
type Mel struct {
	SampleRate, NFFT, Hop, Win, NMels int
	FMin, FMax, Power                 float64
	HTK, Norm, Reflect, Center        bool
}

// Mel returns the parameters of a mel_spectrogram op, defaults filled in:
// hop_length n_fft/4 (at least 1), win_length n_fft, n_mels 128, f_min 0,
// f_max sample_rate/2, power 2, Slaney scale and norm, centred frames with
// reflect padding.
func (o *Op) Mel() Mel {
	m := Mel{SampleRate: o.Ints("sample_rate"), NFFT: o.Ints("n_fft"), NMels: 128, Power: 2, Norm: true, Reflect: true, Center: true}
	m.Hop, m.Win = max(1, m.NFFT/4), m.NFFT
	m.FMax = float64(m.SampleRate) / 2
	if v, ok := o.Int("hop_length"); ok {
		m.Hop = v
	}
	if v, ok := o.Int("win_length"); ok {
		m.Win = v
	}
	if v, ok := o.Int("n_mels"); ok {
		m.NMels = v
	}
	if v, ok := o.Number("f_min"); ok {
		m.FMin = v
	}
	if v, ok := o.Number("f_max"); ok {
		m.FMax = v
	}
	if v, ok := o.Number("power"); ok {
		m.Power = v
	}
	w, _ := o.Word("mel_scale")
	m.HTK = w == "htk"
	if w, ok := o.Word("norm"); ok {
		m.Norm = w == "slaney"
	}
	if w, ok := o.Word("pad_mode"); ok {
		m.Reflect = w == "reflect"
	}
	if v, ok := o.Bool("center"); ok {
		m.Center = v
	}
	return m
}

// Frames is how many frames a clip of n samples makes, one every hop
// samples: centred, of the clip padded by n_fft/2 on both sides,
// 1 + n/hop (none for an empty clip); uncentred, those of n_fft samples
// that lie within the clip, 1 + (n - n_fft)/hop (none for a clip shorter
// than n_fft).
func (m Mel) Frames(n int) int {
	switch {
	case n == 0:
		return 0
	case m.Center:
		return 1 + (n+2*(m.NFFT/2)-m.NFFT)/m.Hop
	case n < m.NFFT:
		return 0
	}
	return 1 + (n-m.NFFT)/m.Hop
}

func melShape(op *Op, in Shape) (Shape, error) {
	m := op.Mel()
	nyquist := float64(m.SampleRate) / 2
	_, padMode := op.Word("pad_mode")
	switch {
	case in.Framed:
		return in, fmt.Errorf("reads framed audio or features\ncompute the mel spectrogram of the samples, not after frame or mel_spectrogram")
	case m.NFFT < 2 || m.NFFT > MaxFFT:
		return in, errParam("n_fft", "`n_fft` is %d; the audio adapter transforms 2 to %d samples per frame", m.NFFT, MaxFFT)
	case m.Win > m.NFFT:
		return in, errParam("win_length", "`win_length` is %d, longer than n_fft (%d); the window is centred in n_fft samples, so it must not exceed them", m.Win, m.NFFT)
	case m.NMels > MaxMels:
		return in, errParam("n_mels", "`n_mels` is %d; the audio adapter makes at most %d mel bands", m.NMels, MaxMels)
	case m.FMin < 0:
		return in, errParam("f_min", "`f_min` is %g Hz; it must not be negative", m.FMin)
	case m.FMax > nyquist:
		return in, errParam("f_max", "`f_max` is %g Hz, above the Nyquist frequency %g Hz of sample_rate %d\nlower it to at most %g", m.FMax, nyquist, m.SampleRate, nyquist)
	case m.FMin >= m.FMax:
		return in, errParam("f_min", "`f_min` is %g Hz, not below f_max (%g Hz); the mel bands span f_min..f_max", m.FMin, m.FMax)
	case m.Power > 16:
		return in, errParam("power", "`power` is %g; the spectrum is raised to power 1 (magnitude) or 2 (power), at most 16", m.Power)
	case padMode && !m.Center:
		return in, errParam("pad_mode", "`pad_mode` is given, but center is false: uncentred frames start at the clip's first sample and nothing is padded\nremove pad_mode, or centre the frames")
	}
	out := Shape{Framed: true, Window: m.NMels}
	if in.Units > 0 {
		if out.Units = m.Frames(in.Units); out.Units == 0 {
			return in, errParam("n_fft", "`n_fft` is %d, but each clip has %d samples here (pad_or_trim fixes its length), so no uncentred frame fits\npad the clips to at least n_fft samples, or centre the frames", m.NFFT, in.Units)
		}
	}
	return out, nil
}

func logShape(op *Op, in Shape) (Shape, error) {
	if b, ok := op.Number("base"); ok && b == 1 {
		return in, errParam("base", "`base` is 1, which has no logarithm\nwrite 10, 2, or leave it out for the natural logarithm")
	}
	return in, nil
}

func affineShape(op *Op, in Shape) (Shape, error) {
	scale, hasScale := op.Number("scale")
	offset, hasOffset := op.Number("offset")
	switch {
	case !hasScale && !hasOffset:
		return in, fmt.Errorf("has neither `scale` nor `offset`, so it changes nothing\nwrite scale, offset or both (x·scale + offset), or remove it")
	case hasScale && scale == 0:
		return in, errParam("scale", "`scale` is 0, which turns every value into the offset\nwrite the factor the values are multiplied by")
	case math.Abs(scale) > math.MaxFloat32:
		return in, errParam("scale", "`scale` is %g, outside the float32 range the values hold", scale)
	case math.Abs(offset) > math.MaxFloat32:
		return in, errParam("offset", "`offset` is %g, outside the float32 range the values hold", offset)
	}
	return in, nil
}

// Affine returns an affine op's scale (1 when absent) and offset.
func (o *Op) Affine() (scale, offset float64) {
	scale, ok := o.Number("scale")
	if !ok {
		scale = 1
	}
	offset, _ = o.Number("offset")
	return scale, offset
}

func standardizeShape(_ *Op, in Shape) (Shape, error) {
	if in.Framed {
		return in, fmt.Errorf("reads framed audio or features\nstandardize the samples, before frame or mel_spectrogram")
	}
	return in, nil
}

// Epsilon is a standardize op's epsilon, added to the variance: 1e-7,
// Wav2Vec2FeatureExtractor's, by default.
func (o *Op) Epsilon() float64 {
	if e, ok := o.Number("epsilon"); ok {
		return e
	}
	return 1e-7
}

func padOrTrimShape(op *Op, in Shape) (Shape, error) {
	in.Units = op.Ints("length")
	return in, nil
}

// Framing is a frame op's parameters, defaults filled in.
type Framing struct {
	Window, Hop int
	Drop        bool // a partial window is dropped, not zero-padded
}

// Framing returns a frame op's parameters: hop window, the last window
// zero-padded, by default.
func (o *Op) Framing() Framing {
	f := Framing{Window: o.Ints("window")}
	f.Hop = f.Window
	if v, ok := o.Int("hop"); ok {
		f.Hop = v
	}
	w, _ := o.Word("partial")
	f.Drop = w == "drop"
	return f
}

// Count is how many windows n units make, one every hop units: padded,
// up to the first that reaches the end, 1 + ceil(max(n - window, 0)/hop),
// but none that would start past the end where hop exceeds window (none
// when n is 0); dropped, the whole windows, 1 + (n - window)/hop (none
// when n is less than window).
func (f Framing) Count(n int) int {
	switch {
	case n == 0 || f.Drop && n < f.Window:
		return 0
	case f.Drop:
		return 1 + (n-f.Window)/f.Hop
	}
	return min(1+(max(n-f.Window, 0)+f.Hop-1)/f.Hop, (n+f.Hop-1)/f.Hop)
}

func frameShape(op *Op, in Shape) (Shape, error) {
	f := op.Framing()
	if in.Row > 0 {
		return in, fmt.Errorf("reads windows that frame has already made\nframe the samples, or the frames or features, once")
	}
	out := Shape{Framed: true, Window: f.Window}
	if in.Framed {
		out.Row = in.Window
	}
	if in.Units > 0 {
		if out.Units = f.Count(in.Units); out.Units == 0 {
			return in, errParam("window", "`window` is %d, but each clip has %d %s here (pad_or_trim fixes its length), so partial: drop keeps no window\nshorten the window, or pad the last window", f.Window, in.Units, in.UnitWord())
		}
	}
	return out, nil
}

// UnitWord names the units of an audio value's first axis.
func (s Shape) UnitWord() string {
	switch {
	case s.Row > 0:
		return "windows"
	case s.Framed:
		return "frames"
	}
	return "samples"
}

// seqReads refuses an op that reads a sequence of tiles or patches but
// works on whole images: after tile, the pixel-wise rescale and the
// per-channel normalize run on every tile; after patchify, nothing does.
func seqReads(op string, in Shape) error {
	switch {
	case in.Seq == SeqPatches:
		return fmt.Errorf("reads patches, which patchify makes as the last transform; move %s before patchify", op)
	case in.Seq == SeqTiles && op != "rescale" && op != "normalize":
		return fmt.Errorf("reads tiles; after tile only rescale and normalize run (on every tile), so move %s before tile", op)
	}
	return nil
}

// Tile is a tile op's parameters.
type Tile struct {
	Size, MaxTiles int
	Thumbnail      string // "none", "first" or "last"
	Interpolation  string
}

// Tile returns a tile op's parameters, defaults filled in: no thumbnail,
// bicubic resampling (as LLaVA-NeXT's processor).
func (o *Op) Tile() Tile {
	t := Tile{Size: o.Ints("tile_size"), MaxTiles: o.Ints("max_tiles"), Thumbnail: "none", Interpolation: "bicubic"}
	if w, ok := o.Word("thumbnail"); ok {
		t.Thumbnail = w
	}
	if w, ok := o.Word("interpolation"); ok {
		t.Interpolation = w
	}
	return t
}

// Grid chooses the tile grid (rows, columns) of an h×w image: among the
// grids of at most MaxTiles tiles, in order of rows then columns, the one
// whose canvas keeps the most of the image's resolution once the image is
// scaled to fit it, then the one that wastes the least canvas (LLaVA-NeXT's
// select_best_resolution over every grid).
func (t Tile) Grid(h, w int) (rows, cols int) {
	best, waste := -1, 0
	for r := 1; r <= t.MaxTiles; r++ {
		for c := 1; r*c <= t.MaxTiles; c++ {
			ch, cw := r*t.Size, c*t.Size
			scale := min(float64(cw)/float64(w), float64(ch)/float64(h))
			dw, dh := int(float64(w)*scale), int(float64(h)*scale)
			eff := min(dw*dh, w*h)
			if wasted := cw*ch - eff; eff > best || eff == best && wasted < waste {
				best, waste, rows, cols = eff, wasted, r, c
			}
		}
	}
	return rows, cols
}

// Tiles is how many tiles the op makes of an h×w image, thumbnail included.
func (t Tile) Tiles(h, w int) int {
	r, c := t.Grid(h, w)
	if t.Thumbnail != "none" {
		return r*c + 1
	}
	return r * c
}

func tileShape(op *Op, in Shape) (Shape, error) {
	t := op.Tile()
	switch {
	case t.Size > MaxTileSize:
		return in, errParam("tile_size", "`tile_size` is %d; the image adapter makes tiles of at most %d pixels a side", t.Size, MaxTileSize)
	case t.MaxTiles > MaxTiles:
		return in, errParam("max_tiles", "`max_tiles` is %d; the image adapter makes at most %d tiles of an image", t.MaxTiles, MaxTiles)
	}
	// Each image becomes its tiles stacked top to bottom: tiles·size rows
	// of size columns.
	op.Size = func(h, w int) (int, int) { return t.Tiles(h, w) * t.Size, t.Size }
	return Shape{C: in.C, H: t.Size, W: t.Size, Seq: SeqTiles}, nil
}

func patchifyShape(op *Op, in Shape) (Shape, error) {
	p := op.Ints("patch_size")
	switch {
	case p > MaxPatch:
		return in, errParam("patch_size", "`patch_size` is %d; the image adapter makes patches of at most %d pixels a side", p, MaxPatch)
	case in.H > 0 && in.H%p != 0 || in.W > 0 && in.W%p != 0:
		return in, errParam("patch_size", "`patch_size` is %d, but the image is %d×%d (height×width) here, not a multiple of it; resize to multiples of %d first", p, in.H, in.W, p)
	}
	out := Shape{C: in.C, H: -1, W: -1, Seq: SeqPatches, Features: in.C * p * p}
	if in.H > 0 {
		out.H = in.H / p
	}
	if in.W > 0 {
		out.W = in.W / p
	}
	return out, nil
}

// TimestampsPort returns the input port of a video adapter that carries
// each frame's presentation time in seconds: its one float32 or float64
// input port of rank 1 (or of unknown rank), or "" when it has none.
func TimestampsPort(adapter *ir.Component) string {
	if adapter == nil {
		return ""
	}
	for _, p := range adapter.Inputs {
		c := p.Contract
		if c == nil || c.Rank > 1 || c.Rank == 0 {
			continue
		}
		if d, ok := ir.LookupDType(c.DType); ok && (d.Name == "float32" || d.Name == "float64") {
			return p.Name
		}
	}
	return ""
}
