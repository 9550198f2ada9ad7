package testmodels_test

import (
	"math/rand/v2"
	"slices"

	"github.com/genaic/genaic/internal/testmodels"
)

// A generator makes random inputs for one model. Trial 0 is the edge case:
// items with nothing in them (no patch, no frame, no token) beside full ones.
type generator func(rng *rand.Rand, trial int) map[string]testmodels.Tensor

var generators = map[string]generator{
	"image_padded": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		lengths := counts(rng, trial, []int64{0, 1, 5}, 1+rng.IntN(5), 0, 6)
		images := int64(len(lengths))
		rows := split(rng, images)
		return map[string]testmodels.Tensor{
			"pixel_patches": paddedItems(rng, lengths, 8),
			"patch_lengths": vector(lengths),
			"image_offsets": vector(offsets(rows)),
			"image_owner":   vector(owner(rows)),
		}
	},
	"ocr_lines": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		widths := counts(rng, trial, []int64{0, 5, 12}, 1+rng.IntN(4), 0, 24)
		lines := int64(len(widths))
		rows := split(rng, lines)
		return map[string]testmodels.Tensor{
			"line_images":  paddedItems(rng, widths, int64(1+rng.IntN(8))),
			"line_widths":  vector(widths),
			"line_offsets": vector(offsets(rows)),
			"line_owner":   vector(owner(rows)),
		}
	},
	"image_pinned": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		n, p := int64(1+rng.IntN(5)), int64(1+rng.IntN(5))
		return map[string]testmodels.Tensor{"pixel_patches": uniform(rng, n, p, 8)}
	},
	"video_frames": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		frames := counts(rng, trial, []int64{2, 0, 3}, 1+rng.IntN(4), 0, 4)
		lengths := counts(rng, trial, []int64{0, 4, 1, 2, 3}, int(sum(frames)), 0, 5)
		lengths = lengths[:sum(frames)]
		clips := split(rng, int64(len(frames)))
		return map[string]testmodels.Tensor{
			"pixel_values":  paddedItems(rng, lengths, 8),
			"patch_lengths": vector(lengths),
			"frame_offsets": vector(offsets(frames)),
			"frame_owner":   vector(owner(frames)),
			"clip_offsets":  vector(offsets(clips)),
			"clip_owner":    vector(owner(clips)),
		}
	},
	"video_fixed": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		c, f, p := int64(1+rng.IntN(4)), int64(1+rng.IntN(3)), int64(1+rng.IntN(4))
		return map[string]testmodels.Tensor{"pixel_values": uniform(rng, c, f, p, 8)}
	},
	"audio": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		frames := counts(rng, trial, []int64{3, 0, 1, 5}, 1+rng.IntN(4), 0, 6)
		return map[string]testmodels.Tensor{
			"spectrogram":   uniform(rng, sum(frames), 6),
			"frame_offsets": vector(offsets(frames)),
			"frame_owner":   vector(owner(frames)),
		}
	},
	"audio_mel": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		// Log-mel values: log10 of band energies, at least -10.
		frames := counts(rng, trial, []int64{2, 0, 9}, 1+rng.IntN(4), 0, 9)
		x := uniform(rng, sum(frames), 6)
		for i := range x.F32 {
			x.F32[i] = x.F32[i]*5 - 6
		}
		return map[string]testmodels.Tensor{
			"spectrogram":   x,
			"frame_offsets": vector(offsets(frames)),
			"frame_owner":   vector(owner(frames)),
		}
	},
	"image_patches": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		patches := counts(rng, trial, []int64{4, 0, 16}, 1+rng.IntN(4), 0, 16)
		return map[string]testmodels.Tensor{
			"patches":       uniform(rng, sum(patches), 12),
			"patch_offsets": vector(offsets(patches)),
			"patch_owner":   vector(owner(patches)),
		}
	},
	"image_tiles": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		tiles := counts(rng, trial, []int64{5, 0, 2}, 1+rng.IntN(4), 0, 10)
		return map[string]testmodels.Tensor{
			"tiles":        uniform(rng, sum(tiles), 3, 4, 4),
			"tile_offsets": vector(offsets(tiles)),
			"tile_owner":   vector(owner(tiles)),
		}
	},
	"video_fps": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		frames := counts(rng, trial, []int64{3, 0, 8}, 1+rng.IntN(4), 0, 8)
		return map[string]testmodels.Tensor{
			"pixels":        uniform(rng, sum(frames), 3, 4, 4),
			"frame_offsets": vector(offsets(frames)),
			"frame_owner":   vector(owner(frames)),
		}
	},
	"text": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		tokens := counts(rng, trial, []int64{0, 4, 1}, 1+rng.IntN(4), 0, 7)
		ids := make([]int64, sum(tokens))
		for i := range ids {
			ids[i] = rng.Int64N(32)
		}
		return map[string]testmodels.Tensor{
			"token_ids":     vector(ids),
			"token_offsets": vector(offsets(tokens)),
			"token_owner":   vector(owner(tokens)),
		}
	},
	"text_packed": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		tokens := counts(rng, trial, []int64{0, 32, 1}, 1+rng.IntN(4), 0, 32)
		return map[string]testmodels.Tensor{
			"token_ids":     vector(tokenIDs(rng, sum(tokens))),
			"token_offsets": vector(offsets(tokens)),
			"token_owner":   vector(owner(tokens)),
		}
	},
	"text_padded": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		lengths := counts(rng, trial, []int64{0, 32, 1}, 1+rng.IntN(4), 0, 32)
		extent := slices.Max(lengths)
		segments := split(rng, int64(len(lengths)))
		return map[string]testmodels.Tensor{
			"token_ids":       testmodels.Int64([]int64{int64(len(lengths)), extent}, tokenIDs(rng, int64(len(lengths))*extent)),
			"token_lengths":   vector(lengths),
			"segment_offsets": vector(offsets(segments)),
			"segment_owner":   vector(owner(segments)),
		}
	},
	"token_merge": func(rng *rand.Rand, trial int) map[string]testmodels.Tensor {
		tokens := counts(rng, trial, []int64{0, 1, 2, 3, 0, 6, 5}, rng.IntN(5), 0, 7)
		segments := split(rng, int64(len(tokens)))
		return map[string]testmodels.Tensor{
			"tokens":          uniform(rng, sum(tokens), 4),
			"token_offsets":   vector(offsets(tokens)),
			"segment_offsets": vector(offsets(segments)),
			"segment_owner":   vector(owner(segments)),
		}
	},
	"request_expanded": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		requests := int64(1 + rng.IntN(3))
		return map[string]testmodels.Tensor{
			"latents":        uniform(rng, 2*requests, 4),
			"guidance_scale": testmodels.Float32([]int64{1}, []float32{8 * rng.Float32()}),
		}
	},
	"time_major": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		steps, batch := int64(1+rng.IntN(4)), int64(1+rng.IntN(4))
		return map[string]testmodels.Tensor{"frames": uniform(rng, steps, batch, 4)}
	},
	"solo": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		return map[string]testmodels.Tensor{"features": uniform(rng, int64(1+rng.IntN(3)), 4)}
	},
	"sample_rate": func(rng *rand.Rand, _ int) map[string]testmodels.Tensor {
		return map[string]testmodels.Tensor{
			"audio": uniform(rng, int64(1+rng.IntN(4)), 4),
			"sr":    testmodels.Int64([]int64{}, []int64{[]int64{8000, 16000}[rng.IntN(2)]}),
		}
	},
}

