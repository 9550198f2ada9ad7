package adapters

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// wav encodes samples (one slice of channel values per sample frame) as a
// RIFF/WAVE file of the given format tag and bits per sample.
func wav(rate, format, bits int, frames [][]float64) []byte {
	channels := 1
	if len(frames) > 0 {
		channels = len(frames[0])
	}
	var pcm []byte
	for _, f := range frames {
		for _, v := range f {
			switch {
			case format == wavFloat && bits == 32:
				pcm = binary.LittleEndian.AppendUint32(pcm, math.Float32bits(float32(v)))
			case format == wavFloat && bits == 64:
				pcm = binary.LittleEndian.AppendUint64(pcm, math.Float64bits(v))
			case bits == 8:
				pcm = append(pcm, uint8(v*128+128))
			case bits == 16:
				pcm = binary.LittleEndian.AppendUint16(pcm, uint16(int16(v*(1<<15))))
			case bits == 24:
				x := int32(v * (1 << 23))
				pcm = append(pcm, byte(x), byte(x>>8), byte(x>>16))
			default:
				pcm = binary.LittleEndian.AppendUint32(pcm, uint32(int32(v*(1<<31))))
			}
		}
	}
	align := channels * bits / 8
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(4+8+16+8+len(pcm)))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, uint16(format))
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*align))
	b = binary.LittleEndian.AppendUint16(b, uint16(align))
	b = binary.LittleEndian.AppendUint16(b, uint16(bits))
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pcm)))
	return append(b, pcm...)
}

func mono(vs ...float64) [][]float64 {
	out := make([][]float64, len(vs))
	for i, v := range vs {
		out[i] = []float64{v}
	}
	return out
}

// audioFixture is the adapter of audio_encoder.yaml in miniature: frames
// [frames, 4] packed with two produced levels and padded on the window.
func audioFixture(transforms []ir.Transform) *fixture {
	m := ir.NewModule()
	frames := packed(contract("float32", dims("frames", 4)), "frame_offsets", "frame_owner", ir.ExtentProduced)
	frames.Layout.Levels = append(frames.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "clip_offsets"}, Owner: ir.Ref{Name: "clip_owner"}, Extent: ir.ExtentProduced})
	frames.Padding = []ir.Padding{{Dim: ir.Ref{Name: "window"}, Lengths: ir.Ref{Name: "frame_valid"}}}
	frames.Shape[1] = ir.Dim{Sym: "window"}
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: preprocess.ABI("audio"), Version: "1",
		Inputs: []*ir.Port{
			{Name: "encoded", Contract: packed(contract("uint8", dims("bytes")), "byte_offsets", "byte_owner", ir.ExtentNone)},
			{Name: "byte_offsets", Contract: contract("int64", dims("nb"))},
		},
		Outputs: []*ir.Port{
			{Name: "frames", Contract: frames},
			{Name: "frame_offsets", Contract: contract("int64", dims("c1"))},
			{Name: "frame_owner", Contract: contract("int64", dims("frames"))},
			{Name: "clip_offsets", Contract: contract("int64", dims("r1"))},
			{Name: "clip_owner", Contract: contract("int64", dims("clips"))},
			{Name: "frame_valid", Contract: contract("int64", dims("frames"))},
		}}
	prog := &ir.Program{Modality: "audio", Transforms: transforms, Outputs: []ir.ProgramOutput{
		{Name: "frames", Content: "frames"},
		{Name: "frame_offsets", Content: "pack_offsets"},
		{Name: "frame_owner", Content: "pack_owner"},
		{Name: "clip_offsets", Content: "pack_offsets"},
		{Name: "clip_owner", Content: "pack_owner"},
		{Name: "frame_valid", Content: "valid_lengths"},
	}}
	m.Components = append(m.Components, comp)
	m.Programs = append(m.Programs, prog)
	return &fixture{m: m, comp: comp, prog: prog}
}

func framing() []ir.Transform {
	return []ir.Transform{
		op("decode", "", "a.decoded"),
		op("resample", "a.decoded", "a.resampled", "sample_rate", "16000"),
		op("frame", "a.resampled", "a.frames", "window", "4", "hop", "3"),
	}
}

