package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/ortlib"
)

// TestGroupedEqualsSolo (rows 2, 3, 6, 10, 12, 13): random requests of every
// fixture, run concurrently grouped and solo. Every grouped result equals
// its solo result and the Go reference within tolerance, every delivered
// companion equals the request's own, and no budget was exceeded. Where
// the component packs items: groups really formed, every item was invoked
// exactly once, and every group's companions were recomputed with the
// exact shapes (§3.3, §3.2).
func TestGroupedEqualsSolo(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range e.among(fixtures.All) {
			t.Run(f.Name, func(t *testing.T) {
				reqs := f.Requests(uint64(100+i), 24)
				rec := newRecorder(t, f)
				g, s := e.grouped(t, f, rec), e.solo(t, f)
				got := runAll(context.Background(), g, reqs)
				want := runAll(context.Background(), s, reqs)
				same, total := compareResponses(t, f, reqs, got, want)
				t.Logf("%d of %d float outputs are bit-identical grouped and solo; the rest agree within %g", same, total, tolerance)
				for name, cs := range g.Stats().Components {
					checkBudgets(t, cs)
					checkBudgets(t, s.Stats().Components[name])
				}
				if f.In != "" {
					checkPackedGroups(t, f, reqs, got, g.Stats(), s.Stats(), rec.invocations())
				}
				if gs := g.Stats().Components[f.Component]; f.Media && (gs.MaxGroupRequests < 2 || gs.Invocations >= gs.Requests) {
					t.Errorf("no grouping of %s after the adapter: %d invocations for %d requests, largest group %d", f.Component, gs.Invocations, gs.Requests, gs.MaxGroupRequests)
				}
			})
		}
	})
}

// checkPackedGroups checks the groups of a packed component: grouping
// formed (fewer invocations than the requests that reached it with items),
// solo ran one invocation per such request, every group's companions are
// exact, and the groups held exactly the requests' packed positions.
func checkPackedGroups(t *testing.T, f fixtures.Fixture, reqs []vm.Request, got []vm.Response, grouped, solo vm.Stats, calls []call) {
	t.Helper()
	nonEmpty, packed := int64(0), int64(0)
	for i, r := range reqs {
		if p := f.Positions(r); p > 0 && got[i].Err == nil {
			nonEmpty++
			packed += p
		}
	}
	gs, ss := grouped.Components[f.Component], solo.Components[f.Component]
	if gs.MaxGroupRequests < 2 || gs.Invocations >= nonEmpty {
		t.Errorf("no grouping: %d invocations for %d non-empty requests, largest group %d", gs.Invocations, nonEmpty, gs.MaxGroupRequests)
	}
	if ss.MaxGroupRequests != 1 || ss.Invocations != nonEmpty {
		t.Errorf("solo: %d invocations, largest group %d; want %d invocations of one request", ss.Invocations, ss.MaxGroupRequests, nonEmpty)
	}
	gp := fixtures.GroupPlan(t, f, f.Component)
	var invoked int64
	for _, c := range calls {
		if c.component == f.Component {
			checkGroupCall(t, gp, c)
			invoked += c.inputs[f.InPort()].Shape[0]
		}
	}
	if invoked != packed {
		t.Errorf("the groups held %d packed positions, the requests %d: an item was dropped or run twice", invoked, packed)
	}
}

