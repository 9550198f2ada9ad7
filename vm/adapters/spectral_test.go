package adapters

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// logMel is decode → mel_spectrogram (16 kHz, n_fft 16, hop 8, 4 bands) →
// log, the log-mel named a.frames as audioFixture's port reads it.
func logMel() []ir.Transform {
	return []ir.Transform{
		op("decode", "", "a.decoded"),
		op("mel_spectrogram", "a.decoded", "a.mel", "sample_rate", "16000", "n_fft", "16", "hop_length", "8", "n_mels", "4"),
		op("log", "a.mel", "a.frames", "base", "10", "dynamic_range", "8.0"),
	}
}

func noise(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round((rng.Float64()-0.5)*16384) / 32768
	}
	return out
}

// Clips of different lengths pack their [frames, n_mels] log-mel rows
// with both levels' companions, each clip's rows those of the clip alone,
// every frame of n_mels valid values.
func TestLogMelPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	lens := []int{40, 0, 17, 1}
	var clips [][]byte
	for _, n := range lens {
		clips = append(clips, wav(16000, wavPCM, 16, mono(noise(rng, n)...)))
	}
	out := run(t, audioFixture(logMel()).load(t), request(clips...), "frames", "frame_offsets", "frame_owner", "clip_offsets", "frame_valid")
	// Centred frames: 1 + n/hop for a clip of n > 0 samples.
	frames := []int64{0}
	for _, n := range lens {
		f := int64(0)
		if n > 0 {
			f = 1 + int64(n)/8
		}
		frames = append(frames, frames[len(frames)-1]+f)
	}
	wantShape(t, "frames", out["frames"], frames[len(frames)-1], 4)
	wantInts(t, "frame_offsets", out["frame_offsets"], frames...)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, int64(len(lens)))
	for i, v := range out["frame_valid"].Int64s() {
		if v != 4 {
			t.Fatalf("frame_valid[%d] = %d, want 4 (every band of a frame is valid)", i, v)
		}
	}
	got := out["frames"].Float32s()
	for c, clip := range clips {
		alone := audioRun(t, clip, []string{"a.frames"}, logMel()...)[0].data
		if !slices.Equal(got[frames[c]*4:frames[c+1]*4], alone) {
			t.Errorf("clip %d: packed rows %v, the clip alone %v", c, got[frames[c]*4:frames[c+1]*4], alone)
		}
	}
}

// Stacked log-mel pads the frames of shorter clips with zeros and reports
// each clip's frames.
func TestLogMelStacked(t *testing.T) {
	f := audioFixture(logMel())
	feats := contract("float32", dims("clips", "frames", 4))
	feats.Padding = []ir.Padding{{Dim: ir.Ref{Name: "frames"}, Lengths: ir.Ref{Name: "lengths"}}}
	f.comp.Outputs = []*ir.Port{{Name: "features", Contract: feats}, {Name: "lengths", Contract: contract("int64", dims("clips"))}}
	f.prog.Outputs = []ir.ProgramOutput{{Name: "features", Content: "features"}, {Name: "lengths", Content: "frame_lengths"}}
	rng := rand.New(rand.NewPCG(15, 2))
	short, long := wav(16000, wavPCM, 16, mono(noise(rng, 9)...)), wav(16000, wavPCM, 16, mono(noise(rng, 30)...))
	out := run(t, f.load(t), request(short, long), "features", "lengths")
	wantShape(t, "features", out["features"], 2, 4, 4)
	wantInts(t, "lengths", out["lengths"], 2, 4)
	got := out["features"].Float32s()
	if !slices.Equal(got[:8], audioRun(t, short, []string{"a.frames"}, logMel()...)[0].data) || slices.ContainsFunc(got[8:16], func(v float32) bool { return v != 0 }) {
		t.Errorf("the short clip's rows are %v, want its 2 frames then zeros", got[:16])
	}
}

