// Package e2e runs the fixture packages of testdata/packages end to end:
// compiled in memory, run by the VM on ONNX Runtime, every request grouped
// and alone ("solo"), each result compared with the other and with the Go
// reference of internal/testmodels (DESIGN §10, the acceptance matrix).
//
// The tests fail, never skip, when ONNX Runtime or a model is missing:
// "make setup" provides both.
package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ort"
)

const fixSetup = `run "make setup" at the root of the genaic checkout, then re-run the tests`

// tolerance bounds every float comparison. A grouped result is compared
// with its solo result within it, not bit for bit: ONNX Runtime's CPU
// kernels (MLAS GEMM, the reductions) may block and vectorise a batch of
// 12 rows differently from a batch of 1, and a padded axis of 6 positions
// differently from one of 3, so the float32 summation order may change
// with the group around an item. Grouping must not change what is
// computed, and 1e-5 is far below any difference a wrong grouping makes
// (another item's values, a padded position counted, an owner shifted).
const tolerance = 1e-5

// groupDelay is the max_delay of the grouping engines the tests run: long
// enough that concurrent requests meet in one group, short enough
// that a group that cannot fill does not stall a test.
const groupDelay = 60 * time.Millisecond

// ortBackend returns the ONNX Runtime backend, failing the test when the
// runtime is missing. One intra-op thread keeps results independent of how
// ONNX Runtime splits work between threads.
func ortBackend(t testing.TB) *ort.Backend {
	t.Helper()
	return backendWith(t, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
}

func backendWith(t testing.TB, opts ort.Options) *ort.Backend {
	t.Helper()
	b, err := ort.New(opts)
	if err != nil {
		t.Fatalf("ONNX Runtime is not available (%v): %s", err, fixSetup)
	}
	return b
}

var plans struct {
	sync.Mutex
	byPkg map[string]*plan.File
}

// compile checks a fixture package and builds its plan in memory, checked
// against the package's artifacts.
func compile(t testing.TB, pkg string) (*plan.File, string) {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), "testdata", "packages", pkg)
	plans.Lock()
	defer plans.Unlock()
	if f := plans.byPkg[pkg]; f != nil {
		return f, dir
	}
	d, err := passes.CheckPath(dir, passes.Options{Check: true})
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	if !d.Valid() {
		t.Fatalf("%s is not a valid package: %v", pkg, d.Diags())
	}
	f, err := passes.BuildPlan(d, dir)
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	if err := f.CheckPackage(dir); err != nil {
		t.Fatalf("%s: %v: %s", pkg, err, fixSetup)
	}
	if plans.byPkg == nil {
		plans.byPkg = map[string]*plan.File{}
	}
	plans.byPkg[pkg] = f
	return f, dir
}

// open starts an engine on a fixture package with ONNX Runtime, recording
// every invocation when rec is not nil.
func open(t testing.TB, pkg string, opts vm.Options, rec *recorder) *vm.Engine {
	t.Helper()
	return openOn(t, pkg, opts, rec, ortBackend(t))
}

// openOn starts an engine on a fixture package with the given backend.
func openOn(t testing.TB, pkg string, opts vm.Options, rec *recorder, onnx backend.Backend) *vm.Engine {
	t.Helper()
	f, dir := compile(t, pkg)
	be := onnx
	if rec != nil {
		rec.inner = be
		be = rec
	}
	bes := map[ir.ImplKind]backend.Backend{ir.ImplONNX: be}
	e, err := vm.Open(f, dir, bes, opts)
	if err != nil {
		t.Fatalf("open %s: %v", pkg, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close %s: %v", pkg, err)
		}
	})
	return e
}

// grouped and solo open the two engines every differential test compares.
func grouped(t testing.TB, pkg string, rec *recorder) *vm.Engine {
	return open(t, pkg, vm.Options{MaxDelay: groupDelay}, rec)
}

func solo(t testing.TB, pkg string) *vm.Engine {
	return open(t, pkg, vm.Options{Solo: true}, nil)
}

// session loads one component of a fixture package straight on the ONNX
// Runtime backend, outside any engine (the "one direct call" of the
// benchmarks and the real-model guard).
func session(t testing.TB, pkg, component string) backend.Session {
	t.Helper()
	return sessionOn(t, pkg, component, ortBackend(t))
}

