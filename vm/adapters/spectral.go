package adapters

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/genaic/genaic/preprocess"
)

// melBank is a compiled mel_spectrogram: its window, padded to n_fft and
// centred in it, and its filter bank of n_mels bands over the n_fft/2+1 bins.
type melBank struct {
	preprocess.Mel
	window []float64
	// bank holds each band's non-zero weights, those of bins lo[m] to
	// hi[m]: a bin lies in at most two bands, so the bank holds about
	// twice the bins whatever n_mels, and a frame costs as much.
	bank   [][]float64
	lo, hi []int
	// work holds *melWork: a transform of n_fft samples is a plan of its
	// twiddles, made once, and buffers it writes, so one clip at a time
	// uses it.
	work sync.Pool
}

// melWork is what one clip's frames are transformed in.
type melWork struct {
	fft       powerSpectrum
	seq, spec []float64
}

func newMelBank(m preprocess.Mel) *melBank {
	b := &melBank{Mel: m, window: make([]float64, m.NFFT)}
	b.work.New = func() any {
		return &melWork{fft: newPowerSpectrum(m.NFFT), seq: make([]float64, m.NFFT), spec: make([]float64, m.NFFT/2+1)}
	}
	// A periodic Hann window of win_length samples, centred in n_fft.
	left := (m.NFFT - m.Win) / 2
	for i := range m.Win {
		b.window[left+i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(m.Win))
	}
	bins := m.NFFT/2 + 1
	// n_mels+2 points evenly spaced on the mel scale over f_min..f_max;
	// band i rises from point i to i+1 and falls to i+2.
	toMel, toHz := slaneyMel, slaneyHz
	if m.HTK {
		toMel, toHz = htkMel, htkHz
	}
	lo, hi := toMel(m.FMin), toMel(m.FMax)
	pts := make([]float64, m.NMels+2)
	for i := range pts {
		pts[i] = toHz(lo + (hi-lo)*float64(i)/float64(m.NMels+1))
	}
	b.bank = make([][]float64, m.NMels)
	b.lo, b.hi = make([]int, m.NMels), make([]int, m.NMels)
	row := make([]float64, bins)
	for i := range m.NMels {
		clear(row)
		b.lo[i], b.hi[i] = bins, 0
		scale := 1.0
		if m.Norm {
			scale = 2 / (pts[i+2] - pts[i]) // Slaney: each band of unit area
		}
		for k := range bins {
			f := float64(k) * float64(m.SampleRate) / float64(m.NFFT)
			up := (f - pts[i]) / (pts[i+1] - pts[i])
			down := (pts[i+2] - f) / (pts[i+2] - pts[i+1])
			if w := max(0, min(up, down)); w > 0 {
				row[k] = w * scale
				b.lo[i], b.hi[i] = min(b.lo[i], k), k+1
			}
		}
		b.lo[i] = min(b.lo[i], b.hi[i])
		b.bank[i] = slices.Clone(row[b.lo[i]:b.hi[i]])
	}
	return b
}

// The Slaney (Auditory Toolbox) mel scale: linear below 1 kHz, logarithmic
// above; and the HTK scale 2595·log10(1 + f/700).
const (
	slaneyStep    = 200.0 / 3
	slaneyKnee    = 1000.0
	slaneyKneeMel = slaneyKnee / slaneyStep
)

var slaneyLogStep = math.Log(6.4) / 27

func slaneyMel(f float64) float64 {
	if f >= slaneyKnee {
		return slaneyKneeMel + math.Log(f/slaneyKnee)/slaneyLogStep
	}
	return f / slaneyStep
}

func slaneyHz(m float64) float64 {
	if m >= slaneyKneeMel {
		return slaneyKnee * math.Exp(slaneyLogStep*(m-slaneyKneeMel))
	}
	return m * slaneyStep
}

func htkMel(f float64) float64 { return 2595 * math.Log10(1+f/700) }
func htkHz(m float64) float64  { return 700 * (math.Pow(10, m/2595) - 1) }

