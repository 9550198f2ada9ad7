package e2e

// The benchmarks of this file (issue 11's acceptance table is one command):
//
//	go test ./vm/e2e -run '^$' -bench Workloads -benchtime 20x -count 3
//	go test ./vm/e2e -run '^$' -bench Throughput -benchtime 20x -count 5

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
	"github.com/genaic/genaic/vm/ort"
)

// The throughput benchmarks (row 28) run, on the VM, the same N concurrent
// requests three ways in every iteration, so that the ratios compare like with like
// on one machine state:
//
//	solo     an engine with Solo: true, one invocation per request
//	grouped  an engine that groups them (the budgets decide the groups)
//	ideal    one direct ONNX Runtime call (the vm/ort backend's
//	         Session.Run) on a batch of all the requests' items assembled by
//	         hand before the clock starts, ignoring every budget
//
// and report items per second for each, with grouped/solo and
// grouped/ideal. image_padded is a tiny model, so its figures are bound by
// the runtime's overhead; the wakeword CNN is bound by the model.
//
//	go test ./vm/e2e -run '^$' -bench . -benchtime 20x -count 5

// benchCase is one workload: requests, the hand-assembled ideal batch, and
// how many items they hold.
type benchCase struct {
	pkg, component string
	reqs           []vm.Request
	ideal          map[string]*backend.Tensor
	output         string // the ideal call's output
	items          int64
}

// imagePaddedWorkload is 64 requests of 1 to 3 images, each request with
// its own patch extent in [1, 8]; the ideal batch pads every image to the
// widest.
func imagePaddedWorkload() benchCase {
	rng := rand.New(rand.NewPCG(28, 1))
	c := benchCase{pkg: "image_padded", component: "encoder", output: "embeddings"}
	for i := range 64 {
		c.reqs = append(c.reqs, fixtures.ImagePadded(rng, fmt.Sprint("r", i), 1+rng.IntN(3)))
	}
	var lengths, perRequest []int64
	extent := int64(0)
	for _, r := range c.reqs {
		x := r.Inputs["pixel_patches"]
		extent = max(extent, x.Shape[1])
		lengths = append(lengths, r.Inputs["patch_lengths"].Int64s()...)
		perRequest = append(perRequest, x.Shape[0])
		c.items += x.Shape[0]
	}
	batch, _ := backend.NewTensor("float32", []int64{c.items, extent, 8})
	dst, row := batch.Float32s(), int64(0)
	for _, r := range c.reqs {
		x := r.Inputs["pixel_patches"]
		src := x.Float32s()
		for i := range x.Shape[0] {
			for p := range x.Shape[1] {
				copy(dst[((row+i)*extent+p)*8:((row+i)*extent+p+1)*8], src[(i*x.Shape[1]+p)*8:(i*x.Shape[1]+p+1)*8])
			}
		}
		row += x.Shape[0]
	}
	offsets := []int64{0}
	for _, n := range perRequest {
		offsets = append(offsets, offsets[len(offsets)-1]+n)
	}
	c.ideal = map[string]*backend.Tensor{
		"pixel_patches": batch,
		"patch_lengths": fixtures.I64(lengths...),
		"image_offsets": fixtures.I64(offsets...),
		"image_owner":   fixtures.I64(fixtures.OwnerOf(offsets)...),
	}
	return c
}

// wakewordWorkload is 32 requests of 2 windows each (two groups of the
// 32-window budget); the ideal batch is all 64 windows.
func wakewordWorkload() benchCase {
	rng := rand.New(rand.NewPCG(28, 2))
	c := benchCase{pkg: "wakeword", component: "embedding", output: "conv2d_19"}
	var data []float32
	for i := range 32 {
		r := fixtures.Wakeword(rng, fmt.Sprint("r", i), 2)
		c.reqs = append(c.reqs, r)
		data = append(data, r.Inputs["windows"].Float32s()...)
		c.items += 2
	}
	c.ideal = map[string]*backend.Tensor{"input_1": fixtures.F32([]int64{c.items, 76, 32, 1}, data)}
	return c
}