// Two clips, 11 samples of 16-bit mono and 3 of float stereo, frame into
// 4 + 1 windows of 4 every 3: the last of each zero-padded, with its valid
// samples, and both levels produced.
func TestAudioFramesPacked(t *testing.T) {
	s := audioFixture(framing()).load(t)
	a := make([]float64, 11)
	for i := range a {
		a[i] = float64(i) / 16
	}
	b := [][]float64{{0.5, -0.25}, {1, 0}, {-1, -0.5}}
	out := run(t, s, request(wav(16000, wavPCM, 16, mono(a...)), wav(16000, wavFloat, 32, b)),
		"frames", "frame_offsets", "frame_owner", "clip_offsets", "clip_owner", "frame_valid")
	wantShape(t, "frames", out["frames"], 5, 4)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 4, 5)
	wantInts(t, "frame_owner", out["frame_owner"], 0, 0, 0, 0, 1)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 2)
	wantInts(t, "clip_owner", out["clip_owner"], 0, 0)
	wantInts(t, "frame_valid", out["frame_valid"], 4, 4, 4, 2, 3)
	want := []float64{
		a[0], a[1], a[2], a[3],
		a[3], a[4], a[5], a[6],
		a[6], a[7], a[8], a[9],
		a[9], a[10], 0, 0,
		0.125, 0.5, -0.75, 0,
	}
	for i, v := range out["frames"].Float32s() {
		if !near(float64(v), want[i], 1e-6) {
			t.Fatalf("frames value %d = %v, want %v (all %v)", i, v, want[i], out["frames"].Float32s())
		}
	}
}

// Every sample format decodes to [-1, 1].
func TestAudioSampleFormats(t *testing.T) {
	vals := []float64{0, 0.5, -0.5, -1}
	for _, c := range []struct{ format, bits int }{{wavPCM, 8}, {wavPCM, 16}, {wavPCM, 24}, {wavPCM, 32}, {wavFloat, 32}, {wavFloat, 64}} {
		x, err := decodeWAV(wav(8000, c.format, c.bits, mono(vals...)))
		if err != nil {
			t.Fatalf("format %d, %d bits: %v", c.format, c.bits, err)
		}
		for i, v := range x.samples {
			if !near(float64(v), vals[i], 1e-6) {
				t.Errorf("format %d, %d bits: sample %d = %v, want %v", c.format, c.bits, i, v, vals[i])
			}
		}
	}
}

// Mono 16-bit PCM, read without the general sample reader, decodes every
// one of the 65536 values as the reader does: int/32768, exactly.
func TestAudioPCM16Exact(t *testing.T) {
	pcm := make([]byte, 0, 2<<16)
	for v := range 1 << 16 {
		pcm = binary.LittleEndian.AppendUint16(pcm, uint16(v))
	}
	read, err := sampleReader(wavPCM, 16)
	if err != nil {
		t.Fatal(err)
	}
	fast := &wavHeader{rate: 16000, channels: 1, align: 2, width: 2, pcm: pcm, pcm16: true}
	general := &wavHeader{rate: 16000, channels: 1, align: 2, width: 2, pcm: pcm, sample: read}
	if !slices.Equal(fast.decode().samples, general.decode().samples) {
		t.Fatal("mono 16-bit PCM decodes otherwise than the sample reader does")
	}
}