// checkGroupCall checks the companions the runtime passed to one
// invocation: every level's offsets start at 0, never decrease and end at
// the level below's count; every owner map is the one its offsets imply;
// every lengths companion has exactly the padded value's outer axes and
// entries within the padded extent.
func checkGroupCall(t *testing.T, gp *plan.GroupPlan, c call) {
	t.Helper()
	for _, in := range gp.Inputs {
		x := c.inputs[in.Name]
		if in.Role != plan.RolePacked || x == nil {
			continue
		}
		children := x.Shape[0]
		for _, l := range in.Levels {
			offsets := c.inputs[l.Offsets.Port]
			if l.Offsets.Port == "" || offsets == nil {
				break // the component does not take this level: its count is unknown here
			}
			offs := offsets.Int64s()
			if len(offs) == 0 || offs[0] != 0 || !slices.IsSorted(offs) || offs[len(offs)-1] != children {
				t.Errorf("group offsets %s of level %d = %v, over %d children", l.Offsets.Port, l.Index, offs, children)
			}
			if owner := c.inputs[l.Owner.Port]; l.Owner.Port != "" && owner != nil && !slices.Equal(owner.Int64s(), fixtures.OwnerOf(offs)) {
				t.Errorf("group owner %s of level %d = %v, but offsets %v imply %v", l.Owner.Port, l.Index, owner.Int64s(), offs, fixtures.OwnerOf(offs))
			}
			children = int64(len(offs) - 1)
		}
		for _, p := range in.Padded {
			lengths := c.inputs[p.Lengths.Port]
			if p.Lengths.Port == "" || lengths == nil {
				continue
			}
			if !slices.Equal(lengths.Shape, x.Shape[:p.Axis]) {
				t.Errorf("group lengths %s has shape %v, but %s is %v padded on axis %d", p.Lengths.Port, lengths.Shape, in.Name, x.Shape, p.Axis)
			}
			for _, n := range lengths.Int64s() {
				if n < 0 || n > x.Shape[p.Axis] {
					t.Errorf("group lengths %s holds %d, outside [0, %d]", p.Lengths.Port, n, x.Shape[p.Axis])
				}
			}
		}
	}
}

// TestPaddingNeverLeaks (rows 2 and 13): each request fills its own padding
// with NaN. The group is padded to its widest item with zeros and no more;
// each item keeps its own extent in its prefix; the lengths companion is
// the items' lengths concatenated with the exact companion shape; the
// padding overhead is what the groups materialized; and no NaN reaches a
// result. video_frames adds temporal raggedness (frames per clip) to the
// spatial one (patches per frame).
func TestPaddingNeverLeaks(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		pkg, lengths string
		gen          func(rng *rand.Rand, id string, extent int64) vm.Request
	}{
		{"image_padded", "patch_lengths", func(rng *rand.Rand, id string, extent int64) vm.Request {
			r := fixtures.ImagePadded(rng, id, 1+rng.IntN(3))
			lengths := r.Inputs["patch_lengths"].Int64s()
			for i := range lengths {
				lengths[i] = rng.Int64N(extent + 1) // 0 included: an image with no valid patch
			}
			r.Inputs["pixel_patches"] = fixtures.Padded(rng, lengths, extent, 8, nan)
			return r
		}},
		{"video_frames", "patch_lengths", func(rng *rand.Rand, id string, extent int64) vm.Request {
			frames := fixtures.Counts(rng, 1+rng.IntN(2), 1, 4)
			lengths := make([]int64, fixtures.Sum(frames))
			for i := range lengths {
				lengths[i] = rng.Int64N(extent + 1)
			}
			r := fixtures.VideoRequest(rng, id, frames, extent, lengths)
			r.Inputs["pixel_values"] = fixtures.Padded(rng, lengths, extent, 8, nan)
			return r
		}},
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for _, tc := range cases {
			t.Run(tc.pkg, func(t *testing.T) {
				f := fixtures.Lookup(tc.pkg)
				rng := rand.New(rand.NewPCG(7, 7))
				var reqs []vm.Request
				for i := range 8 {
					reqs = append(reqs, tc.gen(rng, fmt.Sprint("r", i), 1+rng.Int64N(8)))
				}
				rec := newRecorder(t, f)
				g := e.grouped(t, f, rec)
				got := runAll(context.Background(), g, reqs)
				want := runAll(context.Background(), e.solo(t, f), reqs)
				compareResponses(t, f, reqs, got, want)
				checkPadding(t, f, tc.lengths, reqs, rec.invocations(), g.Stats().Components[f.Component])
			})
		}
	})
}

