package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
)

// firstElems is where each response's output name starts in memory: the
// first of a group's requests starts where the group's buffer does.
func firstElems(resps []vm.Response, name string) map[unsafe.Pointer]int {
	at := map[unsafe.Pointer]int{}
	for i, r := range resps {
		if d := r.Outputs.Get(name).Float32s(); len(d) > 0 {
			at[unsafe.Pointer(&d[0])] = i
		}
	}
	return at
}

// snapshot copies every response's output name.
func snapshot(resps []vm.Response, name string) [][]float32 {
	out := make([][]float32, len(resps))
	for i, r := range resps {
		out[i] = slices.Clone(r.Outputs.Get(name).Float32s())
	}
	return out
}

// TestReleaseRecycles: a group's output buffers hold a later group's
// outputs only once every response that views them is released
// (vm/lease.go). Responses kept stay as they were however many documents
// run after them, a response released twice (itself and a copy) counts
// once, and released responses' buffers are written again; on the VM
// (text_packed's executor is text's code, not committed:
// TestReleaseItems holds a generated executor's responses to the same).
func TestReleaseRecycles(t *testing.T) {
	forEachEngineOf(t, []fixtures.Fixture{fixtures.Lookup(workloads[0].pkg)}, testReleaseRecycles)
}

func testReleaseRecycles(t *testing.T, ek engineKind) {
	w := workloads[0] // text_packed/short: groups of some twenty requests
	fx := fixtures.Lookup(w.pkg)
	reqs := readDocument(t, w.pkg, w.doc)
	e := ek.start(t, fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, ortBackend(t))}, ways[1].opts...)...)
	ctx := context.Background()
	check := func(resps []vm.Response) {
		t.Helper()
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("%s: %v", r.ID, r.Err)
			}
		}
	}

	first := runAll(ctx, e, reqs)
	check(first)
	want := snapshot(first, w.output)
	starts := firstElems(first, w.output)
	// Nothing released: no buffer of first's is written again.
	second := runAll(ctx, e, reqs)
	check(second)
	for p := range firstElems(second, w.output) {
		if i, ok := starts[p]; ok {
			t.Fatalf("request %s's outputs were written over while its response was held", first[i].ID)
		}
	}
	reused := func() int64 { return e.Stats().Components[fx.Component].OutputsReused }
	if n := reused(); n != 0 {
		t.Errorf("stats count %d groups' outputs reused before any response was released", n)
	}
	for _, r := range second {
		r.Release()
	}
	if n := reused(); n == 0 {
		t.Errorf("stats count no group's outputs reused once a document's responses were all released")
	}
	// Every response of first but its second released, the first twice
	// (and a copy of it once more): the first group's buffer stays
	// first[1]'s.
	kept := first[1]
	for i, r := range first {
		if i == 1 {
			continue
		}
		c := r
		r.Release()
		c.Release()
		if i == 0 {
			r.Release()
		}
	}
	recycled := false
	for range 4 {
		next := runAll(ctx, e, reqs)
		check(next)
		if d := kept.Outputs.Get(w.output).Float32s(); !slices.Equal(d, want[1]) {
			t.Fatalf("request %s's outputs changed while its response was held", kept.ID)
		}
		for p := range firstElems(next, w.output) {
			if _, ok := starts[p]; ok {
				recycled = true
			}
		}
		for _, r := range next {
			r.Release()
		}
	}
	if !recycled {
		t.Errorf("no output buffer of the released responses was written again")
	}
	kept.Release()
}

