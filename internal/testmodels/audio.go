package testmodels

const (
	audioBins   = 6
	audioHidden = 4
)

// audioWindows is the encoder of testdata/packages/audio: spectrogram
// frames packed on axis 0 with two levels (frames→windows, windows→rows);
// one embedding per window, the element-wise maximum of its frames'
// embeddings. The graph reads the level-0 companions only; the level-1
// pair is a workflow value the component does not take as ports.
func audioWindows() *Model {
	return framePool("audio", "window_encoder", "window_encoder.onnx", audioPorts, poolSyms{"frames", "bins", "frame_offsets_len", "windows", audioBins, nil})
}

// audioMel is the encoder of testdata/packages/audio_mel, the same
// function over the log-mel frames (6 bands) the audio adapter computes of
// each clip: one embedding per clip.
func audioMel() *Model {
	return framePool("audio_mel", "mel_encoder", "mel_encoder.onnx", audioPorts, poolSyms{"frames", "mels", "clips_plus_one", "clips", audioBins, nil})
}

// imagePatches is the encoder of testdata/packages/image_patches, the same
// function over the 2×2 RGB patches (12 values) the image adapter's
// patchify makes of each image: one embedding per image.
func imagePatches() *Model {
	return framePool("image_patches", "patch_encoder", "patch_encoder.onnx",
		poolPorts{"patches", "patch_offsets", "patch_owner", "image_embeddings",
			"image_embeddings[i] = element-wise max of patches[p,:]·W + b over the patches with patch_owner[p] == i, " +
				"i < len(patch_offsets)-1; zeros for an image with no patch"}, poolSyms{"patches", "features", "images_plus_one", "images", 12, nil})
}

// imageTiles is the encoder of testdata/packages/image_tiles, the same
// function over the 4×4 RGB tiles [tiles, 3, 4, 4] the image adapter's
// tile makes of each image (a thumbnail first): the graph flattens each
// tile to its 48 values; one embedding per image.
func imageTiles() *Model {
	return framePool("image_tiles", "tile_encoder", "tile_encoder.onnx",
		poolPorts{"tiles", "tile_offsets", "tile_owner", "image_embeddings",
			"image_embeddings[i] = element-wise max of flat(tiles[t])·W + b over the tiles with tile_owner[t] == i, " +
				"i < len(tile_offsets)-1; zeros for an image with no tile"},
		poolSyms{"tiles", "", "images_plus_one", "images", 48, []int64{3, 4, 4}})
}

// videoFPS is the encoder of testdata/packages/video_fps, the same
// function over the 4×4 RGB frames [frames, 3, 4, 4] the video adapter
// samples by time from each clip: one embedding per clip.
func videoFPS() *Model {
	return framePool("video_fps", "frame_encoder", "frame_encoder.onnx",
		poolPorts{"pixels", "frame_offsets", "frame_owner", "clip_embeddings",
			"clip_embeddings[c] = element-wise max of flat(pixels[f])·W + b over the frames with frame_owner[f] == c, " +
				"c < len(frame_offsets)-1; zeros for a clip with no frame"},
		poolSyms{"frames", "", "clips_plus_one", "clips", 48, []int64{3, 4, 4}})
}

// poolPorts names a frame pool's ports: the packed units, the level-0
// offsets and owner, and the embeddings.
type poolPorts struct{ in, offsets, owner, out, summary string }

var audioPorts = poolPorts{"spectrogram", "frame_offsets", "frame_owner", "window_embeddings",
	"window_embeddings[w] = element-wise max of spectrogram[f,:]·W + b over the frames with frame_owner[f] == w, " +
		"w < len(frame_offsets)-1; zeros for a window with no frame"}

// poolSyms are the metadata's symbols of a frame pool's packed axis, its
// feature axis, its level-0 offsets and its items, and the features'
// count. Where image is set, each unit is not a feature row but an image
// of those literal extents (n values in all), which the graph flattens.
type poolSyms struct {
	packed, features, offsets, units string
	n                                int64
	image                            []int64
}

// framePool: units packed on axis 0 with two levels (units→items,
// items→rows); one embedding per item, the element-wise maximum of its
// units' embeddings.
func framePool(pkg, component, artifact string, p poolPorts, s poolSyms) *Model {
	units := f32(p.in, sym(s.packed), fixed(s.features, s.n))
	if s.image != nil {
		units = f32(p.in, sym(s.packed))
		for _, e := range s.image {
			units.Dims = append(units.Dims, literal(e))
		}
	}
	return &Model{
		Package:   pkg,
		Component: component,
		Artifact:  artifact,
		Summary:   p.summary,
		Inputs: []Port{
			units,
			i64(p.offsets, sym(s.offsets)),
			i64(p.owner, sym(s.packed)),
		},
		Outputs: []Port{
			f32(p.out, sym(s.units), fixed("hidden", audioHidden)),
		},
		build: func(m *Model, g *graph) {
			x := p.in
			if s.image != nil {
				x = g.op("Reshape", "frame_embed.flat", []string{p.in, g.constInts(-1, s.n)})
			}
			h := linearLayer(m, g, "frame_embed", x, s.n, audioHidden)
			member := membership(g, "window_member", p.offsets, p.owner)
			member3 := g.op("Unsqueeze", "window_pool.member3", []string{member, g.constInts(2)})
			h3 := g.op("Unsqueeze", "window_pool.frames3", []string{h, g.constInts(0)})
			sel := g.op("Where", "window_pool.selected", []string{member3, h3, g.constFloat(float32(negInf))})
			mx := g.op("ReduceMax", "window_pool.max", []string{sel}, attrIntList("axes", 1), attrInt("keepdims", 0))
			mf := g.op("Cast", "window_pool.member_f32", []string{member}, attrInt("to", onnxFloat))
			count := g.op("ReduceSum", "window_pool.count", []string{mf, g.constInts(1)}, attrInt("keepdims", 1))
			some := g.op("Greater", "window_pool.nonempty", []string{count, g.constFloat(0)})
			g.op("Where", p.out, []string{some, mx, g.constFloat(0)})
		},
		reference: func(m *Model, in map[string]Tensor) (map[string]Tensor, error) {
			w := m.Weights("frame_embed.weight", int(s.n)*audioHidden)
			b := m.Weights("frame_embed.bias", audioHidden)
			flat := in[p.in]
			if s.image != nil {
				flat = Tensor{Shape: []int64{flat.Shape[0], s.n}, F32: flat.F32}
			}
			x := rowsOf(flat)
			units := unitCount(in[p.offsets])
			out := make([][]float64, units)
			for u := range out {
				out[u] = make([]float64, audioHidden)
				for j := range out[u] {
					out[u][j] = negInf
				}
			}
			seen := make([]bool, units)
			for f, o := range in[p.owner].I64 {
				if o < 0 || o >= int64(units) || f >= x.rows {
					continue
				}
				seen[o] = true
				for j, v := range linear(x.row(f), w, b) {
					out[o][j] = max(out[o][j], v)
				}
			}
			for u := range out {
				if !seen[u] {
					clear(out[u])
				}
			}
			return map[string]Tensor{p.out: stack(out, audioHidden)}, nil
		},
	}
}
