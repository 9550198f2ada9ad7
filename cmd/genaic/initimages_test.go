package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// meanPixels is an image encoder that averages each channel of its
// images: input pixels (dims), output means [batch, channels], the mean
// over axes.
func meanPixels(dims []any, axes ...int64) *onnxpb.GraphProto {
	channels := dims[1]
	if axes[0] == 1 {
		channels = dims[3]
	}
	return meanGraph("means", "pixels", dims, []any{dims[0], channels}, axes)
}

// meanGraph is a model name whose output means (of shape out) averages its
// float input (of shape dims) over axes.
func meanGraph(name, input string, dims, out []any, axes []int64) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: name,
		Input:  []*onnxpb.ValueInfoProto{tensorInfo(input, 1, dims...)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("means", 1, out...)},
		Node: []*onnxpb.NodeProto{{OpType: "ReduceMean", Input: []string{input}, Output: []string{"means"}, Attribute: []*onnxpb.AttributeProto{
			{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: axes},
			{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}}}}
}

// echoModel is a model of one input of name and shape dims, of the
// element type it is given, that hands it back as float32 (echo).
func echoModel(name string, dims ...any) func(elem int32) *onnxpb.GraphProto {
	return func(elem int32) *onnxpb.GraphProto {
		return &onnxpb.GraphProto{Name: "echo",
			Input:  []*onnxpb.ValueInfoProto{tensorInfo(name, elem, dims...)},
			Output: []*onnxpb.ValueInfoProto{tensorInfo("echo", 1, dims...)},
			Node: []*onnxpb.NodeProto{{OpType: "Cast", Input: []string{name}, Output: []string{"echo"},
				Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}}}}
	}
}

