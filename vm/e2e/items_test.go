package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/examples/ocrlines"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// TestItemsEqualCompanions runs every packed fixture's requests given as
// items (each row cut to its valid length, no companion sent) grouped, and
// the same requests in companion form solo: every item's result equals
// the solo result's row of that item, and the outputs the items carry
// come back as items, their companions left out.
func TestItemsEqualCompanions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range e.among(packedFixtures()) {
			t.Run(f.Name, func(t *testing.T) {
				p, _ := fixtures.Compile(t, f)
				var reqs, items []vm.Request
				for _, r := range f.Requests(uint64(300+i), 24) {
					if it, ok := fixtures.ToItems(p.IR, r); ok {
						reqs, items = append(reqs, r), append(items, it)
					}
				}
				if len(items) < 4 {
					t.Fatalf("only %d of 24 requests could be given as items", len(items))
				}
				g, s := e.grouped(t, f, nil), e.solo(t, f)
				got := runAll(context.Background(), g, items)
				want := runAll(context.Background(), s, reqs)
				checkItemResponses(t, f, p.IR, items, got, want)
				if cs := g.Stats().Components[f.Component]; cs.Invocations >= int64(len(items)) {
					t.Errorf("%d requests with items ran in %d invocations: they were not grouped", len(items), cs.Invocations)
				}
			})
		}
	})
}

// checkItemResponses compares responses to requests with items with the
// solo responses of the same requests in companion form.
func checkItemResponses(t *testing.T, f fixtures.Fixture, m *ir.Module, items []vm.Request, got, want []vm.Response) {
	t.Helper()
	for i, r := range got {
		w := want[i]
		if r.Err != nil || w.Err != nil {
			t.Fatalf("%s: items error %v, solo error %v", items[i].ID, r.Err, w.Err)
		}
		its := r.Items[f.Out]
		if its == nil {
			t.Fatalf("%s: output %s did not come back as items (outputs %v, items %d)", r.ID, f.Out, fixtures.Names(r.Outputs.Map()), len(r.Items))
		}
		if _, ok := r.Outputs.Lookup(f.Out); ok {
			t.Errorf("%s: output %s is both in Outputs and in Items", r.ID, f.Out)
		}
		levels := m.Output(f.Out).Contract.Layout.Levels
		for name := range r.Outputs.All() {
			for _, l := range levels {
				if name == l.Offsets.Name || name == l.Owner.Name {
					t.Errorf("%s: companion %s of an items output is still in Outputs", r.ID, name)
				}
			}
		}
		// Item j is row j of the solo result or, where the output's items
		// are units of rows (two levels, flat), rows [o[j], o[j+1]) of it
		// by the solo response's innermost offsets.
		ref := w.Outputs.Get(f.Out)
		offs := make([]int64, ref.Shape[0]+1)
		for j := range offs {
			offs[j] = int64(j)
		}
		if len(levels) == 2 {
			offs = w.Outputs.Get(levels[0].Offsets.Name).Int64s()
		}
		if len(its) != len(offs)-1 {
			t.Fatalf("%s: %d items of %s, the solo result has %d", r.ID, len(its), f.Out, len(offs)-1)
		}
		for j, it := range its {
			unit := ref.View(offs[j], offs[j+1])
			if len(levels) == 1 {
				unit.Shape = unit.Shape[1:]
			}
			if d := fixtures.Diff(it.Tensor, unit, tolerance); d != "" {
				t.Errorf("%s: item %d of %s differs from the solo result: %s", r.ID, j, f.Out, d)
			}
		}
	}
}

// ocrLine draws one text line of ocr_lines: width columns of height pixels.
func ocrLine(rng *rand.Rand, width, height int64) *backend.Tensor {
	return fixtures.F32([]int64{width, height}, fixtures.Values(rng, int(width*height)))
}

// aloneScores runs every line as a request of its own on the solo engine
// and returns each line's scores.
func aloneScores(t *testing.T, s Runner, lines []*backend.Tensor) []*backend.Tensor {
	t.Helper()
	reqs := make([]vm.Request, len(lines))
	for i, l := range lines {
		reqs[i] = vm.Request{ID: fmt.Sprint("alone-", i), Items: map[string][]vm.Item{"line_images": vm.TensorItems(l)}}
	}
	out := make([]*backend.Tensor, len(lines))
	for i, r := range runAll(context.Background(), s, reqs) {
		if r.Err != nil {
			t.Fatalf("line %d alone: %v", i, r.Err)
		}
		out[i] = r.Items["line_scores"][0].Tensor
	}
	return out
}