func BenchmarkThroughput(b *testing.B) {
	for _, w := range []func() benchCase{imagePaddedWorkload, wakewordWorkload} {
		c := w()
		for _, threads := range []int{1, 0} {
			for _, delay := range []time.Duration{0, time.Millisecond} {
				name := fmt.Sprintf("%s/threads=%d/max_delay=%s", c.pkg, threads, delay)
				if threads == 0 {
					name = fmt.Sprintf("%s/threads=auto/max_delay=%s", c.pkg, delay)
				}
				b.Run(name, func(b *testing.B) { benchThroughput(b, c, threads, delay) })
			}
		}
	}
}

func benchThroughput(b *testing.B, c benchCase, threads int, delay time.Duration) {
	be := backendWith(b, ort.Options{IntraOpThreads: threads})
	fx := fixtures.Lookup(c.pkg)
	soloEngine := vmEngine.start(b, fx, genrt.WithSolo(), genrt.WithBackend(ir.ImplONNX, be))
	groupEngine := vmEngine.start(b, fx, genrt.WithMaxDelay(delay), genrt.WithBackend(ir.ImplONNX, be))
	direct := session(b, fx, c.component, be)
	ctx := context.Background()
	check := func(res []vm.Response) {
		for _, r := range res {
			if r.Err != nil {
				b.Fatalf("%s: %v", r.ID, r.Err)
			}
		}
	}
	// Warm up every path once (and check it works) before the clock runs.
	check(runAll(ctx, soloEngine, c.reqs))
	check(runAll(ctx, groupEngine, c.reqs))
	if _, err := direct.Run(ctx, c.ideal, []string{c.output}); err != nil {
		b.Fatal(err)
	}
	before := groupEngine.Stats().Components[c.component]
	var soloTime, groupTime, idealTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		serveAll(ctx, soloEngine, c.reqs)
		soloTime += time.Since(start)
		start = time.Now()
		serveAll(ctx, groupEngine, c.reqs)
		groupTime += time.Since(start)
		start = time.Now()
		if _, err := direct.Run(ctx, c.ideal, []string{c.output}); err != nil {
			b.Fatal(err)
		}
		idealTime += time.Since(start)
	}
	items := float64(c.items) * float64(b.N)
	soloRate, groupRate, idealRate := items/soloTime.Seconds(), items/groupTime.Seconds(), items/idealTime.Seconds()
	b.ReportMetric(soloRate, "solo-items/s")
	b.ReportMetric(groupRate, "grouped-items/s")
	b.ReportMetric(idealRate, "ideal-items/s")
	b.ReportMetric(groupRate/soloRate, "grouped/solo")
	b.ReportMetric(groupRate/idealRate, "grouped/ideal")
	after := groupEngine.Stats().Components[c.component]
	b.ReportMetric(float64(after.Invocations-before.Invocations)/float64(b.N), "groups/op")
	b.ReportMetric(0, "ns/op") // the sum of three runs means nothing
}

// vmEngine is the engine the throughput benchmarks measure; package
// codegen's BenchmarkExecutor compares it with generated executors.
var vmEngine = engines[0]

// workload is one document and how its requests pack: the footprint each
// request adds on every budget dimension, and how a batch is assembled.
type workload struct {
	name, pkg, doc string
	// dims gives a request's extent on each budget dimension; a dimension
	// in maxDims is padded (the batch takes the maximum), the others add up.
	dims     func(r vm.Request) map[string]int64
	maxDims  []string
	assemble func(reqs []vm.Request) map[string]*backend.Tensor
	output   string
	padded   string // the padded input, if any
}