// Unframed clips stacked on a new axis pad their samples to the longest,
// with one length per clip.
func TestAudioStackedPadded(t *testing.T) {
	f := audioFixture([]ir.Transform{op("decode", "", "a")})
	samples := contract("float32", dims("clips", "samples"))
	samples.Padding = []ir.Padding{{Dim: ir.Ref{Name: "samples"}, Lengths: ir.Ref{Name: "lengths"}}}
	f.comp.Outputs = []*ir.Port{{Name: "samples", Contract: samples}, {Name: "lengths", Contract: contract("int64", dims("clips"))}}
	f.prog.Outputs = []ir.ProgramOutput{{Name: "samples", Source: "a", Content: "waveform"}, {Name: "lengths", Content: "sample_lengths"}}
	out := run(t, f.load(t), request(wav(8000, wavPCM, 16, mono(0.5, 0.25)), wav(8000, wavPCM, 16, mono(-0.5, 0.5, -0.25))), "samples", "lengths")
	wantShape(t, "samples", out["samples"], 2, 3)
	wantInts(t, "lengths", out["lengths"], 2, 3)
	want := []float32{0.5, 0.25, 0, -0.5, 0.5, -0.25}
	for i, v := range out["samples"].Float32s() {
		if v != want[i] {
			t.Fatalf("samples = %v, want %v", out["samples"].Float32s(), want)
		}
	}
	// Padded, any clips share an invocation.
	key := func(s backend.Session, clips ...[]byte) (string, error) {
		return s.(backend.Keyer).Key(request(clips...))
	}
	one, two := wav(8000, wavPCM, 16, mono(0.5)), wav(8000, wavPCM, 16, mono(0.5, 0))
	if k, err := key(f.load(t), one); k != "" || err != nil {
		t.Errorf("a padded port keys %q, %v", k, err)
	}
	if by := f.load(t).(backend.KeyDescriber).KeyedBy(); len(by) != 0 {
		t.Errorf("a padded port is keyed by %q", by)
	}
	// Without padding, clips of different lengths cannot stack: their
	// requests are keyed apart, by the samples their clips make, and a
	// request of both is refused at admission, as its call would fail.
	samples.Padding = nil
	f.comp.Outputs, f.prog.Outputs = f.comp.Outputs[:1], f.prog.Outputs[:1]
	s := f.load(t)
	_, err := s.Run(context.Background(), request(one, two), nil)
	wantRunError(t, err, "run/input", "clip 1", "2 samples", "does not pad")
	k1, err1 := key(s, one)
	k2, err2 := key(s, two)
	k11, err11 := key(s, one, one)
	if k1 == k2 || k1 != k11 || k1 != "1 samples of `samples`" || err1 != nil || err2 != nil || err11 != nil {
		t.Errorf("keys %q, %q and %q (%v, %v, %v); want one length's requests alike, another's apart", k1, k2, k11, err1, err2, err11)
	}
	if by := s.(backend.KeyDescriber).KeyedBy(); !slices.Equal(by, []string{"count of samples of `samples`"}) {
		t.Errorf("keyed by %q; want the samples of `samples`, as the keys are", by)
	}
	_, err = key(s, one, two)
	wantRunError(t, err, "run/input", "clip 1", "makes 2 samples of `samples`", "clip 0 makes 1 samples", "stacks them unpadded")
	// A port that fixes the samples refuses another count at admission.
	samples.Shape[1] = ir.Dim{Size: 2}
	_, err = key(f.load(t), one)
	wantRunError(t, err, "run/input", "clip 0", "holds 1 samples", "fixes their count at 2")
}

// A clip that is not a WAV file, a truncated one, an unread sample format
// and a rate the resampler does not convert fail the request with run/input.
func TestAudioBadClips(t *testing.T) {
	s := audioFixture(framing()).load(t)
	good := wav(16000, wavPCM, 16, mono(0.1, 0.2))
	for _, c := range []struct {
		clip      []byte
		fragments []string
	}{
		{[]byte("ID3 not a wav"), []string{"clip 1", "not a WAV", "49 44 33"}},
		{good[:len(good)-1], []string{"clip 1", "truncated", `"data"`}},
		{wav(16000, wavPCM, 12, mono(0.1)), []string{"clip 1", "12-bit"}},
		{wav(44101, wavPCM, 16, mono(0.1)), []string{"clip 1", "44101 Hz", "16000/44101 polyphase", "at most 4096"}},
		{nil, []string{"clip 1", "empty"}},
	} {
		_, err := s.Run(context.Background(), request(good, c.clip), nil)
		wantRunError(t, err, "run/input", c.fragments...)
	}
	f := audioFixture(framing())
	b := New(f.m)
	b.MaxSamples = 10
	sess, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sess.Run(context.Background(), request(wav(16000, wavPCM, 16, mono(make([]float64, 9)...))), nil)
	wantRunError(t, err, "run/input", "9 samples", "transform 2 (frame)", "12 values")
}

// A clip without samples makes no frame.
func TestAudioEmptyClip(t *testing.T) {
	out := run(t, audioFixture(framing()).load(t), request(wav(16000, wavPCM, 16, nil)), "frames", "frame_offsets", "clip_offsets")
	wantShape(t, "frames", out["frames"], 0, 4)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 0)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 1)
}