// checkPadding checks the padded groups of the requests: each padded to
// its widest item with zeros and no more, each item keeping its own extent
// in its prefix, the lengths companion the items' lengths concatenated,
// and the padding overhead the stats report what the groups materialized.
func checkPadding(t *testing.T, f fixtures.Fixture, lengthsPort string, reqs []vm.Request, calls []call, s vm.ComponentStats) {
	t.Helper()
	var wantExtents, gotExtents, wantLengths, gotLengths []int64
	var real int64
	for _, r := range reqs {
		x := r.Inputs[f.In]
		for range x.Shape[0] {
			wantExtents = append(wantExtents, x.Shape[1])
		}
		wantLengths = append(wantLengths, r.Inputs[lengthsPort].Int64s()...)
		real += x.Len()
	}
	var materialized int64
	for _, c := range calls {
		x := c.inputs[f.In]
		materialized += x.Len()
		extents := ownExtents(x)
		if slices.Max(extents) != x.Shape[1] {
			t.Errorf("a group of %v is padded to %d patches, but its widest item has %d", x.Shape, x.Shape[1], slices.Max(extents))
		}
		gotExtents = append(gotExtents, extents...)
		gotLengths = append(gotLengths, c.inputs[lengthsPort].Int64s()...)
	}
	slices.Sort(wantExtents)
	slices.Sort(gotExtents)
	if !slices.Equal(gotExtents, wantExtents) {
		t.Errorf("the items' own extents inside the groups are %v, the requests' %v: the zero fill is not a suffix, or an item was resized", gotExtents, wantExtents)
	}
	slices.Sort(wantLengths)
	slices.Sort(gotLengths)
	if !slices.Equal(gotLengths, wantLengths) {
		t.Errorf("the groups' lengths are %v, the requests' %v", gotLengths, wantLengths)
	}
	overhead := float64(materialized-real) / float64(real)
	if math.Abs(s.PaddingOverhead-overhead) > 1e-12 {
		t.Errorf("stats say padding overhead %g; the groups materialized %d elements for %d real ones (%g)", s.PaddingOverhead, materialized, real, overhead)
	}
}

// ownExtents reads, for each item of a group's padded [n, extent, width]
// tensor, how much of it the item brought: everything before the trailing
// run of all-zero positions the runtime filled. Items in these tests never
// hold an all-zero position of their own (real values are nonzero, their
// own padding NaN).
func ownExtents(x *backend.Tensor) []int64 {
	n, extent, width := x.Shape[0], x.Shape[1], x.Shape[2]
	d := x.Float32s()
	out := make([]int64, n)
	for i := range n {
		e := extent
		for e > 0 && allZero(d[(i*extent+e-1)*width:(i*extent+e)*width]) {
			e--
		}
		out[i] = e
	}
	return out
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 || math.Signbit(float64(x)) {
			return false
		}
	}
	return true
}

// TestVariableFramesAndClips (rows 10 and 12): clips of 1 to 4 frames, 1 to
// 3 clips per request, one patch extent for everyone. Frames are packed,
// never padded in time: every group's frame axis is exactly the sum of its
// clips' frames, the padding overhead is zero, and the two levels are
// composed for the group (clip offsets over the frames, row offsets over
// the clips).
func TestVariableFramesAndClips(t *testing.T) {
	f := fixtures.Lookup("video_frames")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(10, 12))
		var reqs []vm.Request
		for i := range 12 {
			frames := fixtures.Counts(rng, 1+rng.IntN(3), 1, 4)
			reqs = append(reqs, fixtures.VideoRequest(rng, fmt.Sprint("r", i), frames, 3, fixtures.ValidLengths(rng, fixtures.Sum(frames), 3)))
		}
		rec := newRecorder(t, f)
		g := e.grouped(t, f, rec)
		got := runAll(context.Background(), g, reqs)
		compareResponses(t, f, reqs, got, runAll(context.Background(), e.solo(t, f), reqs))
		s := g.Stats().Components["clip_encoder"]
		if s.PaddingOverhead != 0 {
			t.Errorf("padding overhead %g with one patch extent: something other than patches was padded", s.PaddingOverhead)
		}
		if s.MaxGroupRequests < 2 {
			t.Errorf("no group of two requests formed: %+v", s.GroupSizes)
		}
		for _, c := range rec.invocations() {
			x, fo, co := c.inputs["pixel_values"], c.inputs["frame_offsets"].Int64s(), c.inputs["clip_offsets"].Int64s()
			if x.Shape[1] != 3 {
				t.Errorf("a group of frames is %v: the patch extent changed", x.Shape)
			}
			if fo[len(fo)-1] != x.Shape[0] || co[len(co)-1] != int64(len(fo)-1) || c.inputs["clip_owner"].Len() != int64(len(fo)-1) {
				t.Errorf("group of %v: frame offsets %v, clip offsets %v, clip owner %v", x.Shape, fo, co, c.inputs["clip_owner"].Int64s())
			}
		}
		checkBudgets(t, s)
	})
}

