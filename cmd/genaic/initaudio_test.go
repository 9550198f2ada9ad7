package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// bandMeans is a speech encoder that averages each mel band of its
// features over the frames: input input_features (dims), output means
// [batch, bands], the mean over axis (the frames').
func bandMeans(dims []any, axis int64) *onnxpb.GraphProto {
	bands := dims[1]
	if axis == 1 {
		bands = dims[2]
	}
	return &onnxpb.GraphProto{Name: "means",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("input_features", 1, dims...)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("means", 1, dims[0], bands)},
		Node: []*onnxpb.NodeProto{{OpType: "ReduceMean", Input: []string{"input_features"}, Output: []string{"means"}, Attribute: []*onnxpb.AttributeProto{
			{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: []int64{axis}},
			{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}}}}
}

// TestInitAudio is a newcomer's path with a Whisper-like encoder: init
// --audio writes a package that takes WAV clips, any number per request,
// which check accepts; run answers each clip's band means as Whisper's
// features make
// them, bands first or frames first alike: silence -1.5 in every band
// (log10 floored at 1e-10, then (x + 4)/4), a 1 kHz tone peaking at the
// bands about 1 kHz (a clip at 8 kHz resampled first); the requests
// grouped answer as alone, and a request of several clips gets each
// clip's answer, as alone. Where the graph leaves the bands open and reads
// 128 (large-v3), init finds it. A model that takes no features is
// refused, saying why.
func TestInitAudio(t *testing.T) {
	tone, silence := fixtures.WAV16(8000, fixtures.Tone(12000, 8000, 1000, 0.5)), fixtures.WAV16(16000, make([]int16, 8000))
	var layouts [][]float64 // the tone's means, per layout
	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		want string // in the document
	}{
		{"bands first", bandMeans([]any{"batch", 80, 3000}, 2), "laid out bands first"},
		{"frames first", bandMeans([]any{"n", 3000, 80}, 1), "laid out frames first"},
		// Hugging Face's export of Whisper's encoder names every axis.
		{"axes named", bandMeans([]any{"batch_size", "feature_size", "encoder_sequence_length"}, 2), "n_mels: 80"},
		// An export in half precision: the adapter writes the features
		// as float16.
		{"half precision", func() *onnxpb.GraphProto {
			g := bandMeans([]any{"batch", 80, 3000}, 2)
			g.Input[0] = tensorInfo("input_features", 10, "batch", 80, 3000)
			g.Node = append([]*onnxpb.NodeProto{{OpType: "Cast", Input: []string{"input_features"}, Output: []string{"wide"},
				Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}}}, g.Node...)
			g.Node[1].Input[0] = "wide"
			return g
		}(), "dtype: float16, shape: [batch, 80, 3000]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGraph(t, filepath.Join(dir, "means.onnx"), c.g, 17)
			initPrints(t, filepath.Join(dir, "means.onnx"), "# Its input input_features takes log-mel features: `genaic init --audio means.onnx`\n")
			out, errOut, code := runCLI(t, "init", "--audio", filepath.Join(dir, "means.onnx"))
			if code != exitOK || errOut != "" || !strings.Contains(out, "WAV clips in, any number per request, Whisper's log-mel features of each, then means") {
				t.Fatalf("init --audio: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			if doc, err := os.ReadFile(filepath.Join(dir, metadataName)); err != nil || !strings.Contains(string(doc), c.want) {
				t.Fatalf("the document lacks %q: %v\n%s", c.want, err, doc)
			}
			doc, resp := clipOutputs(t, dir, tone, silence, tone)
			for r, outs := range resp {
				if m := outs["means"]; len(m) != 1 || !slices.Equal(m[0].Shape, []int64{80}) || len(m[0].Data) != 80 {
					t.Fatalf("request %d: means %+v", r, m)
				}
			}
			for b, v := range resp[1]["means"][0].Data {
				if math.Abs(v+1.5) > 1e-6 {
					t.Fatalf("silence: band %d means %v, want -1.5", b, v)
				}
			}
			means := resp[0]["means"][0].Data
			// 1 kHz is mel 15 on Slaney's scale, the centre of band 25.85
			// of 80 up to 8 kHz.
			if peak := slices.Index(means, slices.Max(means)); peak < 25 || peak > 26 {
				t.Errorf("the tone peaks at band %d: %v", peak, means)
			}
			if !slices.Equal(means, resp[2]["means"][0].Data) {
				t.Errorf("one clip, two answers")
			}
			if c.name == "half precision" {
				// The features rounded to half precision move a band's
				// mean by about float16's step at its values.
				for b := range means {
					if math.Abs(means[b]-layouts[0][b]) > 2e-3 {
						t.Errorf("band %d means %v in half precision, %v in float32", b, means[b], layouts[0][b])
					}
				}
			} else {
				layouts = append(layouts, means)
			}
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", doc); code != exitOK || !strings.Contains(errOut, "each of the 3 requests is answered alike grouped and alone") {
				t.Errorf("run --verify: exit %d\n%s", code, errOut)
			}
			// The next step init names, on synthesized requests.
			if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
				t.Errorf("run --verify without requests: exit %d\n%s", code, errOut)
			}
			// A request brings any number of clips, each answered as it
			// is alone: the tone's means, then the silence's.
			doc, many := clipRequests(t, dir, [][]byte{tone, silence}, [][]byte{silence, tone, tone})
			for r, want := range [][][]float64{{means, resp[1]["means"][0].Data}, {resp[1]["means"][0].Data, means, means}} {
				got := many[r]["means"]
				if len(got) != len(want) {
					t.Fatalf("request %d of %d clips: %d items of means", r, len(want), len(got))
				}
				for k := range want {
					if !slices.EqualFunc(got[k].Data, want[k], func(a, b float64) bool { return math.Abs(a-b) <= 1e-6 }) {
						t.Errorf("request %d clip %d: means %v, alone %v", r, k, got[k].Data, want[k])
					}
				}
			}
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", doc); code != exitOK || !strings.Contains(errOut, "each of the 2 requests is answered alike grouped and alone") {
				t.Errorf("run --verify of several clips a request: exit %d\n%s", code, errOut)
			}
		})
	}
	// ReduceMean sums another axis in another order: equal within float32.
	for i := 1; i < len(layouts); i++ {
		for b := range layouts[0] {
			if math.Abs(layouts[i][b]-layouts[0][b]) > 1e-5 {
				t.Errorf("layout %d's band %d means %v, bands first's %v", i, b, layouts[i][b], layouts[0][b])
			}
		}
	}

	// The bands left open and read as 128 by a weight: init tries 80, then
	// 128.
	large := bandMeans([]any{"batch_size", "feature_size", "encoder_sequence_length"}, 2)
	large.Output[0] = tensorInfo("logits", 1, "batch_size", 2)
	large.Node[0].Output[0] = "means"
	large.Initializer = append(large.Initializer, &onnxpb.TensorProto{Name: "w", DataType: 1, Dims: []int64{128, 2}, RawData: make([]byte, 128*2*4)})
	large.Node = append(large.Node, &onnxpb.NodeProto{OpType: "MatMul", Input: []string{"means", "w"}, Output: []string{"logits"}})
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "large.onnx"), large, 17)
	if out, errOut, code := runCLI(t, "init", "--audio", "--print", filepath.Join(dir, "large.onnx")); code != exitOK || !strings.Contains(out, "n_mels: 128") || !strings.Contains(out, "[batch_size, 128, 3000]") {
		t.Errorf("init --audio of 128 bands: exit %d\n%s%s", code, out, errOut)
	}

	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		want string
	}{
		{"a batch of one", bandMeans([]any{1, 80, 3000}, 2), "input input_features is float32 [1, 80, 3000], whose first axis the graph fixes at 1: open it first (`genaic dynamic-batch means.onnx -o ...`)"},
		{"no bands", bandMeans([]any{"batch", 40, 3000}, 2), "with neither axis 1 nor axis 2 alone holding Whisper's mel bands"},
		{"images", meanPixels([]any{"batch", 3, 8, 8}, 2, 3), "input pixels is float32 [batch, 3, 8, 8], not log-mel features"},
		{"no row per clip", &onnxpb.GraphProto{Name: "total", Input: []*onnxpb.ValueInfoProto{tensorInfo("input_features", 1, "batch", 80, 3000)},
			Output: []*onnxpb.ValueInfoProto{tensorInfo("total", 1)},
			Node: []*onnxpb.NodeProto{{OpType: "ReduceMean", Input: []string{"input_features"}, Output: []string{"total"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}}}}, "no output gives one row per clip: total [] has no row per clip"},
	} {
		dir := t.TempDir()
		writeGraph(t, filepath.Join(dir, "means.onnx"), c.g, 17)
		if _, errOut, code := runCLI(t, "init", "--audio", filepath.Join(dir, "means.onnx")); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d\n%s", c.name, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, metadataName)); err == nil {
			t.Errorf("%s: a refused init --audio wrote a document", c.name)
		}
	}
	if _, errOut, code := runCLI(t, "init", "--audio", "--images", filepath.Join(dir, "large.onnx")); code != exitUsage || !strings.Contains(errOut, "give one") {
		t.Errorf("--audio with --images: exit %d\n%s", code, errOut)
	}

	// A batch of one opened by dynamic-batch: it names --audio next.
	one, opened := filepath.Join(dir, "one.onnx"), filepath.Join(dir, "opened.onnx")
	writeGraph(t, one, bandMeans([]any{1, 80, 3000}, 2), 17)
	if out, errOut, code := runCLI(t, "dynamic-batch", one, "-o", opened); code != exitOK || !strings.Contains(out, "next: `genaic init --audio "+opened+"`") {
		t.Fatalf("dynamic-batch: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "init", "--audio", "--print", opened); code != exitOK || !strings.Contains(out, "[batch, 80, 3000]") {
		t.Errorf("init --audio of the opened model: exit %d\n%s%s", code, out, errOut)
	}
}