// TestReleasedLateCopies: once every response of a document run in
// lockstep is released, its window's records (the responses' output table
// and held records, vm/lease.go) answer a later window; a copy of an
// earlier response released after that releases nothing of the later
// one's, whose outputs stay as they were while it is held.
func TestReleasedLateCopies(t *testing.T) {
	w := workloads[0]
	fx := fixtures.Lookup(w.pkg)
	reqs := readDocument(t, w.pkg, w.doc)
	e := vmEngine.start(t, fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, ortBackend(t))}, ways[1].opts...)...)
	ctx := context.Background()
	run := func() []vm.Response {
		t.Helper()
		resps := runAll(ctx, e, reqs)
		for _, r := range resps {
			if r.Err != nil {
				t.Fatalf("%s: %v", r.ID, r.Err)
			}
		}
		return resps
	}
	// record is the held record a response names (its identity only).
	record := func(r vm.Response) uintptr { return reflect.ValueOf(r).FieldByName("held").Pointer() }
	others := slices.Clone(reqs)
	slices.Reverse(others)
	usedAgain := false
	for range 8 {
		first := run()
		copies := slices.Clone(first)
		records := map[uintptr]bool{}
		for _, r := range first {
			records[record(r)] = true
			r.Release()
		}
		second := run()
		want := snapshot(second, w.output)
		for _, r := range second {
			usedAgain = usedAgain || records[record(r)]
		}
		for _, c := range copies {
			c.Release() // late: the record may be second's now
		}
		for i, r := range second {
			if i != 1 {
				r.Release()
			}
		}
		for range 2 {
			serveAll(ctx, e, others) // other groups: other outputs
		}
		if d := second[1].Outputs.Get(w.output).Float32s(); !slices.Equal(d, want[1]) {
			t.Fatalf("request %s's outputs changed while its response was held, after copies of an earlier document's responses were released", second[1].ID)
		}
		second[1].Release()
	}
	if !usedAgain {
		t.Errorf("no window's records answered a later window once its responses were all released")
	}
}

// TestReleaseConcurrent: callers of Run that each release their response
// once they have read it (twice, a while apart), many at once, get the
// outputs a document run in lockstep gave (to the rounding of groups
// formed otherwise) while their groups' buffers go round, under go test
// -race too. (TestReleaseRecycles is the one that pins down when a
// buffer may be written again: here a buffer given back early shows only
// if another group happens to write it between the two readings.)
func TestReleaseConcurrent(t *testing.T) {
	w := workloads[0]
	fx := fixtures.Lookup(w.pkg)
	reqs := readDocument(t, w.pkg, w.doc)
	e := vmEngine.start(t, fx, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, ortBackend(t))}, ways[1].opts...)...)
	want := runAll(context.Background(), e, reqs)
	const callers, rounds = 16, 4
	var next atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(rounds*len(reqs)); i = next.Add(1) - 1 {
				k := i % int64(len(reqs))
				r := e.Run(context.Background(), reqs[k])
				if r.Err != nil {
					t.Errorf("%s: %v", r.ID, r.Err)
					return
				}
				// Read, let other groups run, read again: a buffer
				// written meanwhile shows in the second reading.
				for range 2 {
					for name, o := range want[k].Outputs.All() {
						if d := fixtures.Diff(r.Outputs.Get(name), o, tolerance); d != "" {
							t.Errorf("%s: output %s: %s", r.ID, name, d)
						}
					}
					time.Sleep(100 * time.Microsecond)
				}
				r.Release()
			}
		})
	}
	wg.Wait()
	if n := e.Stats().Components[fx.Component].OutputsReused; n == 0 {
		t.Errorf("no group's outputs were reused")
	}
}