// TestVideoFixedBesideFrames (row 11): the fixed-frame encoder (whole clips
// packed, no frame level) and the variable-frame one run at the same time
// in one process. Fixed clips of 2 and of 3 frames never share a group
// (frames is uniform) and are never resized; both encoders agree with their
// references.
func TestVideoFixedBesideFrames(t *testing.T) {
	fixedFx, framesFx := fixtures.Lookup("video_fixed"), fixtures.Lookup("video_frames")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(11, 11))
		var fixed, frames []vm.Request
		for i := range 10 {
			gen := fixtures.VideoFixed(2+int64(i%2), 3)
			fixed = append(fixed, gen(rng, fmt.Sprint("fixed", i), 1+rng.IntN(2)))
			frames = append(frames, fixtures.VideoFrames(rng, fmt.Sprint("frames", i), 1+rng.IntN(2)))
		}
		rec := newRecorder(t, fixedFx)
		fixedEngine, framesEngine := e.grouped(t, fixedFx, rec), e.grouped(t, framesFx, nil)
		var gotFixed, gotFrames []vm.Response
		var wg sync.WaitGroup
		wg.Go(func() { gotFixed = runAll(context.Background(), fixedEngine, fixed) })
		wg.Go(func() { gotFrames = runAll(context.Background(), framesEngine, frames) })
		wg.Wait()
		compareResponses(t, fixedFx, fixed, gotFixed, runAll(context.Background(), e.solo(t, fixedFx), fixed))
		compareResponses(t, framesFx, frames, gotFrames, runAll(context.Background(), e.solo(t, framesFx), frames))

		clips := map[int64]int64{} // frames per clip → clips run
		for _, c := range rec.invocations() {
			x := c.inputs["pixel_values"]
			clips[x.Shape[1]] += x.Shape[0]
		}
		want := map[int64]int64{}
		for _, r := range fixed {
			x := r.Inputs["pixel_values"]
			want[x.Shape[1]] += x.Shape[0]
		}
		if !reflect.DeepEqual(clips, want) {
			t.Errorf("clips run by frame count %v, requested %v", clips, want)
		}
		if s := fixedEngine.Stats().Components["clip_encoder"]; s.PaddingOverhead != 0 || s.MaxGroupRequests < 2 {
			t.Errorf("fixed-frame stats: padding overhead %g, largest group %d", s.PaddingOverhead, s.MaxGroupRequests)
		}
	})
}

// TestNoCrossRequestLeakage (row 6): request A runs in a group with B1, then
// in a group with B2. A's result is the same both times and equals its
// reference; each B's result equals its own reference.
func TestNoCrossRequestLeakage(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range e.among(packedFixtures()) {
			t.Run(f.Name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(60+i), 6))
				gen := f.Gen
				if f.Name == "image_pinned" {
					gen = fixtures.ImagePinned(4) // one patch count, so that A and each B may share a group
				}
				a := gen(rng, "A", max(1, f.MaxItems))
				r := e.start(t, f, genrt.WithMaxDelay(150*time.Millisecond))
				var results []*backend.Tensor
				for j := range 2 {
					b := gen(rng, fmt.Sprint("B", j+1), max(1, f.MaxItems))
					before := r.Stats().Components[f.Component]
					res := runAll(context.Background(), r, []vm.Request{a, b})
					mustSucceed(t, res)
					after := r.Stats().Components[f.Component]
					if after.Invocations != before.Invocations+1 || after.GroupSizes[2] != before.GroupSizes[2]+1 {
						t.Fatalf("A and %s did not share one invocation: group sizes %v", b.ID, after.GroupSizes)
					}
					for k, req := range []vm.Request{a, b} {
						ref := f.Reference(t, req)
						if d := fixtures.Diff(res[k].Outputs.Get(f.Out), ref[f.Out], tolerance); d != "" {
							t.Errorf("%s grouped with %s: %s: %s", req.ID, res[1-k].ID, f.Out, d)
						}
					}
					results = append(results, res[0].Outputs.Get(f.Out))
				}
				if d := fixtures.Diff(results[0], results[1], tolerance); d != "" {
					t.Errorf("A's result changed with its group mate: %s", d)
				}
			})
		}
	})
}

