package adapters

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// melRows is decode → mel_spectrogram (16 kHz, n_fft 16, hop 8, 4 bands)
// → frame of the mel frames into windows of 3 every 2, as `a.windows`.
func melRows(params ...string) []ir.Transform {
	return []ir.Transform{
		op("decode", "", "a.decoded"),
		op("mel_spectrogram", "a.decoded", "a.mel", "sample_rate", "16000", "n_fft", "16", "hop_length", "8", "n_mels", "4"),
		op("frame", "a.mel", "a.windows", append([]string{"window", "3", "hop", "2"}, params...)...),
	}
}

// windowsOf cuts rows of 4 values into windows of 3 rows every 2, as the
// reference: windows start every 2 rows, up to the first that reaches the
// last row, or while a whole window fits.
func windowsOf(rows []float32, drop bool) (data []float32, valid []int64) {
	n := len(rows) / 4
	for lo := 0; lo < n; lo += 2 {
		hi := min(lo+3, n)
		if drop && hi-lo < 3 {
			break
		}
		w := make([]float32, 12)
		copy(w, rows[lo*4:hi*4])
		data, valid = append(data, w...), append(valid, int64(hi-lo))
		if hi == n {
			break
		}
	}
	return data, valid
}

// frame after mel_spectrogram cuts the clip's mel frames into windows of
// rows: the last zero-padded with its valid rows, or dropped.
func TestFrameRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 7))
	for _, n := range []int{0, 1, 16, 40, 57, 64} {
		clip := wav(16000, wavPCM, 16, mono(noise(rng, n)...))
		for _, drop := range []bool{false, true} {
			params := []string{}
			if drop {
				params = []string{"partial", "drop"}
			}
			out := audioRun(t, clip, []string{"a.mel", "a.windows"}, melRows(params...)...)
			mel, w := out[0], out[1]
			data, valid := windowsOf(mel.data, drop)
			if w.window != 3 || w.row != 4 || w.frames != len(valid) || !slices.Equal(w.valid, valid) || !slices.Equal(w.data, data) {
				t.Errorf("%d samples (%d frames), drop %v: %d windows of %d×%d, valid %v; want %d, valid %v",
					n, mel.frames, drop, w.frames, w.window, w.row, w.valid, len(valid), valid)
			}
		}
	}
}

// Windows of rows stack per clip, padded on the windows with each clip's
// count and on the rows with each window's valid rows, each clip's
// windows those of the clip alone.
func TestWindowsStacked(t *testing.T) {
	f := audioFixture(melRows())
	feats := contract("float32", dims("clips", "windows", 3, 4))
	feats.Padding = []ir.Padding{{Dim: ir.Ref{Name: "windows"}, Lengths: ir.Ref{Name: "counts"}}, {Dim: ir.Ref{Name: "rows"}, Lengths: ir.Ref{Name: "rows"}}}
	feats.Shape[2] = ir.Dim{Sym: "rows"}
	f.comp.Outputs = []*ir.Port{{Name: "features", Contract: feats}, {Name: "counts", Contract: contract("int64", dims("clips"))},
		{Name: "rows", Contract: contract("int64", dims("clips", "windows"))}}
	f.prog.Outputs = []ir.ProgramOutput{{Name: "features", Content: "features"}, {Name: "counts", Content: "frame_lengths"}, {Name: "rows", Content: "valid_lengths"}}
	rng := rand.New(rand.NewPCG(43, 8))
	short, long := wav(16000, wavPCM, 16, mono(noise(rng, 17)...)), wav(16000, wavPCM, 16, mono(noise(rng, 60)...))
	out := run(t, f.load(t), request(short, long), "features", "counts", "rows")
	// 17 samples: 3 centred frames, one window; 60: 8 frames, 4 windows.
	wantShape(t, "features", out["features"], 2, 4, 3, 4)
	wantInts(t, "counts", out["counts"], 1, 4)
	if got := out["rows"].Int64s(); !slices.Equal(got, []int64{3, 0, 0, 0, 3, 3, 3, 2}) {
		t.Errorf("valid rows %v", got)
	}
	got := out["features"].Float32s()
	for c, clip := range [][]byte{short, long} {
		alone := audioRun(t, clip, []string{"a.windows"}, melRows()...)[0].data
		if rest := got[c*48+len(alone) : (c+1)*48]; !slices.Equal(got[c*48:c*48+len(alone)], alone) || slices.ContainsFunc(rest, func(v float32) bool { return v != 0 }) {
			t.Errorf("clip %d: stacked windows %v, the clip alone %v then zeros", c, got[c*48:(c+1)*48], alone)
		}
	}
}

