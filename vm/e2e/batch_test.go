package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestRunBatchStop: on both engines, RunBatch stops admitting once Stop
// closes (here, when the first response is known): every request not yet
// started is answered run/cancelled, recognised by vm.NotStarted, while
// every request started finishes with its result, equal to solo; Finished
// is called exactly once per request. Requests of plain inputs and
// requests that give items (packed into plain requests by the batch) are
// both tried.
func TestRunBatchStop(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		cases := []struct {
			fixture string
			reqs    func(rng *rand.Rand) []vm.Request
		}{
			{"image_padded", func(rng *rand.Rand) []vm.Request {
				f := fixtures.Lookup("image_padded")
				var reqs []vm.Request
				for i := range 40 {
					reqs = append(reqs, f.Gen(rng, fmt.Sprint(i), 1+rng.IntN(3)))
				}
				return reqs
			}},
			{"ocr_lines", func(rng *rand.Rand) []vm.Request {
				var reqs []vm.Request
				for i := range 24 {
					var lines []*backend.Tensor
					for range 1 + rng.IntN(3) {
						lines = append(lines, ocrLine(rng, []int64{5, 12, 24}[rng.IntN(3)], 8))
					}
					reqs = append(reqs, vm.Request{ID: fmt.Sprint(i), Items: map[string][]vm.Item{"line_images": vm.TensorItems(lines...)}})
				}
				return reqs
			}},
		}
		for k, tc := range cases {
			t.Run(tc.fixture, func(t *testing.T) {
				f := fixtures.Lookup(tc.fixture)
				reqs := tc.reqs(rand.New(rand.NewPCG(uint64(70+k), 7)))
				want := runAll(context.Background(), e.solo(t, f), reqs)
				mustSucceed(t, want)
				r := e.grouped(t, f, nil)
				stop := make(chan struct{})
				var once sync.Once
				var mu sync.Mutex
				told := make([]int, len(reqs))
				got := r.RunBatch(context.Background(), reqs, vm.BatchOptions{Limit: 2, Stop: stop, Finished: func(i int, _ vm.Response) {
					mu.Lock()
					told[i]++
					mu.Unlock()
					once.Do(func() { close(stop) })
				}})
				finished, refused := 0, 0
				for i, resp := range got {
					if told[i] != 1 {
						t.Errorf("request %d was told of %d times", i, told[i])
					}
					if resp.ID != reqs[i].ID {
						t.Errorf("response %d answers %q, want %q", i, resp.ID, reqs[i].ID)
					}
					switch {
					case vm.NotStarted(resp.Err):
						if rule(resp.Err) != backend.RunCancelled {
							t.Errorf("request %d not started: %v, want %s", i, resp.Err, backend.RunCancelled)
						}
						refused++
					case resp.Err != nil:
						t.Errorf("request %d started but did not finish: %v", i, resp.Err)
					default:
						finished++
						sameAsSolo(t, resp, want[i])
					}
				}
				if finished == 0 || refused == 0 {
					t.Errorf("%d finished, %d not started; want some of each", finished, refused)
				}
				// The engine is not left waiting for the requests never
				// started: a later batch runs in full.
				mustSucceed(t, r.RunBatch(context.Background(), reqs[:4], vm.BatchOptions{Limit: 2}))
			})
		}
	})
}

// sameAsSolo fails the test where a response's outputs or per-item
// outputs differ from solo's.
func sameAsSolo(t *testing.T, got, want vm.Response) {
	t.Helper()
	if got.Outputs.Len() != want.Outputs.Len() || len(got.Items) != len(want.Items) {
		t.Errorf("%s: outputs %v and items of %d outputs, solo %v and %d", got.ID, fixtures.Names(got.Outputs.Map()), len(got.Items), fixtures.Names(want.Outputs.Map()), len(want.Items))
	}
	for name, out := range got.Outputs.All() {
		if d := fixtures.Diff(out, want.Outputs.Get(name), tolerance); d != "" {
			t.Errorf("%s: output %s differs from solo: %s", got.ID, name, d)
		}
	}
	for name, items := range got.Items {
		g, w := vm.Tensors(items), vm.Tensors(want.Items[name])
		if len(g) != len(w) {
			t.Errorf("%s: %d items of %s, solo %d", got.ID, len(g), name, len(w))
			continue
		}
		for k := range g {
			if d := fixtures.Diff(g[k], w[k], tolerance); d != "" {
				t.Errorf("%s: item %d of %s differs from solo: %s", got.ID, k, name, d)
			}
		}
	}
}

// TestItemsOfSeveralInputs: on both engines, a multimodal request that
// gives its images, clips and segments as items (two, three and one)
// gets each per-item output back following its own input: item i equals
// row i of the same request sent packed with its companions.
func TestItemsOfSeveralInputs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		f := fixtures.Lookup("multimodal")
		r := e.grouped(t, f, nil)
		rng := rand.New(rand.NewPCG(12, 12))
		img0, img1 := fixtures.F32([]int64{2, 4}, fixtures.Values(rng, 8)), fixtures.F32([]int64{3, 4}, fixtures.Values(rng, 12))
		px := make([]float32, 2*3*4) // padded to 3 patches with zeros
		copy(px, img0.Float32s())
		copy(px[12:], img1.Float32s())
		frames := fixtures.Values(rng, 3*4)
		clips := []*backend.Tensor{fixtures.F32([]int64{1, 4}, frames[:4]), fixtures.F32([]int64{2, 4}, frames[4:]), fixtures.F32([]int64{0, 4}, []float32{})}
		tokens := fixtures.I64(4, 5, 6)
		items := vm.Request{ID: "items", Items: map[string][]vm.Item{
			"px": vm.TensorItems(img0, img1), "frames": vm.TensorItems(clips...), "tokens": vm.TensorItems(tokens),
		}}
		plain := vm.Request{ID: "plain", Inputs: map[string]*backend.Tensor{
			"px": fixtures.F32([]int64{2, 3, 4}, px), "px_len": fixtures.I64(2, 3), "img_off": fixtures.I64(0, 2), "img_own": fixtures.I64(0, 0),
			"frames": fixtures.F32([]int64{3, 4}, frames), "frame_off": fixtures.I64(0, 1, 3, 3), "frame_own": fixtures.I64(0, 1, 1),
			"clip_off": fixtures.I64(0, 3), "clip_own": fixtures.I64(0, 0, 0),
			"tokens": tokens, "tok_off": fixtures.I64(0, 3), "tok_own": fixtures.I64(0, 0, 0), "seg_off": fixtures.I64(0, 1), "seg_own": fixtures.I64(0),
		}}
		got := r.RunAll(context.Background(), []vm.Request{items, plain})
		mustSucceed(t, got)
		for name, n := range map[string]int{"image_emb": 2, "clip_emb": 3, "seg_emb": 1} {
			its := vm.Tensors(got[0].Items[name])
			if len(its) != n {
				t.Errorf("%s: %d items, want %d", name, len(its), n)
				continue
			}
			whole := got[1].Outputs.Get(name)
			for i, it := range its {
				row := whole.View(int64(i), int64(i+1))
				row.Shape = row.Shape[1:]
				if d := fixtures.Diff(it, row, tolerance); d != "" {
					t.Errorf("%s item %d: %s", name, i, d)
				}
			}
		}
		if got[0].Outputs.Len() != 0 {
			t.Errorf("outputs %v left packed beside the items", fixtures.Names(got[0].Outputs.Map()))
		}
	})
}
