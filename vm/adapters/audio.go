package adapters

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/genaic/genaic/preprocess"
)

// signal is one audio clip: mono samples, or after `frame` or
// `mel_spectrogram`, frames of a fixed window with the valid values of
// each, or after `frame` of frames, windows of window rows of row values
// each with the valid rows of each.
type signal struct {
	rate    int
	samples []float32 // unframed
	framed  bool
	window  int
	row     int // windows: the values of each row; 0 for samples and frames
	frames  int
	data    []float32 // framed: frames×window (×row), row-major
	valid   []int64   // framed: the valid samples, bands or rows of each frame
}

// units is the clip's extent on its first axis: samples, frames or
// windows.
func (s *signal) units() int {
	if s.framed {
		return s.frames
	}
	return len(s.samples)
}

// width is the values of each unit (clipExtent.width).
func (s *signal) width() int { return s.extent().width() }

// extent is the clip's size without its values.
func (s *signal) extent() clipExtent {
	return clipExtent{rate: s.rate, framed: s.framed, window: s.window, row: s.row, units: s.units()}
}

// clipExtent is a clip's size without its values: what run checks before
// a transform allocates, and what the media budget counts, read off a
// WAV header without decoding a sample.
type clipExtent struct {
	rate   int
	framed bool
	window int
	row    int
	units  int // samples, frames or windows
}

// unitWord names the clip's units.
func (e clipExtent) unitWord() string {
	return preprocess.Shape{Framed: e.framed, Row: e.row}.UnitWord()
}

// width is the values of each unit: 1 for a sample, window for a frame,
// window×row for a window of rows.
func (e clipExtent) width() int {
	switch {
	case e.row > 0:
		return e.window * e.row
	case e.framed:
		return e.window
	}
	return 1
}

// values is how many values the clip holds.
func (e clipExtent) values() int64 { return product(int64(e.units), int64(e.width()), 1) }

// bytes is the memory the clip's values take as float32, with the valid
// count (int64) of each frame or window. The extents it is asked of hold
// at most a clip's maxValues values (admits), so it does not overflow.
func (e clipExtent) bytes() int64 {
	b := 4 * e.values()
	if e.framed {
		b += 8 * int64(e.units)
	}
	return b
}

// values is the clip's payload.
func (s *signal) values() []float32 {
	if s.framed {
		return s.data
	}
	return s.samples
}

// withValues is the clip with its payload replaced by vals, of as many
// values.
func (s *signal) withValues(vals []float32) *signal {
	out := *s
	if s.framed {
		out.data = vals
	} else {
		out.samples = vals
	}
	return &out
}

// WAV format tags.
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// wavHeader is what a WAV file's header says of its samples, checked: its
// samples are a whole number of align-byte sample frames of pcm, each of
// channels samples that sample reads.
type wavHeader struct {
	rate, channels, align, width int
	sample                       func([]byte) float64
	pcm                          []byte
	pcm16                        bool // 16-bit PCM, the common case, read without sample
}

// frames is how many samples the clip holds once mixed to mono.
func (h *wavHeader) frames() int { return len(h.pcm) / h.align }

// decodeWAV reads a RIFF/WAVE file of PCM (8-bit unsigned, 16-, 24- or
// 32-bit signed) or IEEE float (32- or 64-bit) samples and mixes its
// channels to mono by their mean, scaled to [-1, 1].
func decodeWAV(data []byte) (*signal, error) {
	h, err := readWAVHeader(data)
	if err != nil {
		return nil, err
	}
	return h.decode(), nil
}

// decode mixes the clip's channels to mono by their mean.
func (h *wavHeader) decode() *signal {
	out := make([]float32, h.frames())
	if h.pcm16 && h.channels == 1 {
		// int/32768 is exact in float32, as it is in float64.
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(h.pcm[2*i:]))) / (1 << 15)
		}
		return &signal{rate: h.rate, samples: out}
	}
	for i := range out {
		sum := 0.0
		for c := range h.channels {
			at := i*h.align + c*h.width
			sum += h.sample(h.pcm[at : at+h.width])
		}
		out[i] = float32(sum / float64(h.channels))
	}
	return &signal{rate: h.rate, samples: out}
}