// TestOCRItems is the acceptance test of items: text lines of three widths,
// one to four per request, sent as items with no companion, run grouped
// (lines of many requests padded together on width) and each equals the
// line run alone and the Go reference.
func TestOCRItems(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(12, 1))
		var reqs []vm.Request
		var lines []*backend.Tensor
		widths := map[int64]bool{}
		for i := range 24 {
			var items []*backend.Tensor
			for range 1 + rng.IntN(4) {
				w := fixtures.OCRWidths[rng.IntN(len(fixtures.OCRWidths))]
				widths[w] = true
				items = append(items, ocrLine(rng, w, fixtures.OCRHeight))
			}
			lines = append(lines, items...)
			reqs = append(reqs, vm.Request{ID: fmt.Sprint("ocr-", i), Items: map[string][]vm.Item{"line_images": vm.TensorItems(items...)}})
		}
		if len(widths) != 3 {
			t.Fatalf("the requests hold lines of %d widths, want 3", len(widths))
		}
		g, s := e.grouped(t, f, nil), e.solo(t, f)
		got := runAll(context.Background(), g, reqs)
		alone := aloneScores(t, s, lines)
		k := 0
		for i, r := range got {
			if r.Err != nil {
				t.Fatalf("%s: %v", r.ID, r.Err)
			}
			if r.Outputs.Len() != 0 {
				t.Errorf("%s: outputs %v beside the items; the companions of an items output are left out", r.ID, fixtures.Names(r.Outputs.Map()))
			}
			its := r.Items["line_scores"]
			if len(its) != len(reqs[i].Items["line_images"]) {
				t.Fatalf("%s: %d scores for %d lines", r.ID, len(its), len(reqs[i].Items["line_images"]))
			}
			for j, it := range its {
				if d := fixtures.Diff(it.Tensor, alone[k], tolerance); d != "" {
					t.Errorf("%s line %d: grouped differs from the line alone: %s", r.ID, j, d)
				}
				if d := fixtures.Diff(it.Tensor, ocrReference(t, f, lines[k]), tolerance); d != "" {
					t.Errorf("%s line %d: differs from the reference: %s", r.ID, j, d)
				}
				k++
			}
		}
		cs := g.Stats().Components[f.Component]
		if cs.Invocations >= int64(len(reqs)) {
			t.Errorf("%d requests ran in %d invocations: their lines were not grouped", len(reqs), cs.Invocations)
		}
		t.Logf("%d lines of %d requests in %d invocations", len(lines), len(reqs), cs.Invocations)
	})
}

// ocrReference is one line's scores computed in plain Go.
func ocrReference(t *testing.T, f fixtures.Fixture, line *backend.Tensor) *backend.Tensor {
	t.Helper()
	req := vm.Request{ID: "ref", Inputs: map[string]*backend.Tensor{
		"line_images":  &backend.Tensor{DType: "float32", Shape: append([]int64{1}, line.Shape...), Data: line.Data},
		"line_widths":  fixtures.I64(line.Shape[0]),
		"line_offsets": fixtures.I64(0, 1),
		"line_owner":   fixtures.I64(0),
	}}
	out := f.Reference(t, req)["line_scores"]
	row := out.View(0, 1)
	row.Shape = row.Shape[1:]
	return row
}

// TestItemsSplitByUniform: lines of one request that differ in height (the
// uniform dimension) cannot share a tensor; they run as separate requests,
// in separate groups, and their results come back in the request's order.
func TestItemsSplitByUniform(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(7, 7))
		heights := []int64{8, 6, 8, 3, 6}
		var lines []*backend.Tensor
		for i, h := range heights {
			lines = append(lines, ocrLine(rng, fixtures.OCRWidths[i%3], h))
		}
		g, s := e.grouped(t, f, nil), e.solo(t, f)
		got := runAll(context.Background(), g, []vm.Request{{ID: "mixed", Items: map[string][]vm.Item{"line_images": vm.TensorItems(lines...)}}})[0]
		if got.Err != nil {
			t.Fatal(got.Err)
		}
		alone := aloneScores(t, s, lines)
		its := got.Items["line_scores"]
		if len(its) != len(lines) {
			t.Fatalf("%d scores for %d lines", len(its), len(lines))
		}
		for i, it := range its {
			if d := fixtures.Diff(it.Tensor, alone[i], tolerance); d != "" {
				t.Errorf("line %d (height %d): %s", i, heights[i], d)
			}
		}
		if n := g.Stats().Components[f.Component].Invocations; n != 3 {
			t.Errorf("lines of 3 heights ran in %d invocations, want 3 (one per height)", n)
		}
		// One request on its own (Run rather than RunAll) is split alike.
		one := g.Run(context.Background(), vm.Request{ID: "mixed-run", Items: map[string][]vm.Item{"line_images": vm.TensorItems(lines...)}})
		if one.Err != nil || len(one.Items["line_scores"]) != len(lines) {
			t.Fatalf("Run: %v, %d items", one.Err, len(one.Items["line_scores"]))
		}
		for i, it := range one.Items["line_scores"] {
			if d := fixtures.Diff(it.Tensor, alone[i], tolerance); d != "" {
				t.Errorf("Run: line %d (height %d): %s", i, heights[i], d)
			}
		}
	})
}

