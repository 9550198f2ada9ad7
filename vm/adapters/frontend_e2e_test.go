package adapters_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// Whisper's and openWakeWord's front ends, the programs
// docs/preprocessing.md documents (testdata/whisper_frontend.yaml,
// testdata/wakeword_frontend.yaml), run end to end: each request's WAV
// clip through the audio adapter and a binding that groups the requests
// and returns what the adapter made, every answer compared with the
// oracle testdata/oracle/gen.py computes from the model's own recipe.

// frontEndTolerance bounds each value's error relative to the value,
// floored at frontEndFloor: both front ends' features are logarithms of
// order 1, whose float32 resolution near 0 is absolute.
const (
	frontEndTolerance = 1e-5
	frontEndFloor     = 1e-2
)

// passThrough is a binding that returns what its port receives as its
// output of the same name, once it has checked that the port holds at most
// most clips or windows of the unit's extents each.
func passThrough(port string, most int64, unit ...int64) backend.Func {
	return func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in[port]
		if x == nil || x.Rank() != 1+len(unit) || x.Shape[0] > most || !slices.Equal(x.Shape[1:], unit) {
			return nil, fmt.Errorf("%s is %v, want at most %d of %v", port, x, most, unit)
		}
		return map[string]*backend.Tensor{port: x}, nil
	}
}

func openFrontEnd(t *testing.T, doc, binding string, f backend.Func) *vm.Engine {
	t.Helper()
	plan := compile(t, doc)
	b := &backend.Bindings{}
	b.Register(binding, f)
	e, err := vm.Open(plan, filepath.Dir(doc), map[ir.ImplKind]backend.Backend{ir.ImplAdapter: adapters.New(plan.IR), ir.ImplBinding: b}, vm.Options{
		MaxDelay: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// clipRequest is a request of one WAV clip.
func clipRequest(id string, clip []byte) vm.Request {
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"wav":         {DType: "uint8", Shape: []int64{int64(len(clip))}, Data: clip},
		"wav_offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, int64(len(clip))}},
		"wav_owner":   {DType: "int64", Shape: []int64{int64(len(clip))}, Data: make([]int64, len(clip))},
	}}
}

// runFrontEnd runs every case's clip as a request, twice over so that the
// binding groups requests, and compares each answer's output with the
// case's oracle.
func runFrontEnd(t *testing.T, e *vm.Engine, cases []adapters.FrontEnd, output string) float64 {
	t.Helper()
	var reqs []vm.Request
	for round := range 2 {
		for _, c := range cases {
			reqs = append(reqs, clipRequest(fmt.Sprint(c.Name, "#", round), c.Clip))
		}
	}
	worst := 0.0
	for i, r := range e.RunAll(context.Background(), reqs) {
		c := cases[i%len(cases)]
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
		got := r.Outputs.Get(output)
		if got == nil || got.Len() != int64(len(c.Want)) || !slices.Equal(got.Shape[got.Rank()-len(c.Shape)+1:], c.Shape[1:]) {
			t.Fatalf("%s: %s is %v, the oracle %v", r.ID, output, got, c.Shape)
		}
		worst = max(worst, adapters.CloseTo(t, r.ID, got.Float32s(), c.Want, frontEndTolerance, frontEndFloor))
	}
	return worst
}

// Whisper's log-mel features of clips padded to 30 s, of silence and of a
// clip trimmed from 30.5 s equal whisper.audio.log_mel_spectrogram of
// pad_or_trim within 1e-5.
func TestWhisperFrontEnd(t *testing.T) {
	whisper, _ := adapters.FrontEndOracles(t)
	e := openFrontEnd(t, "testdata/whisper_frontend.yaml", "encoder", passThrough("features", 3, 3000, 80))
	t.Logf("largest relative error: %.3g", runFrontEnd(t, e, whisper, "features"))
	st := e.Stats().Components["encoder"]
	t.Logf("encoder: %d invocations for %d requests, largest group %d requests", st.Invocations, st.Requests, st.MaxGroupRequests)
}

// openWakeWord's embedding windows of a chirp, speech-like noise, silence
// and a clipped tone equal those AudioFeatures computes within 1e-5, and a
// clip shorter than one window makes none.
func TestWakewordFrontEnd(t *testing.T) {
	_, wakeword := adapters.FrontEndOracles(t)
	e := openFrontEnd(t, "testdata/wakeword_frontend.yaml", "embedding", passThrough("windows", 32, 76, 32))
	t.Logf("largest relative error: %.3g", runFrontEnd(t, e, wakeword, "windows"))
}

// The programs docs/preprocessing.md shows for Whisper and openWakeWord are
// those the tests above run, and the one testdata/packages/wakeword_audio
// runs (vm/e2e compares it with openWakeWord's own front end): each
// document's transforms appear there verbatim.
func TestFrontEndProgramsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/preprocessing.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"testdata/whisper_frontend.yaml", "testdata/wakeword_frontend.yaml", "../../testdata/packages/wakeword_audio/inference_metadata.yaml"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, program, ok := strings.Cut(string(b), "\npreprocessing:\n")
		program, _, found := strings.Cut(program, "\n    outputs:\n")
		if !ok || !found {
			t.Fatalf("%s has no preprocessing transforms", path)
		}
		if !strings.Contains(string(doc), "preprocessing:\n"+program+"\n```") {
			t.Errorf("docs/preprocessing.md does not show the program of %s:\n%s", path, program)
		}
	}
}
