package codegen_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/vm"
)

// fixture is a package whose executor the tests generate and run: every
// end-to-end package of testdata/packages, the VM's own fixtures of
// control flow and of many modalities in one engine, and
// codegen/testdata/control for every structured step (the last three on
// Go bindings).
type fixture struct {
	pkg  string // folder, relative to the checkout
	name string // Go package name of its executor (and its examples/ folder)
	// gen builds a random request with items items (images, clips,
	// windows, segments; ignored where a request is one row).
	gen      func(rng *rand.Rand, id string, items int) vm.Request
	maxItems int
	// bindings names the constructor in package bindings of the Go
	// functions that implement the fixture's components, when they are not
	// ONNX graphs.
	bindings string
	// example is set when the executor is committed under examples/.
	example bool
}

var fixtures = []fixture{
	{pkg: "testdata/packages/image_padded", name: "imagepadded", gen: genImagePadded, maxItems: 4, example: true},
	{pkg: "testdata/packages/image_pinned", name: "imagepinned", gen: genImagePinned, maxItems: 3, example: true},
	{pkg: "testdata/packages/video_frames", name: "videoframes", gen: genVideoFrames, maxItems: 2, example: true},
	{pkg: "testdata/packages/video_fixed", name: "videofixed", gen: genVideoFixed, maxItems: 2, example: true},
	{pkg: "testdata/packages/audio", name: "audio", gen: genAudio, maxItems: 2, example: true},
	{pkg: "testdata/packages/text", name: "text", gen: genText, maxItems: 3, example: true},
	{pkg: "testdata/packages/token_merge", name: "tokenmerge", gen: genTokenMerge, maxItems: 2, example: true},
	{pkg: "testdata/packages/request_expanded", name: "requestexpanded", gen: genGuidance, maxItems: 1, example: true},
	{pkg: "testdata/packages/solo", name: "solo", gen: genSolo, maxItems: 3, example: true},
	{pkg: "testdata/packages/wakeword", name: "wakeword", gen: genWakeword, maxItems: 2},
	{pkg: "vm/testdata/control.yaml", name: "vmcontrol", gen: genVMControl, maxItems: 1, bindings: "VMControl"},
	{pkg: "vm/testdata/multimodal.yaml", name: "multimodal", gen: genMultimodal, maxItems: 3, bindings: "Multimodal"},
	{pkg: "codegen/testdata/control", name: "control", gen: genControl, maxItems: 4, bindings: "Control"},
}

