package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestItemCounts (row 4): requests of 0, 1 and many items, grouped and
// solo. Every result equals the reference; a zero-item request gets empty
// spans and its own (empty) companions back. A group of zero-item requests
// is never invoked: the invocation count does not move.
func TestItemCounts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, f := range e.among(packedFixtures()) {
			t.Run(f.Name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(40+i), 4))
				reqs := []vm.Request{
					f.Gen(rng, "zero", 0), f.Gen(rng, "one", 1), f.Gen(rng, "many", f.Many), f.Gen(rng, "zero-again", 0),
				}
				r := e.grouped(t, f, nil)
				got := runAll(context.Background(), r, reqs)
				compareResponses(t, f, reqs, got, runAll(context.Background(), e.solo(t, f), reqs))
				for _, k := range []int{0, 3} {
					if out := got[k].Outputs.Get(f.Out); out == nil || out.Shape[0] != 0 {
						t.Errorf("%s: %s is %v, want an empty span", reqs[k].ID, f.Out, out)
					}
				}
				checkZeroGroup(t, f, r, rng)
			})
		}
	})
}

// checkZeroGroup runs a group of zero-item requests: it is never invoked,
// and each request gets its reference (empty) result.
func checkZeroGroup(t *testing.T, f fixtures.Fixture, r Runner, rng *rand.Rand) {
	t.Helper()
	before := r.Stats().Components[f.Component].Invocations
	zeros := []vm.Request{f.Gen(rng, "z1", 0), f.Gen(rng, "z2", 0), f.Gen(rng, "z3", 0)}
	res := runAll(context.Background(), r, zeros)
	mustSucceed(t, res)
	if after := r.Stats().Components[f.Component].Invocations; after != before {
		t.Errorf("a group of zero-item requests was invoked: %d invocations, then %d", before, after)
	}
	for k, resp := range res {
		if d := fixtures.Diff(resp.Outputs.Get(f.Out), f.Reference(t, zeros[k])[f.Out], tolerance); d != "" {
			t.Errorf("%s: %s", resp.ID, d)
		}
	}
}

// TestEmptyUnits (row 4): a request whose units (clips, windows, segments)
// hold no packed position at all. Its group is not empty (it has units), so
// it is invoked, and the graph maps each empty unit to a zero embedding (no
// merged token). The result must not depend on the group: alone (solo), or
// grouped with a non-empty request, it equals the reference.
func TestEmptyUnits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(4, 0))
		cases := []struct {
			pkg string
			req vm.Request
		}{
			{"video_frames", fixtures.VideoRequest(rng, "two empty clips", []int{0, 0}, 3, nil)},
			{"audio", fixtures.AudioRequest(rng, "two empty windows", []int{0, 0})},
			{"text", fixtures.TextRequest(rng, "two empty segments", []int{0, 0})},
			{"token_merge", fixtures.MergeRequest(rng, "two empty segments", []int{0, 0})},
		}
		for _, tc := range cases {
			t.Run(tc.pkg, func(t *testing.T) {
				f := fixtures.Lookup(tc.pkg)
				other := f.Gen(rng, "other", 1)
				ref := f.Reference(t, tc.req)
				withOther := runAll(context.Background(), e.grouped(t, f, nil), []vm.Request{tc.req, other})
				alone := e.solo(t, f).Run(context.Background(), tc.req)
				for mode, r := range map[string]vm.Response{"grouped with a non-empty request": withOther[0], "alone": alone} {
					if r.Err != nil {
						t.Errorf("%s: %v", mode, r.Err)
						continue
					}
					for name, want := range ref {
						if d := fixtures.Diff(r.Outputs.Get(name), want, tolerance); d != "" {
							t.Errorf("%s: %s: %s", mode, name, d)
						}
					}
				}
			})
		}
	})
}

// corruption is one malformed companion of an otherwise good request.
type corruption struct {
	pkg, name string
	mutate    func(in map[string]*backend.Tensor)
	rule      string // the run/* rule it must fail with
	mention   string // the companion the message must name
}