// readWAVHeader reads and checks a WAV file's chunks without reading a
// sample.
func readWAVHeader(data []byte) (*wavHeader, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("is empty (0 bytes); a clip is a WAV (RIFF/WAVE) file")
	}
	if len(data) < 12 || string(data[:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return nil, fmt.Errorf("is not a WAV file (no RIFF/WAVE header); read %s", sniff(data))
	}
	var (
		format, channels, bits, align int
		rate                          int
		haveFmt                       bool
		pcm                           []byte
		havePCM                       bool
	)
	for at := 12; at+8 <= len(data) && !havePCM; {
		id, size := string(data[at:at+4]), int64(binary.LittleEndian.Uint32(data[at+4:at+8]))
		body := int64(at + 8)
		rest := int64(len(data)) - body
		if size > rest {
			if id != "data" || size != 0xFFFFFFFF && size != 0 {
				return nil, fmt.Errorf("is a truncated WAV file: chunk %q at byte %d declares %d bytes, but %d remain", id, at, size, rest)
			}
			size = rest // a streamed data chunk of unknown size runs to the end
		}
		chunk := data[body : body+size]
		switch id {
		case "fmt ":
			if len(chunk) < 16 {
				return nil, fmt.Errorf("is a WAV file whose fmt chunk holds %d bytes; it holds at least 16", len(chunk))
			}
			format = int(binary.LittleEndian.Uint16(chunk[0:2]))
			channels = int(binary.LittleEndian.Uint16(chunk[2:4]))
			rate = int(binary.LittleEndian.Uint32(chunk[4:8]))
			align = int(binary.LittleEndian.Uint16(chunk[12:14]))
			bits = int(binary.LittleEndian.Uint16(chunk[14:16]))
			if format == wavExtensible && len(chunk) >= 26 {
				format = int(binary.LittleEndian.Uint16(chunk[24:26])) // the sub-format GUID's first two bytes
			}
			haveFmt = true
		case "data":
			pcm, havePCM = chunk, true
		}
		at = int(body + size + size%2) // chunks are padded to even sizes
	}
	switch {
	case !haveFmt:
		return nil, fmt.Errorf("is a WAV file without a fmt chunk before its samples")
	case !havePCM:
		return nil, fmt.Errorf("is a WAV file without a data chunk")
	case channels < 1 || rate < 1:
		return nil, fmt.Errorf("is a WAV file of %d channel(s) at %d Hz; it needs at least one channel and a positive rate", channels, rate)
	}
	sample, err := sampleReader(format, bits)
	if err != nil {
		return nil, err
	}
	if align != channels*bits/8 {
		return nil, fmt.Errorf("is a WAV file whose block align is %d bytes, but %d channel(s) of %d bits take %d", align, channels, bits, channels*bits/8)
	}
	if len(pcm)%align != 0 {
		return nil, fmt.Errorf("is a WAV file whose data chunk holds %d bytes, not a whole number of %d-byte sample frames", len(pcm), align)
	}
	return &wavHeader{rate: rate, channels: channels, align: align, width: bits / 8, sample: sample, pcm: pcm,
		pcm16: format == wavPCM && bits == 16}, nil
}

// sampleReader returns the decoder of one sample of a WAV format.
func sampleReader(format, bits int) (func([]byte) float64, error) {
	switch {
	case format == wavPCM && bits == 8:
		return func(b []byte) float64 { return (float64(b[0]) - 128) / 128 }, nil
	case format == wavPCM && bits == 16:
		return func(b []byte) float64 { return float64(int16(binary.LittleEndian.Uint16(b))) / (1 << 15) }, nil
	case format == wavPCM && bits == 24:
		return func(b []byte) float64 {
			v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
			return float64(v) / (1 << 23)
		}, nil
	case format == wavPCM && bits == 32:
		return func(b []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(b))) / (1 << 31) }, nil
	case format == wavFloat && bits == 32:
		return func(b []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }, nil
	case format == wavFloat && bits == 64:
		return func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }, nil
	}
	return nil, fmt.Errorf("is a WAV file of format %d with %d-bit samples; the audio adapter reads PCM (format 1) of 8, 16, 24 or 32 bits and IEEE float (format 3) of 32 or 64 bits", format, bits)
}

// frameSignal cuts a clip's samples, or its frames as rows, into windows
// of f.Window every f.Hop, f.Count of them: the last zero-padded past the
// end, or only whole windows. Each window records its valid samples or
// rows.
func frameSignal(s *signal, f preprocess.Framing) *signal {
	n, width, src := s.units(), s.width(), s.values()
	windows := f.Count(n)
	out := &signal{rate: s.rate, framed: true, window: f.Window, frames: windows,
		data: make([]float32, windows*f.Window*width), valid: make([]int64, windows)}
	if s.framed {
		out.row = s.window
	}
	for w := range windows {
		lo := w * f.Hop
		hi := min(lo+f.Window, n)
		copy(out.data[w*f.Window*width:], src[lo*width:hi*width])
		out.valid[w] = int64(hi - lo)
	}
	return out
}

