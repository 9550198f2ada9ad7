package adapters

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
	"github.com/genaic/genaic/vm/jsonio"
)

// The oracle data testdata/oracle/gen.py writes with numpy and scipy.
const oracleDir = "../../testdata/oracle/audio"

type oracleIndex struct {
	Mel []struct {
		WAV       string         `json:"wav"`
		Config    string         `json:"config"`
		MelParams map[string]any `json:"mel_params"`
		LogParams map[string]any `json:"log_params"`
		Mel, Log  string
	} `json:"mel"`
	Resample []struct {
		WAV        string `json:"wav"`
		SampleRate int    `json:"sample_rate"`
		Expected   string `json:"expected"`
	} `json:"resample"`
	Whisper []struct {
		WAV      string `json:"wav"`
		Features string `json:"features"`
	} `json:"whisper"`
	Wakeword []struct {
		WAV     string `json:"wav"`
		Windows string `json:"windows"`
	} `json:"wakeword"`
	Wav2Vec2 []struct {
		WAV    string `json:"wav"`
		Values string `json:"values"`
	} `json:"wav2vec2"`
}

// FrontEnd is one case of a front end's oracle: a clip, and the values the
// model's recipe computes of it.
type FrontEnd struct {
	Name  string
	Clip  []byte
	Shape []int64
	Want  []float32
}

// FrontEndOracles returns the cases of Whisper's log-mel features and of
// openWakeWord's embedding windows.
func FrontEndOracles(t *testing.T) (whisper, wakeword []FrontEnd) {
	idx := readOracle(t)
	for _, c := range idx.Whisper {
		shape, want := oracleNPY(t, c.Features)
		whisper = append(whisper, FrontEnd{c.WAV, oracleFile(t, c.WAV), shape, want})
	}
	for _, c := range idx.Wakeword {
		shape, want := oracleNPY(t, c.Windows)
		wakeword = append(wakeword, FrontEnd{c.WAV, oracleFile(t, c.WAV), shape, want})
	}
	if len(whisper) == 0 || len(wakeword) == 0 {
		t.Fatal("the oracle index lists no front-end case")
	}
	return whisper, wakeword
}

func readOracle(t *testing.T) oracleIndex {
	t.Helper()
	f, err := os.Open(filepath.Join(oracleDir, "index.json"))
	if err != nil {
		t.Fatalf("the oracle data is missing (run /usr/bin/python3 testdata/oracle/gen.py): %v", err)
	}
	defer f.Close()
	d := json.NewDecoder(f)
	d.UseNumber()
	var idx oracleIndex
	if err := d.Decode(&idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Mel) == 0 || len(idx.Resample) == 0 {
		t.Fatal("the oracle index lists no case")
	}
	return idx
}