// TestSplitsAreViews (row 20): every request's share of a group's packed
// output is a view of the buffer the backend returned, the shares of one
// group tile that buffer in order with no gap, and the only payload copies
// are the assembly's: each item's payload once (pack or pad), the
// recomputed companions, and no gather.
func TestSplitsAreViews(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range e.among(packedFixtures()) {
			t.Run(f.Name, func(t *testing.T) {
				var reqs []vm.Request
				rng := rand.New(rand.NewPCG(uint64(20+i), 20))
				for j := range 8 {
					reqs = append(reqs, f.Gen(rng, fmt.Sprint("r", j), 1+rng.IntN(f.MaxItems)))
				}
				rec := newRecorder(t, f)
				r := e.grouped(t, f, rec)
				res := runAll(context.Background(), r, reqs)
				mustSucceed(t, res)
				calls := rec.invocations()
				perCall := make([][]*backend.Tensor, len(calls))
				members := make([][]int, len(calls))
				for k, resp := range res {
					share := resp.Outputs.Get(f.Out)
					at := slices.IndexFunc(calls, func(c call) bool { return backend.SameBuffer(share, c.outputs[f.Out]) })
					if at < 0 || share.Len() == 0 {
						t.Errorf("%s: its %s (%v) is not a view of any group's output", resp.ID, f.Out, share)
						continue
					}
					if backend.SameBuffer(share, reqs[k].Inputs[f.In]) {
						t.Errorf("%s: its %s aliases its own input", resp.ID, f.Out)
					}
					perCall[at] = append(perCall[at], share)
					members[at] = append(members[at], k)
				}
				formed := false
				for k, shares := range perCall {
					checkTiling(t, calls[k].outputs[f.Out], shares)
					formed = formed || len(shares) > 1
				}
				if !formed {
					t.Errorf("no group held two requests")
				}
				checkCopies(t, r, f, reqs, calls, members)
			})
		}
	})
}

// addr is the address of a tensor's first element.
func addr(t *backend.Tensor) uintptr { return reflect.ValueOf(t.Data).Pointer() }

// checkTiling: the shares, ordered by address, start at the group output's
// first element and follow each other with no gap up to its end.
func checkTiling(t *testing.T, out *backend.Tensor, shares []*backend.Tensor) {
	t.Helper()
	sort.Slice(shares, func(i, j int) bool { return addr(shares[i]) < addr(shares[j]) })
	next := addr(out)
	for _, s := range shares {
		if addr(s) != next {
			t.Errorf("a share of %v starts at byte %d of the group output, want %d: the shares are not adjacent views", out, addr(s)-addr(out), next-addr(out))
		}
		next = addr(s) + uintptr(s.Bytes())
	}
	if end := addr(out) + uintptr(out.Bytes()); next != end {
		t.Errorf("the shares cover %d of the %d bytes of the group output %v", next-addr(out), out.Bytes(), out)
	}
}

// checkCopies: the engine copied the payload of each request of a group of several exactly once, the
// companions those groups were given, and nothing else.
//
// members[k] lists the requests of call k: a group of one passes its
// request's tensors through, so only groups of several copy.
func checkCopies(t *testing.T, e Runner, f fixtures.Fixture, reqs []vm.Request, calls []call, members [][]int) {
	t.Helper()
	gp := fixtures.GroupPlan(t, f, f.Component)
	var payloadBytes, companionBytes int64
	for k, c := range calls {
		if len(members[k]) < 2 {
			continue
		}
		for _, r := range members[k] {
			payloadBytes += reqs[r].Inputs[f.In].Bytes()
		}
		for _, in := range gp.Inputs {
			if in.Role == plan.RoleCompanion {
				companionBytes += c.inputs[in.Name].Bytes()
			}
		}
	}
	copies := e.Copies(f.Component)
	by := copies.ByReason()
	if by["gather"] != 0 {
		t.Errorf("splitting gathered %d bytes", by["gather"])
	}
	if by["pack"]+by["pad"] != payloadBytes {
		t.Errorf("payload copies: %d bytes packed and %d padded, but the requests brought %d", by["pack"], by["pad"], payloadBytes)
	}
	if by["companion"] != companionBytes {
		t.Errorf("companion copies: %d bytes, but the groups were given %d bytes of companions", by["companion"], companionBytes)
	}
	if total := by["pack"] + by["pad"] + by["stack"] + by["companion"]; copies.Bytes() != total || e.Stats().Components[f.Component].CopiedBytes != total {
		t.Errorf("copied bytes %d (stats %d), by reason %v", copies.Bytes(), e.Stats().Components[f.Component].CopiedBytes, by)
	}
}

