package vm

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// itemsModules are workflows of one level (padded, ocr_lines) and two
// levels (nested and padded, video_frames; flat, text_packed).
func itemsModules(t testing.TB) []*ir.Module {
	var out []*ir.Module
	for _, pkg := range []string{"ocr_lines", "video_frames", "text_packed"} {
		out = append(out, compilePlan(t, "../testdata/packages/"+pkg).IR)
	}
	return out
}

// fuzzItems builds an item tree from bytes: shapes, nesting, dtypes and
// element counts, right or wrong.
func fuzzItems(b []byte) []Item {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	var build func(depth int) Item
	build = func(depth int) Item {
		k := next()
		if depth < 2 && k%5 == 0 {
			n := next() % 4
			it := Item{Items: []Item{}}
			for range n {
				it.Items = append(it.Items, build(depth+1))
			}
			return it
		}
		rank := next() % 4
		shape := make([]int64, rank)
		elems := int64(1)
		for i := range shape {
			shape[i] = int64(next()%7) - 1 // -1 now and then
			elems *= max(shape[i], 0)
		}
		if next()%9 == 0 {
			elems++
		}
		if next()%7 == 0 {
			return Item{Tensor: &backend.Tensor{DType: "int64", Shape: shape, Data: make([]int64, elems)}}
		}
		return Item{Tensor: &backend.Tensor{DType: "float32", Shape: shape, Data: make([]float32, elems)}}
	}
	var items []Item
	for n := next() % 5; n > 0; n-- {
		items = append(items, build(1))
	}
	return items
}

// FuzzPackItems: any items give plain requests or a run/input error,
// never a panic; packed requests hold offsets that cover their rows.
func FuzzPackItems(f *testing.F) {
	f.Add([]byte{2, 1, 2, 3, 2, 1, 1, 1, 2, 3, 4, 1, 1})
	f.Add([]byte{3, 0, 2, 1, 2, 3, 4, 1, 1, 0, 0, 1, 2, 6, 2, 1, 1})
	f.Add([]byte{1, 4, 3, 0, 7, 2, 1, 1})
	mods := itemsModules(f)
	inputs := []string{"line_images", "pixel_values", "token_ids"}
	offsets := []string{"line_offsets", "frame_offsets", "token_offsets"}
	paired := compilePlan(f, "testdata/paired.yaml").IR
	f.Fuzz(func(t *testing.T, b []byte) {
		// Two items inputs on one level: the halves of b.
		subs, _, err := PackItems(paired, Request{ID: "f", Items: map[string][]Item{"px": fuzzItems(b[:len(b)/2]), "qx": fuzzItems(b[len(b)/2:])}})
		if err != nil && AsRunError(err).Rule != backend.RunInput {
			t.Fatalf("px, qx: %v", err)
		}
		for _, s := range subs {
			offs := s.Inputs["img_off"].Int64s()
			for _, name := range []string{"px", "qx"} {
				if v := s.Inputs[name]; v.Shape[0] != offs[len(offs)-1] || backend.DataLen(v.Data) != v.Len() {
					t.Fatalf("%s packs %v with offsets %v", name, v, offs)
				}
			}
		}
		for i, m := range mods {
			subs, _, err := PackItems(m, Request{ID: "f", Items: map[string][]Item{inputs[i]: fuzzItems(b)}})
			if err != nil {
				if AsRunError(err).Rule != backend.RunInput {
					t.Fatalf("%s: %v", inputs[i], err)
				}
				continue
			}
			for _, s := range subs {
				v, offs := s.Inputs[inputs[i]], s.Inputs[offsets[i]].Int64s()
				if v.Shape[0] != offs[len(offs)-1] || backend.DataLen(v.Data) != v.Len() {
					t.Fatalf("%s packs %v with offsets %v", inputs[i], v, offs)
				}
			}
		}
	})
}