// runnable returns the fixtures whose artifacts are present: the wakeword
// guard's model is linked in by "make setup" and is left out without it.
func runnable(t *testing.T) []fixture {
	var out []fixture
	for _, f := range fixtures {
		if f.name == "wakeword" {
			if _, err := os.Stat(filepath.Join(testenv.Root(t), f.pkg, "embedding_model.onnx")); err != nil {
				t.Logf("wakeword left out: its model is not linked (%v); %s", err, fixSetup)
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

func f32(shape []int64, data []float32) *backend.Tensor {
	return &backend.Tensor{DType: "float32", Shape: shape, Data: data}
}

func i64(data ...int64) *backend.Tensor {
	if data == nil {
		data = []int64{}
	}
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
}

func randoms(rng *rand.Rand, n int64) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.IntN(200)-100) / 16
	}
	return d
}

func counts(rng *rand.Rand, n int, lo, hi int64) []int64 {
	c := make([]int64, n)
	for i := range c {
		c[i] = lo + rng.Int64N(hi-lo+1)
	}
	return c
}

func total(c []int64) int64 {
	var s int64
	for _, v := range c {
		s += v
	}
	return s
}

// offsets is the exclusive prefix sum of counts; owner maps each child of
// offsets to its parent.
func offsets(c []int64) []int64 {
	o := []int64{0}
	for _, v := range c {
		o = append(o, o[len(o)-1]+v)
	}
	return o
}

func owner(offs []int64) []int64 {
	w := []int64{}
	for p := 1; p < len(offs); p++ {
		for range offs[p] - offs[p-1] {
			w = append(w, int64(p-1))
		}
	}
	return w
}

// request builds a request whose one row holds n items: outer offsets
// [0, n] and owners 0.
func request(id string, n int, inputs map[string]*backend.Tensor, outer string) vm.Request {
	offs := []int64{0, int64(n)}
	inputs[outer+"_offsets"] = i64(offs...)
	inputs[outer+"_owner"] = i64(owner(offs)...)
	return vm.Request{ID: id, Inputs: inputs}
}

// padded is n items padded to extent positions of width features, each
// with its valid length; the padding holds junk the models must ignore.
func padded(rng *rand.Rand, lengths []int64, extent, width int64) *backend.Tensor {
	n := int64(len(lengths))
	d := randoms(rng, n*extent*width)
	for i := range n {
		for p := lengths[i]; p < extent; p++ {
			for k := range width {
				d[(i*extent+p)*width+k] = 1000
			}
		}
	}
	return f32([]int64{n, extent, width}, d)
}

func genImagePadded(rng *rand.Rand, id string, n int) vm.Request {
	extent := 1 + rng.Int64N(6)
	lengths := counts(rng, n, 1, extent)
	return request(id, n, map[string]*backend.Tensor{
		"pixel_patches": padded(rng, lengths, extent, 8),
		"patch_lengths": i64(lengths...),
	}, "image")
}

func genImagePinned(rng *rand.Rand, id string, n int) vm.Request {
	patches := 2 + rng.Int64N(2)
	return request(id, n, map[string]*backend.Tensor{
		"pixel_patches": f32([]int64{int64(n), patches, 8}, randoms(rng, int64(n)*patches*8)),
	}, "image")
}

func genVideoFrames(rng *rand.Rand, id string, n int) vm.Request {
	frames := counts(rng, n, 1, 3)
	extent := 1 + rng.Int64N(5)
	lengths := counts(rng, int(total(frames)), 1, extent)
	fo := offsets(frames)
	return request(id, n, map[string]*backend.Tensor{
		"pixel_values":  padded(rng, lengths, extent, 8),
		"patch_lengths": i64(lengths...),
		"frame_offsets": i64(fo...),
		"frame_owner":   i64(owner(fo)...),
	}, "clip")
}

func genVideoFixed(rng *rand.Rand, id string, n int) vm.Request {
	return request(id, n, map[string]*backend.Tensor{
		"pixel_values": f32([]int64{int64(n), 2, 3, 8}, randoms(rng, int64(n)*2*3*8)),
	}, "clip")
}

func genAudio(rng *rand.Rand, id string, n int) vm.Request {
	frames := counts(rng, n, 1, 6)
	fo := offsets(frames)
	return request(id, n, map[string]*backend.Tensor{
		"spectrogram":   f32([]int64{total(frames), 6}, randoms(rng, total(frames)*6)),
		"frame_offsets": i64(fo...),
		"frame_owner":   i64(owner(fo)...),
	}, "window")
}

func genText(rng *rand.Rand, id string, n int) vm.Request {
	tokens := counts(rng, n, 1, 6)
	ids := make([]int64, total(tokens))
	for i := range ids {
		ids[i] = rng.Int64N(32)
	}
	to := offsets(tokens)
	return request(id, n, map[string]*backend.Tensor{
		"token_ids":     i64(ids...),
		"token_offsets": i64(to...),
		"token_owner":   i64(owner(to)...),
	}, "segment")
}

func genTokenMerge(rng *rand.Rand, id string, n int) vm.Request {
	tokens := counts(rng, n, 1, 7)
	to := offsets(tokens)
	return request(id, n, map[string]*backend.Tensor{
		"tokens":        f32([]int64{total(tokens), 4}, randoms(rng, total(tokens)*4)),
		"token_offsets": i64(to...),
		"token_owner":   i64(owner(to)...),
	}, "segment")
}

func genGuidance(rng *rand.Rand, id string, _ int) vm.Request {
	scale := []float32{1.5, 3}[rng.IntN(2)]
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"latents":        f32([]int64{2, 4}, randoms(rng, 8)),
		"guidance_scale": f32([]int64{1}, []float32{scale}),
	}}
}

func genSolo(rng *rand.Rand, id string, n int) vm.Request {
	rows := int64(max(n, 1))
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{"features": f32([]int64{rows, 4}, randoms(rng, rows*4))}}
}

func genWakeword(rng *rand.Rand, id string, n int) vm.Request {
	d := make([]float32, n*76*32)
	for i := range d {
		d[i] = rng.Float32()*4 - 2
	}
	return request(id, n, map[string]*backend.Tensor{"windows": f32([]int64{int64(n), 76, 32, 1}, d)}, "window")
}

// genControl takes every arm of the control fixture's branches: for mode,
// 3 is the default and 7 a key only the branch output names; for level, 1
// is a case its output has no value for and 2 a key with no case (and no
// default step). It leaves out the optional bias (which case 1 of mode reads)
// and the literal hint now and then.
func genControl(rng *rand.Rand, id string, n int) vm.Request {
	scalar := func(v int64) *backend.Tensor {
		return &backend.Tensor{DType: "int64", Shape: []int64{}, Data: []int64{v}}
	}
	in := map[string]*backend.Tensor{
		"mode":         scalar([]int64{0, 1, 3, 7}[rng.IntN(4)]),
		"level":        scalar([]int64{0, 0, 0, 0, 0, 1, 2}[rng.IntN(7)]),
		"x":            f32([]int64{1, 3}, randoms(rng, 3)),
		"items":        f32([]int64{int64(n), 2}, randoms(rng, int64(n)*2)),
		"item_offsets": i64(0, int64(n)),
		"item_owner":   i64(make([]int64, n)...),
	}
	if rng.IntN(3) > 0 {
		in["bias"] = f32([]int64{1, 3}, randoms(rng, 3))
	}
	if rng.IntN(8) > 0 {
		in["hint"] = f32([]int64{1, 3}, randoms(rng, 3))
	}
	return vm.Request{ID: id, Inputs: in}
}