// A clip at another rate than mel_spectrogram's fails with run/input; a
// resample before it converts the clip instead.
func TestMelRate(t *testing.T) {
	clip := wav(8000, wavPCM, 16, mono(0.5, -0.5, 0.25, 0))
	_, err := audioFixture(logMel()).load(t).Run(context.Background(), request(clip), nil)
	wantRunError(t, err, "run/input", "8000 Hz", "transform 1 (mel_spectrogram)", "resample it first")
	ts := append([]ir.Transform{op("decode", "", "a.raw"), op("resample", "a.raw", "a.decoded", "sample_rate", "16000")}, logMel()[1:]...)
	out := run(t, audioFixture(ts).load(t), request(clip), "frames")
	wantShape(t, "frames", out["frames"], 2, 4) // 8 samples at 16 kHz
}

// A clip whose features would exceed the adapter's bound, or whose STFT
// would read too many samples, is refused before the kernel allocates.
func TestMelBounds(t *testing.T) {
	ts := logMel()
	ts[1] = op("mel_spectrogram", "a.decoded", "a.mel", "sample_rate", "16000", "n_fft", "16", "hop_length", "2", "n_mels", "4")
	f := audioFixture(ts)
	b := New(f.m)
	b.MaxSamples = 40
	s, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), request(wav(16000, wavPCM, 16, mono(make([]float64, 40)...))), nil)
	wantRunError(t, err, "run/input", "40 samples", "transform 1 (mel_spectrogram)", "84 values")
	ts[1] = op("mel_spectrogram", "a.decoded", "a.mel", "sample_rate", "16000", "n_fft", "4096", "hop_length", "1", "n_mels", "4")
	f = audioFixture(ts)
	b = New(f.m)
	b.MaxSamples = 1 << 12
	if s, err = b.Load(f.comp, ""); err != nil {
		t.Fatal(err)
	}
	_, err = s.Run(context.Background(), request(wav(16000, wavPCM, 16, mono(make([]float64, 1000)...))), nil)
	wantRunError(t, err, "run/input", "1000 samples", "windowed samples", "longer hop_length")
}

// Silence makes finite log-mel: the floor, raised to the clip's maximum
// less the dynamic range.
func TestLogSilence(t *testing.T) {
	x := audioRun(t, wav(16000, wavPCM, 16, mono(make([]float64, 24)...)), []string{"a.frames"}, logMel()...)[0]
	for i, v := range x.data {
		if v != -10 {
			t.Fatalf("log-mel of silence: value %d is %v, want log10(1e-10) = -10", i, v)
		}
	}
}

func TestReflect(t *testing.T) {
	// numpy.pad([a, b, c], 5, "reflect") = b a b c b a b c b a b c b.
	want := []int{1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1}
	for j, w := range want {
		if got := reflect(j-5, 3); got != w {
			t.Errorf("reflect(%d, 3) = %d, want %d", j-5, got, w)
		}
	}
	if reflect(-7, 1) != 0 || reflect(9, 1) != 0 {
		t.Error("a clip of one sample repeats it")
	}
}