// counts returns edge on trial 0 and otherwise n values in [lo, hi].
func counts(rng *rand.Rand, trial int, edge []int64, n int, lo, hi int64) []int64 {
	if trial == 0 {
		return slices.Clone(edge)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + rng.Int64N(hi-lo+1)
	}
	return out
}

// split deals n units to one to three rows, some of which may get none.
func split(rng *rand.Rand, n int64) []int64 {
	rows := make([]int64, 1+rng.IntN(3))
	for range n {
		rows[rng.IntN(len(rows))]++
	}
	return rows
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// offsets is the exclusive prefix sum of counts: [0, c0, c0+c1, ...].
func offsets(counts []int64) []int64 {
	out := []int64{0}
	for _, c := range counts {
		out = append(out, out[len(out)-1]+c)
	}
	return out
}

// owner lists, for each counted position, the index of its count.
func owner(counts []int64) []int64 {
	var out []int64
	for u, c := range counts {
		for range c {
			out = append(out, int64(u))
		}
	}
	return out
}

// tokenIDs draws n ids of the benchmark encoders' 64-token vocabulary.
func tokenIDs(rng *rand.Rand, n int64) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = rng.Int64N(64)
	}
	return ids
}

func vector(v []int64) testmodels.Tensor {
	return testmodels.Int64([]int64{int64(len(v))}, v)
}

// uniform is a float32 tensor of the given shape with values in [-1, 1).
func uniform(rng *rand.Rand, shape ...int64) testmodels.Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = 2*rng.Float32() - 1
	}
	return testmodels.Float32(shape, data)
}

// paddedItems is [len(lengths), max(lengths), features]: item n holds random
// values in its first lengths[n] positions and zeros after them.
func paddedItems(rng *rand.Rand, lengths []int64, features int64) testmodels.Tensor {
	extent := int64(0)
	for _, l := range lengths {
		extent = max(extent, l)
	}
	x := make([]float32, int64(len(lengths))*extent*features)
	for n, l := range lengths {
		for p := range l {
			for f := range features {
				x[(int64(n)*extent+p)*features+f] = 2*rng.Float32() - 1
			}
		}
	}
	return testmodels.Float32([]int64{int64(len(lengths)), extent, features}, x)
}