func sessionOn(t testing.TB, pkg, component string, be backend.Backend) backend.Session {
	t.Helper()
	f, dir := compile(t, pkg)
	m := f.IR
	comp := m.Component(component)
	if comp == nil {
		t.Fatalf("%s has no component %s", pkg, component)
	}
	s, err := be.Load(comp, dir)
	if err != nil {
		t.Fatalf("load %s/%s: %v: %s", pkg, component, err, fixSetup)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder is a backend that runs components on another backend and
// remembers every invocation: copies of the inputs the runtime assembled
// and the outputs it received, so that tests can look inside a group.
type recorder struct {
	inner backend.Backend
	mu    sync.Mutex
	calls []call
}

type call struct {
	component string
	inputs    map[string]*backend.Tensor // deep copies
	outputs   map[string]*backend.Tensor // the backend's own tensors, as returned
}

func (r *recorder) Name() string { return "recorder(" + r.inner.Name() + ")" }

func (r *recorder) Load(comp *ir.Component, dir string) (backend.Session, error) {
	s, err := r.inner.Load(comp, dir)
	if err != nil {
		return nil, err
	}
	return &recSession{Session: s, rec: r, component: comp.Name}, nil
}

// invocations returns the calls made so far.
func (r *recorder) invocations() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

type recSession struct {
	backend.Session
	rec       *recorder
	component string
}

func (s *recSession) Run(ctx context.Context, in map[string]*backend.Tensor, outs []string) (map[string]*backend.Tensor, error) {
	c := call{component: s.component, inputs: map[string]*backend.Tensor{}}
	for name, t := range in {
		c.inputs[name] = clone(t)
	}
	res, err := s.Session.Run(ctx, in, outs)
	if err != nil {
		return nil, err
	}
	c.outputs = res
	s.rec.mu.Lock()
	s.rec.calls = append(s.rec.calls, c)
	s.rec.mu.Unlock()
	return res, nil
}

// clone deep-copies a tensor.
func clone(t *backend.Tensor) *backend.Tensor {
	src := reflect.ValueOf(t.Data)
	dst := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
	reflect.Copy(dst, src)
	return &backend.Tensor{DType: t.DType, Shape: slices.Clone(t.Shape), Data: dst.Interface()}
}

// Request construction.

func f32(shape []int64, data []float32) *backend.Tensor {
	return &backend.Tensor{DType: "float32", Shape: shape, Data: data}
}

func i64(data ...int64) *backend.Tensor {
	if data == nil {
		data = []int64{}
	}
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
}

// offsetsOf is the exclusive prefix offsets of counts: [0, c0, c0+c1, ...].
func offsetsOf(counts []int) []int64 {
	offs := []int64{0}
	for _, c := range counts {
		offs = append(offs, offs[len(offs)-1]+int64(c))
	}
	return offs
}

// ownerOf is the owner map offsets describe: each child's unit position.
func ownerOf(offs []int64) []int64 {
	owner := []int64{}
	for u := 0; u+1 < len(offs); u++ {
		for j := offs[u]; j < offs[u+1]; j++ {
			owner = append(owner, int64(u))
		}
	}
	return owner
}

// counts draws n counts in [lo, hi].
func counts(rng *rand.Rand, n, lo, hi int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = lo + rng.IntN(hi-lo+1)
	}
	return c
}

func sum(c []int) int {
	s := 0
	for _, x := range c {
		s += x
	}
	return s
}

// values draws n floats: nonzero multiples of 1/16 in [-2, 2], so that a
// real position is never mistaken for a zero-filled one.
func values(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := float32(1+rng.IntN(32)) / 16
		if rng.IntN(2) == 0 {
			x = -x
		}
		v[i] = x
	}
	return v
}

// padded builds a [n, extent, width] tensor whose item i holds lengths[i]
// real positions and fill in the rest of its own extent.
func padded(rng *rand.Rand, lengths []int64, extent, width int64, fill float32) *backend.Tensor {
	n := int64(len(lengths))
	data := make([]float32, n*extent*width)
	for i := range n {
		for p := range extent {
			row := data[(i*extent+p)*width : (i*extent+p+1)*width]
			if p < lengths[i] {
				copy(row, values(rng, int(width)))
			} else {
				for k := range row {
					row[k] = fill
				}
			}
		}
	}
	return f32([]int64{n, extent, width}, data)
}

// validLengths draws n lengths in [1, extent].
func validLengths(rng *rand.Rand, n int, extent int64) []int64 {
	l := make([]int64, n)
	for i := range l {
		l[i] = 1 + rng.Int64N(extent)
	}
	return l
}