// A data port may declare trailing axes fixed at 1 past the layout of its
// clips (openWakeWord's embedding model reads [windows, 76, 32, 1]): the
// tensor has them in its shape and holds the values, and the companions,
// of the port without them, packed or stacked. An axis past the layout
// that is not a literal 1 is refused at Load, as at check time.
func TestTrailingOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 9))
	in := request(wav(16000, wavPCM, 16, mono(noise(rng, 17)...)), wav(16000, wavPCM, 16, mono(noise(rng, 60)...)))
	outs := []string{"frames", "frame_offsets", "frame_owner", "clip_offsets", "clip_owner", "frame_valid"}
	want := run(t, windowsFixture(melRows()).load(t), in, outs...)
	withOnes := func(extra ...ir.Dim) *fixture {
		f := windowsFixture(melRows())
		c := f.comp.Outputs[0].Contract
		c.Shape = append(c.Shape, extra...)
		c.Rank = len(c.Shape)
		return f
	}
	got := run(t, withOnes(ir.Dim{Size: 1}, ir.Dim{Size: 1}).load(t), in, outs...)
	wantShape(t, "frames", got["frames"], 5, 3, 4, 1, 1)
	for _, name := range outs {
		if a, b := got[name], want[name]; name != "frames" && !slices.Equal(a.Shape, b.Shape) || !slices.Equal(a.Float32s(), b.Float32s()) || !slices.Equal(a.Int64s(), b.Int64s()) {
			t.Errorf("%s with trailing ones %v, without %v", name, a, b)
		}
	}
	f := audioFixture([]ir.Transform{op("decode", "", "a")})
	f.comp.Outputs = []*ir.Port{{Name: "samples", Contract: contract("float32", dims("clips", 3, 1))}}
	f.prog.Outputs = []ir.ProgramOutput{{Name: "samples", Source: "a", Content: "waveform"}}
	stacked := run(t, f.load(t), request(wav(8000, wavPCM, 16, mono(0.5, 0.25, -1)), wav(8000, wavPCM, 16, mono(-0.5, 0.5, -0.25))), "samples")
	wantShape(t, "samples", stacked["samples"], 2, 3, 1)
	if got := stacked["samples"].Float32s(); !slices.Equal(got, []float32{0.5, 0.25, -1, -0.5, 0.5, -0.25}) {
		t.Errorf("stacked samples with a trailing one: %v", got)
	}
	for _, c := range []struct {
		extra []ir.Dim
		frag  string
	}{
		{[]ir.Dim{{Size: 2}}, "axis 3 is 2"},
		{[]ir.Dim{{Size: 1}, {Sym: "c"}}, "axis 4 is `c`"},
		{[]ir.Dim{{Size: 0}}, "axis 3 is 0"},
	} {
		f := withOnes(c.extra...)
		_, err := New(f.m).Load(f.comp, "")
		wantRunError(t, err, "run/unsupported", "output port `frames` of adapter `pre` has rank", "lays out at rank 3", "trailing axes fixed at 1", c.frag)
	}
}

