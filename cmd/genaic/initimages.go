package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
	"github.com/genaic/genaic/vm/ort"
)

// An image encoder's package as init --images writes it: the request
// brings encoded images (any number, as items), the built-in image adapter
// decodes and preprocesses them into the model's input, and the model runs
// on the images of many requests at once, its outputs split back per image.

// imageSide is the side init --images crops to where the graph leaves the
// image's height and width open: the size most image encoders are trained
// at.
const imageSide = 224

// imageInput is the model's input that takes the images.
type imageInput struct {
	port     initPort
	batch    string // the symbol of its first axis: one image per row
	channels int64  // 3 (RGB) or 1 (gray)
	last     bool   // channels last: [batch, height, width, channels]
	h, w     int64  // the side the graph fixes, or imageSide where it leaves it open
	open     bool   // the graph leaves height and width open
	// outs are the outputs that give one row per image, every axis but
	// the first as the package's images make it (settleOutputs); skipped
	// says why each other output is left out.
	outs    []initPort
	skipped []string
}

// imageInputOf is the component's one input, if it takes images: a float
// tensor [batch, channels, height, width] (or channels last) of 3 or 1
// channels whose first axis is dynamic. It says why not otherwise.
func imageInputOf(c *initComponent) (imageInput, error) {
	p, err := soleInput(c, itemsFlag{"image", "--images", "images", "[batch, channels, height, width]", "or channels last", "pixels", "images"})
	if err != nil {
		return imageInput{}, err
	}
	im := imageInput{port: p, batch: p.dims[0].sym}
	if why := im.readPixels(p.dims, 1); why != "" {
		return imageInput{}, inputError(p, why)
	}
	return im, nil
}

// readPixels reads an image's channels, height and width off the axes of
// dims from first on, [channels, height, width] or channels last, into
// im; it says why they hold no image otherwise. Channels the graph fixes at 3
// or 1, or leaves open under a name that says so (Hugging Face's exports
// name it num_channels: RGB); sides both fixed, or both open (imageSide).
func (im *imageInput) readPixels(dims []initDim, first int) string {
	axes := dims[first : first+3]
	channels := func(d initDim) int64 {
		switch {
		case d.sym == "" && (d.size == 3 || d.size == 1):
			return d.size
		case d.sym != "" && namedLike(d.sym, "channel"):
			return 3
		}
		return 0
	}
	sides := axes[1:3]
	switch {
	case channels(axes[0]) > 0:
		im.channels = channels(axes[0])
	case channels(axes[2]) > 0:
		im.channels, im.last, sides = channels(axes[2]), true, axes[0:2]
	default:
		return fmt.Sprintf("with neither axis %d nor axis %d fixed at 3 (RGB) or 1 (gray) channels, or named like channels", first, first+2)
	}
	switch {
	case sides[0].sym == "" && sides[1].sym == "":
		im.h, im.w = sides[0].size, sides[1].size
	case sides[0].sym != "" && sides[1].sym != "":
		im.h, im.w, im.open = imageSide, imageSide, true
	default:
		return "which fixes one side of its images and leaves the other open"
	}
	return ""
}

// imagesPackage is the package init --images writes of the model c at
// path.
func imagesPackage(path string, c *initComponent) (string, error) {
	im, err := imageInputOf(c)
	if err == nil {
		err = settleOutputs(path, c, &im)
	}
	if err != nil {
		return "", err
	}
	return imagesDocument(c, im), nil
}

// settleOutputs keeps, in im, the outputs that give one row per image
// (settleRows, on images of the package's size).
func settleOutputs(path string, c *initComponent, im *imageInput) error {
	var err error
	im.outs, im.skipped, err = settleRows(path, c, "image", im.batch, floatItems(im.port, func(n int64) []int64 {
		if im.last {
			return []int64{n, im.h, im.w, im.channels}
		}
		return []int64{n, im.channels, im.h, im.w}
	}), nil)
	return err
}