// fixture is one package under testdata/packages as the tests drive it.
type fixture struct {
	pkg       string
	component string
	// gen builds a random request of the package with the given number of
	// items (images, clips, windows, segments; ignored where a request is
	// one row), within every budget on its own and small enough that a few
	// requests share a group.
	gen func(rng *rand.Rand, id string, items int) vm.Request
	// maxItems bounds the item counts the randomized tests draw.
	maxItems int
}

// padJunk fills a request's own padding in generated requests: the
// encoders select padding away, so no value there may reach a result.
const padJunk = 1000

var fixtures = []fixture{
	{pkg: "image_padded", component: "encoder", maxItems: 4, gen: genImagePadded},
	{pkg: "image_pinned", component: "encoder", maxItems: 2, gen: genImagePinned(4)},
	{pkg: "video_frames", component: "clip_encoder", maxItems: 2, gen: genVideoFrames},
	{pkg: "video_fixed", component: "clip_encoder", maxItems: 2, gen: genVideoFixed(2, 3)},
	{pkg: "audio", component: "window_encoder", maxItems: 2, gen: genAudio},
	{pkg: "text", component: "segment_encoder", maxItems: 2, gen: genText},
	{pkg: "token_merge", component: "merger", maxItems: 2, gen: genTokenMerge},
	{pkg: "request_expanded", component: "denoiser", maxItems: 1, gen: genGuidance(1.5)},
}

func lookup(pkg string) fixture {
	for _, f := range fixtures {
		if f.pkg == pkg {
			return f
		}
	}
	panic("no fixture " + pkg)
}

// genImagePadded: images of one request share a random patch extent in
// [1, 8]; each image's valid length is in [1, extent].
func genImagePadded(rng *rand.Rand, id string, n int) vm.Request {
	extent := 1 + rng.Int64N(8)
	lengths := validLengths(rng, n, extent)
	offs := []int64{0, int64(n)}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"pixel_patches": padded(rng, lengths, extent, 8, padJunk),
		"patch_lengths": i64(lengths...),
		"image_offsets": i64(offs...),
		"image_owner":   i64(ownerOf(offs)...),
	}}
}

// genImagePinned: every image has exactly patches patches (uniform).
func genImagePinned(patches int64) func(*rand.Rand, string, int) vm.Request {
	return func(rng *rand.Rand, id string, n int) vm.Request {
		offs := []int64{0, int64(n)}
		return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
			"pixel_patches": f32([]int64{int64(n), patches, 8}, values(rng, n*int(patches)*8)),
			"image_offsets": i64(offs...),
			"image_owner":   i64(ownerOf(offs)...),
		}}
	}
}

// videoRequest builds a video_frames request from its frames per clip, its
// patch extent and each frame's valid length.
func videoRequest(rng *rand.Rand, id string, frames []int, extent int64, lengths []int64) vm.Request {
	fo := offsetsOf(frames)
	co := []int64{0, int64(len(frames))}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"pixel_values":  padded(rng, lengths, extent, 8, padJunk),
		"patch_lengths": i64(lengths...),
		"frame_offsets": i64(fo...),
		"frame_owner":   i64(ownerOf(fo)...),
		"clip_offsets":  i64(co...),
		"clip_owner":    i64(ownerOf(co)...),
	}}
}

// genVideoFrames: n clips of 1 to 4 frames, one patch extent in [1, 8] per
// request, each frame's valid length in [1, extent].
func genVideoFrames(rng *rand.Rand, id string, n int) vm.Request {
	frames := counts(rng, n, 1, 4)
	extent := 1 + rng.Int64N(8)
	return videoRequest(rng, id, frames, extent, validLengths(rng, sum(frames), extent))
}

// genVideoFixed: n clips of exactly frames × patches (uniform).
func genVideoFixed(frames, patches int64) func(*rand.Rand, string, int) vm.Request {
	return func(rng *rand.Rand, id string, n int) vm.Request {
		co := []int64{0, int64(n)}
		return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
			"pixel_values": f32([]int64{int64(n), frames, patches, 8}, values(rng, n*int(frames*patches)*8)),
			"clip_offsets": i64(co...),
			"clip_owner":   i64(ownerOf(co)...),
		}}
	}
}