func TestPackItemsTwoLevels(t *testing.T) {
	mods := itemsModules(t)
	row := func(n int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{n, 8}, Data: make([]float32, n*8)}
	}
	// video_frames: clips of frames, nested; patches padded per frame.
	subs, _, err := PackItems(mods[1], Request{Items: map[string][]Item{"pixel_values": {
		{Items: TensorItems(row(2), row(3))}, {Items: []Item{}}, {Items: TensorItems(row(1))}}}})
	if err != nil {
		t.Fatal(err)
	}
	in := subs[0].Inputs
	for name, want := range map[string][]int64{
		"frame_offsets": {0, 2, 2, 3}, "frame_owner": {0, 0, 2}, "clip_offsets": {0, 3}, "clip_owner": {0, 0, 0}, "patch_lengths": {2, 3, 1},
	} {
		if got := in[name].Int64s(); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := in["pixel_values"].Shape; !slices.Equal(got, []int64{3, 3, 8}) {
		t.Errorf("pixel_values packs into %v, want [3 3 8]", got)
	}
	// text_packed: segments of tokens, flat.
	ids := func(v ...int64) *backend.Tensor {
		return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(v))}, Data: v}
	}
	subs, _, err = PackItems(mods[2], Request{Items: map[string][]Item{"token_ids": TensorItems(ids(1, 2, 3), ids(4))}})
	if err != nil {
		t.Fatal(err)
	}
	in = subs[0].Inputs
	for name, want := range map[string][]int64{
		"token_ids": {1, 2, 3, 4}, "token_offsets": {0, 3, 4}, "token_owner": {0, 0, 0, 1}, "segment_offsets": {0, 2}, "segment_owner": {0, 0},
	} {
		if got := in[name].Int64s(); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// A negative extent is refused, not allocated.
	_, _, err = PackItems(mods[2], Request{Items: map[string][]Item{"token_ids": {{Tensor: &backend.Tensor{DType: "int64", Shape: []int64{-1}, Data: []int64{}}}}}})
	if err == nil || AsRunError(err).Rule != backend.RunInput {
		t.Errorf("negative extent: %v", err)
	}
}

// A packed output on levels the workflow produces comes back per item when
// its levels count one unit per item, and stays packed, with its
// companions, when they do not.
func TestJoinProducedLevels(t *testing.T) {
	m := compilePlan(t, "../testdata/packages/token_merge").IR
	tok := func(n int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{n, 4}, Data: make([]float32, n*4)}
	}
	subs, rg, err := PackItems(m, Request{ID: "r", Items: map[string][]Item{"tokens": TensorItems(tok(3), tok(1))}})
	if err != nil {
		t.Fatal(err)
	}
	vec := func(v ...int64) *backend.Tensor {
		return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(v))}, Data: v}
	}
	merged := &backend.Tensor{DType: "float32", Shape: []int64{3, 4}, Data: []float32{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}}
	good := rg.Join([]Response{{ID: "r", Outputs: OutputsOf(map[string]*backend.Tensor{
		"merged": merged, "merged_offsets": vec(0, 2, 3), "merged_owner": vec(0, 0, 1),
		"segment_offsets": subs[0].Inputs["segment_offsets"], "segment_owner": subs[0].Inputs["segment_owner"]})}})
	its := good.Items["merged"]
	if good.Err != nil || len(its) != 2 || its[0].Tensor.Shape[0] != 2 || its[1].Tensor.Float32s()[0] != 3 || good.Outputs.Len() != 0 {
		t.Fatalf("per item: %v, %d items, outputs %v", good.Err, len(its), good.Outputs)
	}
	// Three segments' worth of merged offsets for a request of two items.
	bad := rg.Join([]Response{{ID: "r", Outputs: OutputsOf(map[string]*backend.Tensor{
		"merged": merged, "merged_offsets": vec(0, 1, 2, 3), "merged_owner": vec(0, 1, 2),
		"segment_offsets": vec(0, 3), "segment_owner": vec(0, 0, 0)})}})
	if bad.Err != nil || bad.Items["merged"] != nil || bad.Outputs.Get("merged") == nil || bad.Outputs.Get("merged_offsets") == nil || bad.Outputs.Get("segment_offsets") == nil {
		t.Fatalf("packed: %v, items %v, outputs %v", bad.Err, bad.Items, bad.Outputs)
	}
}