// melSpectrogram computes the clip's [frames, n_mels] mel spectrogram.
func (b *melBank) melSpectrogram(x *signal, index int) (*signal, error) {
	if x.rate != b.SampleRate {
		return nil, fmt.Errorf("is sampled at %d Hz, but transform %d (mel_spectrogram) computes mel bands for %d Hz; resample it first (an earlier resample transform to %d Hz), or supply audio at %d Hz",
			x.rate, index, b.SampleRate, b.SampleRate, b.SampleRate)
	}
	n := len(x.samples)
	frames := b.Frames(n)
	out := &signal{rate: x.rate, framed: true, window: b.NMels, frames: frames,
		data: make([]float32, frames*b.NMels), valid: make([]int64, frames)}
	if frames == 0 {
		return out, nil
	}
	pad := 0 // uncentred frames start at the first sample
	if b.Center {
		pad = b.NFFT / 2
	}
	at := func(j int) float64 { // sample j of the padded signal
		i := j - pad
		if i >= 0 && i < n {
			return float64(x.samples[i])
		}
		if !b.Reflect {
			return 0
		}
		return float64(x.samples[reflect(i, n)])
	}
	work := b.work.Get().(*melWork)
	defer b.work.Put(work)
	seq, spec := work.seq, work.spec
	for f := range frames {
		if first := f*b.Hop - pad; first >= 0 && first+len(seq) <= n {
			// Within the clip: no padding to read.
			for k, v := range x.samples[first : first+len(seq)] {
				seq[k] = float64(v) * b.window[k]
			}
		} else {
			for k := range seq {
				seq[k] = at(f*b.Hop+k) * b.window[k]
			}
		}
		work.fft.power(spec, seq)
		switch b.Power {
		case 2:
		case 1:
			for k, p := range spec {
				spec[k] = math.Sqrt(p)
			}
		default:
			for k, p := range spec {
				spec[k] = math.Pow(p, b.Power/2)
			}
		}
		row := out.data[f*b.NMels : (f+1)*b.NMels]
		for m, w := range b.bank {
			sum := 0.0
			for k, v := range spec[b.lo[m]:b.hi[m]] {
				sum += w[k] * v
			}
			row[m] = float32(sum)
		}
		out.valid[f] = int64(b.NMels)
	}
	return out, nil
}

// reflect maps an index outside [0, n) into it by mirroring about the end
// samples without repeating them, as often as the padding needs (numpy's
// "reflect"); a clip of one sample repeats it.
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	period := 2 * (n - 1)
	i %= period
	if i < 0 {
		i += period
	}
	if i >= n {
		i = period - i
	}
	return i
}

// logOf is a compiled log: log_base(max(x + offset, floor)), then raised to
// at least the clip's maximum less dynamic_range.
type logOf struct {
	offset, floor float64
	base          float64 // 0 for e
	dynamicRange  float64 // 0 for none
}

func newLog(op *preprocess.Op) *logOf {
	l := &logOf{floor: 1e-10}
	l.offset, _ = op.Number("offset")
	if v, ok := op.Number("floor"); ok {
		l.floor = v
	}
	l.base, _ = op.Number("base")
	if op.Name == "log10" {
		l.base = 10
	}
	l.dynamicRange, _ = op.Number("dynamic_range")
	return l
}

func (l *logOf) apply(x *signal) *signal {
	in := x.values()
	vals := make([]float32, len(in))
	top := math.Inf(-1)
	for i, v := range in {
		y := max(float64(v)+l.offset, l.floor)
		switch l.base {
		case 0:
			y = math.Log(y)
		case 10:
			y = math.Log10(y)
		case 2:
			y = math.Log2(y)
		default:
			y = math.Log(y) / math.Log(l.base)
		}
		vals[i] = float32(y)
		top = max(top, float64(vals[i]))
	}
	if l.dynamicRange > 0 {
		least := float32(top - l.dynamicRange)
		for i, v := range vals {
			vals[i] = max(v, least)
		}
	}
	return x.withValues(vals)
}

// maxResampleRatio bounds up and down of a rate conversion, reduced, and so
// the filter's length (20·max(up, down)+1 taps).
const maxResampleRatio = 4096

// resampleRatio reduces to/from to up/down.
func resampleRatio(from, to int) (up, down int) {
	a, b := to, from
	for b != 0 {
		a, b = b, a%b
	}
	return to / a, from / a
}

// resampledLength is how many samples n samples make when resampled by
// up/down: ceil(n·up/down).
func resampledLength(n, up, down int) int64 {
	return (int64(n)*int64(up) + int64(down) - 1) / int64(down)
}