// BenchmarkRelease measures what releasing responses buys, on the short
// text and 64-image workloads: the grouped engine (one runner) with every
// response released once its document is answered, and another whose
// responses are kept until the collector takes them (every group's
// outputs in fresh buffers), with the ideal's direct calls with fresh
// outputs and with outputs reused, document by document in turn (the
// order shuffled every iteration). It reports released/kept and each
// grouped way against both ideals.
//
//	go test ./vm/e2e -run '^$' -bench Release -benchtime 100x -count 3
func BenchmarkRelease(b *testing.B) {
	for _, w := range []workload{workloads[0], workloads[4]} {
		b.Run(w.name, func(b *testing.B) {
			s := newBench(b, w)
			released, kept := s.engine(b, ways[1].opts...), s.engine(b, ways[1].opts...)
			ctx := context.Background()
			runs := []func(){
				func() { serveAll(ctx, released, s.reqs) },
				func() { runAll(ctx, kept, s.reqs) },
				s.ideal,
				s.reused,
			}
			for range warmupDocs {
				for _, run := range runs {
					run()
				}
			}
			times := interleaved(b, runs)
			ratio := func(i, j int) float64 { return times[j].Seconds() / times[i].Seconds() }
			b.ReportMetric(ratio(0, 1), "released/kept")
			b.ReportMetric(ratio(0, 2), "released/ideal")
			b.ReportMetric(ratio(1, 2), "kept/ideal")
			b.ReportMetric(ratio(0, 3), "released/ideal-reused")
			b.ReportMetric(ratio(2, 3), "ideal/ideal-reused")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestReleaseItems: a request given as items, answered from the plain
// requests its items pack into, holds those parts' group outputs: kept,
// its items stay as they were while other requests' buffers go round;
// released (twice), the buffers of its groups are written again; on the
// VM and on a generated executor.
func TestReleaseItems(t *testing.T) {
	forEachEngine(t, testReleaseItems)
}

func testReleaseItems(t *testing.T, ek engineKind) {
	f := fixtures.Lookup("ocr_lines")
	rng := rand.New(rand.NewPCG(7, 3))
	var reqs []vm.Request
	for i := range 24 {
		var items []*backend.Tensor
		for range 1 + rng.IntN(4) {
			items = append(items, ocrLine(rng, fixtures.OCRWidths[rng.IntN(len(fixtures.OCRWidths))], fixtures.OCRHeight))
		}
		reqs = append(reqs, vm.Request{ID: fmt.Sprint("ocr-", i), Items: map[string][]vm.Item{"line_images": vm.TensorItems(items...)}})
	}
	e := ek.start(t, f, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, ortBackend(t))}, ways[1].opts...)...)
	ctx := context.Background()
	scores := func(r vm.Response) [][]float32 {
		t.Helper()
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
		var out [][]float32
		for _, it := range r.Items["line_scores"] {
			out = append(out, slices.Clone(it.Tensor.Float32s()))
		}
		return out
	}
	reused := func() int64 { return e.Stats().Components[f.Component].OutputsReused }
	first := runAll(ctx, e, reqs)
	kept, want := first[0], scores(first[0])
	for _, r := range first[1:] {
		r.Release()
		r.Release()
	}
	before := reused()
	for range 4 {
		for _, r := range runAll(ctx, e, reqs) {
			scores(r)
			r.Release()
		}
		if got := scores(kept); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s's items changed while its response was held", kept.ID)
		}
	}
	if reused() <= before {
		t.Errorf("no group's outputs were reused once items requests were released")
	}
	kept.Release()
}

// TestReleaseSplitRequest: a request over a budget runs as chunks in
// several groups, whose shares are merged by copy (the image encoder has
// no broadcast output): the chunks' group outputs are given back as soon
// as they are merged, and the merged outputs, kept, stay as they were
// while other requests' buffers go round.
func TestReleaseSplitRequest(t *testing.T) {
	f := fixtures.Lookup("image_padded")
	rng := rand.New(rand.NewPCG(6, 6))
	big := fixtures.ImagePadded(rng, "20 images", 20) // over the 16-image budget
	other := fixtures.ImagePadded(rng, "20 others", 20)
	e := vmEngine.start(t, f, append([]genrt.Option{genrt.WithBackend(ir.ImplONNX, ortBackend(t))}, ways[1].opts...)...)
	ctx := context.Background()
	embeddings := func(r vm.Response) []float32 {
		t.Helper()
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
		return slices.Clone(r.Outputs.Get("embeddings").Float32s())
	}
	reused := func() int64 { return e.Stats().Components[f.Component].OutputsReused }
	for _, run := range []struct {
		name string
		run  func(vm.Request) vm.Response
	}{
		{"Run", func(r vm.Request) vm.Response { return e.Run(ctx, r) }},
		{"RunAll", func(r vm.Request) vm.Response { return runAll(ctx, e, []vm.Request{r})[0] }},
	} {
		kept := run.run(big)
		want := embeddings(kept)
		before := reused()
		for range 4 {
			r := run.run(other) // other values, written over buffers given back
			embeddings(r)
			r.Release()
			if got := embeddings(kept); !slices.Equal(got, want) {
				t.Fatalf("%s: the split request's outputs changed while its response was held", run.name)
			}
		}
		if reused() <= before {
			t.Errorf("%s: no group's outputs were reused once split requests were released", run.name)
		}
		kept.Release()
	}
	if n := e.Stats().Components[f.Component].Invocations; n < 2 {
		t.Fatalf("the request over a budget ran in %d invocation(s)", n)
	}
}
