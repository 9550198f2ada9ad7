package testmodels

// Image encoders: one embedding per image, the mean of the image's patch
// embeddings (each patch's features times a weight matrix plus a bias).

const (
	imageFeatures = 8
	imageHidden   = 4
)

// imagePadded is the encoder of testdata/packages/image_padded: images of
// any resolution, packed one level deep, their patch sequences right-padded
// to the longest image of the group.
func imagePadded() *Model {
	return &Model{
		Package:   "image_padded",
		Component: "encoder",
		Artifact:  "encoder.onnx",
		Summary:   "embeddings[i] = mean over p < patch_lengths[i] of pixel_patches[i,p,:]·W + b; padding is selected away, never read",
		Inputs: []Port{
			f32("pixel_patches", sym("images"), sym("patches"), fixed("features", imageFeatures)),
			i64("patch_lengths", sym("images")),
			i64("image_offsets", sym("image_offsets_len")),
			i64("image_owner", sym("images")),
		},
		Outputs: []Port{
			f32("embeddings", sym("images"), fixed("hidden", imageHidden)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "patch_embed", "pixel_patches", imageFeatures, imageHidden)
			pooled := maskedMean(g, "pool", h, "patch_lengths")
			g.op("Identity", "embeddings", []string{pooled})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			e := maskedPatchMeans(m, in["pixel_patches"], in["patch_lengths"])
			return map[string]Tensor{"embeddings": stack(e, imageHidden)}, nil
		},
	}
}

// maskedPatchMeans is the reference of maskedMean over linear: for each
// item n of x [N, P, F], the mean over p < clamp(lengths[n], 0, P) of
// x[n,p,:]·W + b, zeros when no patch is valid.
func maskedPatchMeans(m *Model, x, lengths Tensor) [][]float64 {
	w := m.Weights("patch_embed.weight", imageFeatures*imageHidden)
	b := m.Weights("patch_embed.bias", imageHidden)
	n, p := int(x.Shape[0]), x.Shape[1]
	rows := rowsOf(x)
	out := make([][]float64, n)
	for i := range n {
		valid := clamp(lengths.I64[i], p)
		sum := make([]float64, imageHidden)
		for j := range valid {
			addTo(sum, linear(rows.row(i*int(p)+j), w, b))
		}
		out[i] = scale(sum, valid)
	}
	return out
}

// imagePinned is the encoder of testdata/packages/image_pinned: images of
// one resolution per group (patches is uniform, so images of another
// resolution go to another group), packed one level deep, no padding. The
// graph reads no companion: the level's offsets and owner are workflow
// values the component does not take as ports.
func imagePinned() *Model {
	return &Model{
		Package:   "image_pinned",
		Component: "encoder",
		Artifact:  "encoder.onnx",
		Summary:   "embeddings[i] = mean over all p of pixel_patches[i,p,:]·W + b",
		Inputs: []Port{
			f32("pixel_patches", sym("images"), sym("patches"), fixed("features", imageFeatures)),
		},
		Outputs: []Port{
			f32("embeddings", sym("images"), fixed("hidden", imageHidden)),
		},
		build: func(m *Model, g *graph) {
			h := linearLayer(m, g, "patch_embed", "pixel_patches", imageFeatures, imageHidden)
			g.op("ReduceMean", "embeddings", []string{h}, attrIntList("axes", 1), attrInt("keepdims", 0))
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			x := in["pixel_patches"]
			lengths := make([]int64, x.Shape[0])
			for i := range lengths {
				lengths[i] = x.Shape[1]
			}
			e := maskedPatchMeans(m, x, Int64([]int64{x.Shape[0]}, lengths))
			return map[string]Tensor{"embeddings": stack(e, imageHidden)}, nil
		},
	}
}