// Arbitrary bytes run through resample, mel_spectrogram and log fail the
// request with run/input, never a panic: their frames packed, and their
// clips packed whole (padded on the frames), two clips a request.
func FuzzAudioRequest(f *testing.F) {
	f.Add(wav(16000, wavPCM, 16, mono(0.1, -0.2, 0.3)))
	f.Add(wav(44100, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(1, 1)), 300)...)))
	f.Add(wav(3, wavFloat, 32, [][]float64{{math.Inf(1)}, {math.NaN()}}))
	f.Add(wav(0xFFFFFFF, wavPCM, 8, mono(0.5)))
	// Two clips of one size in bytes and of 40 and 80 samples: halved,
	// the two clips of a request, padded to the longer's frames.
	f.Add(append(wav(16000, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(2, 2)), 40)...)), wav(16000, wavPCM, 8, mono(noise(rand.New(rand.NewPCG(3, 3)), 80)...))...))
	ts := append([]ir.Transform{op("decode", "", "a.raw"), op("resample", "a.raw", "a.decoded", "sample_rate", "16000")}, logMel()[1:]...)
	whole := audioFixture(ts)
	c := packed(contract("float32", dims("clips", "frames", 4)), "clip_offsets", "clip_owner", ir.ExtentProduced)
	c.Padding = []ir.Padding{{Dim: ir.Ref{Name: "frames"}, Lengths: ir.Ref{Name: "counts"}}}
	whole.comp.Outputs = []*ir.Port{{Name: "frames", Contract: c}, {Name: "counts", Contract: contract("int64", dims("clips"))},
		{Name: "clip_offsets", Contract: contract("int64", dims("r1"))}, {Name: "clip_owner", Contract: contract("int64", dims("clips"))}}
	whole.prog.Outputs = []ir.ProgramOutput{{Name: "frames", Content: "frames"}, {Name: "counts", Content: "frame_lengths"},
		{Name: "clip_offsets", Content: "pack_offsets"}, {Name: "clip_owner", Content: "pack_owner"}}
	var sessions []backend.Session
	for _, fx := range []*fixture{audioFixture(ts), whole} {
		b := New(fx.m)
		b.MaxSamples = 1 << 14 // keep each input cheap
		s, err := b.Load(fx.comp, "")
		if err != nil {
			f.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range []map[string]*backend.Tensor{request(data), request(data[:len(data)/2], data[len(data)/2:])} {
			for _, s := range sessions {
				_, err := s.Run(context.Background(), in, nil)
				var re *backend.RunError
				if err != nil && (!errors.As(err, &re) || re.Rule != "run/input") {
					t.Fatalf("got %v, want nil or run/input", err)
				}
			}
		}
	})
}

// The largest filter bank a program may ask for holds each bin's weight in
// at most two bands, not n_mels × bins.
func TestMelBankSparse(t *testing.T) {
	b := newMelBank(preprocess.Mel{SampleRate: 48000, NFFT: preprocess.MaxFFT, Hop: 1, Win: preprocess.MaxFFT, NMels: preprocess.MaxMels,
		FMax: 24000, Power: 2, Norm: true, Reflect: true})
	bins, held := preprocess.MaxFFT/2+1, 0
	for _, w := range b.bank {
		held += len(w)
	}
	if held > 2*bins+preprocess.MaxMels {
		t.Errorf("the bank holds %d weights for %d bins", held, bins)
	}
}

// The resampling filters designed are kept for the first ratios, each
// the phases of a fresh design, and clips of ever new rates do not grow
// them past maxLowpasses.
func TestLowpassesBounded(t *testing.T) {
	for down := 1; down <= 2*maxLowpasses; down++ {
		h, f := kaiserLowpass(3, 100+down), lowpass(3, 100+down)
		for p, phase := range f.phases {
			for k, v := range phase {
				if j := p + (len(phase)-1-k)*3; h[j] != v {
					t.Fatalf("phase %d's tap %d of the filter of 3/%d is %g, its design's tap %d %g", p, k, 100+down, v, j, h[j])
				}
			}
		}
	}
	lowpasses.Lock()
	defer lowpasses.Unlock()
	if n := len(lowpasses.filters); n != maxLowpasses {
		t.Errorf("%d filters kept, want %d", n, maxLowpasses)
	}
}