// padOrTrim gives a clip exactly length samples, frames or windows: the
// first length of them, then zeros. A padded frame or window has no valid
// values.
func padOrTrim(s *signal, length int) *signal {
	vals := make([]float32, length*s.width())
	copy(vals, s.values())
	out := s.withValues(vals)
	if s.framed {
		out.frames = length
		out.valid = make([]int64, length)
		copy(out.valid, s.valid)
	}
	return out
}

// affine maps every value x of a clip to x·scale + offset, rounded once to
// float32.
func affine(s *signal, scale, offset float64) *signal {
	in := s.values()
	vals := make([]float32, len(in))
	for i, v := range in {
		vals[i] = float32(float64(v)*scale + offset)
	}
	return s.withValues(vals)
}

// standardize is the clip's samples less their mean, over the square root
// of their variance plus eps, both taken in float64 (a clip of no samples
// stays empty).
func standardize(s *signal, eps float64) *signal {
	in := s.samples
	if len(in) == 0 {
		return s
	}
	var sum float64
	for _, v := range in {
		sum += float64(v)
	}
	mean := sum / float64(len(in))
	var squares float64
	for _, v := range in {
		d := float64(v) - mean
		squares += d * d
	}
	scale := 1 / math.Sqrt(squares/float64(len(in))+eps)
	vals := make([]float32, len(in))
	for i, v := range in {
		vals[i] = float32((float64(v) - mean) * scale)
	}
	return s.withValues(vals)
}

// product is a·b·c, or math.MaxInt64 when it exceeds it, for the bounds
// that are checked before anything is allocated.
func product(a, b, c int64) int64 {
	hi, ab := bits.Mul64(uint64(a), uint64(b))
	hi2, abc := bits.Mul64(ab, uint64(c))
	if hi != 0 || hi2 != 0 || abc > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(abc)
}

// audioOp is one compiled audio transform.
type audioOp struct {
	op      string
	in, out string
	apply   func(*signal) (*signal, error) // nil for decode
	// size, for an op that changes a clip's extent, is the extent it
	// makes of a clip (nil: the clip's own).
	size func(clipExtent) clipExtent
	// work, for mel_spectrogram, is how many windowed samples its
	// transforms read of a clip (frames × n_fft).
	work func(clipExtent) int64
}

// workFactor bounds the samples an op may read per clip (the STFT's
// frames × n_fft) at this many times the values a clip may hold.
const workFactor = 4

// audioProgram is a compiled preprocessing.audio program.
type audioProgram struct {
	ops    []audioOp
	shapes map[string]preprocess.Shape
	last   string
}

// compileAudio builds the audio program the adapter runs from the compiled
// program, with the adapter's kernels.
func compileAudio(cp *preprocess.Program) *audioProgram {
	p := &audioProgram{shapes: cp.Shapes, last: cp.Last}
	for _, op := range cp.Ops {
		x := audioOp{op: op.Name, in: op.In, out: op.Out}
		if k := audioKernels[op.Name]; k != nil {
			x.apply, x.size = k(op)
		}
		if op.Name == "mel_spectrogram" {
			m := op.Mel()
			x.work = func(e clipExtent) int64 { return int64(m.Frames(e.units)) * int64(m.NFFT) }
		}
		p.ops = append(p.ops, x)
	}
	return p
}

// audioKernel makes the kernel of an op from its parsed parameters, and
// for an op that changes a clip's extent, the extent it makes of a clip,
// so that run refuses a clip too large before the kernel allocates.
type audioKernel func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent)

// audioKernels are the kernels of the ops the audio adapter runs on one
// clip, decode aside.
var audioKernels = map[string]audioKernel{
	"resample": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		rate := op.Ints("sample_rate")
		return func(x *signal) (*signal, error) { return resamplePoly(x, rate, op.Index) }, func(e clipExtent) clipExtent {
			if e.rate != rate {
				up, down := resampleRatio(e.rate, rate)
				e.units = int(min(resampledLength(e.units, up, down), math.MaxInt))
			}
			e.rate = rate
			return e
		}
	},
	"frame": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		f := op.Framing()
		return func(x *signal) (*signal, error) { return frameSignal(x, f), nil }, func(e clipExtent) clipExtent {
			out := clipExtent{rate: e.rate, framed: true, window: f.Window, units: f.Count(e.units)}
			if e.framed {
				out.row = e.window
			}
			return out
		}
	},
	"mel_spectrogram": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		b := newMelBank(op.Mel())
		return func(x *signal) (*signal, error) { return b.melSpectrogram(x, op.Index) }, func(e clipExtent) clipExtent {
			return clipExtent{rate: e.rate, framed: true, window: b.NMels, units: b.Frames(e.units)}
		}
	},
	"log":   logKernel,
	"log10": logKernel,
	"affine": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		scale, offset := op.Affine()
		return func(x *signal) (*signal, error) { return affine(x, scale, offset), nil }, nil
	},
	"standardize": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		eps := op.Epsilon()
		return func(x *signal) (*signal, error) { return standardize(x, eps), nil }, nil
	},
	"pad_or_trim": func(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
		length := op.Ints("length")
		return func(x *signal) (*signal, error) { return padOrTrim(x, length), nil }, func(e clipExtent) clipExtent {
			e.units = length
			return e
		}
	},
}