// resamplePoly converts x to rate by scipy.signal.resample_poly's method:
// upsample by up, low-pass with a Kaiser-windowed sinc (β = 5, cutoff at the
// lower of the two Nyquist rates, 20·max(up, down)+1 taps, unit DC gain
// times up), downsample by down, the filter's delay removed.
func resamplePoly(x *signal, rate, index int) (*signal, error) {
	if x.rate == rate {
		return x, nil
	}
	up, down := resampleRatio(x.rate, rate)
	if max(up, down) > maxResampleRatio {
		return nil, fmt.Errorf("is sampled at %d Hz, and transform %d (resample) to %d Hz would take a %d/%d polyphase filter; the audio adapter converts ratios whose terms are at most %d, so supply audio at a common rate (8000, 16000, 22050, 44100 or 48000 Hz)",
			x.rate, index, rate, up, down, maxResampleRatio)
	}
	f := lowpass(up, down)
	n := len(x.samples)
	nOut := int(resampledLength(n, up, down))
	out := make([]float32, nOut)
	// y[m] = Σ_i x[i]·h[half + m·down − i·up], over the taps in range:
	// with t = half + m·down = q·up + p, the taps of phase p, reversed,
	// the one x[i] meets at i − (q − their count + 1). t grows by down
	// from one output to the next, and q and p with it, without dividing.
	q, p := f.half/up, f.half%up
	dq, dp := down/up, down%up
	for m := range nOut {
		phase := f.phases[p]
		first := q - len(phase) + 1
		if lo, hi := max(0, first), min(n-1, q)+1; lo < hi {
			out[m] = float32(dot(x.samples[lo:hi], phase[lo-first:hi-first]))
		}
		q, p = q+dq, p+dp
		if p >= up {
			q, p = q+1, p-up
		}
	}
	return &signal{rate: rate, samples: out}, nil
}

// dot is Σ x[i]·h[i] in float64, over len(x) ≤ len(h) terms, summed in
// four interleaved partial sums: one sum waits on each addition before
// the next, four keep the processor's adders busy.
func dot(x []float32, h []float64) float64 {
	h = h[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * h[i]
		s1 += float64(x[i+1]) * h[i+1]
		s2 += float64(x[i+2]) * h[i+2]
		s3 += float64(x[i+3]) * h[i+3]
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * h[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// A polyphase is resample_poly's filter (kaiserLowpass) of one ratio cut
// into its up phases: phase p holds the taps h[p], h[p + up], ..., in
// reverse, so that the samples and the taps they meet are read in one
// direction, each from contiguous memory.
type polyphase struct {
	half   int // the filter's delay: its taps are 2·half + 1
	phases [][]float64
}

func newPolyphase(up, down int) *polyphase {
	h := kaiserLowpass(up, down)
	f := &polyphase{half: (len(h) - 1) / 2, phases: make([][]float64, up)}
	for p := range f.phases {
		var taps []float64
		for j := p; j < len(h); j += up {
			taps = append(taps, h[j])
		}
		slices.Reverse(taps)
		f.phases[p] = taps
	}
	return f
}

// lowpasses keeps the filters resamplePoly has designed, by ratio (up,
// down): designing one takes longer than resampling a second of audio
// with it, and clips come at a few rates. It holds at
// most maxLowpasses filters, so that clips of ever new rates cannot grow
// it; a ratio past those gets its filter designed at each call.
var lowpasses struct {
	sync.Mutex
	filters map[[2]int]*polyphase
}

const maxLowpasses = 16

// lowpass is the polyphase of kaiserLowpass(up, down), designed once for
// the first maxLowpasses ratios; callers only read it.
func lowpass(up, down int) *polyphase {
	key := [2]int{up, down}
	lowpasses.Lock()
	f := lowpasses.filters[key]
	lowpasses.Unlock()
	if f != nil {
		return f
	}
	f = newPolyphase(up, down)
	lowpasses.Lock()
	if lowpasses.filters == nil {
		lowpasses.filters = map[[2]int]*polyphase{}
	}
	if len(lowpasses.filters) < maxLowpasses {
		lowpasses.filters[key] = f
	}
	lowpasses.Unlock()
	return f
}

// kaiserLowpass is resample_poly's filter: scipy's firwin(2·half+1,
// 1/max(up, down), window=("kaiser", 5)), scaled to unit gain at DC, times
// up, where half = 10·max(up, down).
func kaiserLowpass(up, down int) []float64 {
	const beta = 5.0
	r := max(up, down)
	half := 10 * r
	taps := 2*half + 1
	cut := 1 / float64(r)
	h := make([]float64, taps)
	norm := besselI0(beta)
	sum := 0.0
	for i := range h {
		t := float64(i - half)
		s := cut
		if t != 0 {
			s = math.Sin(math.Pi*cut*t) / (math.Pi * t)
		}
		ratio := 2*float64(i)/float64(taps-1) - 1
		w := besselI0(beta*math.Sqrt(max(0, 1-ratio*ratio))) / norm
		h[i] = s * w
		sum += h[i]
	}
	for i := range h {
		h[i] *= float64(up) / sum
	}
	return h
}

// besselI0 is the modified Bessel function of the first kind of order 0,
// by its power series Σ ((x/2)^k / k!)², which converges fast for the
// arguments a Kaiser window of β ≤ 5 takes.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 100; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}