// BenchmarkResample resamples a second of speech-like noise at 44.1 kHz
// to 16 kHz, as a Whisper or wav2vec 2.0 program does each clip.
//
//	go test ./vm/adapters -run '^$' -bench Resample
func BenchmarkResample(b *testing.B) {
	x := &signal{rate: 44100, samples: make([]float32, 44100)}
	for i, v := range noise(rand.New(rand.NewPCG(7, 7)), len(x.samples)) {
		x.samples[i] = float32(v)
	}
	for b.Loop() {
		if _, err := resamplePoly(x, 16000, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrontEnd runs two front ends on speech-like noise, a 16-bit
// WAV at 16 kHz: openWakeWord's (the program of
// testdata/packages/wakeword_audio) on a 1.5 s wake-word clip, and
// Whisper's (testdata/whisper_frontend.yaml's: padded to 30 s, 3000
// frames of 400-point FFTs) on a 10 s one. What a clip costs the adapter
// before its model runs.
//
//	go test ./vm/adapters -run '^$' -bench FrontEnd -count 5
func BenchmarkFrontEnd(b *testing.B) {
	for _, c := range []struct {
		name    string
		seconds float64
		ts      []ir.Transform
	}{
		{"wakeword", 1.5, []ir.Transform{
			op("decode", "", "a.decoded", "format", "wav"),
			op("affine", "a.decoded", "a.int16", "scale", "32768"),
			op("mel_spectrogram", "a.int16", "a.mel", "sample_rate", "16000", "n_fft", "512", "win_length", "400",
				"hop_length", "160", "n_mels", "32", "f_min", "60", "f_max", "3800", "center", "false"),
			op("log10", "a.mel", "a.log", "floor", "1.0e-10", "dynamic_range", "8.0"),
			op("affine", "a.log", "a.spec", "offset", "2.0"),
			op("frame", "a.spec", "a.out", "window", "76", "hop", "8", "partial", "drop"),
		}},
		{"whisper", 10, []ir.Transform{
			op("decode", "", "a.decoded", "format", "wav"),
			op("resample", "a.decoded", "a.resampled", "sample_rate", "16000"),
			op("pad_or_trim", "a.resampled", "a.samples", "length", "480000"),
			op("mel_spectrogram", "a.samples", "a.mel", "sample_rate", "16000", "n_fft", "400", "hop_length", "160", "n_mels", "80"),
			op("pad_or_trim", "a.mel", "a.frames", "length", "3000"),
			op("log10", "a.frames", "a.log", "floor", "1.0e-10", "dynamic_range", "8.0"),
			op("affine", "a.log", "a.out", "scale", "0.25", "offset", "1.0"),
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cp, probs := preprocess.Compile(&ir.Program{Modality: "audio", Transforms: c.ts}, &ir.Component{Name: "pre"}, nil)
			if len(probs) > 0 {
				b.Fatalf("the program does not compile: %v", probs)
			}
			p := compileAudio(cp)
			samples := noise(rand.New(rand.NewPCG(7, 8)), int(16000*c.seconds))
			frames := make([][]float64, len(samples))
			for i, v := range samples {
				frames[i] = []float64{0.3 * v}
			}
			clip := wav(16000, wavPCM, 16, frames)
			for b.Loop() {
				if _, err := p.run(clip, DefaultMaxSamples, []string{"a.out"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The own transform gives gonum's powers, on every power of two the mel
// spectrogram may take up to MaxFFT, on lengths of every radix and mix of
// them (Whisper's 400 among them) and on random frames; one wrong twiddle,
// index or butterfly moves some power far past rounding. A length it
// cannot take (odd, or a prime factor of n/2 above 5) is left to gonum.
func TestRealFFTIsGonums(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	lengths := []int{6, 10, 12, 18, 20, 24, 30, 50, 54, 60, 100, 160, 200, 250, 240, 320, 400, 480, 600, 750, 800, 1000, 1200, 2000, 4000, 6000, 16000, 48000}
	for n := 2; n <= preprocess.MaxFFT; n *= 2 {
		lengths = append(lengths, n)
	}
	for _, n := range []int{3, 15, 401, 14, 28, 700, 22} {
		if newRealFFT(n) != nil {
			t.Errorf("n=%d: planned, though n is odd or n/2 has a factor above 5", n)
		}
	}
	for _, n := range lengths {
		f, g := newRealFFT(n), &anyFFT{fft: fourier.NewFFT(n), coef: make([]complex128, n/2+1)}
		if f == nil {
			t.Fatalf("n=%d: not planned", n)
		}
		frame := make([]float64, n)
		got, want := make([]float64, n/2+1), make([]float64, n/2+1)
		for range 3 {
			total := 0.0
			for i := range frame {
				frame[i] = rng.NormFloat64() * 1000
				total += frame[i] * frame[i]
			}
			f.power(got, frame)
			g.power(want, frame)
			// Rounding is relative to the frame's energy, which every
			// coefficient's power sums a share of.
			for k := range want {
				if d := math.Abs(got[k] - want[k]); d > 1e-9*total {
					t.Fatalf("n=%d: power %d is %g, gonum's %g", n, k, got[k], want[k])
				}
			}
		}
	}
}