// TestItemsRefused: items that do not fit the contract fail their request
// alone with run/input, saying what is wrong.
func TestItemsRefused(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	rng := rand.New(rand.NewPCG(1, 2))
	line := func(w int64) *backend.Tensor { return ocrLine(rng, w, fixtures.OCRHeight) }
	items := func(ts ...*backend.Tensor) map[string][]vm.Item {
		return map[string][]vm.Item{"line_images": vm.TensorItems(ts...)}
	}
	cases := []struct {
		name string
		req  vm.Request
		want string
	}{
		{"not packed", vm.Request{Items: map[string][]vm.Item{"line_widths": vm.TensorItems(fixtures.I64(3))}}, "its contract is shared"},
		{"not an input", vm.Request{Items: map[string][]vm.Item{"pixels": vm.TensorItems(line(5))}}, "not a workflow input"},
		{"empty", vm.Request{Items: items()}, "empty items list"},
		{"rank", vm.Request{Items: items(fixtures.F32([]int64{1, 5, 8}, fixtures.Values(rng, 40)))}, "item 0 has rank 3"},
		{"dtype", vm.Request{Items: items(fixtures.I64(1, 2))}, "item 0 has rank 1"},
		{"dtype 2d", vm.Request{Items: items(&backend.Tensor{DType: "int64", Shape: []int64{2, 1}, Data: []int64{1, 2}})}, "is declared float32"},
		{"elements", vm.Request{Items: items(&backend.Tensor{DType: "float32", Shape: []int64{2, 8}, Data: []float32{1}})}, "different number of elements"},
		{"too deep", vm.Request{Items: map[string][]vm.Item{"line_images": {{Items: vm.TensorItems(line(5))}}}}, "nest 2 deep"},
		{"both", vm.Request{Inputs: map[string]*backend.Tensor{"line_images": fixtures.F32([]int64{1, 5, 8}, fixtures.Values(rng, 40))}, Items: items(line(5))}, "both as a tensor and as items"},
		{"companion disagrees", vm.Request{Inputs: map[string]*backend.Tensor{"line_widths": fixtures.I64(5, 5)}, Items: items(line(5), line(12))}, "request gives `line_widths`"},
		{"offsets disagree", vm.Request{Inputs: map[string]*backend.Tensor{"line_offsets": fixtures.I64(0, 1)}, Items: items(line(5), line(12))}, "request gives `line_offsets`"},
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		g := e.grouped(t, f, nil)
		reqs := []vm.Request{{ID: "good", Items: items(line(5), line(24))}}
		for _, c := range cases {
			c.req.ID = c.name
			reqs = append(reqs, c.req)
		}
		// Companions that agree with the items are accepted.
		reqs = append(reqs, vm.Request{ID: "agree", Inputs: map[string]*backend.Tensor{"line_widths": fixtures.I64(5, 12), "line_offsets": fixtures.I64(0, 2)}, Items: items(line(5), line(12))})
		got := runAll(context.Background(), g, reqs)
		if got[0].Err != nil || len(got[0].Items["line_scores"]) != 2 {
			t.Errorf("good: %v, %d items", got[0].Err, len(got[0].Items["line_scores"]))
		}
		if last := got[len(got)-1]; last.Err != nil || len(last.Items["line_scores"]) != 2 {
			t.Errorf("agreeing companions: %v", last.Err)
		}
		for i, c := range cases {
			r := got[i+1]
			if r.Err == nil || !strings.Contains(r.Err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, r.Err, c.want)
				continue
			}
			if rule(r.Err) != backend.RunInput {
				t.Errorf("%s: rule %s, want %s", c.name, rule(r.Err), backend.RunInput)
			}
		}
	})
}

