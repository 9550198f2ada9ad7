package main

import (
	"fmt"
	"strings"
)

// A video encoder's package as init --video writes it: each request
// brings one clip, its frames encoded images (PNG, JPEG, GIF or WebP) as
// items;
// the built-in video adapter samples the frames the model takes and
// preprocesses each as init --images does an image, and the model runs on
// the clips of many requests at once, each request getting its clip's row
// of every output.

// videoFrames is the frames a clip is sampled to where the graph leaves
// their count open: the count VideoMAE's encoders are trained on.
const videoFrames = 16

// videoInput is the model's input that takes the clips: its frames'
// pixels as an image encoder's input takes an image's.
type videoInput struct {
	imageInput
	frames     int64 // the frames the graph fixes, or videoFrames where it leaves them open
	openFrames bool
	// channelsFirst: the clips are [batch, channels, frames, height,
	// width], as 3D convolutions read them, rather than frames first.
	channelsFirst bool
}

// videoInputOf is the component's one input, if it takes clips: a float
// tensor [batch, frames, channels, height, width] (or each frame channels
// last) whose first axis is dynamic, as Hugging Face exports VideoMAE,
// TimeSformer and ViViT, or [batch, channels, frames, height, width], as
// 3D convolutional networks take clips (torchvision's video models, X3D).
// It says why not otherwise.
func videoInputOf(c *initComponent) (videoInput, error) {
	p, err := soleInput(c, itemsFlag{"video", "--video", "video clips", "[batch, frames, channels, height, width]", "or [batch, channels, frames, height, width], or each frame channels last", "pixels", "clips"})
	if err != nil {
		return videoInput{}, err
	}
	v := videoInput{imageInput: imageInput{port: p, batch: p.dims[0].sym}}
	frames := p.dims[1]
	if why := v.readPixels(p.dims, 2); why != "" {
		// Channels first: axis 1 holds them, and the frame's sides follow
		// the frames.
		v.imageInput = imageInput{port: p, batch: p.dims[0].sym}
		if v.readPixels([]initDim{p.dims[1], p.dims[3], p.dims[4]}, 0) != "" || v.last {
			return videoInput{}, inputError(p, why)
		}
		v.channelsFirst, frames = true, p.dims[2]
	}
	if frames.sym == "" {
		v.frames = frames.size
	} else {
		v.frames, v.openFrames = videoFrames, true
	}
	return v, nil
}

// videoPackage is the package init --video writes of the model c at path.
func videoPackage(path string, c *initComponent) (string, error) {
	v, err := videoInputOf(c)
	if err == nil {
		v.outs, v.skipped, err = settleRows(path, c, "clip", v.batch, floatItems(v.port, func(n int64) []int64 {
			if v.channelsFirst {
				return []int64{n, v.channels, v.frames, v.h, v.w}
			}
			if v.last {
				return []int64{n, v.frames, v.h, v.w, v.channels}
			}
			return []int64{n, v.frames, v.channels, v.h, v.w}
		}), nil)
	}
	if err != nil {
		return "", err
	}
	return videoDocument(c, v), nil
}

// clipShape is the shape of the clips the adapter makes for the model.
func (v videoInput) clipShape() string {
	if v.channelsFirst {
		return fmt.Sprintf("[%s, %d, %d, %d, %d]", yq(v.batch), v.channels, v.frames, v.h, v.w)
	}
	frame := strings.TrimPrefix(v.pixelShape(), "["+yq(v.batch)+", ")
	return fmt.Sprintf("[%s, %d, %s", yq(v.batch), v.frames, frame)
}