// affine maps each sample to x·scale + offset, and pad_or_trim keeps the
// first length samples or frames, zeros after them; a padded frame has no
// valid values.
func TestAffinePadOrTrim(t *testing.T) {
	vals := []float64{0.5, -0.25, 0.125, 0}
	ts := func(length string) []ir.Transform {
		return []ir.Transform{op("decode", "", "d"), op("affine", "d", "a", "scale", "-2", "offset", "0.5"), op("pad_or_trim", "a", "p", "length", length)}
	}
	for _, length := range []int{2, 4, 7} {
		got := audioRun(t, wav(16000, wavPCM, 16, mono(vals...)), []string{"p"}, ts(strconv.Itoa(length))...)[0].samples
		want := make([]float32, length)
		for i := range min(length, len(vals)) {
			want[i] = float32(vals[i]*-2 + 0.5)
		}
		if !slices.Equal(got, want) {
			t.Errorf("length %d: %v, want %v", length, got, want)
		}
	}
	clip := wav(16000, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(43, 9)), 40)...))
	mel := logMel()[:2]
	for _, length := range []int{3, 9} {
		out := audioRun(t, clip, []string{"a.mel", "p"}, append(mel, op("pad_or_trim", "a.mel", "p", "length", strconv.Itoa(length)))...)
		full, p := out[0], out[1]
		keep := min(length, full.frames)
		wantValid := make([]int64, length)
		copy(wantValid, full.valid)
		if p.frames != length || !slices.Equal(p.valid, wantValid) || !slices.Equal(p.data[:keep*4], full.data[:keep*4]) ||
			slices.ContainsFunc(p.data[keep*4:], func(v float32) bool { return v != 0 }) {
			t.Errorf("%d of %d frames: %d frames, valid %v, want valid %v", length, full.frames, p.frames, p.valid, wantValid)
		}
	}
}

// Uncentred frames start at the first sample and stop where n_fft samples
// no longer fit: frame k is that of the centred transform of the same
// samples shifted by n_fft/2.
func TestMelUncentred(t *testing.T) {
	samples := noise(rand.New(rand.NewPCG(43, 10)), 50)
	shifted := append(make([]float64, 8), samples...)
	params := []string{"sample_rate", "16000", "n_fft", "16", "hop_length", "8", "n_mels", "4"}
	uncentred := audioRun(t, wav(16000, wavPCM, 16, mono(samples...)), []string{"m"},
		op("decode", "", "d"), op("mel_spectrogram", "d", "m", append(params, "center", "false")...))[0]
	centred := audioRun(t, wav(16000, wavPCM, 16, mono(shifted...)), []string{"m"},
		op("decode", "", "d"), op("mel_spectrogram", "d", "m", append(params, "pad_mode", "constant")...))[0]
	// 50 samples: 1 + (50 - 16)/8 = 5 uncentred frames.
	if uncentred.frames != 5 || !slices.Equal(uncentred.data, centred.data[4*2:4*7]) {
		t.Errorf("%d uncentred frames %v; want 5, the centred frames 2 to 6 of the shifted clip %v", uncentred.frames, uncentred.data, centred.data)
	}
}

// windowsFixture is audioFixture with a port of windows of rows of 4
// values, packed and padded on the rows.
func windowsFixture(ts []ir.Transform) *fixture {
	f := audioFixture(ts)
	c := f.comp.Outputs[0].Contract
	c.Rank, c.Shape = 3, dims("windows", "rows", 4)
	c.Padding[0].Dim = ir.Ref{Name: "rows"}
	return f
}