// solidPNG is a w×h PNG of one colour.
func solidPNG(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInitImages is a newcomer's path with an image encoder: init
// --images writes a package that takes encoded images as items, which
// check accepts; run on solid images of any size and orientation answers
// each image's channel means as ImageNet's normalization makes them (RGB
// in order: the whole program ran, resize and centre crop included),
// channels first or last, and a gray model's as 0.5 and 0.5 make them;
// the requests grouped answer as alone. A model that takes no images is
// refused, saying why.
func TestInitImages(t *testing.T) {
	orange := color.NRGBA{R: 255, G: 128, B: 0, A: 255}
	imagenet := func(v, mean, std float64) float64 { return (v/255 - mean) / std }
	rgb := []float64{imagenet(255, 0.485, 0.229), imagenet(128, 0.456, 0.224), imagenet(0, 0.406, 0.225)}
	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		fill color.Color
		want []float64
	}{
		{"channels first", meanPixels([]any{"batch", 3, 8, 8}, 2, 3), orange, rgb},
		{"channels last", meanPixels([]any{"n", 6, 10, 3}, 1, 2), orange, rgb},
		{"sides open", meanPixels([]any{"batch", 3, "height", "width"}, 2, 3), orange, rgb},
		// Hugging Face's exports leave every axis open, the channels'
		// named num_channels: three, RGB.
		// Their first convolution takes three channels and no other,
		// which init's probe of the outputs gives it.
		{"channels open", func() *onnxpb.GraphProto {
			g := meanPixels([]any{"batch_size", "num_channels", "height", "width"}, 2, 3)
			g.Output[0] = tensorInfo("means", 1, "batch_size", "num_channels")
			g.Output = append(g.Output, tensorInfo("features", 1, "batch_size", 2, "height", "width"))
			g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: "w", DataType: 1, Dims: []int64{2, 3, 1, 1}, RawData: make([]byte, 24)})
			g.Node = append(g.Node, &onnxpb.NodeProto{OpType: "Conv", Input: []string{"pixels", "w"}, Output: []string{"features"}})
			return g
		}(), orange, rgb},
		{"gray", meanPixels([]any{"batch", 1, 8, 8}, 2, 3), color.Gray{Y: 64}, []float64{(64.0/255 - 0.5) / 0.5}},
		// The export left the channels of the output open: init's two
		// runs saw 3 both times, which the package writes in.
		{"an output axis left open", func() *onnxpb.GraphProto {
			g := meanPixels([]any{"batch", 3, 8, 8}, 2, 3)
			g.Output[0] = tensorInfo("means", 1, "batch", "means_dim_1")
			return g
		}(), orange, rgb},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGraph(t, filepath.Join(dir, "means.onnx"), c.g, 17)
			// Plain init points at --images.
			initPrints(t, filepath.Join(dir, "means.onnx"), "# Its input pixels takes images: `genaic init --images means.onnx`\n")
			out, errOut, code := runCLI(t, "init", "--images", filepath.Join(dir, "means.onnx"))
			if code != exitOK || errOut != "" || !strings.Contains(out, "encoded images in, preprocessed, then means") {
				t.Fatalf("init --images: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			// Three requests of one to three images, landscape,
			// portrait and square.
			sizes := [][2]int{{40, 30}, {17, 50}, {12, 12}, {90, 20}, {25, 26}, {9, 9}}
			var reqs []string
			for r, n := range []int{1, 2, 3} {
				var items []string
				for k := range n {
					s := sizes[(r*2+k)%len(sizes)]
					items = append(items, fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, len(solidPNG(t, s[0], s[1], c.fill)),
						base64.StdEncoding.EncodeToString(solidPNG(t, s[0], s[1], c.fill))))
				}
				reqs = append(reqs, fmt.Sprintf(`{"id":"r%d","inputs":{"images":{"items":[%s]}}}`, r, strings.Join(items, ",")))
			}
			doc, out := runRequests(t, dir, reqs)
			for r, items := range outputItems(t, out, "means", 3) {
				if len(items) != r+1 {
					t.Fatalf("request %d: %d items of means, want %d", r, len(items), r+1)
				}
				for k, it := range items {
					for ch, want := range c.want {
						if len(it) != len(c.want) || math.Abs(it[ch]-want) > 1e-3 {
							t.Fatalf("request %d image %d: means %v, want %v", r, k, it, c.want)
						}
					}
				}
			}
			if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", doc); code != exitOK || !strings.Contains(errOut, "each of the 3 requests is answered alike grouped and alone") {
				t.Errorf("run --verify: exit %d\n%s", code, errOut)
			}
		})
	}

	for _, c := range []struct {
		name string
		g    *onnxpb.GraphProto
		want string
	}{
		{"a batch of one", meanPixels([]any{1, 3, 8, 8}, 2, 3), "input pixels is float32 [1, 3, 8, 8], whose first axis the graph fixes at 1: open it first (`genaic dynamic-batch means.onnx -o ...`)"},
		{"no channels", meanPixels([]any{"batch", 4, 8, 8}, 2, 3), "with neither axis 1 nor axis 3 fixed at 3 (RGB) or 1 (gray) channels, or named like channels"},
		{"one side open", meanPixels([]any{"batch", 3, 8, "width"}, 2, 3), "which fixes one side of its images and leaves the other open"},
		{"no row per image", &onnxpb.GraphProto{Name: "total", Input: []*onnxpb.ValueInfoProto{tensorInfo("pixels", 1, "batch", 3, 8, 8)},
			Output: []*onnxpb.ValueInfoProto{tensorInfo("total", 1)},
			Node: []*onnxpb.NodeProto{{OpType: "ReduceMean", Input: []string{"pixels"}, Output: []string{"total"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}}}}, "no output gives one row per image: total [] has no row per image"},
		{"not images", &onnxpb.GraphProto{Name: "ids", Input: []*onnxpb.ValueInfoProto{tensorInfo("ids", 7, "batch", "seq")},
			Output: []*onnxpb.ValueInfoProto{tensorInfo("out", 7, "batch", "seq")},
			Node:   []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"ids"}, Output: []string{"out"}}}}, "input ids is int64 [batch, seq], not images [batch, channels, height, width]: --images makes pixels as float32, float16, bfloat16 or uint8"},
	} {
		dir := t.TempDir()
		writeGraph(t, filepath.Join(dir, "means.onnx"), c.g, 17)
		if _, errOut, code := runCLI(t, "init", "--images", filepath.Join(dir, "means.onnx")); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d\n%s", c.name, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, metadataName)); err == nil {
			t.Errorf("%s: a refused init --images wrote a document", c.name)
		}
	}
}

