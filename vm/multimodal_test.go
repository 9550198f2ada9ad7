package vm

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// The multimodal workflow (testdata/multimodal.yaml) runs three binding
// components; each function checks the budgets of every group it receives.

func within(what string, got, limit int64) error {
	if got > limit {
		return fmt.Errorf("a group exceeds its %s budget: %d > %d", what, got, limit)
	}
	return nil
}

func imageBinding(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x := in["px"]
	if err := within("images", x.Shape[0], 8); err != nil {
		return nil, err
	}
	if err := within("images×patches", x.Shape[0]*x.Shape[1], 64); err != nil {
		return nil, err
	}
	out, err := maskedMean(ctx, map[string]*backend.Tensor{"pixel_patches": x, "patch_lengths": in["px_len"]})
	if err != nil {
		return nil, err
	}
	return map[string]*backend.Tensor{"emb": out["embeddings"]}, nil
}

func videoBinding(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x, offs := in["frames"], in["frame_off"].Int64s()
	clips, f := int64(len(offs)-1), x.Shape[1]
	if err := within("clips", clips, 4); err != nil {
		return nil, err
	}
	if err := within("frames", x.Shape[0], 24); err != nil {
		return nil, err
	}
	out := make([]float32, clips*f)
	for c := range clips {
		for r := offs[c]; r < offs[c+1]; r++ {
			for k := range f {
				out[c*f+k] += x.Float32s()[r*f+k] / float32(offs[c+1]-offs[c])
			}
		}
	}
	return map[string]*backend.Tensor{"emb": {DType: "float32", Shape: []int64{clips, f}, Data: out}}, nil
}

func textBinding(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	ids, offs := in["tokens"].Int64s(), in["tok_off"].Int64s()
	segs := int64(len(offs) - 1)
	if err := within("segments", segs, 6); err != nil {
		return nil, err
	}
	if err := within("tokens", int64(len(ids)), 48); err != nil {
		return nil, err
	}
	out := make([]float32, segs)
	for s := range segs {
		for _, id := range ids[offs[s]:offs[s+1]] {
			out[s] += float32(id)
		}
	}
	return map[string]*backend.Tensor{"emb": {DType: "float32", Shape: []int64{segs, 1}, Data: out}}, nil
}

func multimodalEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	b := &backend.Bindings{}
	b.Register("image", imageBinding)
	b.Register("video", videoBinding)
	b.Register("text", textBinding)
	return bindingEngine(t, "multimodal.yaml", b, opts)
}

// nested builds a two-level chain from unit sizes: offsets over children,
// owners, and the outer [0, units] pair of the request's one row.
func nested(sizes []int64) (inner, innerOwn, outer, outerOwn []int64) {
	inner = []int64{0}
	for _, n := range sizes {
		inner = append(inner, inner[len(inner)-1]+n)
	}
	return inner, ownersFromOffsets(inner), []int64{0, int64(len(sizes))}, make([]int64, len(sizes))
}

func i64(data []int64) *backend.Tensor {
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
}

func multimodalRequest(rng *rand.Rand, id string) Request {
	features := int64(4 + 2*rng.Intn(2)) // 4 or 6: a uniform disagreement
	img := imageRequest(rng, id, rng.Intn(4))
	px := img.Inputs["pixel_patches"]
	if px.Shape[2] != features {
		n, t := px.Shape[0], px.Shape[1]
		data := make([]float32, n*t*features)
		lengths := img.Inputs["patch_lengths"].Int64s()
		for i := range n {
			for p := range lengths[i] {
				for k := range features {
					data[(i*t+p)*features+k] = float32(rng.Intn(50))
				}
			}
		}
		px = &backend.Tensor{DType: "float32", Shape: []int64{n, t, features}, Data: data}
	}
	clipSizes := make([]int64, rng.Intn(3))
	var frames []float32
	for i := range clipSizes {
		clipSizes[i] = rng.Int63n(5)
		for range clipSizes[i] * features {
			frames = append(frames, float32(rng.Intn(20)))
		}
	}
	if frames == nil {
		frames = []float32{}
	}
	fOff, fOwn, cOff, cOwn := nested(clipSizes)
	segSizes := make([]int64, rng.Intn(4))
	var toks []int64
	for i := range segSizes {
		segSizes[i] = rng.Int63n(7)
		for range segSizes[i] {
			toks = append(toks, rng.Int63n(100))
		}
	}
	if toks == nil {
		toks = []int64{}
	}
	tOff, tOwn, sOff, sOwn := nested(segSizes)
	return Request{ID: id, Inputs: map[string]*backend.Tensor{
		"px": px, "px_len": img.Inputs["patch_lengths"], "img_off": img.Inputs["image_offsets"], "img_own": img.Inputs["image_owner"],
		"frames":    {DType: "float32", Shape: []int64{int64(len(frames)) / features, features}, Data: frames},
		"frame_off": i64(fOff), "frame_own": i64(fOwn), "clip_off": i64(cOff), "clip_own": i64(cOwn),
		"tokens": i64(toks), "tok_off": i64(tOff), "tok_own": i64(tOwn), "seg_off": i64(sOff), "seg_own": i64(sOwn),
	}}
}

