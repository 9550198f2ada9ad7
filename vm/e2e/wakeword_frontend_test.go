package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/vm/adapters"
	"github.com/genaic/genaic/vm/ortlib"
)

// openWakeWord's front end, the published one against the documented
// program: testdata/packages/wakeword_audio runs the program of
// docs/preprocessing.md ("An openWakeWord program") in the audio adapter;
// owwFrontEnd runs what openWakeWord's Python runs (openwakeword/utils.py,
// AudioFeatures._get_melspectrogram and _get_embeddings): the 16-bit
// samples as float32 in the int16 range through its melspectrogram model
// (melspectrogram.onnx, cached by make setup) on ONNX Runtime, spec/10 + 2
// in float32, and the windows spec[i:i+76] for i in range(0, frames, 8),
// those shorter than 76 frames dropped.

// frontEndTolerance bounds the absolute difference between the adapter's
// windows and openWakeWord's, on values that are log10 of mel power plus
// 2 (openWakeWord's decibels over 10, plus 2). The model computes its STFT
// as a float32 convolution over 512 samples of int16 magnitude, its power,
// mel projection and logarithm in float32; the adapter computes in float64
// and rounds once. A band's power then differs by a relative error of a
// few float32 steps times the cancellation of its bins, which the
// logarithm turns into an absolute error of that over ln 10. The largest
// seen on the clips below is 2.9e-5 (5e-6 relative to the value), on the
// quiet bands of a tone, some 65 dB below its peak, where the float32
// convolution's rounding is largest against the band's power; speech
// differs by at most 3.3e-6 and silence not at all (both sides floor it at
// 1e-10). The tolerance leaves three times that for other CPUs' float32
// kernels. Every defect the test is meant to catch moves values by far
// more (TestOpenWakeWordFrontEndTells): an int16 scale left out by 9, a wrong
// offset or dynamic range by its error, a centred STFT or another hop by
// shifting every frame.
const frontEndTolerance = 1e-4

// wakewordAudio is the package whose adapter runs the documented program.
const wakewordAudio = "testdata/packages/wakeword_audio"

// owwFrontEnd is openWakeWord's melspectrogram model on ONNX Runtime.
type owwFrontEnd struct{ mel backend.Session }

func newOWWFrontEnd(t *testing.T) owwFrontEnd {
	t.Helper()
	path, err := ortlib.Model("melspectrogram.onnx")
	if err != nil {
		t.Fatalf("openWakeWord's front end needs its cached melspectrogram model: %v: %s", err, fixtures.FixSetup)
	}
	comp := &ir.Component{Name: "melspectrogram", Impl: ir.ImplONNX, Artifact: path,
		Inputs:  []*ir.Port{{Name: "input", Contract: floatContract("batch_size", "samples")}},
		Outputs: []*ir.Port{{Name: "output", Contract: floatContract("time", 1, "frames", 32)}}}
	s, err := ortBackend(t).Load(comp, "")
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return owwFrontEnd{s}
}

// floatContract is a float32 contract of dims, each a symbol (string) or
// a fixed extent (int).
func floatContract(dims ...any) *ir.Contract {
	c := &ir.Contract{DType: "float32", Rank: len(dims), HasShape: true}
	for _, d := range dims {
		if n, ok := d.(int); ok {
			c.Shape = append(c.Shape, ir.Dim{Size: int64(n)})
		} else {
			c.Shape = append(c.Shape, ir.Dim{Sym: d.(string)})
		}
	}
	return c
}

// windows is openWakeWord's embedding-model input of a clip's samples,
// [windows, 76, 32, 1]. A clip shorter than the 512 samples of one frame
// makes no frame; the model, whose STFT is a convolution without padding,
// is not called on it.
func (o owwFrontEnd) windows(t *testing.T, samples []int16) *backend.Tensor {
	t.Helper()
	var spec []float32
	if len(samples) >= 512 {
		x := make([]float32, len(samples))
		for i, v := range samples {
			x[i] = float32(v)
		}
		out, err := o.mel.Run(context.Background(), map[string]*backend.Tensor{"input": fixtures.F32([]int64{1, int64(len(x))}, x)}, []string{"output"})
		if err != nil {
			t.Fatal(err)
		}
		m := out["output"]
		if m.Rank() != 4 || m.Shape[0] != 1 || m.Shape[1] != 1 || m.Shape[3] != 32 || m.Shape[2] != int64(1+(len(x)-512)/160) {
			t.Fatalf("melspectrogram of %d samples is %v, want [1 1 %d 32]", len(x), m.Shape, 1+(len(x)-512)/160)
		}
		for _, v := range m.Float32s() {
			spec = append(spec, v/10+2)
		}
	}
	frames := len(spec) / 32
	var data []float32
	n := 0
	for i := 0; i < frames; i += 8 {
		if i+76 <= frames {
			data = append(data, spec[i*32:(i+76)*32]...)
			n++
		}
	}
	if data == nil {
		data = []float32{}
	}
	return fixtures.F32([]int64{int64(n), 76, 32, 1}, data)
}

// frontEndClip is one clip of the comparison: its samples and its WAV.
type frontEndClip struct {
	name    string
	samples []int16
	wav     []byte
}