// Ops and layouts the audio adapter does not run are refused at Load.
func TestAudioUnsupportedAtLoad(t *testing.T) {
	for _, c := range []struct {
		name      string
		edit      func(f *fixture)
		fragments []string
	}{
		{"mel", func(f *fixture) {
			f.prog.Transforms[2] = op("mel_spectrogram", "a.resampled", "a.frames", "n_mels", "80")
		}, []string{"mel_spectrogram", "transform 2"}},
		{"window", func(f *fixture) { f.comp.Outputs[0].Contract.Shape[1] = ir.Dim{Size: 8} }, []string{"window", "8", "4"}},
		{"rank", func(f *fixture) { f.prog.Outputs[0].Source = "a.decoded" }, []string{"rank 2", "rank 1"}},
		{"companion", func(f *fixture) { f.prog.Outputs[1].Content = "pack_owner" }, []string{"frame_offsets", "owner"}},
		{"format", func(f *fixture) { f.prog.Transforms[0].Params = []ir.Param{irParam("format", "mp3")} }, []string{"mp3", "wav"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := audioFixture(framing())
			c.edit(f)
			_, err := New(f.m).Load(f.comp, "")
			wantRunError(t, err, "run/unsupported", c.fragments...)
		})
	}
}

// A stacked port of frames laid out bands first ([clips, bands, frames],
// as Whisper's encoder reads its features) holds each clip's frames
// transposed: the frames first port's values, each clip's frames given
// one count by pad_or_trim. A bands-first port that pads either axis is
// refused at Load.
func TestAudioBandsFirst(t *testing.T) {
	stacked := func(shape []ir.Dim, padded string) *fixture {
		f := audioFixture(append(framing(), op("pad_or_trim", "a.frames", "a.fixed", "length", "4")))
		frames := contract("float32", shape)
		f.comp.Outputs = []*ir.Port{{Name: "frames", Contract: frames}}
		f.prog.Outputs = []ir.ProgramOutput{{Name: "frames", Source: "a.fixed", Content: "frames"}}
		if padded != "" {
			frames.Padding = []ir.Padding{{Dim: ir.Ref{Name: padded}, Lengths: ir.Ref{Name: "lengths"}}}
			f.comp.Outputs = append(f.comp.Outputs, &ir.Port{Name: "lengths", Contract: contract("int64", dims("clips"))})
			f.prog.Outputs = append(f.prog.Outputs, ir.ProgramOutput{Name: "lengths", Content: "frame_lengths"})
		}
		return f
	}
	a, b := make([]float64, 11), make([]float64, 5)
	for i := range a {
		a[i] = float64(i+1) / 16
	}
	for i := range b {
		b[i] = -float64(i+1) / 16
	}
	clips := request(wav(16000, wavPCM, 16, mono(a...)), wav(16000, wavPCM, 16, mono(b...)))
	first := run(t, stacked(dims("clips", "frames", 4), "").load(t), clips, "frames")
	bands := run(t, stacked(dims("clips", "mel_bins", "frames"), "").load(t), clips, "frames")
	wantShape(t, "frames first", first["frames"], 2, 4, 4)
	wantShape(t, "bands first", bands["frames"], 2, 4, 4)
	ff, bf := first["frames"].Float32s(), bands["frames"].Float32s()
	for c := range 2 {
		for f := range 4 {
			for v := range 4 {
				if got, want := bf[c*16+v*4+f], ff[c*16+f*4+v]; got != want {
					t.Fatalf("clip %d band %d frame %d: bands first holds %v, frames first %v", c, v, f, got, want)
				}
			}
		}
	}
	if ff[16+1*4] == 0 || ff[16+2*4] != 0 || ff[3*4] == 0 {
		t.Fatalf("clip 0 of 4 full frames, clip 1 of 2 then 2 of zeros: frames first %v", ff)
	}
	// Axis 1 fixed at the window's 4 values, axis 2 not: bands first too.
	fixed := run(t, stacked(dims("clips", 4, "frames"), "").load(t), clips, "frames")
	wantShape(t, "fixed bands first", fixed["frames"], 2, 4, 4)
	for _, padded := range []string{"frames", "mel_bins"} {
		f := stacked(dims("clips", "mel_bins", "frames"), padded)
		_, err := New(f.m).Load(f.comp, "")
		wantRunError(t, err, "run/unsupported", "pads `"+padded+"`", "bands first", "unpadded", "pad_or_trim")
	}
}