// TestInitImagesOpenSidedMask: where the graph leaves the image's sides
// open, an output that follows them (a segmenter's mask) takes the sides
// of the crop, one computed from them (a pooled map, a transformer's
// tokens) what the model makes of the crop, and each is split per image
// like the others.
func TestInitImagesOpenSidedMask(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "seg.onnx"), &onnxpb.GraphProto{Name: "seg",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("pixels", 1, "batch", 3, "height", "width")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("mask", 1, "batch", 3, "height", "width"), tensorInfo("pooled", 1, "batch", 3, "rows", "columns")},
		Node: []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"pixels"}, Output: []string{"mask"}},
			{OpType: "MaxPool", Input: []string{"pixels"}, Output: []string{"pooled"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "kernel_shape", Type: onnxpb.AttributeProto_INTS, Ints: []int64{2, 2}},
				{Name: "strides", Type: onnxpb.AttributeProto_INTS, Ints: []int64{2, 2}}}}}}, 17)
	if out, errOut, code := runCLI(t, "init", "--images", filepath.Join(dir, "seg.onnx")); code != exitOK {
		t.Fatalf("init --images: exit %d\n%s%s", code, out, errOut)
	}
	_, doc := initWritten(t, dir)
	for _, want := range []string{"            mask:\n              dtype: float32\n              shape: [batch, 3, 224, 224]\n",
		"            pooled:\n              dtype: float32\n              shape: [batch, 3, 112, 112]\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	png := solidPNG(t, 300, 250, color.NRGBA{R: 10, G: 20, B: 30, A: 255})
	reqs := filepath.Join(dir, "requests.json")
	if err := os.WriteFile(reqs, []byte(fmt.Sprintf(`{"requests":[{"id":"r","inputs":{"images":{"items":[{"dtype":"uint8","shape":[%d],"data":%q}]}}}]}`,
		len(png), base64.StdEncoding.EncodeToString(png))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "run", dir, "--requests", reqs)
	if code != exitOK || !strings.Contains(out, `"mask":{"items":[{"dtype":"float32","shape":[3,224,224]`) {
		t.Errorf("run: exit %d\n%.300s\n%s", code, out, errOut)
	}
}

// TestInitImagesOnlyItsSize: a model that takes images of its trained
// size alone (a flatten to 3·224·224 values) refuses every extent plain
// init's probe tries, which --images does not run (nor complain of); its
// run on the package's images, two then three, shows them one per image.
func TestInitImagesOnlyItsSize(t *testing.T) {
	dir := t.TempDir()
	shape := binary.LittleEndian.AppendUint64(nil, ^uint64(0))
	shape = binary.LittleEndian.AppendUint64(shape, 3*224*224)
	writeGraph(t, filepath.Join(dir, "flat.onnx"), &onnxpb.GraphProto{Name: "flat",
		Input:       []*onnxpb.ValueInfoProto{tensorInfo("pixels", 1, "batch", 3, "height", "width")},
		Output:      []*onnxpb.ValueInfoProto{tensorInfo("scores", 1, "Reshapescores_dim_0", 1)},
		Initializer: []*onnxpb.TensorProto{{Name: "shape", DataType: 7, Dims: []int64{2}, RawData: shape}},
		Node: []*onnxpb.NodeProto{{OpType: "Reshape", Input: []string{"pixels", "shape"}, Output: []string{"flat"}},
			{OpType: "ReduceMax", Input: []string{"flat"}, Output: []string{"scores"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: []int64{1}}}}}}, 17)
	out, errOut, code := runCLI(t, "init", "--images", filepath.Join(dir, "flat.onnx"))
	if code != exitOK || errOut != "" {
		t.Fatalf("init --images: exit %d\n%s%s", code, out, errOut)
	}
	_, doc := initWritten(t, dir)
	if !strings.Contains(doc, "            scores:\n              dtype: float32\n              shape: [batch, 1]\n") {
		t.Errorf("scores are not one row per image:\n%s", doc)
	}
}