func set(name string, data ...int64) func(map[string]*backend.Tensor) {
	return func(in map[string]*backend.Tensor) { in[name] = fixtures.I64(data...) }
}

// corruptions are built on requests of 2 items, every clip or window or
// segment of 2 frames or tokens, so that every vector below is concrete.
var corruptions = []corruption{
	// image_padded: one level (images → rows).
	{"image_padded", "offsets end past the images", set("image_offsets", 0, 3), "run/offsets", "image_offsets"},
	{"image_padded", "offsets start at 1", set("image_offsets", 1, 2), "run/offsets", "image_offsets"},
	{"image_padded", "offsets empty", set("image_offsets"), "run/extent", "image_offsets"},
	{"image_padded", "owner names a second unit", set("image_owner", 0, 1), "run/owner", "image_owner"},
	{"image_padded", "owner negative", set("image_owner", 0, -1), "run/owner", "image_owner"},
	{"image_padded", "owner too short", set("image_owner", 0), "run/extent", "image_owner"},
	{"image_padded", "two rows in one request", func(in map[string]*backend.Tensor) {
		set("image_offsets", 0, 1, 2)(in)
		set("image_owner", 0, 1)(in)
	}, "run/extent", "pixel_patches"},
	// video_frames level 0 (frames → clips) and level 1 (clips → rows).
	{"video_frames", "level 0 offsets decrease", set("frame_offsets", 0, 3, 2), "run/offsets", "frame_offsets"},
	{"video_frames", "level 0 offsets end short", set("frame_offsets", 0, 2, 3), "run/offsets", "frame_offsets"},
	{"video_frames", "level 0 owner interleaved", set("frame_owner", 0, 1, 0, 1), "run/owner", "frame_owner"},
	{"video_frames", "level 0 owner too long", set("frame_owner", 0, 0, 1, 1, 1), "run/extent", "frame_owner"},
	{"video_frames", "level 1 offsets end past the clips", set("clip_offsets", 0, 3), "run/offsets", "clip_offsets"},
	{"video_frames", "level 1 owner names a second row", set("clip_owner", 0, 1), "run/owner", "clip_owner"},
	{"video_frames", "level 1 owner too short", set("clip_owner", 0), "run/extent", "clip_owner"},
	{"video_frames", "level 1 two rows in one request", func(in map[string]*backend.Tensor) {
		set("clip_offsets", 0, 1, 2)(in)
		set("clip_owner", 0, 1)(in)
	}, "run/extent", "pixel_values"},
	// audio: the level-1 pair is a workflow value, not a port.
	{"audio", "level 0 offsets start at 1", set("frame_offsets", 1, 2, 4), "run/offsets", "frame_offsets"},
	{"audio", "level 0 owner out of range", set("frame_owner", 0, 0, 1, 2), "run/owner", "frame_owner"},
	{"audio", "level 1 offsets end short", set("window_offsets", 0, 1), "run/offsets", "window_offsets"},
	{"audio", "level 1 owner names a second row", set("window_owner", 1, 1), "run/owner", "window_owner"},
	// text and token_merge: tokens → segments → rows.
	{"text", "level 0 offsets end past the tokens", set("token_offsets", 0, 2, 5), "run/offsets", "token_offsets"},
	{"text", "level 0 owner shifted", set("token_owner", 0, 1, 1, 1), "run/owner", "token_owner"},
	{"text", "level 1 offsets decrease", set("segment_offsets", 0, 3, 2), "run/offsets", "segment_offsets"},
	{"text", "level 1 owner too long", set("segment_owner", 0, 0, 0), "run/extent", "segment_owner"},
	{"token_merge", "level 0 owner names a third segment", set("token_owner", 0, 0, 1, 2), "run/owner", "token_owner"},
	{"token_merge", "level 1 offsets end past the segments", set("segment_offsets", 0, 4), "run/offsets", "segment_offsets"},
	{"token_merge", "level 1 owner negative", set("segment_owner", 0, -1), "run/owner", "segment_owner"},
}