var workloads = []workload{
	textPackedWorkload("text_packed/short", "requests.json"),
	textPackedWorkload("text_packed/long", "requests_long.json"),
	textPaddedWorkload("text_padded/short", "requests.json"),
	textPaddedWorkload("text_padded/long", "requests_long.json"),
	{name: "image_padded/64", pkg: "image_padded", doc: "requests64.json", output: "embeddings",
		dims: func(r vm.Request) map[string]int64 {
			x := r.Inputs["pixel_patches"]
			return map[string]int64{"images": x.Shape[0], "patches": x.Shape[1]}
		},
		maxDims:  []string{"patches"},
		assemble: padded("pixel_patches", "patch_lengths", "image_offsets", "image_owner"),
		padded:   "pixel_patches",
	},
}

func textPackedWorkload(name, doc string) workload {
	return workload{name: name, pkg: "text_packed", doc: doc, output: "segment_embeddings",
		dims: func(r vm.Request) map[string]int64 {
			return map[string]int64{"tokens": r.Inputs["token_ids"].Shape[0], "segments": r.Inputs["token_offsets"].Shape[0] - 1}
		},
		assemble: packedTokens,
	}
}

func textPaddedWorkload(name, doc string) workload {
	return workload{name: name, pkg: "text_padded", doc: doc, output: "segment_embeddings",
		dims: func(r vm.Request) map[string]int64 {
			x := r.Inputs["token_ids"]
			return map[string]int64{"segments": x.Shape[0], "positions": x.Shape[1]}
		},
		maxDims:  []string{"positions"},
		assemble: padded("token_ids", "token_lengths", "segment_offsets", "segment_owner"),
		padded:   "token_ids",
	}
}

// items counts a request's segments or images: its outermost level's units.
func (w workload) items(r vm.Request) int64 {
	if w.pkg == "image_padded" {
		return w.dims(r)["images"]
	}
	return w.dims(r)["segments"]
}

// batches splits reqs in order into the groups a FIFO grouper forms: a
// group closes when the next request would exceed a budget, or when it
// holds most requests (0: no such bound).
func (w workload) batches(budgets []plan.Budget, reqs []vm.Request, most int) [][]vm.Request {
	var out [][]vm.Request
	var cur []vm.Request
	acc := map[string]int64{}
	for _, r := range reqs {
		next := w.add(acc, r)
		if len(cur) > 0 && (!fits(budgets, next) || len(cur) == most) {
			out = append(out, cur)
			cur, next = nil, w.add(map[string]int64{}, r)
		}
		cur, acc = append(cur, r), next
	}
	return append(out, cur)
}

// add returns acc with request r's extents added (or maximized).
func (w workload) add(acc map[string]int64, r vm.Request) map[string]int64 {
	next := map[string]int64{}
	for d, v := range acc {
		next[d] = v
	}
	for d, v := range w.dims(r) {
		if slices.Contains(w.maxDims, d) {
			next[d] = max(next[d], v)
		} else {
			next[d] += v
		}
	}
	return next
}

func fits(budgets []plan.Budget, acc map[string]int64) bool {
	for _, b := range budgets {
		fp := int64(1)
		for _, d := range b.Dimensions {
			fp *= acc[d]
		}
		if fp > b.MaxTotal {
			return false
		}
	}
	return true
}

// packedTokens concatenates text_packed requests' tokens and rebuilds the
// token level's companions over the batch.
func packedTokens(reqs []vm.Request) map[string]*backend.Tensor {
	var ids, counts []int64
	for _, r := range reqs {
		ids = append(ids, r.Inputs["token_ids"].Int64s()...)
		offs := r.Inputs["token_offsets"].Int64s()
		for s := 1; s < len(offs); s++ {
			counts = append(counts, offs[s]-offs[s-1])
		}
	}
	offs := []int64{0}
	for _, c := range counts {
		offs = append(offs, offs[len(offs)-1]+c)
	}
	return map[string]*backend.Tensor{
		"token_ids":     fixtures.I64(ids...),
		"token_offsets": fixtures.I64(offs...),
		"token_owner":   fixtures.I64(fixtures.OwnerOf(offs)...),
	}
}

