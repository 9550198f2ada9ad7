package testmodels

// Video encoders: one embedding per clip, pooled from the clip's frames,
// each frame pooled from its patches as the image encoders do.

// videoFrames is the encoder of testdata/packages/video_frames: clips of
// any number of frames, each frame of any number of patches. Frames are the
// packed positions (level 0: frames→clips, level 1: clips→rows), patches
// are right-padded per frame.
func videoFrames() *Model {
	return &Model{
		Package:   "video_frames",
		Component: "clip_encoder",
		Artifact:  "clip_encoder.onnx",
		Summary: "frame[f] = mean over p < patch_lengths[f] of pixel_values[f,p,:]·W + b; " +
			"clip_embeddings[c] = mean of frame[f] over the frames with frame_owner[f] == c, c < len(frame_offsets)-1",
		Inputs: []Port{
			f32("pixel_values", sym("frames"), sym("patches"), fixed("features", imageFeatures)),
			i64("patch_lengths", sym("frames")),
			i64("frame_offsets", sym("frame_offsets_len")),
			i64("frame_owner", sym("frames")),
			i64("clip_offsets", sym("clip_offsets_len")),
			i64("clip_owner", sym("clips")),
		},
		Outputs: []Port{
			f32("clip_embeddings", sym("clips"), fixed("hidden", imageHidden)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "patch_embed", "pixel_values", imageFeatures, imageHidden)
			frames := maskedMean(g, "frame_pool", h, "patch_lengths")
			member := membership(g, "clip_member", "frame_offsets", "frame_owner")
			clips := unitMean(g, "clip_pool", member, frames)
			g.op("Identity", "clip_embeddings", []string{clips})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			frames := maskedPatchMeans(m, in["pixel_values"], in["patch_lengths"])
			clips := poolMean(frames, in["frame_owner"], unitCount(in["frame_offsets"]), imageHidden)
			return map[string]Tensor{"clip_embeddings": stack(clips, imageHidden)}, nil
		},
	}
}

// poolMean is the reference of unitMean: for each unit u < units, the mean
// of rows[p] over the positions p with owner[p] == u, zeros when it owns
// none.
func poolMean(rows [][]float64, owner Tensor, units, width int) [][]float64 {
	sums := make([][]float64, units)
	counts := make([]int, units)
	for u := range sums {
		sums[u] = make([]float64, width)
	}
	for p, o := range owner.I64 {
		if o >= 0 && o < int64(units) && p < len(rows) {
			addTo(sums[o], rows[p])
			counts[o]++
		}
	}
	for u := range sums {
		sums[u] = scale(sums[u], counts[u])
	}
	return sums
}

// videoFixed is the encoder of testdata/packages/video_fixed: clips of one
// frame count and one patch count per group (both uniform), packed one
// level deep as whole clips, with no frame level. The graph reads no
// companion.
func videoFixed() *Model {
	return &Model{
		Package:   "video_fixed",
		Component: "clip_encoder",
		Artifact:  "clip_encoder.onnx",
		Summary:   "clip_embeddings[c] = mean over all frames t and patches p of pixel_values[c,t,p,:]·W + b",
		Inputs: []Port{
			f32("pixel_values", sym("clips"), sym("frames"), sym("patches"), fixed("features", imageFeatures)),
		},
		Outputs: []Port{
			f32("clip_embeddings", sym("clips"), fixed("hidden", imageHidden)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "patch_embed", "pixel_values", imageFeatures, imageHidden)
			g.op("ReduceMean", "clip_embeddings", []string{h}, attrIntList("axes", 1, 2), attrInt("keepdims", 0))
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			x := in["pixel_values"]
			// A clip is an image whose patches are all its frames' patches.
			perClip := x.Shape[1] * x.Shape[2]
			flat := Tensor{Shape: []int64{x.Shape[0], perClip, x.Shape[3]}, F32: x.F32}
			lengths := make([]int64, x.Shape[0])
			for i := range lengths {
				lengths[i] = perClip
			}
			e := maskedPatchMeans(m, flat, Int64([]int64{x.Shape[0]}, lengths))
			return map[string]Tensor{"clip_embeddings": stack(e, imageHidden)}, nil
		},
	}
}