// corruptible builds the base request of a corruption case: 2 items, each
// clip, window or segment of 2 frames or tokens.
func corruptible(rng *rand.Rand, pkg, id string) vm.Request {
	switch pkg {
	case "video_frames":
		return fixtures.VideoRequest(rng, id, []int{2, 2}, 3, fixtures.ValidLengths(rng, 4, 3))
	case "audio":
		return fixtures.AudioRequest(rng, id, []int{2, 2})
	case "text":
		return fixtures.TextRequest(rng, id, []int{2, 2})
	case "token_merge":
		return fixtures.MergeRequest(rng, id, []int{2, 2})
	}
	return fixtures.Lookup(pkg).Gen(rng, id, 2)
}

// TestCorruptCompanions (rows 5, 14 and 26): a request with a malformed
// offsets or owner companion, at each level, fails loudly with its run/*
// rule and a message naming the companion, while the good requests of the
// same batch succeed and equal their solo results. Validation happens on
// the host before assembly: a bad request alone is never invoked and
// costs no copy.
func TestCorruptCompanions(t *testing.T) {
	refused := refusals{}
	defer refused.check(t)
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, c := range corruptions {
			t.Run(c.pkg+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(500+i), 5))
				f := fixtures.Lookup(c.pkg)
				bad := corruptible(rng, c.pkg, "bad")
				c.mutate(bad.Inputs)
				reqs := []vm.Request{corruptible(rng, c.pkg, "good1"), bad, corruptible(rng, c.pkg, "good2")}
				r := e.grouped(t, f, nil)
				checkRefused(t, r, f.Component, bad, c.rule, c.mention)
				pairs := r.Stats().Components[f.Component].GroupSizes[2]
				res := runAll(context.Background(), r, reqs)
				wantRule(t, res[1].Err, c.rule, c.mention)
				refused.add(c.pkg+"/"+c.name, e, res[1].Err)
				if n := r.Stats().Components[f.Component].GroupSizes[2]; n != pairs+1 {
					t.Errorf("the two good requests did not share one group (groups of two: %d, then %d)", pairs, n)
				}
				good := []vm.Request{reqs[0], reqs[2]}
				compareResponses(t, f, good, []vm.Response{res[0], res[2]}, runAll(context.Background(), e.solo(t, f), good))
			})
		}
	})
}

// refusals are the errors each engine refused the bad request of each
// case with, so that a test can check that the engines refuse alike, rule
// and message.
type refusals map[string]map[string]string // case → engine → error

func (r refusals) add(key string, e engineKind, err error) {
	if r[key] == nil {
		r[key] = map[string]string{}
	}
	r[key][e.name] = fmt.Sprint(err)
}

// check fails the test for a case some engine did not refuse, or refused
// with another message than the VM.
func (r refusals) check(t *testing.T) {
	t.Helper()
	for key, by := range r {
		for _, e := range engines {
			if msg, ok := by[e.name]; !ok || msg != by[engines[0].name] {
				t.Errorf("%s: the %s engine refused the bad request with %q, the %s engine with %q", key, e.name, msg, engines[0].name, by[engines[0].name])
			}
		}
	}
}

// checkRefused runs a bad request alone and checks that it failed with its
// rule before any group was assembled or invoked.
func checkRefused(t *testing.T, e Runner, component string, bad vm.Request, rule, mention string) {
	t.Helper()
	invocations, copies := e.Stats().Components[component].Invocations, e.Copies(component).Count()
	r := e.Run(context.Background(), bad)
	wantRule(t, r.Err, rule, mention)
	if n := e.Stats().Components[component].Invocations; n != invocations {
		t.Errorf("the refused request was invoked (%d invocations, then %d)", invocations, n)
	}
	if n := e.Copies(component).Count(); n != copies {
		t.Errorf("the refused request cost %d copies", n-copies)
	}
}