// TestTypedItems: the generated executor's typed fields take a request's
// lines as items and give back their scores per line; no companion is
// computed by the caller.
func TestTypedItems(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	_, dir := fixtures.Compile(t, f)
	ex, err := ocrlines.New(dir, genrt.WithBackendConfig(engine.Config{IntraOpThreads: 1, InterOpThreads: 1}), genrt.WithMaxDelay(groupDelay))
	if err != nil {
		t.Fatalf("%v: %s", err, fixtures.FixSetup)
	}
	defer ex.Close()
	s := engines[0].solo(t, f)
	rng := rand.New(rand.NewPCG(3, 4))
	lines := []*backend.Tensor{ocrLine(rng, 5, 8), ocrLine(rng, 24, 8), ocrLine(rng, 12, 8)}
	resp, err := ex.Run(context.Background(), &ocrlines.Request{LineImagesItems: lines})
	if err != nil {
		t.Fatal(err)
	}
	if resp.LineScores != nil || resp.LineOffsets != nil || resp.LineOwner != nil {
		t.Errorf("packed outputs %v %v %v beside the items", resp.LineScores, resp.LineOffsets, resp.LineOwner)
	}
	alone := aloneScores(t, s, lines)
	if len(resp.LineScoresItems) != len(lines) {
		t.Fatalf("%d scores for %d lines", len(resp.LineScoresItems), len(lines))
	}
	for i, sc := range resp.LineScoresItems {
		if d := fixtures.Diff(sc, alone[i], tolerance); d != "" {
			t.Errorf("line %d: %s", i, d)
		}
	}
	// The plain fields still work, and a bad item is refused as by the VM.
	if _, err := ex.Run(context.Background(), &ocrlines.Request{LineImagesItems: []*backend.Tensor{fixtures.I64(1)}}); rule(err) != backend.RunInput {
		t.Errorf("a malformed item: error %v, want %s", err, backend.RunInput)
	}
	plain, err := ex.Run(context.Background(), &ocrlines.Request{
		LineImages: &backend.Tensor{DType: "float32", Shape: []int64{1, 5, 8}, Data: lines[0].Data},
		LineWidths: fixtures.I64(5), LineOffsets: fixtures.I64(0, 1), LineOwner: fixtures.I64(0)})
	if err != nil || plain.LineScoresItems != nil {
		t.Fatalf("plain request: %v, items %v", err, plain.LineScoresItems)
	}
	if d := fixtures.Diff(plain.LineScores.View(0, 1), &backend.Tensor{DType: "float32", Shape: []int64{1, 4}, Data: alone[0].Data}, tolerance); d != "" {
		t.Errorf("plain request: %s", d)
	}
	// A typed response holds its groups' outputs until it is released
	// (vm.Holding): kept, its scores stay while released responses'
	// buffers are written again.
	var want [][]float32
	for _, sc := range resp.LineScoresItems {
		want = append(want, slices.Clone(sc.Float32s()))
	}
	plain.Release()
	reused := func() int64 { return ex.Stats().Components[f.Component].OutputsReused }
	before := reused()
	for range 4 {
		r, err := ex.Run(context.Background(), &ocrlines.Request{LineImagesItems: lines[1:]})
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
		r.Release()
	}
	for i, sc := range resp.LineScoresItems {
		if !slices.Equal(sc.Float32s(), want[i]) {
			t.Fatalf("line %d's scores changed while its response was held", i)
		}
	}
	if n := reused(); n <= before {
		t.Errorf("no group's outputs were written again once typed responses were released (%d, %d before)", n, before)
	}
	resp.Release()
}