// A frame or pad_or_trim that would make more values than the adapter
// holds fails the request before anything is allocated, and the bound's
// product saturates rather than wraps.
func TestFrontEndBounds(t *testing.T) {
	for _, c := range []struct {
		f         *fixture
		fragments []string
	}{
		{windowsFixture(melRows("hop", "1")), []string{"holds 8 frames before transform 2 (frame)", "72 values", "more than the 60"}},
		{audioFixture(append(logMel()[:2], op("pad_or_trim", "a.mel", "a.frames", "length", "16"))), []string{"holds 8 frames before transform 2 (pad_or_trim)", "64 values"}},
	} {
		b := New(c.f.m)
		b.MaxSamples = 60
		s, err := b.Load(c.f.comp, "")
		if err != nil {
			t.Fatal(err)
		}
		// 56 samples: 8 mel frames of 4 bands, within the bound.
		_, err = s.Run(context.Background(), request(wav(16000, wavPCM, 16, mono(make([]float64, 56)...))), nil)
		wantRunError(t, err, "run/input", c.fragments...)
	}
	if product(1<<40, 1<<30, 1<<10) != math.MaxInt64 || product(3, 5, 7) != 105 {
		t.Error("product does not saturate")
	}
}

// standardize divides the samples less their mean by the square root of
// their variance plus epsilon: a constant clip becomes zeros, and
// epsilon, where given, replaces the default.
func TestStandardize(t *testing.T) {
	for _, c := range []struct {
		samples []float64
		params  []string
		want    []float32
	}{
		{[]float64{0.25, 0.25, 0.25}, nil, []float32{0, 0, 0}},
		// mean 0, variance 0.25: ±0.5/√(0.25 + 0.5)
		{[]float64{0.5, -0.5}, []string{"epsilon", "0.5"}, []float32{float32(0.5 / math.Sqrt(0.75)), float32(-0.5 / math.Sqrt(0.75))}},
		{nil, nil, []float32{}},
	} {
		got := audioRun(t, wav(16000, wavPCM, 16, mono(c.samples...)), []string{"s"},
			op("decode", "", "d"), op("standardize", "d", "s", c.params...))[0].samples
		if !slices.Equal(got, c.want) {
			t.Errorf("standardize %v %v: %v, want %v", c.samples, c.params, got, c.want)
		}
	}
}

// Arbitrary bytes run through an openWakeWord-like program (resample,
// affine, standardize, uncentred mel_spectrogram, log10, frame of rows
// dropping partial windows) fail the request with run/input, never a
// panic.
func FuzzAudioFrontEnd(f *testing.F) {
	f.Add(wav(16000, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(2, 2)), 300)...)))
	f.Add(wav(16000, wavFloat, 32, [][]float64{{math.Inf(1)}, {math.NaN()}}))
	f.Add(wav(16000, wavPCM, 16, nil))
	f.Add(wav(8000, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(2, 3)), 50)...)))
	f.Add(wav(44100, wavPCM, 16, mono(noise(rand.New(rand.NewPCG(2, 4)), 3)...)))
	fx := windowsFixture([]ir.Transform{
		op("decode", "", "a.decoded"),
		op("resample", "a.decoded", "a.resampled", "sample_rate", "16000"),
		op("affine", "a.resampled", "a.scaled", "scale", "32768"),
		op("pad_or_trim", "a.scaled", "a.fixed", "length", "200"),
		op("standardize", "a.fixed", "a.std"),
		op("mel_spectrogram", "a.std", "a.mel", "sample_rate", "16000", "n_fft", "16", "hop_length", "8", "n_mels", "4", "center", "false"),
		op("log10", "a.mel", "a.log", "floor", "1e-10", "dynamic_range", "8.0"),
		op("frame", "a.log", "a.frames", "window", "3", "hop", "2", "partial", "drop"),
	})
	b := New(fx.m)
	b.MaxSamples = 1 << 14
	s, err := b.Load(fx.comp, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := s.Run(context.Background(), request(data), nil)
		var re *backend.RunError
		switch {
		case err != nil && (!errors.As(err, &re) || re.Rule != "run/input"):
			t.Fatalf("got %v, want nil or run/input", err)
		case err == nil && out["frames"].Shape[0] != 11:
			// 200 samples make 1 + (200 - 16)/8 = 24 uncentred frames, and
			// they 1 + (24 - 3)/2 whole windows.
			t.Fatalf("a clip of 200 samples makes 11 windows, got %v", out["frames"])
		}
	})
}
