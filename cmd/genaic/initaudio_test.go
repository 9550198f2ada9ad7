package main

import (
	"encoding/base64"
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
// --audio writes a package that takes a WAV clip per request, which check
// accepts; run answers each clip's band means as Whisper's features make
// them, bands first or frames first alike: silence -1.5 in every band
// (log10 floored at 1e-10, then (x + 4)/4), a 1 kHz tone peaking at the
// bands about 1 kHz (a clip at 8 kHz resampled first); the requests
// grouped answer as alone. Where the graph leaves the bands open and
// reads 128 (large-v3), init finds it. A model that takes no features is
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
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGraph(t, filepath.Join(dir, "means.onnx"), c.g, 17)
			initPrints(t, filepath.Join(dir, "means.onnx"), "# Its input input_features takes log-mel features: `genaic init --audio means.onnx`\n")
			out, errOut, code := runCLI(t, "init", "--audio", filepath.Join(dir, "means.onnx"))
			if code != exitOK || errOut != "" || !strings.Contains(out, "a WAV clip per request in, Whisper's log-mel features of it, then means") {
				t.Fatalf("init --audio: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			if doc, err := os.ReadFile(filepath.Join(dir, metadataName)); err != nil || !strings.Contains(string(doc), c.want) {
				t.Fatalf("the document lacks %q: %v\n%s", c.want, err, doc)
			}
			var reqs []string
			for r, clip := range [][]byte{tone, silence, tone} {
				reqs = append(reqs, fmt.Sprintf(`{"id":"r%d","inputs":{"audio":{"items":[{"dtype":"uint8","shape":[%d],"data":%q}]}}}`,
					r, len(clip), base64.StdEncoding.EncodeToString(clip)))
			}
			doc, out := runRequests(t, dir, reqs)
			var resp struct {
				Responses []struct {
					Outputs map[string]struct {
						Shape []int64   `json:"shape"`
						Data  []float64 `json:"data"`
					} `json:"outputs"`
				} `json:"responses"`
			}
			if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Responses) != 3 {
				t.Fatalf("run printed %v\n%s", err, out)
			}
			for r, rr := range resp.Responses {
				if m := rr.Outputs["means"]; !slices.Equal(m.Shape, []int64{1, 80}) || len(m.Data) != 80 {
					t.Fatalf("request %d: means %v", r, m.Shape)
				}
			}
			for b, v := range resp.Responses[1].Outputs["means"].Data {
				if math.Abs(v+1.5) > 1e-6 {
					t.Fatalf("silence: band %d means %v, want -1.5", b, v)
				}
			}
			means := resp.Responses[0].Outputs["means"].Data
			// 1 kHz is mel 15 on Slaney's scale, the centre of band 25.85
			// of 80 up to 8 kHz.
			if peak := slices.Index(means, slices.Max(means)); peak < 25 || peak > 26 {
				t.Errorf("the tone peaks at band %d: %v", peak, means)
			}
			if !slices.Equal(means, resp.Responses[2].Outputs["means"].Data) {
				t.Errorf("one clip, two answers")
			}
			layouts = append(layouts, means)
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", doc); code != exitOK || !strings.Contains(errOut, "each of the 3 requests is answered alike grouped and alone") {
				t.Errorf("run --verify: exit %d\n%s", code, errOut)
			}
			// The next step init names, on requests synthesized of one
			// clip each (the adapter lays clips out one per request).
			if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
				t.Errorf("run --verify without requests: exit %d\n%s", code, errOut)
			}
			// One clip per request: a request of two is refused, saying so.
			two := fmt.Sprintf(`{"requests":[{"id":"two","inputs":{"audio":{"items":[{"dtype":"uint8","shape":[%d],"data":%q},{"dtype":"uint8","shape":[%d],"data":%q}]}}}]}`,
				len(silence), base64.StdEncoding.EncodeToString(silence), len(silence), base64.StdEncoding.EncodeToString(silence))
			if err := os.WriteFile(doc, []byte(two), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, errOut, code := runCLI(t, "run", dir, "--requests", doc); code == exitOK || !strings.Contains(out+errOut, "row 0 brings 2 clips: send one clip per request") {
				t.Errorf("a request of two clips: exit %d\n%s%s", code, out, errOut)
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
