package adapters

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/genaic/genaic/preprocess"
)

// signal is one audio clip: mono samples, or after `frame`, frames of a
// fixed window with the valid samples of each.
type signal struct {
	rate    int
	samples []float32 // unframed
	framed  bool
	window  int
	frames  int
	data    []float32 // framed: frames×window, row-major
	valid   []int64   // framed: the valid samples of each frame
}

// units is the clip's extent on its first axis: samples, or frames.
func (s *signal) units() int {
	if s.framed {
		return s.frames
	}
	return len(s.samples)
}

// values is the clip's payload.
func (s *signal) values() []float32 {
	if s.framed {
		return s.data
	}
	return s.samples
}

// WAV format tags.
const (
	wavPCM        = 1
	wavFloat      = 3
	wavExtensible = 0xFFFE
)

// decodeWAV reads a RIFF/WAVE file of PCM (8-bit unsigned, 16-, 24- or
// 32-bit signed) or IEEE float (32- or 64-bit) samples and mixes its
// channels to mono by their mean, scaled to [-1, 1].
func decodeWAV(data []byte) (*signal, error) {
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
	n, width := len(pcm)/align, bits/8
	out := make([]float32, n)
	for i := range n {
		sum := 0.0
		for c := range channels {
			at := i*align + c*width
			sum += sample(pcm[at : at+width])
		}
		out[i] = float32(sum / float64(channels))
	}
	return &signal{rate: rate, samples: out}, nil
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

// frameSignal cuts samples into windows of window samples every hop
// samples, enough to cover every sample: a clip of n > 0 samples makes
// 1 + ceil(max(n - window, 0) / hop) frames, the last zero-padded past the
// end, and each frame records its valid samples.
func frameSignal(s *signal, window, hop int) *signal {
	n := len(s.samples)
	frames := 0
	if n > 0 {
		frames = 1 + (max(n-window, 0)+hop-1)/hop
	}
	out := &signal{rate: s.rate, framed: true, window: window, frames: frames,
		data: make([]float32, frames*window), valid: make([]int64, frames)}
	for f := range frames {
		lo := f * hop
		hi := min(lo+window, n)
		copy(out.data[f*window:], s.samples[lo:hi])
		out.valid[f] = int64(hi - lo)
	}
	return out
}

// audioShape is what Load knows of an audio value.
type audioShape struct {
	framed bool
	window int
}

// audioOp is one compiled audio transform.
type audioOp struct {
	op      string
	in, out string
	apply   func(*signal) (*signal, error) // nil for decode
	// values, for an op that makes more values than it reads, is how many
	// it makes of a clip.
	values func(x *signal) int64
	// work, for mel_spectrogram, is how many windowed samples its
	// transforms read of a clip (frames × n_fft).
	work func(x *signal) int64
}

// workFactor bounds the samples an op may read per clip (the STFT's
// frames × n_fft) at this many times the values a clip may hold.
const workFactor = 4

// audioProgram is a compiled preprocessing.audio program.
type audioProgram struct {
	ops    []audioOp
	shapes map[string]audioShape
	last   string
}

// compileAudio builds the audio program the adapter runs from the compiled
// program, with the adapter's kernels.
func compileAudio(cp *preprocess.Program) *audioProgram {
	p := &audioProgram{shapes: map[string]audioShape{}, last: cp.Last}
	for _, op := range cp.Ops {
		x := audioOp{op: op.Name, in: op.In, out: op.Out}
		if k := audioKernels[op.Name]; k != nil {
			x.apply, x.values = k(op)
		}
		if op.Name == "mel_spectrogram" {
			b := op.Mel()
			x.work = func(s *signal) int64 {
				return int64(melFrameCount(b, len(s.samples))) * int64(b.NFFT)
			}
		}
		p.ops = append(p.ops, x)
	}
	for name, s := range cp.Shapes {
		p.shapes[name] = audioShape{framed: s.Framed, window: s.Window}
	}
	return p
}

// audioKernels makes the kernel of each op the audio adapter runs on one
// clip (decode aside), and for an op that makes more values than it reads,
// how many it makes of a clip, so that run refuses a clip too large before
// the kernel allocates.
var audioKernels = map[string]func(op *preprocess.Op) (func(*signal) (*signal, error), func(*signal) int64){
	"resample": func(op *preprocess.Op) (func(*signal) (*signal, error), func(*signal) int64) {
		rate := op.Ints("sample_rate")
		return func(x *signal) (*signal, error) { return resamplePoly(x, rate, op.Index) }, func(x *signal) int64 {
			if x.rate == rate {
				return int64(len(x.samples))
			}
			up, down := resampleRatio(x.rate, rate)
			return resampledLength(len(x.samples), up, down)
		}
	},
	"frame": func(op *preprocess.Op) (func(*signal) (*signal, error), func(*signal) int64) {
		window := op.Ints("window")
		hop, ok := op.Int("hop")
		if !ok {
			hop = window
		}
		return func(x *signal) (*signal, error) { return frameSignal(x, window, hop), nil }, func(x *signal) int64 {
			n := len(x.samples)
			if n == 0 {
				return 0
			}
			return int64(1+(max(n-window, 0)+hop-1)/hop) * int64(window)
		}
	},
	"mel_spectrogram": func(op *preprocess.Op) (func(*signal) (*signal, error), func(*signal) int64) {
		b := newMelBank(op.Mel())
		return func(x *signal) (*signal, error) { return b.melSpectrogram(x, op.Index) }, func(x *signal) int64 {
			return int64(b.melFrames(len(x.samples))) * int64(b.NMels)
		}
	},
	"log": func(op *preprocess.Op) (func(*signal) (*signal, error), func(*signal) int64) {
		l := newLog(op)
		return func(x *signal) (*signal, error) { return l.apply(x), nil }, nil
	},
}

// run decodes one clip and runs the program on it, returning the values
// keep names. No value may hold more than maxValues samples.
func (p *audioProgram) run(data []byte, maxValues int64, keep []string) ([]*signal, error) {
	env := map[string]*signal{}
	for i, op := range p.ops {
		in := env[op.in]
		if op.apply == nil {
			x, err := decodeWAV(data)
			if err != nil {
				return nil, err
			}
			if int64(len(x.samples)) > maxValues {
				return nil, fmt.Errorf("holds %d samples, more than the %d this adapter holds", len(x.samples), maxValues)
			}
			env[op.out] = x
			continue
		}
		if op.values != nil {
			if v := op.values(in); v > maxValues {
				return nil, fmt.Errorf("holds %d samples, which transform %d (%s) makes %d values, more than the %d this adapter holds", len(in.samples), i, op.op, v, maxValues)
			}
		}
		if op.work != nil {
			if w := op.work(in); w > workFactor*maxValues {
				return nil, fmt.Errorf("holds %d samples, which transform %d (%s) reads as %d windowed samples (frames × n_fft), more than the %d this adapter reads per clip; use a longer hop_length or shorter clips", len(in.samples), i, op.op, w, workFactor*maxValues)
			}
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