// A token_packed port of one axis more than a clip's value packs whole
// clips: laid out as a stacked port lays them (here frames padded to the
// longest clip's, with each clip's count), with one level, clips→rows,
// read from the encoded port's second level, so that a request brings any
// number of clips. Frames first or bands first alike.
func TestAudioClipsPacked(t *testing.T) {
	clips := [][]byte{
		wav(16000, wavPCM, 16, mono(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)),
		wav(16000, wavPCM, 16, mono(-0.5, 0.5, -0.25, 0.75)),
		wav(16000, wavPCM, 16, mono(0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0)),
	}
	for _, bandsFirst := range []bool{false, true} {
		shape := dims("clips", "frames", 4)
		if bandsFirst {
			shape = dims("clips", 4, "frames")
		}
		port := func(c *ir.Contract) *fixture {
			f := audioFixture(framing())
			f.comp.Outputs = []*ir.Port{{Name: "frames", Contract: c}}
			f.prog.Outputs = []ir.ProgramOutput{{Name: "frames", Content: "frames"}}
			if !bandsFirst {
				c.Padding = []ir.Padding{{Dim: ir.Ref{Name: "frames"}, Lengths: ir.Ref{Name: "counts"}}}
				f.comp.Outputs = append(f.comp.Outputs, &ir.Port{Name: "counts", Contract: contract("int64", dims("clips"))})
				f.prog.Outputs = append(f.prog.Outputs, ir.ProgramOutput{Name: "counts", Content: "frame_lengths"})
			}
			return f
		}
		in := request(clips...)
		if bandsFirst {
			// Stacked unpadded, bands first: clips of one frame count.
			in = request(clips[0], clips[0], clips[0])
		}
		stacked := run(t, port(contract("float32", slices.Clone(shape))).load(t), in)
		f := port(packed(contract("float32", slices.Clone(shape)), "clip_offsets", "clip_owner", ir.ExtentProduced))
		f.comp.Outputs = append(f.comp.Outputs, &ir.Port{Name: "clip_offsets", Contract: contract("int64", dims("r1"))}, &ir.Port{Name: "clip_owner", Contract: contract("int64", dims("clips"))})
		f.prog.Outputs = append(f.prog.Outputs, ir.ProgramOutput{Name: "clip_offsets", Content: "pack_offsets"}, ir.ProgramOutput{Name: "clip_owner", Content: "pack_owner"})
		enc := f.comp.Inputs[0].Contract
		enc.Layout.Levels = append(enc.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "rows"}, Owner: ir.Ref{Name: "row_of_clip"}})
		f.comp.Inputs = append(f.comp.Inputs, &ir.Port{Name: "rows", Contract: contract("int64", dims("nr"))})
		f.comp.Capacity = &ir.Capacity{}
		in["rows"] = ints([]int64{0, 2, 3})
		got := run(t, f.load(t), in)
		w, p := stacked["frames"], got["frames"]
		if !slices.Equal(p.Shape, w.Shape) || !slices.Equal(p.Float32s(), w.Float32s()) {
			t.Fatalf("bands first %v: packed whole %v %v, stacked %v %v", bandsFirst, p.Shape, p.Float32s(), w.Shape, w.Float32s())
		}
		wantInts(t, "clip_offsets", got["clip_offsets"], 0, 2, 3)
		wantInts(t, "clip_owner", got["clip_owner"], 0, 0, 1)
		if !bandsFirst {
			wantShape(t, "frames", p, 3, 3, 4)
			wantInts(t, "counts", got["counts"], 2, 1, 3)
		}
	}
	// Axes past a clip's rank that are all fixed at 1 are trailing ones:
	// such a port concatenates the clips' frames.
	c := packed(contract("float32", dims("frames", 4, 1)), "clip_offsets", "clip_owner", ir.ExtentProduced)
	if preprocess.ClipsPacked(preprocess.Shape{Framed: true, Window: 4}, c) {
		t.Error("a port of frames [frames, 4, 1] packs whole clips")
	}
}