// videoDocument writes the package of a video encoder c whose input v
// takes the clips: one clip a request, a row of the model's batch.
func videoDocument(c *initComponent, v videoInput) string {
	b, line := docLines()
	taken := takenNames(c)
	in := newMediaInput("frames", taken)
	var (
		pixels  = freshName(v.port.name, taken) // the adapter's output, the model's input
		adapter = freshName("video_preprocess", taken)
		aligned = "batch_layout: { kind: request_aligned, axis: 0 }"
	)
	line(0, "# Written by `genaic init --video` from %s: a package that takes", c.artifact)
	line(0, "# one video clip per request, its frames encoded images (PNG, JPEG,")
	line(0, "# GIF or WebP) as items in order, and runs the model on the clips of")
	line(0, "# many requests at once; each request gets its clip's row of every")
	line(0, "# output.")
	line(0, "# A requests document (genaic run, bench) names the frames' files:")
	line(0, "#   {\"id\": \"r1\", \"inputs\": {%q: {\"items\": [{\"file\": \"f000.jpg\"}, {\"file\": \"f001.jpg\"}]}}}", in.name)
	line(0, "#")
	if v.openFrames {
		line(0, "# Of each clip's frames, %d evenly spaced are kept, in order (the graph", v.frames)
		line(0, "# leaves their count open: %d is VideoMAE's; use your model's). A clip", v.frames)
	} else {
		line(0, "# Of each clip's frames, the %d the graph fixes are kept, evenly spaced", v.frames)
		line(0, "# and in order. A clip")
	}
	line(0, "# of fewer fails its request (run/input); a model that takes padded")
	line(0, "# clips could take it padded (pad_frames: { target_length: %d }).", v.frames)
	line(0, "# Each frame kept is preprocessed as `genaic init --images` writes it.")
	v.preprocessingComment(line)
	if v.channelsFirst {
		line(0, "# torchvision's video models (r3d, r2plus1d, mc3) take frames resized")
		line(0, "# to the rectangle (resize: { height: 128, width: 171 }), then the centre")
		line(0, "# 112x112, normalized by Kinetics' mean [0.43216, 0.394666, 0.37645]")
		line(0, "# and std [0.22803, 0.22145, 0.216989].")
	}
	line(0, "schema_version: v1.1")
	line(0, "model:")
	line(1, "name: %s", yq(c.name))
	line(0, "preprocessing:")
	line(1, "video:")
	line(2, "transforms:")
	line(3, "- { op: decode, outputs: [video.decoded] }")
	line(3, "- { op: sample_frames, num_frames: %d, inputs: [video.decoded], outputs: [video.sampled] }", v.frames)
	last := v.transforms(line, "video", "video.sampled")
	line(2, "outputs:")
	line(3, "- name: %s", yq(pixels))
	line(4, "source: %s", last)
	line(4, "content: pixel_values")
	line(4, "dtype: %s", v.port.dtype)
	line(4, "contract: { dtype: %s, shape: %s, %s }", v.port.dtype, v.clipShape(), aligned)
	line(0, "pipeline:")
	line(1, "workflow:")
	line(2, "manifest:")
	line(3, "adapter_abis: { onnx-genai.video-preprocess: \"1\" }")
	in.workflowInputs(line, "frame")
	line(2, "outputs:")
	workflowOutputs(line, v.outs, aligned)
	// A clip brings many frames, of which only those kept are decoded: the
	// frames of a long clip fit one call.
	in.adapterComponent(line, adapter, "video", "frames", 1024, 64<<20)
	line(6, "%s: { dtype: %s, shape: %s, %s }", yq(pixels), v.port.dtype, v.clipShape(), aligned)
	mediaModel{items: "clips", batch: v.batch, perCall: 4, port: v.port, shape: v.clipShape(), in: aligned, out: aligned,
		outs: v.outs, skipped: v.skipped}.modelComponent(line, c)
	line(2, "steps:")
	line(3, "- kind: invoke")
	line(4, "component: %s", yq(adapter))
	in.invokeAdapter(line)
	line(4, "outputs: { %s: %s }", yq(pixels), yq(pixels))
	invokeModel(line, c, [][2]string{{v.port.name, pixels}}, v.outs)
	return b.String()
}