// itemInputs makes a model's inputs for n items, each of an extent of
// its own (a segment's tokens) where the inputs have one: the r-th of
// settleRows' runs.
type itemInputs func(n int64, r int) (map[string]*backend.Tensor, error)

// floatItems is input p of shape(n) for n items, of 0.5s.
func floatItems(p initPort, shape func(n int64) []int64) itemInputs {
	return func(n int64, _ int) (map[string]*backend.Tensor, error) {
		x, err := backend.NewTensor(p.dtype, shape(n))
		if err != nil {
			return nil, err
		}
		for k := range x.Len() {
			x.SetFloat64At(k, 0.5)
		}
		return map[string]*backend.Tensor{p.name: x}, nil
	}
}

// settleRows runs the model at path on two, then three items (images,
// clips, segments) of the package's size, its inputs as inputs makes
// them, and returns the outputs that give one row per item: a first axis
// the graph leaves open that took two rows, then three, and every other
// axis the same in both runs, written in at that extent where the graph
// leaves it open (a constant the export left open, the crop's sides a
// mask follows, the tokens a transformer makes of them), or, where extent
// names an axis the items have each of their own, that took its two runs'
// extents, written as that axis (extent.sym). skipped says why each other
// output is left out. Where the graph computes extents from values
// (NonMaxSuppression), an output of such an open axis is left out: its
// counts may differ on other items. A model that fails on the package's
// items is an error, as is one with no output to keep.
func settleRows(path string, c *initComponent, item, batch string, inputs itemInputs, extent *itemExtent) (outs []initPort, skipped []string, err error) {
	b, err := ort.New(ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return nil, nil, err
	}
	comp := &ir.Component{Name: c.name, Impl: ir.ImplONNX, Artifact: filepath.Base(path)}
	for _, p := range c.inputs {
		comp.Inputs = append(comp.Inputs, &ir.Port{Name: p.name})
	}
	wanted := make([]string, len(c.outputs))
	for i, o := range c.outputs {
		comp.Outputs = append(comp.Outputs, &ir.Port{Name: o.name})
		wanted[i] = o.name
	}
	s, err := b.Load(comp, filepath.Dir(path))
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var runs [2]map[string]*backend.Tensor
	for r, n := range []int64{2, 3} {
		in, err := inputs(n, r)
		if err == nil {
			runs[r], err = s.Run(context.Background(), in, wanted)
		}
		if err != nil {
			shapes := make([]string, 0, len(in))
			for _, p := range c.inputs {
				if x := in[p.name]; x != nil {
					shapes = append(shapes, fmt.Sprint(x.Shape))
				}
			}
			return nil, nil, fmt.Errorf("the model fails on %d %ss of the package's size, %s: %v", n, item, strings.Join(shapes, " and "), err)
		}
	}
	// follows names the axes that follow the items' extent by the model's
	// arithmetic, one symbol for each pair of extents the runs gave them.
	followers, taken := map[[2]int64]string{}, takenNames(c)
	follows := func(a, z int64) string {
		if followers[[2]int64{a, z}] == "" {
			followers[[2]int64{a, z}] = freshName(extent.follows, taken)
		}
		return followers[[2]int64{a, z}]
	}
	// dims is what an output's axes are, if it gives one row per item.
	dims := func(o initPort) ([]initDim, bool) {
		two, three := runs[0][o.name], runs[1][o.name]
		if !o.hasShape || len(o.dims) == 0 || o.dims[0].sym == "" || two == nil || three == nil ||
			two.Rank() != len(o.dims) || three.Rank() != len(o.dims) || two.Shape[0] != 2 || three.Shape[0] != 3 {
			return nil, false
		}
		out := []initDim{{sym: batch}}
		for i := 1; i < len(o.dims); i++ {
			switch a, z := two.Shape[i], three.Shape[i]; {
			case a == z:
				out = append(out, initDim{size: a})
			case extent != nil && a == extent.runs[0] && z == extent.runs[1]:
				out = append(out, initDim{sym: extent.sym})
			case extent != nil && extent.follows != "":
				out = append(out, initDim{sym: follows(a, z)})
			default:
				return nil, false
			}
		}
		return out, true
	}
	for _, o := range c.outputs {
		d, ok := dims(o)
		switch {
		case !ok:
			skipped = append(skipped, fmt.Sprintf("%s %s has no row per %s", o.name, o.shapeYAML(), item))
			continue
		case len(c.counting) > 0 && slices.ContainsFunc(o.dims[1:], func(d initDim) bool { return d.sym != "" }):
			skipped = append(skipped, fmt.Sprintf("%s %s has an extent the graph computes from values (%s)", o.name, o.shapeYAML(), strings.Join(c.counting, ", ")))
			continue
		}
		o.dims = d
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		return nil, skipped, fmt.Errorf("no output gives one row per %s: %s", item, strings.Join(skipped, "; "))
	}
	return outs, skipped, nil
}