// padded assembles requests whose value x [items, extent, ...] is padded on
// axis 1: every item right-padded to the batch's widest, lengths
// concatenated, and the item→request level rebuilt.
func padded(x, lengths, offsets, owner string) func(reqs []vm.Request) map[string]*backend.Tensor {
	return func(reqs []vm.Request) map[string]*backend.Tensor {
		first := reqs[0].Inputs[x]
		items, extent := int64(0), int64(0)
		for _, r := range reqs {
			items += r.Inputs[x].Shape[0]
			extent = max(extent, r.Inputs[x].Shape[1])
		}
		shape := append([]int64{items, extent}, first.Shape[2:]...)
		batch, err := backend.NewTensor(first.DType, shape)
		if err != nil {
			panic(err)
		}
		inner := backend.Elements(first.Shape[2:])
		var lens []int64
		offs := []int64{0}
		row := int64(0)
		for _, r := range reqs {
			t := r.Inputs[x]
			for i := range t.Shape[0] {
				batch.CopyElems((row+i)*extent*inner, t, i*t.Shape[1]*inner, t.Shape[1]*inner)
			}
			row += t.Shape[0]
			lens = append(lens, r.Inputs[lengths].Int64s()...)
			offs = append(offs, row)
		}
		return map[string]*backend.Tensor{x: batch, lengths: fixtures.I64(lens...),
			offsets: fixtures.I64(offs...), owner: fixtures.I64(fixtures.OwnerOf(offs)...)}
	}
}

// fifoPadding is the padding overhead of the FIFO batches (the ideal's,
// assembled into inputs): the padded elements they materialize beyond the
// requests' own, over the requests' own, as the engine's stats count it.
func (w workload) fifoPadding(reqs []vm.Request, inputs []map[string]*backend.Tensor) float64 {
	var padded, real int64
	for _, in := range inputs {
		padded += in[w.padded].Len()
	}
	for _, r := range reqs {
		real += r.Inputs[w.padded].Len()
	}
	return float64(padded-real) / float64(real)
}

// readDocument reads a committed requests document of a package.
func readDocument(b testing.TB, pkg, doc string) []vm.Request {
	b.Helper()
	path := filepath.Join(testenv.Root(b), "testdata", "packages", pkg, doc)
	f, err := os.Open(path)
	if err != nil {
		b.Fatalf("%v: run go run ./testdata/models/gen", err)
	}
	defer f.Close()
	reqs, err := jsonio.ReadRequests(f, filepath.Dir(path))
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return reqs
}

// BenchmarkWorkloads runs the shipped benchmark workloads side by side.
// Each workload is a committed requests document of 64 requests
// (testmodels.Documents; genaic bench runs the same files). Every iteration
// runs the whole document five ways, one after another, so that the ratios
// compare like with like on one machine state, each iteration starting one
// way further on, so that every way follows every other as often (a way
// that leaves threads busy after its turn slows whatever comes next:
// RATIONALE, "A lockstep batch runs its own groups where its runner would
// start too late"), each way
// collecting its own garbage in its turns (turns: on one shared heap, the
// collections the ideal's fresh outputs start marked through the turns of
// the ways after it):
//
//	solo       an engine with Solo: true, one invocation per request
//	grouped    an engine that groups them, one runner (Workers: 1), with
//	           the max delay of genaic run (5ms: an upper bound; groups
//	           close as soon as no request of the batch is left to come)
//	grouped2   the same with two runners (Workers: 2)
//	ideal      direct ONNX Runtime calls (the vm/ort session's Run) on the
//	           batches a FIFO grouper would form under the package's
//	           budgets, assembled by hand before the clock starts
//	reused     the ideal with every call's outputs written into buffers
//	           given back after the call before (RunPorts, Recycle)
//
// The engines' responses are released once the document is answered, as a
// server releases them once written (vm.Response.Release): their groups'
// output buffers then hold later groups' outputs, as reused's do. The
// benchmark reports items per second for each (items: segments or images)
// with grouped/ideal, grouped/ideal-reused, grouped/solo and
// grouped2/grouped, what grouped and the ideal took per document beside
// ONNX Runtime's own runs (backend.Timed: the gap between them is the
// runtime's own work), the invocations per document of grouped and of the
// ideal, the share of grouped's and of grouped2's invocations their
// batches ran themselves (sched.Scheduler: with one runner, or with two
// where groups run shorter than a thread's wake), and for padded inputs
// the padding overhead of the grouped engine's groups against the FIFO
// batches'. ONNX Runtime runs on one thread.
func BenchmarkWorkloads(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { benchWorkload(b, w) })
	}
}