// TestManyModalitiesGroupedEqualsSolo: many goroutines submit requests
// with random item counts and extents to three components at once; every
// response equals solo, no request is lost or answered twice, budgets hold
// in every formed group, and items that disagree on a uniform extent never
// share one (they would fail with run/uniform).
func TestManyModalitiesGroupedEqualsSolo(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	var reqs []Request
	for i := range 80 {
		reqs = append(reqs, multimodalRequest(rng, fmt.Sprint("m", i)))
	}
	solo := multimodalEngine(t, Options{Solo: true})
	want := solo.RunAll(context.Background(), reqs)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			grouped := multimodalEngine(t, Options{MaxDelay: 5 * time.Millisecond, Workers: workers})
			compareMultimodal(t, reqs, grouped, want)
		})
	}
}

func compareMultimodal(t *testing.T, reqs []Request, grouped *Engine, want []Response) {
	got := grouped.RunAll(context.Background(), reqs)
	for i := range reqs {
		if got[i].ID != reqs[i].ID || got[i].Err != nil || want[i].Err != nil {
			t.Fatalf("%s: got %q err %v, solo err %v", reqs[i].ID, got[i].ID, got[i].Err, want[i].Err)
		}
		for name, w := range want[i].Outputs.All() {
			if !sameResult(got[i].Outputs.Get(name), w) {
				t.Errorf("%s output %s: grouped %v, solo %v", reqs[i].ID, name, got[i].Outputs.Get(name), w)
			}
		}
	}
	for name, s := range grouped.Stats().Components {
		if s.MaxGroupRequests < 2 {
			t.Errorf("%s never grouped: %+v", name, s)
		}
		if s.Requests > int64(len(reqs))*2 {
			t.Errorf("%s saw %d request items for %d requests", name, s.Requests, len(reqs))
		}
	}
}

// TestPaddedRectangleBinds: the images×patches budget counts the padded
// rectangle, not the valid patches: two images of 60 and 2 patches (62
// valid) would materialize 2×60 = 120 > 64, so they run apart.
func TestPaddedRectangleBinds(t *testing.T) {
	e := multimodalEngine(t, Options{MaxDelay: 50 * time.Millisecond})
	rng := rand.New(rand.NewSource(22))
	long, short := multimodalRequest(rng, "long"), multimodalRequest(rng, "short")
	for _, r := range []*Request{&long, &short} {
		n := int64(60)
		if r.ID == "short" {
			n = 2
		}
		r.Inputs["px"] = &backend.Tensor{DType: "float32", Shape: []int64{1, n, 4}, Data: make([]float32, n*4)}
		r.Inputs["px_len"] = i64([]int64{n})
		r.Inputs["img_off"], r.Inputs["img_own"] = i64([]int64{0, 1}), i64([]int64{0})
	}
	for _, res := range e.RunAll(context.Background(), []Request{long, short}) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	s := e.Stats().Components["image"]
	if s.Invocations != 2 || s.BudgetPeaks[1].Peak != 60 {
		t.Errorf("the padded rectangle did not bind: %+v", s)
	}
}