func logKernel(op *preprocess.Op) (func(*signal) (*signal, error), func(clipExtent) clipExtent) {
	l := newLog(op)
	return func(x *signal) (*signal, error) { return l.apply(x), nil }, nil
}

// run decodes one clip and runs the program on it, returning the values
// keep names. No value may hold more than maxValues samples.
func (p *audioProgram) run(data []byte, maxValues int64, keep []string) ([]*signal, error) {
	env := map[string]*signal{}
	for i, op := range p.ops {
		if op.apply == nil {
			h, err := readWAV(data, maxValues)
			if err != nil {
				return nil, err
			}
			env[op.out] = h.decode()
			continue
		}
		in := env[op.in]
		if _, err := p.admits(i, in.extent(), maxValues); err != nil {
			return nil, err
		}
		x, err := op.apply(in)
		if err != nil {
			return nil, err
		}
		env[op.out] = x
	}
	out := make([]*signal, len(keep))
	for i, k := range keep {
		out[i] = env[k]
	}
	return out, nil
}

// footprint is the most memory run takes for one clip, read off its WAV
// header without decoding a sample: every value the program makes
// (clipExtent.bytes), the decoded samples first, all counted as if alive
// at once. What run refuses for its size, footprint refuses too.
func (p *audioProgram) footprint(data []byte, maxValues int64) (int64, error) {
	_, bytes, err := p.walk(data, maxValues)
	return bytes, err
}

// extents are the extents of the values keep names that run makes of one
// clip, read off its WAV header as footprint reads them.
func (p *audioProgram) extents(data []byte, maxValues int64, keep []string) ([]clipExtent, error) {
	env, _, err := p.walk(data, maxValues)
	if err != nil {
		return nil, err
	}
	out := make([]clipExtent, len(keep))
	for i, k := range keep {
		out[i] = env[k]
	}
	return out, nil
}

// walk is the extent of every value the program makes of one clip, read
// off its WAV header, and their bytes all together.
func (p *audioProgram) walk(data []byte, maxValues int64) (map[string]clipExtent, int64, error) {
	env := map[string]clipExtent{}
	var bytes int64
	for i, op := range p.ops {
		var e clipExtent
		if op.apply == nil {
			h, err := readWAV(data, maxValues)
			if err != nil {
				return nil, 0, err
			}
			e = clipExtent{rate: h.rate, units: h.frames()}
		} else {
			var err error
			if e, err = p.admits(i, env[op.in], maxValues); err != nil {
				return nil, 0, err
			}
		}
		env[op.out] = e
		bytes += e.bytes()
	}
	return env, bytes, nil
}

// readWAV reads a clip's WAV header, refusing a clip of more than
// maxValues samples.
func readWAV(data []byte, maxValues int64) (*wavHeader, error) {
	h, err := readWAVHeader(data)
	if err != nil {
		return nil, err
	}
	if n := h.frames(); int64(n) > maxValues {
		return nil, fmt.Errorf("holds %d samples, more than the %d this adapter holds", n, maxValues)
	}
	return h, nil
}

// admits returns the extent transform i makes of a clip of extent in, or
// why run refuses it before the kernel allocates: the result would hold
// more than maxValues values, or the transform would read more than
// workFactor × maxValues windowed samples.
func (p *audioProgram) admits(i int, in clipExtent, maxValues int64) (clipExtent, error) {
	op := p.ops[i]
	out := in
	if op.size != nil {
		out = op.size(in)
		if v := out.values(); v > maxValues {
			return out, fmt.Errorf("holds %d %s before transform %d (%s), which would make %d values of them, more than the %d this adapter holds", in.units, in.unitWord(), i, op.op, v, maxValues)
		}
	}
	if op.work != nil {
		if w := op.work(in); w > workFactor*maxValues {
			return out, fmt.Errorf("holds %d samples, which transform %d (%s) reads as %d windowed samples (frames × n_fft), more than the %d this adapter reads per clip; use a longer hop_length or shorter clips", in.units, i, op.op, w, workFactor*maxValues)
		}
	}
	return out, nil
}