// itemExtent is an axis the items of a package each have an extent of
// (a segment's tokens), under its symbol, and the extents settleRows'
// two runs give it. Where follows is not "", an output axis of other
// extents that differ between the runs follows the items' extent by the
// model's arithmetic (a speech encoder's frames of its samples), and is
// written as a symbol of its own named after follows; otherwise such an
// output is left out.
type itemExtent struct {
	sym     string
	runs    [2]int64
	follows string
}

// pixelShape is the shape of the pixels the adapter makes for the model.
func (im imageInput) pixelShape() string {
	b := yq(im.batch)
	if im.last {
		return fmt.Sprintf("[%s, %d, %d, %d]", b, im.h, im.w, im.channels)
	}
	return fmt.Sprintf("[%s, %d, %d, %d]", b, im.channels, im.h, im.w)
}

// imagesDocument writes the package of an image encoder c whose input im
// takes the images.
func imagesDocument(c *initComponent, im imageInput) string {
	b, line := docLines()
	taken := takenNames(c)
	in := newMediaInput("images", taken)
	images := in.name
	var (
		perRow    = freshName("rows_plus_one", taken)
		pixels    = freshName(im.port.name, taken) // the adapter's output, the model's input
		imgOffset = "image.image_offsets"
		imgOwner  = "image.image_owner"
		adapter   = freshName("image_preprocess", taken)
		level     = fmt.Sprintf("{ offsets: %s, owner: %s", imgOffset, imgOwner)
	)
	outs, skipped := im.outs, im.skipped
	line(0, "# Written by `genaic init --images` from %s: a package that takes", c.artifact)
	line(0, "# encoded images (PNG, JPEG, GIF or WebP), any number per request, as")
	line(0, "# items, and runs the model on the images of many requests at once;")
	line(0, "# each request gets its own images' rows of every output, one item each.")
	line(0, "# A requests document (genaic run, bench) names image files:")
	line(0, "#   {\"id\": \"r1\", \"inputs\": {%q: {\"items\": [{\"file\": \"cat.jpg\"}]}}}", images)
	line(0, "#")
	im.preprocessingComment(line)
	line(0, "schema_version: v1.1")
	line(0, "model:")
	line(1, "name: %s", yq(c.name))
	line(0, "preprocessing:")
	line(1, "image:")
	line(2, "transforms:")
	line(3, "- { op: decode, outputs: [image.decoded] }")
	last := im.transforms(line, "image", "image.decoded")
	line(2, "outputs:")
	line(3, "- name: %s", yq(pixels))
	line(4, "source: %s", last)
	line(4, "content: pixels")
	line(4, "dtype: %s", im.port.dtype)
	line(4, "contract:")
	line(5, "dtype: %s", im.port.dtype)
	line(5, "shape: %s", im.pixelShape())
	line(5, "batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: produced }] }", level)
	line(3, "- { name: %s, source: %s, content: pack_offsets, dtype: int64, contract: { dtype: int64, shape: [%s] } }", imgOffset, last, yq(perRow))
	line(3, "- { name: %s, source: %s, content: pack_owner, dtype: int64, contract: { dtype: int64, shape: [%s] } }", imgOwner, last, yq(im.batch))
	line(0, "pipeline:")
	line(1, "workflow:")
	line(2, "manifest:")
	line(3, "adapter_abis: { onnx-genai.image-preprocess: \"1\" }")
	in.workflowInputs(line, "image")
	line(2, "outputs:")
	for _, o := range outs {
		line(3, "%s:", yq(o.name))
		line(4, "contract:")
		line(5, "dtype: %s", o.dtype)
		line(5, "shape: %s", o.shapeYAML())
		line(5, "batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: preserved }] }", level)
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
	for _, comp := range []struct{ name, shape string }{{imgOffset, yq(perRow)}, {imgOwner, yq(im.batch)}} {
		line(3, "%s:", comp.name)
		line(4, "contract: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", comp.shape)
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
	in.adapterComponent(line, adapter, "image", "images", 8, 32<<20)
	line(6, "%s:", yq(pixels))
	line(7, "dtype: %s", im.port.dtype)
	line(7, "shape: %s", im.pixelShape())
	line(7, "batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: produced }] }", level)
	line(6, "%s: { dtype: int64, shape: [%s] }", imgOffset, yq(perRow))
	line(6, "%s: { dtype: int64, shape: [%s] }", imgOwner, yq(im.batch))
	line(3, "%s:", yq(c.name))
	line(4, "implementation: { kind: onnx, artifact: %s }", yq(c.artifact))
	line(4, "# At most 8 images per call: raise it to the batch your model runs")
	line(4, "# fastest at (`genaic bench` measures it).")
	line(4, "batch_capacity:")
	line(5, "budgets:")
	line(6, "- { dimensions: [%s], max_total: 8 }", yq(im.batch))
	line(4, "ports:")
	line(5, "inputs:")
	line(6, "%s:", yq(im.port.name))
	line(7, "dtype: %s", im.port.dtype)
	line(7, "shape: %s", im.pixelShape())
	line(7, "batch_layout: { kind: token_packed, axis: 0, levels: [%s }] }", level)
	line(5, "outputs:")
	for _, s := range skipped {
		line(6, "# Not declared: %s.", s)
	}
	for _, o := range outs {
		line(6, "%s:", yq(o.name))
		line(7, "dtype: %s", o.dtype)
		line(7, "shape: %s", o.shapeYAML())
		line(7, "batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: preserved }] }", level)
	}
	line(2, "steps:")
	line(3, "- kind: invoke")
	line(4, "component: %s", yq(adapter))
	in.invokeAdapter(line)
	line(4, "outputs: { %s: %s, %s: %s, %s: %s }", yq(pixels), yq(pixels), imgOffset, imgOffset, imgOwner, imgOwner)
	invokeModel(line, c, [][2]string{{im.port.name, pixels}}, outs)
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", imgOffset, imgOffset)
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", imgOwner, imgOwner)
	return b.String()
}

// preprocessingComment writes the account, in the document's first
// comment, of the preprocessing transforms writes.
func (im imageInput) preprocessingComment(line func(int, string, ...any)) {
	line(0, "# The preprocessing is the one most ImageNet-trained encoders take")
	line(0, "# (torchvision's and timm's classifiers): the shorter side resized to")
	scaled := ", scaled to [0, 1]"
	if im.raw() {
		scaled = " (the model takes"
	}
	if im.open {
		line(0, "# %d, the centre %dx%d cut out (the graph leaves the sides open:", shorterSide(im), im.h, im.w)
		line(0, "# %d is the side most encoders are trained at)%s", imageSide, scaled)
	} else {
		line(0, "# %d, the centre %dx%d the graph fixes cut out%s", shorterSide(im), im.h, im.w, scaled)
	}
	switch {
	case im.raw():
		line(0, "# uint8: the pixels as decoded, rounded after the resize, neither")
		line(0, "# scaled nor normalized).")
		line(0, "# Verify it against your model's: some resize to the square without")
		line(0, "# cropping (resize: { size: N }). docs/preprocessing.md lists the ops.")
		return
	case im.channels == 1:
		line(0, "# and, one gray channel, normalized by 0.5 and 0.5 (to [-1, 1]).")
	default:
		line(0, "# and normalized by ImageNet's mean and std per channel.")
	}
	line(0, "# Verify it against your model's: CLIP normalizes by [0.4815, 0.4578,")
	line(0, "# 0.4082] and [0.2686, 0.2613, 0.2758], a model trained on [-1, 1] by")
	line(0, "# 0.5 and 0.5, and some resize to the square without cropping")
	line(0, "# (resize: { size: N }). docs/preprocessing.md lists the ops.")
}

// raw reports whether the model takes raw pixels, uint8 in [0, 255]: the
// program then neither scales nor normalizes them.
func (im imageInput) raw() bool { return im.port.dtype == "uint8" }

// transforms writes the program's transforms from the decoded value from
// on: ImageNet's preprocessing of an image of im's channels and size,
// named after prefix, and returns the value they end in (the pixels
// cropped, where the model takes them raw).
func (im imageInput) transforms(line func(int, string, ...any), prefix, from string) string {
	mode, mean, std := "RGB", "[0.485, 0.456, 0.406]", "[0.229, 0.224, 0.225]"
	if im.channels == 1 {
		mode, mean, std = "L", "[0.5]", "[0.5]"
	}
	line(3, "- { op: convert_color, mode: %s, inputs: [%s], outputs: [%s.color] }", mode, from, prefix)
	line(3, "- { op: resize, shortest_edge: %d, rounding: floor, inputs: [%s.color], outputs: [%s.resized] }", shorterSide(im), prefix, prefix)
	line(3, "- { op: center_crop, height: %d, width: %d, inputs: [%s.resized], outputs: [%s.cropped] }", im.h, im.w, prefix, prefix)
	if im.raw() {
		return prefix + ".cropped"
	}
	line(3, "- { op: rescale, factor: 0.00392156862745098, inputs: [%s.cropped], outputs: [%s.scaled] }", prefix, prefix)
	line(3, "- { op: normalize, mean: %s, std: %s, inputs: [%s.scaled], outputs: [%s.normalized] }", mean, std, prefix, prefix)
	return prefix + ".normalized"
}

// shorterSide is what the shorter side is resized to before the centre
// crop: the crop's longer side over 0.875, rounded, as ImageNet's
// evaluation resizes to 256 and crops 224; the longer side, so that an
// oblong crop fits an image of either orientation.
func shorterSide(im imageInput) int64 {
	return (max(im.h, im.w)*8 + 3) / 7
}

// mediaInput is the request input of a package that takes encoded media
// (images, clips) as items, and its companions: the bytes of each item,
// then the items of each request.
type mediaInput struct {
	name, offsets, owner, rows, row, bytes, plusOne, rowsPlus string
}

// newMediaInput names a media input and its companions apart from taken.
func newMediaInput(name string, taken map[string]bool) mediaInput {
	name = freshName(name, taken)
	return mediaInput{name: name,
		offsets: freshName(name+"_offsets", taken), owner: freshName(name+"_owner", taken),
		rows: freshName(name+"_rows", taken), row: freshName(name+"_row", taken),
		bytes: freshName("bytes", taken), plusOne: freshName(name+"_plus_one", taken),
		rowsPlus: freshName(name+"_rows_plus_one", taken)}
}

// workflowInputs writes the input and its companions as the workflow's
// request inputs.
func (in mediaInput) workflowInputs(line func(int, string, ...any), item string) {
	line(2, "inputs:")
	line(3, "%s:", yq(in.name))
	line(4, "contract:")
	line(5, "dtype: uint8")
	line(5, "shape: [%s]", yq(in.bytes))
	line(5, "# The bytes of each %s, then the %ss of each request.", item, item)
	line(5, "batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: %s, owner: %s }, { offsets: %s, owner: %s }] }",
		yq(in.offsets), yq(in.owner), yq(in.rows), yq(in.row))
	line(4, "role: { kind: runtime, version: \"1.0\", role: media }")
	line(4, "source: { kind: request }")
	for _, comp := range []struct{ name, sym string }{{in.offsets, in.plusOne}, {in.owner, in.bytes}, {in.rows, in.rowsPlus}, {in.row, in.name}} {
		line(3, "%s:", yq(comp.name))
		line(4, "contract: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", yq(comp.sym))
		line(4, "role: { kind: opaque }")
		line(4, "source: { kind: request }")
	}
}

// adapterInputs writes the adapter's budgets, at most items of the input
// and bytes of their encoding per call, and its input ports.
func (in mediaInput) adapterInputs(line func(int, string, ...any), items string, most, bytes int) {
	line(4, "# Up to %d %s (%d MiB of encoded bytes) are decoded in one call; the", most, items, bytes>>20)
	line(4, "# model's budget below bounds what it runs at once.")
	line(4, "batch_capacity:")
	line(5, "budgets:")
	line(6, "- { dimensions: [%s], max_total: %d }", yq(in.name), most)
	line(6, "- { dimensions: [%s], max_total: %d }", yq(in.bytes), bytes)
	line(4, "ports:")
	line(5, "inputs:")
	line(6, "encoded:")
	line(7, "dtype: uint8")
	line(7, "shape: [%s]", yq(in.bytes))
	line(7, "batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: byte_offsets, owner: %s }, { offsets: rows, owner: %s }] }", yq(in.owner), yq(in.row))
	line(6, "byte_offsets: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", yq(in.plusOne))
	line(6, "rows: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", yq(in.rowsPlus))
}

// adapterComponent writes the adapter component of the package, of the
// modality's built-in adapter, up to most items and bytes of their
// encoding a call, its input ports, and the key its output ports follow.
func (in mediaInput) adapterComponent(line func(int, string, ...any), adapter, modality, items string, most, bytes int) {
	line(2, "components:")
	line(3, "%s:", yq(adapter))
	line(4, "implementation: { kind: adapter, abi: onnx-genai.%s-preprocess, version: \"1\" }", modality)
	in.adapterInputs(line, items, most, bytes)
	line(5, "outputs:")
}

// mediaModel is the model's component of a media package, as
// modelComponent writes it: it takes up to perCall items a call, counted
// by batch (and, where uniform is not "", only items of one extent of it
// share a call), its input port shaped shape and laid out in, and each
// output of outs laid out out; skipped says why each other is left out.
type mediaModel struct {
	items, batch, uniform string
	perCall               int
	port                  initPort
	shape, in, out        string
	outs                  []initPort
	skipped               []string
}

// modelComponent writes m, the component of model c.
func (m mediaModel) modelComponent(line func(int, string, ...any), c *initComponent) {
	line(3, "%s:", yq(c.name))
	line(4, "implementation: { kind: onnx, artifact: %s }", yq(c.artifact))
	line(4, "# At most %d %s per call: raise it to the batch your model runs", m.perCall, m.items)
	line(4, "# fastest at (`genaic bench` measures it).")
	line(4, "batch_capacity:")
	if m.uniform != "" {
		line(5, "uniform_dimensions: [%s]  # %s of one length share a call", yq(m.uniform), m.items)
	}
	line(5, "budgets:")
	line(6, "- { dimensions: [%s], max_total: %d }", yq(m.batch), m.perCall)
	line(4, "ports:")
	line(5, "inputs:")
	line(6, "%s: { dtype: %s, shape: %s, %s }", yq(m.port.name), m.port.dtype, m.shape, m.in)
	line(5, "outputs:")
	for _, s := range m.skipped {
		line(6, "# Not declared: %s.", s)
	}
	for _, o := range m.outs {
		line(6, "%s: { dtype: %s, shape: %s, %s }", yq(o.name), o.dtype, o.shapeYAML(), m.out)
	}
}

// workflowOutputs writes outs as the workflow's outputs, laid out so.
func workflowOutputs(line func(int, string, ...any), outs []initPort, layout string) {
	for _, o := range outs {
		line(3, "%s:", yq(o.name))
		line(4, "contract: { dtype: %s, shape: %s, %s }", o.dtype, o.shapeYAML(), layout)
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
}

// invokeAdapter writes the inputs of the step that invokes the adapter.
func (in mediaInput) invokeAdapter(line func(int, string, ...any)) {
	line(4, "inputs: { encoded: %s, byte_offsets: %s, rows: %s }", yq(in.name), yq(in.offsets), yq(in.rows))
}

// takenNames are the names a package init writes around a model c may
// not take for its own: the model's symbols, its outputs (values of the
// workflow too) and its component.
func takenNames(c *initComponent) map[string]bool {
	taken := map[string]bool{c.name: true}
	for _, p := range slices.Concat(c.inputs, c.outputs) {
		for _, d := range p.dims {
			taken[d.sym] = true
		}
	}
	for _, p := range c.outputs {
		taken[p.name] = true
	}
	return taken
}

// invokeModel writes the step that invokes the model c, each input port
// given the value beside it, and the emit of each of its outputs outs.
func invokeModel(line func(int, string, ...any), c *initComponent, inputs [][2]string, outs []initPort) {
	line(3, "- kind: invoke")
	line(4, "component: %s", yq(c.name))
	args := make([]string, len(inputs))
	for i, in := range inputs {
		args[i] = yq(in[0]) + ": " + yq(in[1])
	}
	line(4, "inputs: { %s }", strings.Join(args, ", "))
	results := make([]string, len(outs))
	for i, o := range outs {
		results[i] = yq(o.name) + ": " + yq(o.name)
	}
	line(4, "outputs: { %s }", strings.Join(results, ", "))
	for _, o := range outs {
		line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", yq(o.name), yq(o.name))
	}
}

// itemsFlag is what a flag of init that writes a package of encoded items
// (--images, --audio) takes of a model's one input.
type itemsFlag struct {
	modality string // the adapter's: image, audio, video
	flag     string
	what     string // what the input takes: images, log-mel features
	shape    string // its axes: [batch, channels, height, width]
	other    string // the other order it may take them in: channels last
	made     string // what the adapter makes: pixels, features
	items    string // what a request brings: images, clips
}

// soleInput is the one input of c, if it may take items as a package of
// f writes them: of an element type the adapter writes (float32 or a
// 16-bit float) and f's rank, its first axis a dynamic batch; an error
// says why not otherwise.
func soleInput(c *initComponent, f itemsFlag) (initPort, error) {
	if len(c.inputs) != 1 {
		names := make([]string, len(c.inputs))
		for i, p := range c.inputs {
			names[i] = p.name
		}
		return initPort{}, fmt.Errorf("%s takes a model whose one input is its %s; this one takes %s", f.flag, f.what, strings.Join(names, ", "))
	}
	p := c.inputs[0]
	switch {
	case !slices.Contains(preprocess.DataDTypesOf(f.modality), p.dtype):
		return p, inputError(p, fmt.Sprintf("not %s %s: %s makes %s as %s", f.what, f.shape, f.flag, f.made, preprocess.DataDTypesText(f.modality)))
	case !p.hasShape || len(p.dims) != strings.Count(f.shape, ",")+1:
		return p, inputError(p, fmt.Sprintf("not %s %s (%s)", f.what, f.shape, f.other))
	case p.dims[0].sym == "" && p.dims[0].size == 1:
		return p, inputError(p, fmt.Sprintf("whose first axis the graph fixes at 1: open it first (`genaic dynamic-batch %s -o ...`)", c.artifact))
	case p.dims[0].sym == "":
		return p, inputError(p, fmt.Sprintf("whose first axis the graph fixes: %s needs a dynamic batch of %s", f.flag, f.items))
	}
	return p, nil
}

// inputError says why input p cannot take a package's items.
func inputError(p initPort, why string) error {
	shape := p.shapeYAML()
	if !p.hasShape {
		shape = "(any shape)"
	}
	return fmt.Errorf("input %s is %s %s, %s", p.name, p.dtype, shape, why)
}