// Encoded media given as items of a byte input of one level (image_patches'
// png: bytes → request) would be single bytes: the request is refused with
// a message that says a second level is what byte items need, naming the
// input's offsets, rather than a rank mismatch.
func TestByteItemsNeedTwoLevels(t *testing.T) {
	m := compilePlan(t, "../testdata/packages/image_patches").IR
	_, _, err := PackItems(m, Request{ID: "r", Items: map[string][]Item{"png": ByteItems([]byte("\x89PNG...."), []byte("\x89PNG..."))}})
	re := AsRunError(err)
	if re == nil || re.Rule != backend.RunInput || !strings.Contains(re.Message, "second level") || !strings.Contains(re.Message, "png_offsets") || strings.Contains(re.Message, "rank") {
		t.Errorf("byte items of a one-level input: %v; want run/input asking for a second level", err)
	}
}

// TestPackItemsAllocatesWhatItPacks: packing an unpadded input whose rows
// are single elements (a long token list, an encoded file's bytes)
// allocates about its packed value and companions, nothing per row: the
// rows' own extents, which only padded inputs need, once took 24 bytes a
// row and the slice's regrowth on top, more than the value itself.
func TestPackItemsAllocatesWhatItPacks(t *testing.T) {
	m := compilePlan(t, "../testdata/packages/text_packed").IR
	const tokens = 1 << 20
	ids := &backend.Tensor{DType: "int64", Shape: []int64{tokens}, Data: make([]int64, tokens)}
	req := Request{Items: map[string][]Item{"token_ids": TensorItems(ids)}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	subs, _, err := PackItems(m, req)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	// The value and the owner companion, 8 bytes a token each, and at
	// most as much again for the companions' working storage.
	packed := subs[0].Inputs["token_ids"].Bytes() + subs[0].Inputs["token_owner"].Bytes()
	if got := int64(after.TotalAlloc - before.TotalAlloc); got > 2*packed {
		t.Errorf("packing %d tokens allocated %d bytes, want at most twice the %d it packs", tokens, got, packed)
	}
}

// TestItemsPlansMetAtOnce: requests of two forms packed from many
// goroutines at once on one engine's plans keep one plan per form, each
// request packing as without plans kept (-race checks the plans' copies).
func TestItemsPlansMetAtOnce(t *testing.T) {
	m := itemsModules(t)[1] // video_frames: clips of frames, patches padded
	frame := func(n int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{n, 8}, Data: make([]float32, n*8)}
	}
	nested := Request{Items: map[string][]Item{"pixel_values": {{Items: TensorItems(frame(2), frame(3))}}}}
	flat := Request{Items: map[string][]Item{"pixel_values": TensorItems(&backend.Tensor{DType: "float32", Shape: []int64{2, 2, 8}, Data: make([]float32, 32)})}}
	var plans itemsPlans
	var wg sync.WaitGroup
	got := make([]*itemsPlan, 16)
	for g := range got {
		wg.Go(func() {
			req := []Request{nested, flat}[g%2]
			kept, err := packItems(m, &plans, req, nil)
			fresh, err2 := packItems(m, nil, req, nil)
			if err != nil || err2 != nil {
				t.Error(err, err2)
				return
			}
			for name, want := range fresh.parts[0].req.Inputs {
				if got := kept.parts[0].req.Inputs[name]; !equalTensor(got, want) {
					t.Errorf("goroutine %d: %s packs as %v with plans kept, %v without", g, name, got, want)
				}
			}
			got[g] = plans.find(req, []string{"pixel_values"})
		})
	}
	wg.Wait()
	for g, p := range got {
		if p == nil || p != got[g%2] {
			t.Errorf("goroutine %d found plan %p, goroutine %d %p: want one plan per form", g, p, g%2, got[g%2])
		}
	}
	if got[0] == got[1] {
		t.Error("two forms share a plan")
	}
}