// pooler is a wav2vec 2.0-like speech encoder of samples: input
// input_values (dims), outputs pooled [batch, 1, frames], the means of
// windows of 400 samples every 320 (its frames: exports of such encoders
// name them as the samples), and power [batch], the mean square of each
// clip's samples.
func pooler(frames any, dims ...any) *onnxpb.GraphProto {
	ints := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INTS, Ints: v}
	}
	mean := make([]byte, 0, 400*4)
	for range 400 {
		mean = binary.LittleEndian.AppendUint32(mean, math.Float32bits(1.0/400))
	}
	return &onnxpb.GraphProto{Name: "pooler",
		Input: []*onnxpb.ValueInfoProto{tensorInfo("input_values", 1, dims...)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("pooled", 1, dims[0], 1, frames),
			tensorInfo("power", 1, dims[0])},
		Initializer: []*onnxpb.TensorProto{{Name: "one", DataType: 7, Dims: []int64{1}, RawData: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
			{Name: "mean", DataType: 1, Dims: []int64{1, 1, 400}, RawData: mean}},
		Node: []*onnxpb.NodeProto{
			{OpType: "Unsqueeze", Input: []string{"input_values", "one"}, Output: []string{"channel"}},
			// A convolution, as a speech encoder's first layer, refuses
			// fewer samples than its kernel.
			{OpType: "Conv", Input: []string{"channel", "mean"}, Output: []string{"pooled"}, Attribute: []*onnxpb.AttributeProto{ints("strides", 320)}},
			{OpType: "Mul", Input: []string{"input_values", "input_values"}, Output: []string{"squares"}},
			{OpType: "ReduceMean", Input: []string{"squares"}, Output: []string{"power"}, Attribute: []*onnxpb.AttributeProto{
				ints("axes", 1), {Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}},
		}}
}

// TestInitAudioSamples is a newcomer's path with an encoder of samples
// (wav2vec 2.0, HuBERT): init --audio writes a package that takes WAV
// clips at any rate, any number per request, gives the model their samples at 16 kHz
// standardized (each clip's mean square 1), and names the frames the
// model makes of them apart from the samples, though the graph calls both
// sequence_length; clips of one length share a call, grouped answering
// as alone, and a request's clips of several lengths run apart. Where
// the graph fixes the samples, each clip is padded or trimmed to them and
// any clips share a call. Plain init names --audio,
// and its own probe renames the frames apart too.
func TestInitAudioSamples(t *testing.T) {
	tone := func(rate int, secs float64) []byte {
		return fixtures.WAV16(rate, fixtures.Tone(int(secs*float64(rate)), rate, 440, 0.5))
	}
	// A second at 16 kHz, a second at 8 kHz, a second and a half, half a
	// second.
	clips := [][]byte{tone(16000, 1), tone(8000, 1), tone(16000, 1.5), tone(16000, 0.5)}
	for _, c := range []struct {
		name   string
		g      *onnxpb.GraphProto
		frames []int64   // each clip's pooled frames: (samples - 400)/320 + 1
		power  []float64 // each clip's mean square
		want   []string
		groups string // the largest group run --verify reports
	}{
		{"open", pooler("sequence_length", "batch_size", "sequence_length"), []int64{49, 49, 74, 24}, []float64{1, 1, 1, 1},
			[]string{"uniform_dimensions: [sequence_length]", "op: standardize", "pooled: { dtype: float32, shape: [batch_size, 1, frames]"}, "groups of up to 2 requests"},
		// Half a second padded with as much silence.
		{"fixed", pooler(49, "batch_size", 16000), []int64{49, 49, 49, 49}, []float64{1, 1, 1, 0.5},
			[]string{"op: pad_or_trim, length: 16000, inputs: [audio.standardized]", "The graph fixes 16000 samples (1 s)"}, "groups of up to 4 requests"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			model := filepath.Join(dir, "pooler.onnx")
			writeGraph(t, model, c.g, 17)
			initPrints(t, model, "# Its input input_values takes audio samples: `genaic init --audio pooler.onnx`\n")
			out, errOut, code := runCLI(t, "init", "--audio", model)
			if code != exitOK || errOut != "" || !strings.Contains(out, "WAV clips in, any number per request, their samples at 16 kHz, standardized, then pooler") {
				t.Fatalf("init --audio: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			doc, err := os.ReadFile(filepath.Join(dir, metadataName))
			for _, want := range c.want {
				if err != nil || !strings.Contains(string(doc), want) {
					t.Fatalf("the document lacks %q: %v\n%s", want, err, doc)
				}
			}
			path, resp := clipOutputs(t, dir, clips...)
			for r, outs := range resp {
				pooled, power := outs["pooled"], outs["power"]
				if len(pooled) != 1 || len(power) != 1 || !slices.Equal(pooled[0].Shape, []int64{1, c.frames[r]}) || len(power[0].Data) != 1 {
					t.Fatalf("request %d: pooled %+v, power %+v", r, pooled, power)
				}
				if math.Abs(power[0].Data[0]-c.power[r]) > 1e-3 {
					t.Errorf("request %d: mean square %v, want %v", r, power[0].Data[0], c.power[r])
				}
			}
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", path); code != exitOK || !strings.Contains(errOut, "each of the 4 requests is answered alike grouped and alone ("+c.groups) {
				t.Errorf("run --verify: exit %d\n%s", code, errOut)
			}
			// The next step init names, on synthesized requests: a clip
			// long enough for the model's first convolution.
			if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
				t.Errorf("run --verify without requests: exit %d\n%s", code, errOut)
			}
			// The adapter groups only clips that stack: none of its calls
			// fails, and none runs again item by item.
			out, errOut, code = runCLI(t, "run", dir, "--requests", path, "--stats")
			if code != exitOK {
				t.Fatalf("run --stats: exit %d\n%s", code, errOut)
			}
			if a := adapterStats(t, out); a.Failed != 0 || a.Regrouped != 0 || a.MostHeld < 2 {
				t.Errorf("the adapter: %d calls failed, %d groups ran again, at most %d requests a call", a.Failed, a.Regrouped, a.MostHeld)
			}
			// Several clips in one request, each answered as alone: where
			// the graph leaves the samples open, clips of two lengths run
			// in calls apart.
			_, many := clipRequests(t, dir, [][]byte{clips[0], clips[2], clips[1]})
			pooled, power := many[0]["pooled"], many[0]["power"]
			if len(pooled) != 3 || len(power) != 3 {
				t.Fatalf("a request of three clips: pooled %+v, power %+v", pooled, power)
			}
			for k, clip := range []int{0, 2, 1} {
				if !slices.Equal(pooled[k].Shape, []int64{1, c.frames[clip]}) || math.Abs(power[k].Data[0]-c.power[clip]) > 1e-3 {
					t.Errorf("a request of three clips, clip %d: pooled %v, power %v; want [1 %d], %v", k, pooled[k].Shape, power[k].Data, c.frames[clip], c.power[clip])
				}
			}
		})
	}

	// Plain init's probe: the frames are not the samples.
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "pooler.onnx"), pooler("sequence_length", "batch_size", "sequence_length"), 17)
	initPrints(t, filepath.Join(dir, "pooler.onnx"), "contract: { dtype: float32, shape: [batch_size, 1, pooled_dim2] }")

	// A float [batch, N] input named otherwise may hold anything.
	other := pooler("sequence_length", "batch_size", "sequence_length")
	other.Input[0].Name = "features"
	other.Node[0].Input[0], other.Node[2].Input = "features", []string{"features", "features"}
	writeGraph(t, filepath.Join(dir, "other.onnx"), other, 17)
	if _, errOut, code := runCLI(t, "init", "--audio", filepath.Join(dir, "other.onnx")); code != exitUsage ||
		!strings.Contains(errOut, "input features is float32 [batch_size, sequence_length], not named as audio samples are (input_values, audio, wav, speech, pcm)") {
		t.Errorf("init --audio of features: exit %d\n%s", code, errOut)
	}
}