// TestLengthsBeyondExtent (row 18): a valid length beyond the padded extent,
// a negative one, or a lengths companion of the wrong shape is refused with
// run/lengths before invocation; the rest of the batch runs.
func TestLengthsBeyondExtent(t *testing.T) {
	refused := refusals{}
	defer refused.check(t)
	cases := []struct {
		pkg, name string
		mutate    func(r vm.Request)
	}{
		{"image_padded", "one past the extent", func(r vm.Request) {
			r.Inputs["patch_lengths"].Int64s()[1] = r.Inputs["pixel_patches"].Shape[1] + 1
		}},
		{"image_padded", "negative", func(r vm.Request) { r.Inputs["patch_lengths"].Int64s()[0] = -1 }},
		{"image_padded", "one entry too many", func(r vm.Request) {
			r.Inputs["patch_lengths"] = fixtures.I64(append(slices.Clone(r.Inputs["patch_lengths"].Int64s()), 1)...)
		}},
		{"video_frames", "a frame past the extent", func(r vm.Request) { r.Inputs["patch_lengths"].Int64s()[3] = 4 }},
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, tc := range cases {
			t.Run(tc.pkg+"/"+tc.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(18+i), 18))
				f := fixtures.Lookup(tc.pkg)
				bad := corruptible(rng, tc.pkg, "bad")
				tc.mutate(bad)
				r := e.grouped(t, f, nil)
				checkRefused(t, r, f.Component, bad, "run/lengths", "patch_lengths")
				reqs := []vm.Request{corruptible(rng, tc.pkg, "good1"), bad, corruptible(rng, tc.pkg, "good2")}
				res := runAll(context.Background(), r, reqs)
				wantRule(t, res[1].Err, "run/lengths", "patch_lengths")
				refused.add(tc.pkg+"/"+tc.name, e, res[1].Err)
				mustSucceed(t, []vm.Response{res[0], res[2]})
			})
		}
	})
}

// TestItemOverBudget: an item that alone exceeds a budget is refused at
// admission with run/budget naming the budget; it is never queued, so the
// requests around it still run.
func TestItemOverBudget(t *testing.T) {
	refused := refusals{}
	defer refused.check(t)
	cases := []struct {
		pkg, budget string
		req         func(rng *rand.Rand) vm.Request
	}{
		{"image_padded", "[images patches]", func(rng *rand.Rand) vm.Request {
			r := fixtures.ImagePadded(rng, "bad", 1)
			r.Inputs["pixel_patches"] = fixtures.Padded(rng, []int64{4097}, 4097, 8, 0)
			r.Inputs["patch_lengths"] = fixtures.I64(4097)
			return r
		}},
		{"video_frames", "[frames]", func(rng *rand.Rand) vm.Request {
			return fixtures.VideoRequest(rng, "bad", []int{17}, 2, fixtures.ValidLengths(rng, 17, 2))
		}},
		{"video_fixed", "[clips frames patches]", func(rng *rand.Rand) vm.Request {
			return fixtures.VideoFixed(10, 10)(rng, "bad", 1)
		}},
		{"text", "[tokens]", func(rng *rand.Rand) vm.Request { return fixtures.TextRequest(rng, "bad", []int{33}) }},
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		for i, tc := range cases {
			t.Run(tc.pkg, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(80+i), 8))
				f := fixtures.Lookup(tc.pkg)
				bad := tc.req(rng)
				r := e.grouped(t, f, nil)
				invocations := r.Stats().Components[f.Component].Invocations
				wantBudget(t, r.Run(context.Background(), bad).Err, tc.budget)
				if n := r.Stats().Components[f.Component].Invocations; n != invocations {
					t.Errorf("the refused item was invoked")
				}
				res := runAll(context.Background(), r, []vm.Request{f.Gen(rng, "good1", 1), bad, f.Gen(rng, "good2", 1)})
				mustSucceed(t, []vm.Response{res[0], res[2]})
				wantBudget(t, res[1].Err, tc.budget)
				refused.add(tc.pkg, e, res[1].Err)
			})
		}
	})
}

// wantBudget checks that err is run/budget naming the budget.
func wantBudget(t *testing.T, err error, budget string) {
	t.Helper()
	var re *backend.RunError
	if !errors.As(err, &re) || re.Rule != "run/budget" || !strings.Contains(re.Message, budget) {
		t.Fatalf("got %v, want run/budget naming budget %s", err, budget)
	}
}