// ways are the engines a workload runs on, besides the ideal.
var ways = []struct {
	name string
	opts []genrt.Option
}{
	{"solo", []genrt.Option{genrt.WithSolo()}},
	{"grouped", []genrt.Option{genrt.WithMaxDelay(genrt.DefaultMaxDelay), genrt.WithWorkers(1)}},
	{"grouped2", []genrt.Option{genrt.WithMaxDelay(genrt.DefaultMaxDelay), genrt.WithWorkers(2)}},
}

// warmupDocs is how many documents each way runs before the clock
// starts. The figures are steady state's, as genaic bench's rounds after
// its warm-up are: an engine's first documents find its grouper still
// learning what pays (the scheduler's fit of invocation time,
// sched/cost.go, which also says whether a batch runs its own groups).
const warmupDocs = 8

// bench is what a workload's benchmarks start from: its fixture and
// requests, a backend of one ONNX Runtime thread, and the ideal: a
// session of the component with the FIFO batches' direct calls on it.
type bench struct {
	fx     fixtures.Fixture
	reqs   []vm.Request
	be     *ort.Backend
	inputs []map[string]*backend.Tensor // the ideal's batches
	direct backend.Session
	ideal  func()
	// reused is the ideal writing its outputs into buffers it reuses
	// (the session's, given back after every call: backend.Recycler), as
	// the engine does once its responses are released.
	reused func()
}

func newBench(b *testing.B, w workload) bench {
	fx := fixtures.Lookup(w.pkg)
	f, _ := fixtures.Compile(b, fx)
	s := bench{fx: fx, reqs: readDocument(b, w.pkg, w.doc), be: backendWith(b, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})}
	s.inputs = idealInputs(b, w, f.Component(fx.Component), s.reqs)
	s.direct = session(b, fx, fx.Component, s.be)
	s.ideal = idealCalls(b, s.inputs, w.output, s.direct)
	s.reused = idealReusedCalls(b, s.inputs, w.output, s.direct)
	return s
}

// engine starts the VM engine of the workload on the bench's backend.
func (s bench) engine(b *testing.B, opts ...genrt.Option) Runner {
	return vmEngine.start(b, s.fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, s.be)}, opts...)...)
}