// frontEndClips are clips of speech-like noise, a tone and silence, of
// lengths that make no frame, frames but no window, one window, and
// several.
func frontEndClips() []frontEndClip {
	rng := rand.New(rand.NewPCG(76, 8))
	var out []frontEndClip
	add := func(name string, samples []int16) {
		out = append(out, frontEndClip{name, samples, fixtures.WAV16(16000, samples)})
	}
	add("speech, 24000 samples", fixtures.Speech(rng, 24000, 16000))
	add("speech, 14000 samples", fixtures.Speech(rng, 14000, 16000))
	add("speech, 8000 samples", fixtures.Speech(rng, 8000, 16000))
	add("speech, 300 samples", fixtures.Speech(rng, 300, 16000))
	add("440 Hz tone, 12512 samples", fixtures.Tone(12512, 16000, 440, 0.5))
	add("1 kHz tone, 32000 samples", fixtures.Tone(32000, 16000, 1000, 0.9))
	add("silence, 16000 samples", make([]int16, 16000))
	return out
}

// adapterOf loads the audio adapter of a document on its own.
func adapterOf(t *testing.T, m *ir.Module) backend.Session {
	t.Helper()
	s, err := adapters.New(m).Load(m.Component("audio_preprocess"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// adapterWindows runs an audio adapter on one clip and returns its windows.
func adapterWindows(t *testing.T, s backend.Session, clip []byte) *backend.Tensor {
	t.Helper()
	out, err := s.Run(context.Background(), map[string]*backend.Tensor{
		"encoded":      {DType: "uint8", Shape: []int64{int64(len(clip))}, Data: clip},
		"byte_offsets": fixtures.I64(0, int64(len(clip))),
		"row_clips":    fixtures.I64(0, 1),
	}, []string{"windows"})
	if err != nil {
		t.Fatal(err)
	}
	return out["windows"]
}

// frontEndDiff is the largest absolute difference between two clips'
// windows and the largest relative to the reference value (floored at
// 1, the scale of a log10), or +Inf when their shapes differ.
func frontEndDiff(got, want *backend.Tensor) (abs, rel float64) {
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return math.Inf(1), math.Inf(1)
	}
	w := want.Float32s()
	for i, g := range got.Float32s() {
		d := math.Abs(float64(g) - float64(w[i]))
		abs, rel = max(abs, d), max(rel, d/max(math.Abs(float64(w[i])), 1))
	}
	return abs, rel
}

// TestOpenWakeWordFrontEnd: the documented openWakeWord program, run by the
// audio adapter on WAV clips, equals openWakeWord's published front end
// (its melspectrogram model on ONNX Runtime, then its transform and
// windowing) on the same samples within frontEndTolerance, with the same
// window count, for speech-like noise, a tone and silence, of lengths
// that make no frame, no window, one window and several.
func TestOpenWakeWordFrontEnd(t *testing.T) {
	oww := newOWWFrontEnd(t)
	f, _ := fixtures.CompilePath(t, wakewordAudio)
	s := adapterOf(t, f.IR)
	worstAbs, worstRel := 0.0, 0.0
	counts := map[int64]bool{}
	for _, c := range frontEndClips() {
		got, want := adapterWindows(t, s, c.wav), oww.windows(t, c.samples)
		abs, rel := frontEndDiff(got, want)
		t.Logf("%s: %d windows, largest difference %.3g absolute, %.3g relative", c.name, want.Shape[0], abs, rel)
		if !(abs <= frontEndTolerance) {
			t.Errorf("%s: the adapter's windows %v differ from openWakeWord's %v by %g (tolerance %g)", c.name, got.Shape, want.Shape, abs, frontEndTolerance)
		}
		worstAbs, worstRel = max(worstAbs, abs), max(worstRel, rel)
		counts[min(want.Shape[0], 2)] = true
	}
	t.Logf("largest difference over the clips: %.3g absolute, %.3g relative", worstAbs, worstRel)
	if len(counts) != 3 {
		t.Errorf("the clips make %v windows (2: several); want clips of none, one and several", counts)
	}
}

// TestOpenWakeWordFrontEndTells: the comparison above fails for the program
// with any one of the defects it exists to catch: the samples left at
// [-1, 1] (no int16 scale), a centred STFT, another offset, another STFT
// hop, another window hop, another dynamic range.
func TestOpenWakeWordFrontEndTells(t *testing.T) {
	oww := newOWWFrontEnd(t)
	src, err := os.ReadFile(filepath.Join(testenv.Root(t), wakewordAudio, "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clips := frontEndClips()
	wants := make([]*backend.Tensor, len(clips))
	for i, c := range clips {
		wants[i] = oww.windows(t, c.samples)
	}
	for _, m := range []struct{ name, from, to string }{
		{"no int16 scale", "scale: 32768,", "scale: 1.0,"},
		{"centred STFT", "center: false", "center: true"},
		{"offset 1", "offset: 2.0,", "offset: 1.0,"},
		{"STFT hop 128", "hop_length: 160", "hop_length: 128"},
		{"window hop 4", "hop: 8,", "hop: 4,"},
		{"dynamic range 9", "dynamic_range: 8.0,", "dynamic_range: 9.0,"},
	} {
		if strings.Count(string(src), m.from) != 1 {
			t.Fatalf("%s: the package's program does not write %q once", m.name, m.from)
		}
		d, err := passes.CheckSource(m.name, []byte(strings.Replace(string(src), m.from, m.to, 1)), passes.Options{Check: true})
		if err != nil || !d.Valid() {
			t.Fatalf("%s: %v %v", m.name, err, d.Diags())
		}
		s := adapterOf(t, d.Module)
		worst := 0.0
		for i, c := range clips {
			abs, _ := frontEndDiff(adapterWindows(t, s, c.wav), wants[i])
			worst = max(worst, abs)
		}
		t.Logf("%s: largest difference %.3g", m.name, worst)
		if worst <= frontEndTolerance {
			t.Errorf("%s: the program with it agrees with openWakeWord's front end within %g: the comparison cannot tell", m.name, frontEndTolerance)
		}
	}
}