// audioRequest builds an audio request from its frames per window.
func audioRequest(rng *rand.Rand, id string, frames []int) vm.Request {
	fo := offsetsOf(frames)
	wo := []int64{0, int64(len(frames))}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"spectrogram":    f32([]int64{int64(sum(frames)), 6}, values(rng, sum(frames)*6)),
		"frame_offsets":  i64(fo...),
		"frame_owner":    i64(ownerOf(fo)...),
		"window_offsets": i64(wo...),
		"window_owner":   i64(ownerOf(wo)...),
	}}
}

// genAudio: n windows of 1 to 8 spectrogram frames.
func genAudio(rng *rand.Rand, id string, n int) vm.Request {
	return audioRequest(rng, id, counts(rng, n, 1, 8))
}

// textRequest builds a text request from its tokens per segment.
func textRequest(rng *rand.Rand, id string, tokens []int) vm.Request {
	ids := make([]int64, sum(tokens))
	for i := range ids {
		ids[i] = rng.Int64N(32)
	}
	to := offsetsOf(tokens)
	so := []int64{0, int64(len(tokens))}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"token_ids":       i64(ids...),
		"token_offsets":   i64(to...),
		"token_owner":     i64(ownerOf(to)...),
		"segment_offsets": i64(so...),
		"segment_owner":   i64(ownerOf(so)...),
	}}
}

// genText: n segments of 1 to 8 tokens.
func genText(rng *rand.Rand, id string, n int) vm.Request {
	return textRequest(rng, id, counts(rng, n, 1, 8))
}

// mergeRequest builds a token_merge request from its tokens per segment.
func mergeRequest(rng *rand.Rand, id string, tokens []int) vm.Request {
	to := offsetsOf(tokens)
	so := []int64{0, int64(len(tokens))}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"tokens":          f32([]int64{int64(sum(tokens)), 4}, values(rng, sum(tokens)*4)),
		"token_offsets":   i64(to...),
		"token_owner":     i64(ownerOf(to)...),
		"segment_offsets": i64(so...),
		"segment_owner":   i64(ownerOf(so)...),
	}}
}

// genTokenMerge: n segments of 1 to 7 tokens (odd counts included).
func genTokenMerge(rng *rand.Rand, id string, n int) vm.Request {
	return mergeRequest(rng, id, counts(rng, n, 1, 7))
}

// genGuidance: one request is its two latent rows (conditional, then
// unconditional) and a guidance scale.
func genGuidance(scale float32) func(*rand.Rand, string, int) vm.Request {
	return func(rng *rand.Rand, id string, _ int) vm.Request {
		return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
			"latents":        f32([]int64{2, 4}, values(rng, 8)),
			"guidance_scale": f32([]int64{1}, []float32{scale}),
		}}
	}
}

// genWakeword: n mel-spectrogram windows of 76 frames × 32 bins, with
// values in the range the embedding model sees.
func genWakeword(rng *rand.Rand, id string, n int) vm.Request {
	data := make([]float32, n*76*32)
	for i := range data {
		data[i] = rng.Float32()*4 - 2
	}
	offs := []int64{0, int64(n)}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"windows":        f32([]int64{int64(n), 76, 32, 1}, data),
		"window_offsets": i64(offs...),
		"window_owner":   i64(ownerOf(offs)...),
	}}
}

// randomRequests draws n requests of a fixture with item counts in
// [0, maxItems].
func randomRequests(f fixture, seed uint64, n int) []vm.Request {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	reqs := make([]vm.Request, n)
	for i := range reqs {
		reqs[i] = f.gen(rng, fmt.Sprintf("%s-%d", f.pkg, i), rng.IntN(f.maxItems+1))
	}
	return reqs
}

// Results and references.

// reference computes a request's workflow outputs alone in plain Go: the
// fixture model's Reference on the request's own values, and every
// delivered companion the workflow echoes from the request.
func reference(t testing.TB, pkg string, req vm.Request) map[string]*backend.Tensor {
	t.Helper()
	m := testmodels.Lookup(pkg)
	if m == nil {
		t.Fatalf("internal/testmodels has no model for %s", pkg)
	}
	in := map[string]testmodels.Tensor{}
	for _, p := range m.Inputs {
		v := req.Inputs[p.Name]
		if v == nil {
			t.Fatalf("%s: request %s has no %s", pkg, req.ID, p.Name)
		}
		switch v.DType {
		case "int64":
			in[p.Name] = testmodels.Int64(v.Shape, v.Int64s())
		default:
			in[p.Name] = testmodels.Float32(v.Shape, v.Float32s())
		}
	}
	ref, err := m.Reference(in)
	if err != nil {
		t.Fatalf("%s: reference of %s: %v", pkg, req.ID, err)
	}
	out := map[string]*backend.Tensor{}
	for name, r := range ref {
		if r.I64 != nil {
			out[name] = &backend.Tensor{DType: "int64", Shape: r.Shape, Data: r.I64}
		} else {
			out[name] = f32(r.Shape, r.F32)
		}
	}
	return out
}