func benchWorkload(b *testing.B, w workload) {
	s := newBench(b, w)
	fx, reqs, inputs, direct, ideal := s.fx, s.reqs, s.inputs, s.direct, s.ideal
	var items int64
	for _, r := range reqs {
		items += w.items(r)
	}
	engines := make([]Runner, len(ways))
	for i, way := range ways {
		engines[i] = s.engine(b, way.opts...)
		for range warmupDocs {
			mustRun(b, engines[i], reqs) // warm up and check
		}
	}
	for range warmupDocs {
		ideal()
		s.reused()
	}
	// The ways, then the ideal and the ideal with its outputs reused.
	times := make([]time.Duration, len(ways)+2)
	idealAt := len(ways)
	start := engines[1].Stats().Components[fx.Component]
	start2 := engines[2].Stats().Components[fx.Component]
	var idealORT time.Duration // the ideal's time in ONNX Runtime
	tn := newTurns(b, len(times))
	b.ResetTimer()
	turn := 0
	for b.Loop() {
		for k := range len(times) {
			i := (turn + k) % len(times)
			times[i] += tn.take(i, func() {
				inORT := backendTime(direct)
				switch {
				case i < len(engines):
					serveAll(context.Background(), engines[i], reqs)
				case i == idealAt:
					ideal()
					idealORT += backendTime(direct) - inORT
				default:
					s.reused()
				}
			})
		}
		turn++
	}
	total := float64(items) * float64(b.N)
	rate := func(i int) float64 { return total / times[i].Seconds() }
	for i, way := range ways {
		b.ReportMetric(rate(i), way.name+"-items/s")
	}
	b.ReportMetric(rate(idealAt), "ideal-items/s")
	b.ReportMetric(rate(1)/rate(idealAt), "grouped/ideal")
	b.ReportMetric(rate(1)/rate(idealAt+1), "grouped/ideal-reused")
	b.ReportMetric(rate(1)/rate(0), "grouped/solo")
	b.ReportMetric(rate(2)/rate(1), "grouped2/grouped")
	grouped := engines[1].Stats().Components[fx.Component]
	grouped2 := engines[2].Stats().Components[fx.Component]
	// What each took beside ONNX Runtime's own runs, per document: the
	// runtime's work against the direct calls' (their output buffers).
	perDoc := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(b.N) }
	b.ReportMetric(perDoc(times[1]-(grouped.BackendTime-start.BackendTime)), "grouped-beside-ort-us/doc")
	b.ReportMetric(perDoc(times[idealAt]-idealORT), "ideal-beside-ort-us/doc")
	calls := grouped.Invocations - start.Invocations
	b.ReportMetric(float64(calls)/float64(b.N), "grouped-calls/op")
	b.ReportMetric(float64(grouped.OwnGroups-start.OwnGroups)/float64(max(calls, 1)), "grouped-own-share")
	calls2 := grouped2.Invocations - start2.Invocations
	b.ReportMetric(float64(grouped2.OwnGroups-start2.OwnGroups)/float64(max(calls2, 1)), "grouped2-own-share")
	b.ReportMetric(float64(len(inputs)), "ideal-calls/op")
	if w.padded != "" {
		b.ReportMetric(grouped.PaddingOverhead, "grouped-padding")
		b.ReportMetric(w.fifoPadding(reqs, inputs), "fifo-padding")
	}
	b.ReportMetric(0, "ns/op") // the sum of the ways' runs means nothing
}

// BenchmarkWorkloadsApart times the grouped engine (one runner) and the
// ideal's direct calls on each workload in blocks of apartBlock
// documents, the two taking turns block by block, and reports
// grouped/ideal. BenchmarkWorkloads interleaves every document, which
// spreads the machine's drift evenly but puts every way beside what the
// way before it left running (a responder still polling, a processor
// spinning down): here a way meets that once a block. Where the two
// benchmarks disagree, the machine is busy beside the ways, and this
// one is how a single engine meets its load.
//
//	go test ./vm/e2e -run '^$' -bench WorkloadsApart -benchtime 10x -count 3
func BenchmarkWorkloadsApart(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) { benchApart(b, w) })
	}
}

// apartBlock is how many documents a way runs in a row.
const apartBlock = 20