// TestSoloPackage (row 1): a component without batch_capacity is never
// grouped, even by a grouping engine under concurrent load: one invocation
// per request, each result identical to the request run alone, and equal to
// the reference of the request alone. Its rows depend on each other, so a
// grouped call would have changed them.
func TestSoloPackage(t *testing.T) {
	f := fixtures.Lookup("solo")
	if gp := fixtures.GroupPlan(t, f, "scorer"); gp.Grouped {
		t.Fatalf("the plan groups scorer: %s", gp.Why)
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(1, 1))
		var reqs []vm.Request
		for i := range 12 {
			rows := 1
			if i == 5 {
				rows = 3 // a request may bring several rows; they stay one call
			}
			reqs = append(reqs, fixtures.Solo(rng, fmt.Sprint("r", i), rows))
		}
		r := e.start(t, f, genrt.WithMaxDelay(groupDelay))
		got := runAll(context.Background(), r, reqs)
		mustSucceed(t, got)
		s := r.Stats().Components["scorer"]
		if s.Invocations != int64(len(reqs)) || s.MaxGroupRequests != 1 {
			t.Errorf("%d invocations for %d requests, largest group %d", s.Invocations, len(reqs), s.MaxGroupRequests)
		}
		baseline := e.solo(t, f)
		for i, req := range reqs {
			alone := baseline.Run(context.Background(), req)
			if alone.Err != nil {
				t.Fatal(alone.Err)
			}
			// The same graph on the same input, one thread: bit for bit.
			if !fixtures.Identical(got[i].Outputs.Get("scores"), alone.Outputs.Get("scores")) {
				t.Errorf("%s: under concurrent load %v, alone %v", req.ID, got[i].Outputs.Get("scores").Float32s(), alone.Outputs.Get("scores").Float32s())
			}
			if d := fixtures.Diff(got[i].Outputs.Get("scores"), f.Reference(t, req)["scores"], tolerance); d != "" {
				t.Errorf("%s: %s", req.ID, d)
			}
		}
		// The fixture can tell: two requests' rows in one call score differently.
		both := vm.Request{Inputs: map[string]*backend.Tensor{"features": fixtures.F32([]int64{2, 4},
			append(slices.Clone(reqs[0].Inputs["features"].Float32s()), reqs[1].Inputs["features"].Float32s()...))}}
		if d := fixtures.Diff(f.Reference(t, both)["scores"].View(0, 1), got[0].Outputs.Get("scores"), tolerance); d == "" {
			t.Errorf("the solo fixture does not detect grouping: two rows scored together equal the first alone")
		}
	})
}

// TestWakewordGuard is the real-model guard: openWakeWord's embedding CNN
// (make setup links it into testdata/packages/wakeword). Windows from
// several requests grouped into one invocation each equal the window run
// alone through ONNX Runtime within tolerance. A missing model or runtime
// fails the test.
func TestWakewordGuard(t *testing.T) {
	if _, err := ortlib.Model("embedding_model.onnx"); err != nil {
		t.Fatalf("the real-model guard needs the cached model: %v: %s", err, fixtures.FixSetup)
	}
	f := fixtures.Lookup("wakeword")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(42, 42))
		var reqs []vm.Request
		for i := range 6 {
			reqs = append(reqs, fixtures.Wakeword(rng, fmt.Sprint("w", i), 1+i%4))
		}
		r := e.start(t, f, genrt.WithMaxDelay(200*time.Millisecond))
		res := runAll(context.Background(), r, reqs)
		mustSucceed(t, res)
		if s := r.Stats().Components["embedding"]; s.MaxGroupRequests < 2 || s.Invocations >= int64(len(reqs)) {
			t.Fatalf("the windows were not grouped: %d invocations, largest group %d", s.Invocations, s.MaxGroupRequests)
		}
		checkWindowsAlone(t, session(t, f, "embedding", ortBackend(t)), reqs, res)
		if got := res[0].Outputs.Get("window_offsets").Int64s(); !slices.Equal(got, []int64{0, 1}) {
			t.Errorf("w0's delivered offsets are %v, want [0 1]", got)
		}
	})
}

