package e2e

import (
	"bytes"
	"context"
	"image"
	_ "image/png"
	"math"
	"slices"
	"testing"

	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// The media fixtures deliver to their encoder what their op makes of each
// item, on both engines: image_tiles one thumbnail and the tiles of the
// anyres grid of each image (tile_size 4, max_tiles 4), video_fps the frames
// nearest to every half second of each clip. The references here are
// written from the ops' definitions (docs/preprocessing.md), independently
// of the adapters, and count the units each item gets; the requests are
// varied enough that the counts differ from item to item.
func TestMediaFixturesRunTheirOp(t *testing.T) {
	for _, c := range []struct {
		fixture, offsets string
		want             func(t *testing.T, req vm.Request) []int64
		// at least kinds distinct counts among the items
		kinds int
	}{
		{"image_tiles", "tile_offsets", wantTiles, 4},
		{"video_fps", "frame_offsets", wantFrames, 4},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			f := fixtures.Lookup(c.fixture)
			forEachEngineOf(t, []fixtures.Fixture{f}, func(t *testing.T, e engineKind) {
				rec := newRecorder(t, f)
				r := e.start(t, f, withRecorder(genrt.WithSolo(), rec)...)
				seen := map[int64]bool{}
				dropped := false
				for i, req := range f.Requests(7, 16) {
					before := len(rec.invocations())
					if res := r.Run(context.Background(), req); res.Err != nil {
						t.Fatalf("request %d: %v", i, res.Err)
					}
					calls := rec.invocations()[before:]
					var got []int64
					for _, call := range calls {
						offs := call.inputs[c.offsets].Int64s()
						for k := 1; k < len(offs); k++ {
							got = append(got, offs[k]-offs[k-1])
						}
					}
					want := c.want(t, req)
					if !slices.Equal(got, want) {
						t.Fatalf("request %d: the encoder got %v units per item, want %v", i, got, want)
					}
					for k, n := range want {
						seen[n] = true
						if c.fixture == "video_fps" && n < sourceFrames(req)[k] {
							dropped = true
						}
					}
				}
				if len(seen) < c.kinds {
					t.Errorf("the items got %d distinct unit counts %v, want at least %d: the fixture's requests are too uniform", len(seen), seen, c.kinds)
				}
				if c.fixture == "video_fps" && !dropped {
					t.Errorf("no clip lost a frame to sampling by fps: the fixture's frame times are too sparse")
				}
			})
		})
	}
}

// wantTiles is 1 (the thumbnail) + rows·columns of each image's grid: of
// the grids rows × columns ≤ 4 (rows, then columns), the one whose canvas
// keeps the most of the image's resolution (min(scaled area, area), the
// scaled sides truncated), ties to the least wasted canvas.
func wantTiles(t *testing.T, req vm.Request) []int64 {
	const tile, most = 4, 4
	var out []int64
	for _, img := range items(req, "png") {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		w, h := float64(cfg.Width), float64(cfg.Height)
		bestKept, bestWaste, tiles := -1.0, 0.0, int64(0)
		for rows := 1; rows <= most; rows++ {
			for cols := 1; rows*cols <= most; cols++ {
				cw, ch := float64(cols*tile), float64(rows*tile)
				scale := math.Min(cw/w, ch/h)
				kept := math.Min(math.Trunc(w*scale)*math.Trunc(h*scale), w*h)
				waste := cw*ch - kept
				if kept > bestKept || kept == bestKept && waste < bestWaste {
					bestKept, bestWaste, tiles = kept, waste, int64(rows*cols)
				}
			}
		}
		out = append(out, 1+tiles)
	}
	return out
}

// wantFrames counts, of each clip, the distinct frames nearest (the
// earlier on a tie) to the instants t0 + k/2 s from its first frame's time
// to its last.
func wantFrames(_ *testing.T, req vm.Request) []int64 {
	times := req.Inputs["video_times"].Data.([]float64)
	clips := req.Inputs["video_clip_frames"].Int64s()
	var out []int64
	for c := 1; c < len(clips); c++ {
		ts := times[clips[c-1]:clips[c]]
		kept := map[int]bool{}
		for k := range int(math.Floor((ts[len(ts)-1]-ts[0])*2)) + 1 {
			at, best := ts[0]+float64(k)/2, 0
			for j := range ts {
				if math.Abs(ts[j]-at) < math.Abs(ts[best]-at) {
					best = j
				}
			}
			kept[best] = true
		}
		out = append(out, int64(len(kept)))
	}
	return out
}

// sourceFrames is the number of frames each clip of a video_fps request
// brings.
func sourceFrames(req vm.Request) []int64 {
	clips := req.Inputs["video_clip_frames"].Int64s()
	out := make([]int64, len(clips)-1)
	for c := range out {
		out[c] = clips[c+1] - clips[c]
	}
	return out
}

// items splits a request's packed encoded bytes by their offsets.
func items(req vm.Request, prefix string) [][]byte {
	data := req.Inputs[prefix].Data.([]byte)
	offs := req.Inputs[prefix+"_offsets"].Int64s()
	out := make([][]byte, len(offs)-1)
	for i := range out {
		out[i] = data[offs[i]:offs[i+1]]
	}
	return out
}
