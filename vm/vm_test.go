package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
)

// compilePlan compiles a document into a plan in memory.
func compilePlan(t testing.TB, path string) *plan.File {
	t.Helper()
	d, err := passes.CheckPath(path, passes.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Valid() {
		t.Fatalf("%s: %v", path, d.Diags())
	}
	f, err := passes.BuildPlan(d, filepath.Dir(d.File))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bindingEngine opens a workflow document of testdata whose components
// are Go bindings; the engine closes when the test ends.
func bindingEngine(t testing.TB, doc string, b *backend.Bindings, opts Options) *Engine {
	t.Helper()
	path := filepath.Join("testdata", doc)
	e, err := Open(compilePlan(t, path), filepath.Dir(path), Backends{ir.ImplBinding: b}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// maskedMean is the reference image encoder as a Go function: for each
// packed image, the mean of its valid patches (features doubled), so that
// padding is invisible exactly when the runtime honours the lengths.
func maskedMean(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x, lengths := in["pixel_patches"], in["patch_lengths"].Int64s()
	p, tp, f := x.Shape[0], x.Shape[1], x.Shape[2]
	out := make([]float32, p*f)
	data := x.Float32s()
	for i := int64(0); i < p; i++ {
		for t := int64(0); t < lengths[i]; t++ {
			for k := int64(0); k < f; k++ {
				out[i*f+k] += 2 * data[(i*tp+t)*f+k] / float32(lengths[i])
			}
		}
		for t := lengths[i]; t < tp; t++ {
			for k := int64(0); k < f; k++ {
				if data[(i*tp+t)*f+k] != 0 {
					return nil, fmt.Errorf("padding position %d of image %d is not zero", t, i)
				}
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{p, f}, Data: out}}, nil
}

func imageEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	path := filepath.Join("..", "testdata", "packages", "image_padded")
	f := compilePlan(t, path)
	b := &backend.Bindings{}
	b.Register("encoder", maskedMean)
	bes := map[ir.ImplKind]backend.Backend{ir.ImplONNX: b}
	e, err := Open(f, path, bes, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// imageRequest builds a request of n images with random patch counts.
func imageRequest(rng *rand.Rand, id string, n int) Request {
	const features = 4
	maxPatches := int64(1 + rng.Intn(6))
	lengths := make([]int64, n)
	data := make([]float32, int64(n)*maxPatches*features)
	for i := range n {
		lengths[i] = 1 + rng.Int63n(maxPatches)
		for t := int64(0); t < lengths[i]; t++ {
			for k := int64(0); k < features; k++ {
				data[(int64(i)*maxPatches+t)*features+k] = float32(rng.Intn(100)) / 8
			}
		}
	}
	return Request{ID: id, Inputs: map[string]*backend.Tensor{
		"pixel_patches": {DType: "float32", Shape: []int64{int64(n), maxPatches, features}, Data: data},
		"patch_lengths": {DType: "int64", Shape: []int64{int64(n)}, Data: lengths},
		"image_offsets": {DType: "int64", Shape: []int64{2}, Data: []int64{0, int64(n)}},
		"image_owner":   {DType: "int64", Shape: []int64{int64(n)}, Data: make([]int64, n)},
	}}
}

func TestGroupedEqualsSolo(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var reqs []Request
	for i := range 24 {
		reqs = append(reqs, imageRequest(rng, fmt.Sprint("r", i), rng.Intn(4)))
	}
	grouped := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	solo := imageEngine(t, Options{Solo: true})
	got := grouped.RunAll(context.Background(), reqs)
	checkEmbeddingsAsSolo(t, reqs, got, solo.RunAll(context.Background(), reqs))
	for i := range reqs {
		n := reqs[i].Inputs["image_owner"].Len()
		if e := got[i].Outputs.Get("embeddings"); e.Shape[0] != n || e.Rank() != 2 {
			t.Errorf("%s: %d images gave %v", reqs[i].ID, n, e)
		}
	}
	gs, ss := grouped.Stats().Components["encoder"], solo.Stats().Components["encoder"]
	if gs.MaxGroupRequests < 2 || gs.Invocations >= ss.Invocations {
		t.Errorf("grouping did not happen: grouped %+v, solo %+v", gs, ss)
	}
	if ss.MaxGroupRequests != 1 {
		t.Errorf("solo mode formed a group of %d", ss.MaxGroupRequests)
	}
	for _, p := range gs.BudgetPeaks {
		if p.Peak > p.MaxTotal {
			t.Errorf("budget %v exceeded: %d > %d", p.Dimensions, p.Peak, p.MaxTotal)
		}
	}
}

// checkEmbeddingsAsSolo checks that every grouped response succeeded with
// the embeddings of its solo run.
func checkEmbeddingsAsSolo(t *testing.T, reqs []Request, got, want []Response) {
	t.Helper()
	for i := range reqs {
		if got[i].Err != nil || want[i].Err != nil {
			t.Fatalf("%s: grouped err %v, solo err %v", reqs[i].ID, got[i].Err, want[i].Err)
		}
		if !sameResult(got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings")) {
			t.Errorf("%s: grouped %v differs from solo %v", reqs[i].ID, got[i].Outputs.Get("embeddings"), want[i].Outputs.Get("embeddings"))
		}
	}
}

// sameResult compares two results: equal dtype, shape and elements. Two
// empty results of one rank are equal: an empty span of a group that was
// never invoked cannot know the extents only the graph decides.
func sameResult(a, b *backend.Tensor) bool {
	if a == nil || b == nil || a.DType != b.DType || a.Rank() != b.Rank() {
		return false
	}
	if a.Len() == 0 && b.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestSplitsAreViews: a request's share of a packed output lies inside the
// group's buffer (no payload copy on split).
func TestSplitsAreViews(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	e := imageEngine(t, Options{MaxDelay: 500 * time.Millisecond})
	reqs := []Request{imageRequest(rng, "a", 2), imageRequest(rng, "b", 3)}
	before := e.Copies("encoder").ByReason()
	res := e.RunAll(context.Background(), reqs)
	if e.Stats().Components["encoder"].MaxGroupRequests != 2 {
		t.Fatalf("the two requests did not meet in one group within the max delay")
	}
	a, b := res[0].Outputs.Get("embeddings"), res[1].Outputs.Get("embeddings")
	lo, hi := a, b
	if addrOf(b.Data) < addrOf(a.Data) {
		lo, hi = b, a
	}
	if addrOf(hi.Data) != addrOf(lo.Data)+uintptr(lo.Bytes()) {
		t.Errorf("the two shares are not adjacent views of one group buffer")
	}
	after := e.Copies("encoder").ByReason()
	if after["gather"] != before["gather"] {
		t.Errorf("splitting gathered payload: %v", after)
	}
}

func TestAdmissionFailsOnlyTheOffender(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	e := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	good := imageRequest(rng, "good", 2)
	badOffsets := imageRequest(rng, "offsets", 2)
	badOffsets.Inputs["image_offsets"].Data = []int64{0, 3}
	badOwner := imageRequest(rng, "owner", 2)
	badOwner.Inputs["image_owner"].Data = []int64{0, 1}
	badLengths := imageRequest(rng, "lengths", 2)
	badLengths.Inputs["patch_lengths"].Data.([]int64)[1] = 99
	tooBig := imageRequest(rng, "budget", 1)
	tooBig.Inputs["pixel_patches"] = &backend.Tensor{DType: "float32", Shape: []int64{1, 4097, 4}, Data: make([]float32, 4097*4)}
	tooBig.Inputs["patch_lengths"].Data.([]int64)[0] = 4097
	res := e.RunAll(context.Background(), []Request{good, badOffsets, badOwner, badLengths, tooBig})
	if res[0].Err != nil {
		t.Fatalf("the good request failed: %v", res[0].Err)
	}
	for i, want := range []string{"", "run/offsets", "run/owner", "run/lengths", "run/budget"} {
		if i == 0 {
			continue
		}
		var re *backend.RunError
		if !errors.As(res[i].Err, &re) || re.Rule != want {
			t.Errorf("%s: got %v, want %s", res[i].ID, res[i].Err, want)
		}
	}
	var re *backend.RunError
	errors.As(res[1].Err, &re)
	if !strings.Contains(re.Message, "`image_offsets` ends at 3 at index 1, but the level below holds 2 entries") {
		t.Errorf("offsets message: %s", re.Message)
	}
}

func TestZeroItemRequests(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: 20 * time.Millisecond})
	rng := rand.New(rand.NewSource(4))
	res := e.RunAll(context.Background(), []Request{imageRequest(rng, "z1", 0), imageRequest(rng, "z2", 0)})
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if emb := r.Outputs.Get("embeddings"); emb.Shape[0] != 0 || emb.Rank() != 2 {
			t.Errorf("%s: %v", r.ID, emb)
		}
	}
	if n := e.Stats().Components["encoder"].Invocations; n != 0 {
		t.Errorf("an all-zero group was invoked %d times", n)
	}
}

// TestRequestSplitAcrossInvocations: a request whose images exceed a budget
// together (but not one by one) is split item by item across invocations,
// and its results are concatenated in order, equal to the unsplit result.
func TestRequestSplitAcrossInvocations(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	big := imageRequest(rng, "big", 37) // images ≤ 16 per group
	small := imageRequest(rng, "small", 3)
	e := imageEngine(t, Options{MaxDelay: 10 * time.Millisecond})
	res := e.RunAll(context.Background(), []Request{big, small})
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
	if n := e.Stats().Components["encoder"].Invocations; n < 3 {
		t.Errorf("37 images under a 16-image budget ran in %d invocations", n)
	}
	want, err := maskedMean(context.Background(), map[string]*backend.Tensor{"pixel_patches": big.Inputs["pixel_patches"], "patch_lengths": big.Inputs["patch_lengths"]})
	if err != nil {
		t.Fatal(err)
	}
	if !sameResult(res[0].Outputs.Get("embeddings"), want["embeddings"]) {
		t.Errorf("the split request's result differs from the whole computation")
	}
	for _, p := range e.Stats().Components["encoder"].BudgetPeaks {
		if p.Peak > p.MaxTotal {
			t.Errorf("budget %v exceeded: %d", p.Dimensions, p.Peak)
		}
	}
}

// addrOf is the address of a typed slice's first element.
func addrOf(data any) uintptr { return reflect.ValueOf(data).Pointer() }

// TestFailedChunkDropsTheRest: a request split across invocations fails
// with its first failed chunk, and its chunks still queued are dropped,
// never run: the encoder fails the first chunk and holds the second
// until the request has failed; the third never reaches it.
func TestFailedChunkDropsTheRest(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	enc := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		switch calls.Add(1) {
		case 1:
			return nil, errors.New("the first chunk fails")
		case 2:
			<-release
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, enc, Options{Workers: 1, MaxDelay: time.Millisecond}, nil)
	var once sync.Once
	stop := func() { once.Do(func() { close(release); e.Close() }) }
	t.Cleanup(stop)
	big := imageRequest(rand.New(rand.NewSource(5)), "big", 37) // chunks of 16, 16 and 5 images
	if r := e.Run(context.Background(), big); r.Err == nil {
		t.Fatal("the request succeeded though its first chunk failed")
	}
	stop()
	if n := calls.Load(); n > 2 {
		t.Errorf("the encoder ran %d times; the chunks queued after the failed one ran", n)
	}
}

// TestMissingCompanionSaysHowToGiveIt: a request that leaves out a
// companion of a packed input (its valid lengths, its offsets) is told
// that giving the input as items derives it; one that leaves out the
// packed input itself is told only what it gives.
func TestMissingCompanionSaysHowToGiveIt(t *testing.T) {
	e := imageEngine(t, Options{Solo: true})
	defer e.Close()
	for _, c := range []struct {
		drop, want string
	}{
		{"patch_lengths", "; it is a companion of `pixel_patches`: give it with `pixel_patches`, or give `pixel_patches` as items"},
		{"image_offsets", "; it is a companion of `pixel_patches`"},
		{"pixel_patches", "(it gives `image_offsets`, `image_owner`, `patch_lengths`)"},
	} {
		r := imageRequest(rand.New(rand.NewSource(3)), c.drop, 2)
		delete(r.Inputs, c.drop)
		resp := e.Run(context.Background(), r)
		re := AsRunError(resp.Err)
		if re == nil || re.Rule != "run/input" || !strings.Contains(re.Message, c.want) || c.drop == "pixel_patches" && strings.Contains(re.Message, "companion") {
			t.Errorf("without %s: %v, want run/input saying %q", c.drop, resp.Err, c.want)
		}
	}
}