// checkWindowsAlone compares each grouped window's embedding with the
// window run alone, straight on the backend.
func checkWindowsAlone(t *testing.T, alone backend.Session, reqs []vm.Request, res []vm.Response) {
	t.Helper()
	for k, req := range reqs {
		w := req.Inputs["windows"]
		got := res[k].Outputs.Get("embeddings")
		if want := []int64{w.Shape[0], 1, 1, 96}; !slices.Equal(got.Shape, want) {
			t.Fatalf("%s: embeddings %v, want shape %v", req.ID, got, want)
		}
		for j := range w.Shape[0] {
			one, err := alone.Run(context.Background(), map[string]*backend.Tensor{"input_1": w.View(j, j+1)}, []string{"conv2d_19"})
			if err != nil {
				t.Fatal(err)
			}
			if d := fixtures.Diff(got.View(j, j+1), one["conv2d_19"], tolerance); d != "" {
				t.Errorf("%s window %d: grouped and alone differ: %s", req.ID, j, d)
			}
		}
	}
}

// TestTokenMerge (row 24): the merger's output keeps the segment level
// (preserved, split with the input pair) and produces its own inner level
// (merged tokens per segment, from the graph's own companions). Each
// request's merged tokens are the view of the group output that the
// graph's offsets delimit at the request's segments; its delivered
// merged_offsets are those offsets rebased to start at 0, its merged_owner
// is derived from them per request, its segment companions are its own.
func TestTokenMerge(t *testing.T) {
	f := fixtures.Lookup("token_merge")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(24, 24))
		shapes := [][]int{{1, 2, 3}, {4, 5}, {0, 3}, {7}, {}, {2, 2, 2, 2}, {1}, {6, 1}}
		var reqs []vm.Request
		for i, tokens := range shapes {
			reqs = append(reqs, fixtures.MergeRequest(rng, fmt.Sprint("r", i, tokens), tokens))
		}
		rec := newRecorder(t, f)
		r := e.grouped(t, f, rec)
		got := runAll(context.Background(), r, reqs)
		compareResponses(t, f, reqs, got, runAll(context.Background(), e.solo(t, f), reqs))
		if r.Stats().Components["merger"].MaxGroupRequests < 2 {
			t.Fatalf("no group of two requests formed")
		}
		calls := rec.invocations()
		for i, resp := range got {
			checkMergedShare(t, resp, len(shapes[i]), calls)
		}
	})
}

// checkMergedShare checks one request's merged tokens against the group
// that computed them.
func checkMergedShare(t *testing.T, r vm.Response, segments int, calls []call) {
	t.Helper()
	merged, delivered := r.Outputs.Get("merged"), r.Outputs.Get("merged_offsets").Int64s()
	if delivered[0] != 0 || delivered[len(delivered)-1] != merged.Shape[0] || len(delivered) != segments+1 {
		t.Errorf("%s: merged_offsets %v for %v merged tokens of %d segments", r.ID, delivered, merged.Shape, segments)
	}
	if merged.Len() == 0 {
		return
	}
	at := slices.IndexFunc(calls, func(c call) bool { return backend.SameBuffer(merged, c.outputs["merged"]) })
	if at < 0 {
		t.Errorf("%s: its merged tokens are not a view of a group output", r.ID)
		return
	}
	c := calls[at]
	row := int64(addr(merged)-addr(c.outputs["merged"])) / (4 * 4)
	produced, segs := c.outputs["merged_offsets"].Int64s(), c.inputs["segment_offsets"].Int64s()
	for k := 0; k+1 < len(segs); k++ {
		span := produced[segs[k] : segs[k+1]+1]
		if span[0] == row && span[len(span)-1]-span[0] == merged.Shape[0] && slices.Equal(rebased(span), delivered) {
			return
		}
	}
	t.Errorf("%s: its share starts at merged row %d, which is not where the graph's offsets %v put a request's segments %v", r.ID, row, produced, segs)
}

func rebased(offs []int64) []int64 {
	out := make([]int64, len(offs))
	for i, o := range offs {
		out[i] = o - offs[0]
	}
	return out
}

// guidanceRequests are the requests of the request_expanded tests: three
// at guidance scale 1.5, two at 0.5, one at 2.5.
func guidanceRequests() []vm.Request {
	return sharedRequests(27, fixtures.Guidance, 1.5, 0.5, 1.5, 2.5, 0.5, 1.5)
}