// TestItemsPlansByForm: an engine keeps one itemsPlan per items form (the
// inputs given as items and how deep they nest): requests of another
// form, or none, get their own, and each packs as without plans kept.
func TestItemsPlansByForm(t *testing.T) {
	m := itemsModules(t)[1] // video_frames: clips of frames, patches padded
	frames := func(n, rows int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{rows, n, 8}, Data: make([]float32, rows*n*8)}
	}
	frame := func(n int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{n, 8}, Data: make([]float32, n*8)}
	}
	nested := Request{Items: map[string][]Item{"pixel_values": {{Items: TensorItems(frame(2), frame(3))}, {Items: TensorItems(frame(1))}}}}
	flat := Request{Items: map[string][]Item{"pixel_values": TensorItems(frames(2, 2), frames(1, 1))}}
	var plans itemsPlans
	for i, req := range []Request{nested, flat, nested, flat} {
		kept, err := packItems(m, &plans, req, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		fresh, err := packItems(m, nil, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range fresh.parts[0].req.Inputs {
			if got := kept.parts[0].req.Inputs[name]; !equalTensor(got, want) {
				t.Errorf("request %d: %s packs as %v with plans kept, %v without", i, name, got, want)
			}
		}
	}
	n := 0
	for _, forms := range *plans.forms.Load() {
		n += len(forms)
	}
	if n != 2 {
		t.Errorf("%d plans kept for two forms", n)
	}
	if _, err := packItems(m, &plans, Request{Items: map[string][]Item{"pixel_values": {}}}, nil); err == nil || AsRunError(err).Rule != backend.RunInput {
		t.Errorf("an empty items list after kept plans: %v", err)
	}
}

// TestItemsErrorsNameThePlace: a refused item is named by its place in
// the request's tree (2.1: the second frame of the third clip).
func TestItemsErrorsNameThePlace(t *testing.T) {
	m := compilePlan(t, "../testdata/packages/video_frames").IR
	frame := func(patches, features int64) Item {
		return Item{Tensor: &backend.Tensor{DType: "float32", Shape: []int64{patches, features}, Data: make([]float32, patches*features)}}
	}
	clip := func(frames ...Item) Item { return Item{Items: frames} }
	for _, c := range []struct {
		clips []Item
		want  string
	}{
		{[]Item{clip(frame(2, 4)), clip(frame(2, 4)), clip(frame(2, 4), frame(3, 5))}, "item 2.1 has extents [axis 2 = 5], but the other rows of item 2 have [axis 2 = 4]"},
		{[]Item{clip(frame(2, 4)), clip(clip(frame(2, 4)))}, "item 1.0 must be a tensor (items nest 2 deep here), got a list of items"},
	} {
		_, _, err := PackItems(m, Request{ID: "r", Items: map[string][]Item{"pixel_values": c.clips}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestPackItemsOfManyExtents: a request whose items bring many unpadded
// extents (line heights here) packs into one part per extent, in the
// order the extents first come, each with its items in order and every
// item in exactly one part: past a few extents they are found by a map,
// so that such a request costs a lookup per item.
func TestPackItemsOfManyExtents(t *testing.T) {
	m := itemsModules(t)[0] // ocr_lines: [lines, width, height], width padded
	const heights = 20
	var items []Item
	for i := range 2 * heights {
		h := int64(1 + (i*7)%heights)
		items = append(items, Item{Tensor: f32(0, 1+int64(i%3), h)})
	}
	subs, rg, err := PackItems(m, Request{ID: "many", Items: map[string][]Item{"line_images": items}})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != heights {
		t.Fatalf("%d parts, want one per height (%d)", len(subs), heights)
	}
	seen := make([]int, len(items))
	for p, part := range rg.parts {
		h := items[part.items[0]].Tensor.Shape[1]
		if want := int64(1 + (part.items[0]*7)%heights); h != want || part.items[0] != p {
			t.Errorf("part %d starts with item %d (height %d): want the parts in the order their heights first come", p, part.items[0], h)
		}
		if !slices.IsSorted(part.items) {
			t.Errorf("part %d holds items %v, out of order", p, part.items)
		}
		for _, i := range part.items {
			seen[i]++
			if items[i].Tensor.Shape[1] != h {
				t.Errorf("part %d (height %d) holds item %d of height %d", p, h, i, items[i].Tensor.Shape[1])
			}
		}
		if got := subs[p].Inputs["line_images"].Shape; got[0] != int64(len(part.items)) || got[2] != h {
			t.Errorf("part %d packs into %v, want %d lines of height %d", p, got, len(part.items), h)
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("item %d is in %d parts", i, n)
		}
	}
}