// oracleFile reads an oracle file, decompressed where its name ends in
// .gz.
func oracleFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(oracleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(name, ".gz") {
		return b
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = io.ReadAll(z); err != nil {
		t.Fatal(err)
	}
	return b
}

// oracleNPY reads an oracle .npy file (or .npy.gz, through a decompressed
// copy).
func oracleNPY(t *testing.T, name string) ([]int64, []float32) {
	t.Helper()
	path := filepath.Join(oracleDir, name)
	if base, ok := strings.CutSuffix(name, ".gz"); ok {
		path = filepath.Join(t.TempDir(), base)
		if err := os.WriteFile(path, oracleFile(t, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x, err := jsonio.ReadNPY(path)
	if err != nil {
		t.Fatal(err)
	}
	return x.Shape, x.Float32s()
}

// params turns a JSON object into transform parameters, in key order.
func params(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, k, fmt.Sprint(m[k]))
	}
	return out
}

// audioRun compiles an audio program and runs it on one clip, returning
// the values keep names.
func audioRun(t *testing.T, clip []byte, keep []string, ts ...ir.Transform) []*signal {
	t.Helper()
	cp, probs := preprocess.Compile(&ir.Program{Modality: "audio", Transforms: ts}, &ir.Component{Name: "pre"}, nil)
	if len(probs) > 0 {
		t.Fatalf("the program does not compile: %v", probs)
	}
	out, err := compileAudio(cp).run(clip, DefaultMaxSamples, keep)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CloseTo compares got with want element by element: |got - want| ≤
// rel·max(|want|, floor). It returns the largest error relative to that
// bound's scale, for the report.
func CloseTo(t *testing.T, what string, got, want []float32, rel, floor float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, the reference %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		scale := max(math.Abs(float64(want[i])), floor)
		e := math.Abs(float64(got[i])-float64(want[i])) / scale
		if math.IsNaN(e) || e > rel {
			t.Fatalf("%s: value %d is %g, the reference %g (relative error %.3g > %g)", what, i, got[i], want[i], e, rel)
		}
		worst = max(worst, e)
	}
	return worst
}

// The mel spectrogram and log-mel of chirps, speech-like noise, silence, a
// clipped tone and a clip shorter than the padding equal numpy's within
// 1e-4 relative, under Whisper's settings, with every option changed, and
// with openWakeWord's uncentred frames.
func TestMelOracle(t *testing.T) {
	idx := readOracle(t)
	worstMel, worstLog := map[string]float64{}, map[string]float64{}
	for _, c := range idx.Mel {
		name := c.WAV + "/" + c.Config
		outs := audioRun(t, oracleFile(t, c.WAV), []string{"m", "l"},
			op("decode", "", "d"),
			op("mel_spectrogram", "d", "m", params(c.MelParams)...),
			op("log", "m", "l", params(c.LogParams)...))
		shape, mel := oracleNPY(t, c.Mel)
		if m := outs[0]; int64(m.frames) != shape[0] || int64(m.window) != shape[1] {
			t.Fatalf("%s: mel is [%d, %d], the reference %v", name, m.frames, m.window, shape)
		}
		// A band's power is compared to its own value, floored at 1e-9 of
		// the clip's loudest band (float32 holds 7 digits of both).
		peak := 0.0
		for _, v := range mel {
			peak = max(peak, float64(v))
		}
		worstMel[c.Config] = max(worstMel[c.Config], CloseTo(t, name+" mel", outs[0].data, mel, 1e-4, max(peak*1e-9, 1e-30)))
		_, logMel := oracleNPY(t, c.Log)
		worstLog[c.Config] = max(worstLog[c.Config], CloseTo(t, name+" log-mel", outs[1].data, logMel, 1e-4, 1e-3))
	}
	for _, config := range slices.Sorted(maps.Keys(worstMel)) {
		t.Logf("%s: largest relative error: mel %.3g, log-mel %.3g", config, worstMel[config], worstLog[config])
	}
}

// Resampling chirps and speech-like noise between 8, 16, 22.05, 44.1 and
// 48 kHz equals scipy's resample_poly within 1e-3.
func TestResampleOracle(t *testing.T) {
	idx := readOracle(t)
	worst := 0.0
	for _, c := range idx.Resample {
		outs := audioRun(t, oracleFile(t, c.WAV), []string{"r"},
			op("decode", "", "d"),
			op("resample", "d", "r", "sample_rate", fmt.Sprint(c.SampleRate)))
		_, want := oracleNPY(t, c.Expected)
		got := outs[0]
		if got.rate != c.SampleRate {
			t.Errorf("%s: rate %d", c.Expected, got.rate)
		}
		if len(got.samples) != len(want) {
			t.Fatalf("%s: %d samples, resample_poly %d", c.Expected, len(got.samples), len(want))
		}
		for i := range want {
			e := math.Abs(float64(got.samples[i]) - float64(want[i]))
			if e > 1e-3 {
				t.Fatalf("%s: sample %d is %g, resample_poly %g", c.Expected, i, got.samples[i], want[i])
			}
			worst = max(worst, e)
		}
	}
	t.Logf("largest absolute error: %.3g", worst)
}

// Wav2Vec2's input values (docs/preprocessing.md, "A wav2vec 2.0
// program") equal those transformers' feature extractor computes with
// do_normalize within 1e-5 of their unit variance, of clips at 16 kHz, of
// silence (all zeros), and of clips resampled from 8 to 48 kHz.
func TestWav2Vec2Oracle(t *testing.T) {
	idx := readOracle(t)
	if len(idx.Wav2Vec2) == 0 {
		t.Fatal("the oracle index lists no wav2vec2 case")
	}
	worst := 0.0
	for _, c := range idx.Wav2Vec2 {
		got := audioRun(t, oracleFile(t, c.WAV), []string{"s"},
			op("decode", "", "d"),
			op("resample", "d", "r", "sample_rate", "16000"),
			op("standardize", "r", "s"))[0]
		_, want := oracleNPY(t, c.Values)
		worst = max(worst, CloseTo(t, c.Values, got.samples, want, 1e-5, 1))
	}
	t.Logf("largest error: %.3g", worst)
}