// TestOCRRequestsDocument runs the committed requests document of
// ocr_lines, whose lines are items and whose requests send no companion
// (one sends widths that agree), through the VM as `genaic run` does and
// through the generated executor's RunJSON: the two responses documents
// are equal, and every line has its scores.
func TestOCRRequestsDocument(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	_, dir := fixtures.Compile(t, f)
	doc, err := os.ReadFile(filepath.Join(dir, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(bytes.NewReader(doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := engines[0].solo(t, f)
	var vmDoc bytes.Buffer
	if err := jsonio.WriteResponses(&vmDoc, runAll(context.Background(), s, reqs), nil); err != nil {
		t.Fatal(err)
	}
	ex, err := ocrlines.New(dir, genrt.WithSolo(), genrt.WithBackendConfig(engine.Config{IntraOpThreads: 1, InterOpThreads: 1}))
	if err != nil {
		t.Fatalf("%v: %s", err, fixtures.FixSetup)
	}
	defer ex.Close()
	exDoc, err := ex.RunJSON(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vmDoc.Bytes(), exDoc) {
		t.Errorf("the VM answered\n%s\nthe executor\n%s", vmDoc.Bytes(), exDoc)
	}
	var rf jsonio.ResponseFile
	if err := json.Unmarshal(exDoc, &rf); err != nil {
		t.Fatal(err)
	}
	for i, r := range rf.Responses {
		if r.Error != nil {
			t.Fatalf("%s: %s", r.ID, r.Error.Message)
		}
		its, err := r.Outputs["line_scores"].ItemTensors()
		if err != nil {
			t.Fatalf("%s: line_scores: %v", r.ID, err)
		}
		if want := len(reqs[i].Items["line_images"]); len(its) != want {
			t.Errorf("%s: %d scores for %d lines", r.ID, len(its), want)
		}
	}
}

// TestDerivedCompanions: the companions vm.PackItems derives from a
// request's items equal the ones the request in companion form sends, for
// every packed fixture (one level, two levels flat and nested, padded),
// and the packed value holds each item's valid positions where the
// request's tensor holds them.
func TestDerivedCompanions(t *testing.T) {
	for i, f := range packedFixtures() {
		t.Run(f.Name, func(t *testing.T) {
			p, _ := fixtures.Compile(t, f)
			checked := 0
			for _, r := range f.Requests(uint64(500+i), 16) {
				it, ok := fixtures.ToItems(p.IR, r)
				if !ok {
					continue
				}
				subs, rg, err := vm.PackItems(p.IR, it)
				if err != nil || rg == nil || len(subs) != 1 {
					t.Fatalf("%s: %d requests, %v", r.ID, len(subs), err)
				}
				for name, want := range r.Inputs {
					got := subs[0].Inputs[name]
					if name == f.In {
						if got.Shape[0] != want.Shape[0] {
							t.Errorf("%s: %s packs %v, the request holds %v", r.ID, name, got.Shape, want.Shape)
						}
						continue
					}
					if !fixtures.Identical(got, want) {
						t.Errorf("%s: derived %s is %v %v, the request sends %v %v", r.ID, name, got, got.Data, want, want.Data)
					}
				}
				if len(subs[0].Inputs) != len(r.Inputs) {
					t.Errorf("%s: packed inputs %v, the request's %v", r.ID, fixtures.Names(subs[0].Inputs), fixtures.Names(r.Inputs))
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no request could be given as items")
			}
		})
	}
}

// TestItemsRunBatch: RunBatch reports each request that gave items once,
// with its joined response, after all its parts (a request split by
// height included); a request that cannot be packed is reported too.
func TestItemsRunBatch(t *testing.T) {
	f := fixtures.Lookup("ocr_lines")
	e, ok := engines[0].grouped(t, f, nil).(*vm.Engine)
	if !ok {
		t.Fatal("the vm engine is no *vm.Engine")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	reqs := []vm.Request{
		{ID: "split", Items: map[string][]vm.Item{"line_images": vm.TensorItems(ocrLine(rng, 5, 8), ocrLine(rng, 12, 6), ocrLine(rng, 24, 8))}},
		{ID: "bad", Items: map[string][]vm.Item{"line_widths": vm.TensorItems(fixtures.I64(1))}},
		{ID: "one", Items: map[string][]vm.Item{"line_images": vm.TensorItems(ocrLine(rng, 12, 8))}},
		fixtures.OCRLines(rng, "plain", 2),
	}
	var mu sync.Mutex
	seen := map[int]vm.Response{}
	out := e.RunBatch(context.Background(), reqs, vm.BatchOptions{Limit: 2, Finished: func(i int, r vm.Response) {
		mu.Lock()
		defer mu.Unlock()
		if _, twice := seen[i]; twice {
			t.Errorf("request %d reported twice", i)
		}
		seen[i] = r
	}})
	if len(seen) != len(reqs) {
		t.Fatalf("%d of %d requests reported", len(seen), len(reqs))
	}
	for i, r := range out {
		if seen[i].ID != r.ID || len(seen[i].Items["line_scores"]) != len(r.Items["line_scores"]) {
			t.Errorf("request %d: reported %s with %d items, returned %s with %d", i, seen[i].ID, len(seen[i].Items["line_scores"]), r.ID, len(r.Items["line_scores"]))
		}
	}
	if out[0].Err != nil || len(out[0].Items["line_scores"]) != 3 || out[2].Err != nil || len(out[2].Items["line_scores"]) != 1 {
		t.Errorf("split: %v; one: %v", out[0].Err, out[2].Err)
	}
	if rule(out[1].Err) != backend.RunInput {
		t.Errorf("bad: %v, want %s", out[1].Err, backend.RunInput)
	}
	if out[3].Err != nil || out[3].Outputs.Get("line_scores") == nil || out[3].Items != nil {
		t.Errorf("plain: %v, outputs %v, items %v", out[3].Err, fixtures.Names(out[3].Outputs.Map()), out[3].Items)
	}
}