func benchApart(b *testing.B, w workload) {
	s := newBench(b, w)
	reqs, ideal := s.reqs, s.ideal
	grouped := s.engine(b, ways[1].opts...)
	for range warmupDocs {
		mustRun(b, grouped, reqs)
		ideal()
	}
	var tg, ti time.Duration
	for b.Loop() {
		start := time.Now()
		for range apartBlock {
			serveAll(context.Background(), grouped, reqs)
		}
		tg += time.Since(start)
		start = time.Now()
		for range apartBlock {
			ideal()
		}
		ti += time.Since(start)
	}
	b.ReportMetric(ti.Seconds()/tg.Seconds(), "grouped/ideal")
	b.ReportMetric(float64(tg.Microseconds())/float64(b.N*apartBlock), "grouped-us/doc")
	b.ReportMetric(float64(ti.Microseconds())/float64(b.N*apartBlock), "ideal-us/doc")
	b.ReportMetric(0, "ns/op") // the sum of both ways means nothing
}

// BenchmarkWorkloadCost runs one workload one way (a way of ways, or
// the ideal's direct calls) per sub-benchmark, a document per iteration,
// nothing interleaved: what scripts/acceptance.sh count measures the
// instructions of, which noise does not move. Ratios of time come from
// BenchmarkWorkloads, where the ways take turns.
func BenchmarkWorkloadCost(b *testing.B) {
	for _, w := range workloads {
		for _, way := range ways {
			b.Run(w.name+"/"+way.name, func(b *testing.B) {
				fx := fixtures.Lookup(w.pkg)
				reqs := readDocument(b, w.pkg, w.doc)
				be := backendWith(b, ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
				e := vmEngine.start(b, fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, be)}, way.opts...)...)
				mustRun(b, e, reqs)
				for b.Loop() {
					serveAll(context.Background(), e, reqs)
				}
				b.ReportMetric(float64(len(reqs)), "requests/op")
			})
		}
		b.Run(w.name+"/ideal", func(b *testing.B) {
			s := newBench(b, w)
			reqs, ideal := s.reqs, s.ideal
			ideal()
			for b.Loop() {
				ideal()
			}
			b.ReportMetric(float64(len(reqs)), "requests/op")
		})
	}
}

// backendTime is the time s spent inside ONNX Runtime so far.
func backendTime(s backend.Session) time.Duration {
	if t, ok := s.(backend.Timed); ok {
		return t.BackendTime()
	}
	return 0
}

// idealInputs assembles the FIFO batches under the component's budgets.
func idealInputs(b testing.TB, w workload, gp *plan.GroupPlan, reqs []vm.Request) []map[string]*backend.Tensor {
	var inputs []map[string]*backend.Tensor
	for _, batch := range w.batches(gp.Budgets, reqs, 0) {
		inputs = append(inputs, w.assemble(batch))
	}
	b.Logf("%s: %d requests, %d budget-sized batches for the ideal", w.name, len(reqs), len(inputs))
	return inputs
}

// idealCalls returns a function that runs each of inputs on the session,
// one call each.
func idealCalls(b testing.TB, inputs []map[string]*backend.Tensor, output string, s backend.Session) func() {
	outs := []string{output}
	return func() {
		for _, in := range inputs {
			if _, err := s.Run(context.Background(), in, outs); err != nil {
				b.Fatalf("ideal: %v", err)
			}
		}
	}
}

// interleaved runs every one of runs once per iteration of b, in an order
// drawn afresh each iteration, and returns the time each took in all, the
// collection of its own garbage included (turns). A way pays for what the
// way before it leaves behind (another engine's threads winding down, its
// caches); in a fixed order one way would always follow the same way, so
// its ratio to another would carry that cost one way. Shuffled, every way
// follows every other alike, on average over runs: the shuffle is seeded
// afresh each run, since a run of a few iterations (-benchtime 3x) drawn
// from one seed would repeat the same orders, and their bias, run after
// run.
func interleaved(b *testing.B, runs []func()) []time.Duration {
	times, _ := interleavedPasses(b, runs, 1)
	return times
}