// diff describes how two results differ, or returns "" when they agree:
// equal dtype and shape, int64 elements equal, float32 elements within
// tol. Two empty results agree when their ranks do and both are empty: a
// group that is never invoked cannot know the extents only the graph
// decides.
func diff(got, want *backend.Tensor, tol float64) string {
	switch {
	case got == nil || want == nil:
		return fmt.Sprintf("got %v, want %v", got, want)
	case got.DType != want.DType || got.Rank() != want.Rank():
		return fmt.Sprintf("got %v, want %v", got, want)
	case got.Len() == 0 && want.Len() == 0 && got.Shape[0] == 0 && want.Shape[0] == 0:
		return ""
	case !slices.Equal(got.Shape, want.Shape):
		return fmt.Sprintf("got shape %v, want %v", got.Shape, want.Shape)
	}
	if got.DType == "int64" {
		if !slices.Equal(got.Int64s(), want.Int64s()) {
			return fmt.Sprintf("got %v, want %v", got.Int64s(), want.Int64s())
		}
		return ""
	}
	g, w := got.Float32s(), want.Float32s()
	for i := range g {
		d := math.Abs(float64(g[i]) - float64(w[i]))
		if !(d <= tol) {
			return fmt.Sprintf("element %d: got %v, want %v (|Δ| = %g > %g)", i, g[i], w[i], d, tol)
		}
	}
	return ""
}

// identical reports whether two results are equal bit for bit.
func identical(a, b *backend.Tensor) bool {
	return a != nil && b != nil && a.DType == b.DType && slices.Equal(a.Shape, b.Shape) && reflect.DeepEqual(a.Data, b.Data)
}

// compareResponses checks every response against the other engine's and
// against the reference, and returns how many float outputs were
// bit-identical between the engines (for the log).
func compareResponses(t *testing.T, pkg string, reqs []vm.Request, got, want []vm.Response) (same, total int) {
	t.Helper()
	for i, req := range reqs {
		g, w := got[i], want[i]
		if g.Err != nil || w.Err != nil {
			t.Errorf("%s: grouped error %v, solo error %v", req.ID, g.Err, w.Err)
			continue
		}
		if !slices.Equal(names(g.Outputs), names(w.Outputs)) {
			t.Errorf("%s: grouped outputs %v, solo outputs %v", req.ID, names(g.Outputs), names(w.Outputs))
		}
		ref := reference(t, pkg, req)
		for name, out := range g.Outputs {
			if d := diff(out, w.Outputs[name], tolerance); d != "" {
				t.Errorf("%s: output %s grouped differs from solo: %s", req.ID, name, d)
			}
			if out.DType == "float32" {
				total++
				if identical(out, w.Outputs[name]) {
					same++
				}
			}
			want := ref[name]
			if want == nil {
				want = req.Inputs[name] // a companion the workflow echoes
			}
			if d := diff(out, want, tolerance); d != "" {
				t.Errorf("%s: output %s differs from the reference: %s", req.ID, name, d)
			}
		}
	}
	return same, total
}

func names(m map[string]*backend.Tensor) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// mustSucceed fails the test for any failed response.
func mustSucceed(t *testing.T, res []vm.Response) {
	t.Helper()
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
}

// checkBudgets fails the test when a group exceeded a budget.
func checkBudgets(t *testing.T, s vm.ComponentStats) {
	t.Helper()
	for _, p := range s.BudgetPeaks {
		if p.Peak > p.MaxTotal {
			t.Errorf("budget %v: a group reached %d, above max_total %d", p.Dimensions, p.Peak, p.MaxTotal)
		}
	}
}

// positions counts a request's packed positions on its component's packed
// input port.
func positions(pkg string, req vm.Request) int64 {
	port := map[string]string{"image_padded": "pixel_patches", "image_pinned": "pixel_patches", "video_frames": "pixel_values",
		"video_fixed": "pixel_values", "audio": "spectrogram", "text": "token_ids", "token_merge": "tokens", "wakeword": "windows"}[pkg]
	if port == "" {
		return 1
	}
	return req.Inputs[port].Shape[0]
}
