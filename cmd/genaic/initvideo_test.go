package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// frameMeans is a video encoder that averages each channel of each frame
// of its clips: input pixel_values (dims), output means [batch, frames,
// channels] (or each frame's channels last, axes 2 and 3 averaged).
func frameMeans(dims []any, axes ...int64) *onnxpb.GraphProto {
	channels := dims[2]
	if axes[0] == 2 {
		channels = dims[4]
	}
	return meanGraph("clips", "pixel_values", dims, []any{dims[0], dims[1], channels}, axes)
}

// TestInitVideo is a newcomer's path with a video encoder: init --video
// writes a package that takes a clip per request, its frames encoded
// images as items, which check accepts; run answers each kept frame's
// channel means as ImageNet's normalization makes them, the frames the
// model takes sampled evenly and in order from a longer clip, channels
// first or last; grouped answers as alone, on the requests given and on
// requests synthesized of clips of the frames the model takes. A clip of
// fewer frames fails its request alone. Plain init names --video. Clips
// laid out [batch, channels, frames, ...], as 3D convolutions read them,
// are taken too.
func TestInitVideo(t *testing.T) {
	imagenet := func(v, mean, std float64) float64 { return (v/255 - mean) / std }
	colour := func(i int) color.NRGBA { return color.NRGBA{R: uint8(20 * i), G: 100, B: uint8(250 - 20*i), A: 255} }
	means := func(i int) []float64 {
		c := colour(i)
		return []float64{imagenet(float64(c.R), 0.485, 0.229), imagenet(float64(c.G), 0.456, 0.224), imagenet(float64(c.B), 0.406, 0.225)}
	}
	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		want string // in the document
		// clipChannels: the model's means are [batch, channels, frames]
		// (it takes clips channels first), not [batch, frames, channels].
		clipChannels bool
	}{
		{"channels first", frameMeans([]any{"batch", 4, 3, 8, 8}, 3, 4), "shape: [batch, 4, 3, 8, 8]", false},
		{"channels last", frameMeans([]any{"n", 4, 8, 8, 3}, 2, 3), `shape: ["n", 4, 8, 8, 3]`, false},
		// Hugging Face's export of VideoMAE names every axis.
		{"axes named", frameMeans([]any{"batch_size", "num_frames", "num_channels", "height", "width"}, 3, 4), "num_frames: 16", false},
		// torchvision's video models (r3d_18, s3d) and X3D take clips
		// channels before frames; their frames axis is often named.
		{"clips channels first", meanGraph("clips", "pixel_values", []any{"batch", 3, "time", 8, 8}, []any{"batch", 3, "time"}, []int64{3, 4}), "shape: [batch, 3, 16, 8, 8]", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGraph(t, filepath.Join(dir, "clips.onnx"), c.g, 17)
			initPrints(t, filepath.Join(dir, "clips.onnx"), "# Its input pixel_values takes video clips: `genaic init --video clips.onnx`\n")
			out, errOut, code := runCLI(t, "init", "--video", filepath.Join(dir, "clips.onnx"))
			if code != exitOK || errOut != "" || !strings.Contains(out, "a clip of encoded frames per request in, sampled and preprocessed, then clips") {
				t.Fatalf("init --video: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			_, doc := initWritten(t, dir)
			if !strings.Contains(doc, c.want) {
				t.Fatalf("the document lacks %q:\n%s", c.want, doc)
			}
			frames := int64(4)
			if strings.Contains(doc, "num_frames: 16") {
				frames = 16
			}
			// A clip of the frames the model takes, one of twice as many
			// (every other kept), and one of as many again.
			clip := func(first, n int) string {
				items := make([]string, n)
				for i := range n {
					png := solidPNG(t, 30+i, 20, colour(first+i))
					items[i] = fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, len(png), base64.StdEncoding.EncodeToString(png))
				}
				return `{"items":[` + strings.Join(items, ",") + `]}`
			}
			reqs := []string{
				fmt.Sprintf(`{"id":"a","inputs":{"frames":%s}}`, clip(0, int(frames))),
				fmt.Sprintf(`{"id":"b","inputs":{"frames":%s}}`, clip(1, 2*int(frames))),
				fmt.Sprintf(`{"id":"c","inputs":{"frames":%s}}`, clip(2, int(frames))),
			}
			path, printed := runRequests(t, dir, reqs)
			var resp struct {
				Responses []struct {
					Outputs map[string]struct {
						Shape []int64   `json:"shape"`
						Data  []float64 `json:"data"`
					} `json:"outputs"`
				} `json:"responses"`
			}
			if err := json.Unmarshal([]byte(printed), &resp); err != nil || len(resp.Responses) != 3 {
				t.Fatalf("run printed %v\n%.300s", err, printed)
			}
			for r, first := range []int{0, 1, 2} {
				m := resp.Responses[r].Outputs["means"]
				if len(m.Data) != int(frames)*3 {
					t.Fatalf("request %d: means %v", r, m.Shape)
				}
				step := 1
				if r == 1 {
					step = 2
				}
				for f := range int(frames) {
					for ch, want := range means(first + f*step) {
						at := f*3 + ch
						if c.clipChannels {
							at = ch*int(frames) + f
						}
						if got := m.Data[at]; math.Abs(got-want) > 1e-3 {
							t.Fatalf("request %d frame %d channel %d: %v, want %v (all %v)", r, f, ch, got, want, m.Data)
						}
					}
				}
			}
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", path); code != exitOK || !strings.Contains(errOut, "each of the 3 requests is answered alike grouped and alone") {
				t.Errorf("run --verify: exit %d\n%s", code, errOut)
			}
			// bench's every mode, its direct calls recorded through a
			// session of its own that keys a clip whole as the adapter's
			// (one case: each takes seconds).
			if c.clipChannels {
				for _, m := range bench(t, dir, "--requests", path, "--rounds", "1", "--warmup", "0", "--round-time", "50ms", "--concurrency", "2").Modes {
					if m.Failed != 0 {
						t.Errorf("bench %s: %d of its requests failed", m.Name, m.Failed)
					}
				}
			}
			// The next step init names, on requests synthesized of one
			// clip each, of the frames the model takes.
			if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
				t.Errorf("run --verify without requests: exit %d\n%s", code, errOut)
			}
			// A clip of fewer frames fails its request alone.
			short := fmt.Sprintf(`{"requests":[{"id":"short","inputs":{"frames":%s}},%s]}`, clip(0, int(frames)-1), reqs[0])
			if err := os.WriteFile(path, []byte(short), 0o644); err != nil {
				t.Fatal(err)
			}
			printed, errOut, code = runCLI(t, "run", dir, "--requests", path)
			if code != exitDiags || !strings.Contains(printed+errOut, fmt.Sprintf("holds %d frames after preprocessing.video", frames-1)) || strings.Count(printed, `"error":null`) != 1 {
				t.Errorf("a short clip: exit %d\n%.600s\n%s", code, printed, errOut)
			}
		})
	}

}