// interleavedPasses is interleaved with several passes over runs per
// iteration of b, each pass in an order of its own; it returns each
// run's CPU time in all besides (turns).
func interleavedPasses(b *testing.B, runs []func(), passes int) (times, cpu []time.Duration) {
	times = make([]time.Duration, len(runs))
	tn := newTurns(b, len(runs))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(len(runs))))
	for b.Loop() {
		for range passes {
			for _, i := range rng.Perm(len(runs)) {
				times[i] += tn.take(i, runs[i])
			}
		}
	}
	return times, tn.cpu
}

// serveAll runs a document and releases its responses, as a server does
// once it has written them: their groups' output buffers then hold later
// groups' outputs (vm/lease.go); the slice of them goes back too
// (vm.ReleaseAll), as a caller running document after document gives it.
func serveAll(ctx context.Context, e Runner, reqs []vm.Request) {
	vm.ReleaseAll(runAll(ctx, e, reqs))
}

// idealReusedCalls is idealCalls with each call's outputs given back to
// the session once the call returns, so that the next call writes its
// outputs into them.
func idealReusedCalls(b testing.TB, inputs []map[string]*backend.Tensor, output string, s backend.Session) func() {
	rec, ok := s.(backend.Recycler)
	if !ok {
		b.Fatalf("the session (%T) takes no outputs back", s)
	}
	inNames, outNames := rec.Ports()
	ins := make([][]*backend.Tensor, len(inputs))
	for k, in := range inputs {
		for _, name := range inNames {
			ins[k] = append(ins[k], in[name])
		}
	}
	want := make([]bool, len(outNames))
	for j, name := range outNames {
		want[j] = name == output
	}
	outs := make([]*backend.Tensor, len(outNames))
	return func() {
		for _, in := range ins {
			if err := rec.RunPorts(context.Background(), in, want, outs); err != nil {
				b.Fatalf("ideal, outputs reused: %v", err)
			}
			rec.Recycle(outs)
			clear(outs)
		}
	}
}

func mustRun(b testing.TB, e Runner, reqs []vm.Request) {
	for _, r := range runAll(context.Background(), e, reqs) {
		r.Release()
		if r.Err != nil {
			b.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
}

// TestWorkloadBatches: the ideal's batches hold every request once, in
// order, each within the package's budgets, and their direct calls give
// every request the reference's outputs: the ideal does the grouped
// engine's work.
func TestWorkloadBatches(t *testing.T) {
	be := ortBackend(t)
	for _, w := range workloads {
		fx := fixtures.Lookup(w.pkg)
		f, _ := fixtures.Compile(t, fx)
		gp := f.Component(fx.Component)
		s := session(t, fx, fx.Component, be)
		reqs := readDocument(t, w.pkg, w.doc)
		seen := 0
		for _, batch := range w.batches(gp.Budgets, reqs, 0) {
			acc := map[string]int64{}
			for _, r := range batch {
				acc = w.add(acc, r)
			}
			if !fits(gp.Budgets, acc) {
				t.Errorf("%s: a batch of %d requests exceeds a budget: %v", w.name, len(batch), acc)
			}
			out, err := s.Run(context.Background(), w.assemble(batch), []string{w.output})
			if err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			checkIdealRows(t, w, fx, batch, out[w.output])
			seen += len(batch)
		}
		if seen != len(reqs) || len(reqs) < 64 {
			t.Errorf("%s: the batches hold %d of %d requests (want 64 or more)", w.name, seen, len(reqs))
		}
	}
}

// checkIdealRows compares each request's rows of a batch's output with
// the request's reference.
func checkIdealRows(t *testing.T, w workload, fx fixtures.Fixture, batch []vm.Request, out *backend.Tensor) {
	t.Helper()
	row := int64(0)
	for _, r := range batch {
		n := w.items(r)
		want := fx.Reference(t, r)[w.output]
		if d := fixtures.Diff(out.View(row, row+n), want, tolerance); d != "" {
			t.Errorf("%s: request %s: %s", w.name, r.ID, d)
		}
		row += n
	}
}