// runRequests writes reqs, requests as JSON, as a requests document in
// dir and runs the package in dir on it, returning the document's path and
// what run printed.
func runRequests(t *testing.T, dir string, reqs []string) (doc, out string) {
	t.Helper()
	doc = filepath.Join(dir, "requests.json")
	if err := os.WriteFile(doc, []byte(`{"requests":[`+strings.Join(reqs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "run", dir, "--requests", doc)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	return doc, out
}

// TestInitImagesHalf: a model exported in half precision (float16 pixels)
// gets a package whose adapter writes its pixels as float16: check accepts
// it, and each pixel the model receives is, exactly, the one a float32
// export of the same model receives, rounded to half precision (both
// models hand their input back, widened to float32). Grouped answers as
// alone.
func TestInitImagesHalf(t *testing.T) {
	const f32, f16 = 1, 10
	model := echoModel("pixels", "batch", 3, 8, 8)
	echoes := echoedImages(t, model, []int32{f32, f16}, func(elem int32, doc string) {
		if elem == f16 && strings.Count(doc, "dtype: float16") != 4 {
			t.Errorf("the half model's pixels are not float16 on the program's output, the adapter's and the model's port:\n%s", doc)
		}
	})
	wide, half := echoes[f32], echoes[f16]
	if len(wide) != 3 || len(half) != 3 {
		t.Fatalf("%d and %d images echoed, want 3 and 3", len(wide), len(half))
	}
	rounded := 0
	for i := range wide {
		if len(wide[i]) != 3*8*8 || len(half[i]) != len(wide[i]) {
			t.Fatalf("image %d: %d and %d values, want %d", i, len(wide[i]), len(half[i]), 3*8*8)
		}
		for k, v := range wide[i] {
			want := backend.HalfToFloat32(backend.Float32ToHalf(float32(v)))
			if float32(half[i][k]) != want {
				t.Fatalf("image %d value %d: the half model received %v, want %v (%v rounded)", i, k, half[i][k], want, v)
			}
			if want != float32(v) {
				rounded++
			}
		}
	}
	if rounded == 0 {
		t.Error("no value of the images rounds in half precision: the test shows nothing")
	}
}

// solidItem is a requests document's item of a solid PNG.
func solidItem(t *testing.T) string {
	p := solidPNG(t, 30, 40, color.NRGBA{R: 200, G: 10, B: 99, A: 255})
	return fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, len(p), base64.StdEncoding.EncodeToString(p))
}

// TestInitImagesRaw: a model that takes raw pixels (uint8 [batch, height,
// width, 3], as TensorFlow's detectors are exported) gets a package whose
// program stops before rescale and normalize and whose adapter writes the
// pixels as uint8; check accepts it, and each pixel the model receives is
// the one a float32 export of the same model receives, before ImageNet's
// normalization, rounded. Grouped answers as alone.
func TestInitImagesRaw(t *testing.T) {
	const f32, u8 = 1, 2
	model := echoModel("images", "batch", 8, 8, 3)
	echoes := echoedImages(t, model, []int32{f32, u8}, func(elem int32, doc string) {
		if elem == u8 && (strings.Count(doc, "dtype: uint8") < 4 || strings.Contains(doc, "op: rescale") || strings.Contains(doc, "op: normalize")) {
			t.Errorf("the raw model's package scales its pixels, or does not write them as uint8:\n%s", doc)
		}
	})
	normalized, raw := echoes[f32], echoes[u8]
	if len(normalized) != 3 || len(raw) != 3 {
		t.Fatalf("%d and %d images echoed, want 3 and 3", len(normalized), len(raw))
	}
	mean, std := []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	exact := 0
	for i := range normalized {
		for k, v := range normalized[i] {
			ch := k % 3 // channels last
			pixel := (v*std[ch] + mean[ch]) * 255
			if d := math.Abs(raw[i][k] - math.Floor(pixel+0.5)); d > 1 || raw[i][k] != math.Round(raw[i][k]) {
				t.Fatalf("image %d value %d: the raw model received %v, the float one %v (%v before normalizing)", i, k, raw[i][k], v, pixel)
			} else if d == 0 {
				exact++
			}
		}
	}
	if exact < len(raw[0])*len(raw)*9/10 {
		t.Errorf("only %d values are the float export's rounded", exact)
	}
}

// echoedImages writes model(elem), a model that hands its images back as
// float32, for each element type of elems; runs init --images on it, checks
// the package clean and its document with doc, runs two requests of three
// images (one of varied pixels, twice, and one solid) and run --verify on
// them; and returns each image's echo by element type.
func echoedImages(t *testing.T, model func(int32) *onnxpb.GraphProto, elems []int32, doc func(elem int32, doc string)) map[int32][][]float64 {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 23, 17))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 37 % 251)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	item := fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, b.Len(), base64.StdEncoding.EncodeToString(b.Bytes()))
	reqs := []string{fmt.Sprintf(`{"id":"a","inputs":{"images":{"items":[%s, %s]}}}`, item, solidItem(t)), fmt.Sprintf(`{"id":"b","inputs":{"images":{"items":[%s]}}}`, item)}
	echoes := map[int32][][]float64{}
	for _, elem := range elems {
		dir := t.TempDir()
		writeGraph(t, filepath.Join(dir, "echo.onnx"), model(elem), 17)
		if out, errOut, code := runCLI(t, "init", "--images", filepath.Join(dir, "echo.onnx")); code != exitOK {
			t.Fatalf("init --images: exit %d\n%s%s", code, out, errOut)
		}
		checkClean(t, dir)
		_, written := initWritten(t, dir)
		doc(elem, written)
		path, out := runRequests(t, dir, reqs)
		for _, items := range outputItems(t, out, "echo", 2) {
			echoes[elem] = append(echoes[elem], items...)
		}
		if _, errOut, code := runCLI(t, "run", dir, "--verify", "--requests", path); code != exitOK || !strings.Contains(errOut, "answered alike grouped and alone") {
			t.Errorf("run --verify: exit %d\n%s", code, errOut)
		}
	}
	return echoes
}

// outputItems reads a responses document run printed, of n responses, and
// returns each response's items of output name, their data.
func outputItems(t *testing.T, out, name string, n int) [][][]float64 {
	t.Helper()
	var resp struct {
		Responses []struct {
			Outputs map[string]struct {
				Items []struct {
					Data []float64 `json:"data"`
				} `json:"items"`
			} `json:"outputs"`
		} `json:"responses"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Responses) != n {
		t.Fatalf("run printed %v\n%.300s", err, out)
	}
	items := make([][][]float64, n)
	for r, rr := range resp.Responses {
		for _, it := range rr.Outputs[name].Items {
			items[r] = append(items[r], it.Data)
		}
	}
	return items
}