// sharedRequests draws one request of one item per value of a shared
// input, in order, each made by gen at its value and named after it.
func sharedRequests[V any](seed uint64, gen func(V) fixtures.Gen, values ...V) []vm.Request {
	rng := rand.New(rand.NewPCG(seed, seed))
	reqs := make([]vm.Request, len(values))
	for i, v := range values {
		reqs[i] = gen(v)(rng, fmt.Sprintf("r%d@%v", i, v), 1)
	}
	return reqs
}

// TestRequestExpandedGroups (row 27): each request brings its factor of 2
// latent rows, stacked contiguously (conditional, then unconditional); the
// footprint of a group on expanded_rows is its requests × 2, so at most
// three requests share an invocation; a guidance scale (shared) mismatch
// puts requests in different groups.
func TestRequestExpandedGroups(t *testing.T) {
	f := fixtures.Lookup("request_expanded")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		reqs := guidanceRequests()
		rec := newRecorder(t, f)
		r := e.start(t, f, withRecorder(genrt.WithMaxDelay(250*time.Millisecond), rec)...)
		runAll(context.Background(), r, reqs) // the results are TestRequestExpandedResults'
		byScale := map[float32]int64{}
		for _, c := range rec.invocations() {
			checkGuidanceGroup(t, reqs, c, byScale)
		}
		if want := map[float32]int64{1.5: 6, 0.5: 4, 2.5: 2}; !reflect.DeepEqual(byScale, want) {
			t.Errorf("rows run per guidance scale %v, want %v", byScale, want)
		}
		s := r.Stats().Components["denoiser"]
		if s.Invocations != 3 || s.MaxGroupRequests != 3 {
			t.Errorf("%d invocations, largest group %d: want one group per scale, three requests at 1.5", s.Invocations, s.MaxGroupRequests)
		}
		if p := s.BudgetPeaks[0]; p.Peak != 6 || p.MaxTotal != 6 {
			t.Errorf("budget %v peaked at %d of %d; three requests × factor 2 is 6", p.Dimensions, p.Peak, p.MaxTotal)
		}
	})
}

// checkGuidanceGroup checks one denoiser group: whole requests' row pairs
// in order, all at the group's guidance scale; it adds the group's rows to
// byScale.
func checkGuidanceGroup(t *testing.T, reqs []vm.Request, c call, byScale map[float32]int64) {
	t.Helper()
	latents, scale := c.inputs["latents"], c.inputs["guidance_scale"].Float32s()
	if len(scale) != 1 || latents.Shape[0]%2 != 0 || latents.Shape[0] > 6 {
		t.Errorf("a group of latents %v with guidance scale %v", latents.Shape, scale)
		return
	}
	for p := range latents.Shape[0] / 2 {
		pair := latents.View(2*p, 2*p+2)
		owner := slices.IndexFunc(reqs, func(r vm.Request) bool { return fixtures.Identical(r.Inputs["latents"], pair) })
		if owner < 0 {
			t.Errorf("rows %d and %d of a group are not one request's two rows in order", 2*p, 2*p+1)
		} else if s := reqs[owner].Inputs["guidance_scale"].Float32s()[0]; s != scale[0] {
			t.Errorf("%s (scale %g) ran in a group at scale %g", reqs[owner].ID, s, scale[0])
		}
	}
	byScale[scale[0]] += latents.Shape[0]
}

// TestRequestExpandedResults (row 27): each request's noise (its two rows,
// request_expanded) and guided row (request_aligned) equal its solo result
// and the reference.
func TestRequestExpandedResults(t *testing.T) {
	f := fixtures.Lookup("request_expanded")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		reqs := guidanceRequests()
		got := runAll(context.Background(), e.grouped(t, f, nil), reqs)
		want := runAll(context.Background(), e.solo(t, f), reqs)
		var failed []string
		for i := range reqs {
			if got[i].Err != nil {
				failed = append(failed, fmt.Sprintf("%s grouped: %v", reqs[i].ID, got[i].Err))
			}
			if want[i].Err != nil {
				failed = append(failed, fmt.Sprintf("%s solo: %v", reqs[i].ID, want[i].Err))
			}
		}
		if len(failed) > 0 {
			t.Fatalf("request_expanded fails, grouped and solo (§6 split, row 27):\n%s", strings.Join(failed, "\n"))
		}
		compareResponses(t, f, reqs, got, want)
	})
}