// outTensor is a tensor of a response, as genaic run prints it.
type outTensor struct {
	Shape []int64   `json:"shape"`
	Data  []float64 `json:"data"`
}

// clipOutputs runs the package in dir on one request of each clip (WAV
// bytes, one item) and returns the requests document's path and each
// request's outputs, by name, as their items.
func clipOutputs(t *testing.T, dir string, clips ...[]byte) (string, []map[string][]outTensor) {
	t.Helper()
	reqs := make([][][]byte, len(clips))
	for r, clip := range clips {
		reqs[r] = [][]byte{clip}
	}
	return clipRequests(t, dir, reqs...)
}

// clipRequests runs the package in dir on a request of each list of clips
// and returns the requests document's path and each request's outputs, by
// name, as their items.
func clipRequests(t *testing.T, dir string, clips ...[][]byte) (string, []map[string][]outTensor) {
	t.Helper()
	var reqs []string
	for r, cs := range clips {
		items := make([]string, len(cs))
		for k, clip := range cs {
			items[k] = fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, len(clip), base64.StdEncoding.EncodeToString(clip))
		}
		reqs = append(reqs, fmt.Sprintf(`{"id":"r%d","inputs":{"audio":{"items":[%s]}}}`, r, strings.Join(items, ",")))
	}
	doc, out := runRequests(t, dir, reqs)
	var resp struct {
		Responses []struct {
			Outputs map[string]struct {
				Items []outTensor `json:"items"`
			} `json:"outputs"`
		} `json:"responses"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Responses) != len(clips) {
		t.Fatalf("run printed %v\n%.500s", err, out)
	}
	outs := make([]map[string][]outTensor, len(clips))
	for r, rr := range resp.Responses {
		outs[r] = map[string][]outTensor{}
		for name, o := range rr.Outputs {
			outs[r][name] = o.Items
		}
	}
	return doc, outs
}

// componentStats are a component's stats as genaic run --stats prints
// them, those the audio tests read.
type componentStats struct {
	Invocations int64 `json:"invocations"`
	Failed      int64 `json:"failed"`
	Regrouped   int64 `json:"regrouped"`
	MostHeld    int64 `json:"max_group_requests"`
}

// adapterStats are the stats of init --audio's adapter, audio_preprocess,
// in run --stats' output out.
func adapterStats(t *testing.T, out string) componentStats {
	t.Helper()
	var doc struct {
		Stats struct {
			Components map[string]componentStats `json:"components"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("run --stats printed %v\n%s", err, out)
	}
	return doc.Stats.Components["audio_preprocess"]
}