// TestRequestSplitAcrossInvocations (§6 group formation): a request whose
// items exceed a budget together, but not one by one, is split item by item
// across invocations and its results concatenated in order: it equals the
// reference of the whole request, delivered companions included, and no
// group exceeded a budget.
func TestRequestSplitAcrossInvocations(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(6, 6))
		cases := []struct {
			pkg string
			req vm.Request
		}{
			{"image_padded", fixtures.ImagePadded(rng, "20 images", 20)},
			{"video_frames", fixtures.VideoRequest(rng, "3 clips of 6 frames", []int{6, 6, 6}, 2, fixtures.ValidLengths(rng, 18, 2))},
			{"audio", fixtures.AudioRequest(rng, "3 windows of 12 frames", []int{12, 12, 12})},
			{"text", fixtures.TextRequest(rng, "3 segments of 12 tokens", []int{12, 12, 12})},
			{"token_merge", fixtures.MergeRequest(rng, "3 segments of 11 to 13 tokens", []int{11, 12, 13})},
		}
		for _, tc := range cases {
			t.Run(tc.pkg, func(t *testing.T) {
				f := fixtures.Lookup(tc.pkg)
				reqs := []vm.Request{tc.req, f.Gen(rng, "small", 1)}
				r := e.grouped(t, f, nil)
				got := runAll(context.Background(), r, reqs)
				compareResponses(t, f, reqs, got, runAll(context.Background(), e.solo(t, f), reqs))
				s := r.Stats().Components[f.Component]
				if s.Invocations < 2 {
					t.Errorf("a request over a budget ran in %d invocation(s)", s.Invocations)
				}
				checkBudgets(t, s)
			})
		}
	})
}

// TestGroupClosesWhenBudgetWouldBeExceeded (§6 group formation, row 19): a
// group closes as soon as a compatible item arrives that would exceed a
// budget; it does not wait out max_delay. Two requests of 10 images each
// cannot share a 16-image group: under a max_delay of an hour, the first
// must still be answered at once. (The second then heads a group of its own,
// which closes once the engine judges that no company can come, or waits
// until the test cancels it.) The watchdog is a liveness bound, not a
// timing measurement.
func TestGroupClosesWhenBudgetWouldBeExceeded(t *testing.T) {
	f := fixtures.Lookup("image_padded")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		rng := rand.New(rand.NewPCG(19, 19))
		r := e.start(t, f, genrt.WithMaxDelay(time.Hour))
		reqs := []vm.Request{fixtures.ImagePadded(rng, "a", 10), fixtures.ImagePadded(rng, "b", 10)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan vm.Response, len(reqs))
		for _, req := range reqs {
			go func() { done <- r.Run(ctx, req) }()
		}
		select {
		case first := <-done:
			if first.Err != nil {
				t.Fatalf("%s: %v", first.ID, first.Err)
			}
			if d := fixtures.Diff(first.Outputs.Get("embeddings"), f.Reference(t, reqs[index(reqs, first.ID)])["embeddings"], tolerance); d != "" {
				t.Errorf("%s: %s", first.ID, d)
			}
		case <-time.After(10 * time.Second):
			cancel()
			t.Fatalf("neither request was answered 10s after both arrived: the first group waits for max_delay although the next item would exceed its budget")
		}
		cancel()
		switch second := <-done; {
		case errors.Is(second.Err, context.Canceled):
		case second.Err != nil:
			t.Errorf("%s: got %v, want its answer or its cancellation", second.ID, second.Err)
		default:
			if d := fixtures.Diff(second.Outputs.Get("embeddings"), f.Reference(t, reqs[index(reqs, second.ID)])["embeddings"], tolerance); d != "" {
				t.Errorf("%s: %s", second.ID, d)
			}
		}
	})
}

func index(reqs []vm.Request, id string) int {
	return slices.IndexFunc(reqs, func(r vm.Request) bool { return r.ID == id })
}