// genVMControl: a row the loop doubles until its sum passes 100, and a
// mode that negates it (1) or keeps it.
func genVMControl(rng *rand.Rand, id string, _ int) vm.Request {
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"x":    f32([]int64{1, 2}, randoms(rng, 2)),
		"mode": i64(rng.Int64N(3)),
	}}
}

// genMultimodal: up to n images, clips and segments of one request, with
// 4 or 6 features (requests that disagree never share a group).
func genMultimodal(rng *rand.Rand, id string, n int) vm.Request {
	features := 4 + 2*rng.Int64N(2)
	images := rng.IntN(n + 1)
	extent := 1 + rng.Int64N(4)
	lengths := counts(rng, images, 1, extent)
	io := []int64{0, int64(images)}
	frames := counts(rng, rng.IntN(n+1), 0, 4)
	fo, co := offsets(frames), []int64{0, int64(len(frames))}
	tokens := counts(rng, rng.IntN(n+1), 0, 6)
	ids := make([]int64, total(tokens))
	for i := range ids {
		ids[i] = rng.Int64N(100)
	}
	to, so := offsets(tokens), []int64{0, int64(len(tokens))}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"px": padded(rng, lengths, extent, features), "px_len": i64(lengths...), "img_off": i64(io...), "img_own": i64(owner(io)...),
		"frames":    f32([]int64{total(frames), features}, randoms(rng, total(frames)*features)),
		"frame_off": i64(fo...), "frame_own": i64(owner(fo)...), "clip_off": i64(co...), "clip_own": i64(owner(co)...),
		"tokens": i64(ids...), "tok_off": i64(to...), "tok_own": i64(owner(to)...), "seg_off": i64(so...), "seg_own": i64(owner(so)...),
	}}
}

// requests draws n random requests of a fixture, then adds requests the
// runtime must refuse: an input left out, a name that is no input, a
// tensor of the wrong dtype, and each offsets vector of a request
// corrupted.
func requests(f fixture, seed uint64, n int) []vm.Request {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var reqs []vm.Request
	for i := range n {
		reqs = append(reqs, f.gen(rng, fmt.Sprintf("%s-%d", f.name, i), rng.IntN(f.maxItems+1)))
	}
	base := f.gen(rng, "", f.maxItems)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range base.Inputs {
			if !yield(k) {
				return
			}
		}
	})
	bad := func(what string, edit func(map[string]*backend.Tensor)) {
		in := map[string]*backend.Tensor{}
		for k, v := range base.Inputs {
			in[k] = v
		}
		edit(in)
		reqs = append(reqs, vm.Request{ID: f.name + "-bad-" + what, Inputs: in})
	}
	bad("missing", func(in map[string]*backend.Tensor) { delete(in, names[0]) })
	bad("unknown", func(in map[string]*backend.Tensor) { in["bogus"] = i64(1) })
	for _, name := range names {
		t := base.Inputs[name]
		if t.DType == "float32" {
			bad("dtype", func(in map[string]*backend.Tensor) {
				in[name] = &backend.Tensor{DType: "int64", Shape: t.Shape, Data: make([]int64, t.Len())}
			})
			break
		}
	}
	for _, name := range names {
		if t := base.Inputs[name]; len(name) > 8 && name[len(name)-8:] == "_offsets" && t.Len() > 0 {
			bad("corrupt-"+name, func(in map[string]*backend.Tensor) {
				offs := slices.Clone(t.Int64s())
				offs[len(offs)-1]++
				in[name] = i64(offs...)
			})
		}
	}
	return reqs
}

// tensorJSON is a request tensor as the requests document writes it.
type tensorJSON struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  any     `json:"data"`
}

// encodeRequests writes the requests document of `genaic run`.
func encodeRequests(t testing.TB, reqs []vm.Request) []byte {
	t.Helper()
	type reqJSON struct {
		ID     string                `json:"id"`
		Inputs map[string]tensorJSON `json:"inputs"`
	}
	doc := struct {
		Requests []reqJSON `json:"requests"`
	}{}
	for _, r := range reqs {
		rj := reqJSON{ID: r.ID, Inputs: map[string]tensorJSON{}}
		keys := make([]string, 0, len(r.Inputs))
		for k := range r.Inputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			in := r.Inputs[k]
			rj.Inputs[k] = tensorJSON{DType: in.DType, Shape: in.Shape, Data: in.Data}
		}
		doc.Requests = append(doc.Requests, rj)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
