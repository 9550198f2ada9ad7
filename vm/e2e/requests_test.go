package e2e

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// manyItems is, per fixture, a "many items" request that still fits every
// budget alone.
var manyItems = map[string]int{
	"image_padded": 8, "image_pinned": 4, "video_frames": 4, "video_fixed": 4,
	"audio": 4, "text": 4, "token_merge": 4,
}

// TestItemCounts (row 4): requests of 0, 1 and many items, grouped and
// solo. Every result equals the reference; a zero-item request gets empty
// spans and its own (empty) companions back. A group of zero-item requests
// is never invoked: the invocation count does not move.
func TestItemCounts(t *testing.T) {
	for i, f := range packedFixtures() {
		t.Run(f.pkg, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(40+i), 4))
			reqs := []vm.Request{
				f.gen(rng, "zero", 0), f.gen(rng, "one", 1), f.gen(rng, "many", manyItems[f.pkg]), f.gen(rng, "zero-again", 0),
			}
			e := grouped(t, f.pkg, nil)
			got := e.RunAll(context.Background(), reqs)
			compareResponses(t, f.pkg, reqs, got, solo(t, f.pkg).RunAll(context.Background(), reqs))
			for _, k := range []int{0, 3} {
				if out := got[k].Outputs[payload[f.pkg].out]; out == nil || out.Shape[0] != 0 {
					t.Errorf("%s: %s is %v, want an empty span", reqs[k].ID, payload[f.pkg].out, out)
				}
			}

			before := e.Stats().Components[f.component].Invocations
			zeros := []vm.Request{f.gen(rng, "z1", 0), f.gen(rng, "z2", 0), f.gen(rng, "z3", 0)}
			res := e.RunAll(context.Background(), zeros)
			mustSucceed(t, res)
			if after := e.Stats().Components[f.component].Invocations; after != before {
				t.Errorf("a group of zero-item requests was invoked: %d invocations, then %d", before, after)
			}
			for k, r := range res {
				if d := diff(r.Outputs[payload[f.pkg].out], reference(t, f.pkg, zeros[k])[payload[f.pkg].out], tolerance); d != "" {
					t.Errorf("%s: %s", r.ID, d)
				}
			}
		})
	}
}

// TestEmptyUnits (row 4): a request whose units (clips, windows, segments)
// hold no packed position at all. Its group is not empty (it has units), so
// it is invoked, and the graph maps each empty unit to a zero embedding (no
// merged token). The result must not depend on the group: alone (solo), or
// grouped with a non-empty request, it equals the reference.
func TestEmptyUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 0))
	cases := []struct {
		pkg string
		req vm.Request
	}{
		{"video_frames", videoRequest(rng, "two empty clips", []int{0, 0}, 3, nil)},
		{"audio", audioRequest(rng, "two empty windows", []int{0, 0})},
		{"text", textRequest(rng, "two empty segments", []int{0, 0})},
		{"token_merge", mergeRequest(rng, "two empty segments", []int{0, 0})},
	}
	for _, tc := range cases {
		t.Run(tc.pkg, func(t *testing.T) {
			other := lookup(tc.pkg).gen(rng, "other", 1)
			ref := reference(t, tc.pkg, tc.req)
			withOther := grouped(t, tc.pkg, nil).RunAll(context.Background(), []vm.Request{tc.req, other})
			alone := solo(t, tc.pkg).Run(context.Background(), tc.req)
			for mode, r := range map[string]vm.Response{"grouped with a non-empty request": withOther[0], "alone": alone} {
				if r.Err != nil {
					t.Errorf("%s: %v", mode, r.Err)
					continue
				}
				for name, want := range ref {
					if d := diff(r.Outputs[name], want, tolerance); d != "" {
						t.Errorf("%s: %s: %s", mode, name, d)
					}
				}
			}
		})
	}
}

// corruption is one malformed companion of an otherwise good request.
type corruption struct {
	pkg, name string
	mutate    func(in map[string]*backend.Tensor)
	rule      string // the run/* rule it must fail with
	mention   string // the companion the message must name
}

func set(name string, data ...int64) func(map[string]*backend.Tensor) {
	return func(in map[string]*backend.Tensor) { in[name] = i64(data...) }
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
		return videoRequest(rng, id, []int{2, 2}, 3, validLengths(rng, 4, 3))
	case "audio":
		return audioRequest(rng, id, []int{2, 2})
	case "text":
		return textRequest(rng, id, []int{2, 2})
	case "token_merge":
		return mergeRequest(rng, id, []int{2, 2})
	}
	return lookup(pkg).gen(rng, id, 2)
}

// TestCorruptCompanions (rows 5, 14 and 26): a request with a malformed
// offsets or owner companion, at each level, fails loudly with its run/*
// rule and a message naming the companion, while the good requests of the
// same batch succeed and equal their solo results. Validation happens on
// the host before assembly: a bad request alone is never invoked and
// costs no copy.
func TestCorruptCompanions(t *testing.T) {
	for i, c := range corruptions {
		t.Run(c.pkg+"/"+c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(500+i), 5))
			f := lookup(c.pkg)
			bad := corruptible(rng, c.pkg, "bad")
			c.mutate(bad.Inputs)
			reqs := []vm.Request{corruptible(rng, c.pkg, "good1"), bad, corruptible(rng, c.pkg, "good2")}
			e := grouped(t, c.pkg, nil)
			checkRefused(t, e, f.component, bad, c.rule, c.mention)
			pairs := e.Stats().Components[f.component].GroupSizes[2]
			res := e.RunAll(context.Background(), reqs)
			wantRule(t, res[1].Err, c.rule, c.mention)
			if n := e.Stats().Components[f.component].GroupSizes[2]; n != pairs+1 {
				t.Errorf("the two good requests did not share one group (groups of two: %d, then %d)", pairs, n)
			}
			good := []vm.Request{reqs[0], reqs[2]}
			compareResponses(t, c.pkg, good, []vm.Response{res[0], res[2]}, solo(t, c.pkg).RunAll(context.Background(), good))
		})
	}
}

// checkRefused runs a bad request alone and checks that it failed with its
// rule before any group was assembled or invoked.
func checkRefused(t *testing.T, e *vm.Engine, component string, bad vm.Request, rule, mention string) {
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

// wantRule checks that err is a *backend.RunError of rule whose message names
// mention.
func wantRule(t *testing.T, err error, rule, mention string) {
	t.Helper()
	var re *backend.RunError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *backend.RunError %s", err, rule)
	}
	if re.Rule != rule || !strings.Contains(re.Message, "`"+mention+"`") {
		t.Errorf("got %s: %s\nwant rule %s naming `%s`", re.Rule, re.Message, rule, mention)
	}
}

// TestLengthsBeyondExtent (row 18): a valid length beyond the padded extent,
// a negative one, or a lengths companion of the wrong shape is refused with
// run/lengths before invocation; the rest of the batch runs.
func TestLengthsBeyondExtent(t *testing.T) {
	cases := []struct {
		pkg, name string
		mutate    func(r vm.Request)
	}{
		{"image_padded", "one past the extent", func(r vm.Request) {
			r.Inputs["patch_lengths"].Int64s()[1] = r.Inputs["pixel_patches"].Shape[1] + 1
		}},
		{"image_padded", "negative", func(r vm.Request) { r.Inputs["patch_lengths"].Int64s()[0] = -1 }},
		{"image_padded", "one entry too many", func(r vm.Request) {
			r.Inputs["patch_lengths"] = i64(append(slices.Clone(r.Inputs["patch_lengths"].Int64s()), 1)...)
		}},
		{"video_frames", "a frame past the extent", func(r vm.Request) { r.Inputs["patch_lengths"].Int64s()[3] = 4 }},
	}
	for i, tc := range cases {
		t.Run(tc.pkg+"/"+tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(18+i), 18))
			f := lookup(tc.pkg)
			bad := corruptible(rng, tc.pkg, "bad")
			tc.mutate(bad)
			e := grouped(t, tc.pkg, nil)
			checkRefused(t, e, f.component, bad, "run/lengths", "patch_lengths")
			reqs := []vm.Request{corruptible(rng, tc.pkg, "good1"), bad, corruptible(rng, tc.pkg, "good2")}
			res := e.RunAll(context.Background(), reqs)
			wantRule(t, res[1].Err, "run/lengths", "patch_lengths")
			mustSucceed(t, []vm.Response{res[0], res[2]})
		})
	}
}

// TestItemOverBudget: an item that alone exceeds a budget is refused at
// admission with run/budget naming the budget; it is never queued, so the
// requests around it still run.
func TestItemOverBudget(t *testing.T) {
	cases := []struct {
		pkg, budget string
		req         func(rng *rand.Rand) vm.Request
	}{
		{"image_padded", "[images patches]", func(rng *rand.Rand) vm.Request {
			r := genImagePadded(rng, "bad", 1)
			r.Inputs["pixel_patches"] = padded(rng, []int64{4097}, 4097, 8, 0)
			r.Inputs["patch_lengths"] = i64(4097)
			return r
		}},
		{"video_frames", "[frames]", func(rng *rand.Rand) vm.Request {
			return videoRequest(rng, "bad", []int{17}, 2, validLengths(rng, 17, 2))
		}},
		{"video_fixed", "[clips frames patches]", func(rng *rand.Rand) vm.Request {
			return genVideoFixed(10, 10)(rng, "bad", 1)
		}},
		{"text", "[tokens]", func(rng *rand.Rand) vm.Request { return textRequest(rng, "bad", []int{33}) }},
	}
	for i, tc := range cases {
		t.Run(tc.pkg, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(80+i), 8))
			f := lookup(tc.pkg)
			bad := tc.req(rng)
			e := grouped(t, tc.pkg, nil)
			invocations := e.Stats().Components[f.component].Invocations
			r := e.Run(context.Background(), bad)
			var re *backend.RunError
			if !errors.As(r.Err, &re) || re.Rule != "run/budget" || !strings.Contains(re.Message, tc.budget) {
				t.Fatalf("got %v, want run/budget naming budget %s", r.Err, tc.budget)
			}
			if n := e.Stats().Components[f.component].Invocations; n != invocations {
				t.Errorf("the refused item was invoked")
			}
			res := e.RunAll(context.Background(), []vm.Request{f.gen(rng, "good1", 1), bad, f.gen(rng, "good2", 1)})
			mustSucceed(t, []vm.Response{res[0], res[2]})
			if !errors.As(res[1].Err, &re) || re.Rule != "run/budget" {
				t.Errorf("in a batch: got %v, want run/budget", res[1].Err)
			}
		})
	}
}

// TestRequestSplitAcrossInvocations (§6 group formation): a request whose
// items exceed a budget together, but not one by one, is split item by item
// across invocations and its results concatenated in order: it equals the
// reference of the whole request, delivered companions included, and no
// group exceeded a budget.
func TestRequestSplitAcrossInvocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	cases := []struct {
		pkg string
		req vm.Request
	}{
		{"image_padded", genImagePadded(rng, "20 images", 20)},
		{"video_frames", videoRequest(rng, "3 clips of 6 frames", []int{6, 6, 6}, 2, validLengths(rng, 18, 2))},
		{"audio", audioRequest(rng, "3 windows of 12 frames", []int{12, 12, 12})},
		{"text", textRequest(rng, "3 segments of 12 tokens", []int{12, 12, 12})},
		{"token_merge", mergeRequest(rng, "3 segments of 11 to 13 tokens", []int{11, 12, 13})},
	}
	for _, tc := range cases {
		t.Run(tc.pkg, func(t *testing.T) {
			f := lookup(tc.pkg)
			reqs := []vm.Request{tc.req, f.gen(rng, "small", 1)}
			e := grouped(t, tc.pkg, nil)
			got := e.RunAll(context.Background(), reqs)
			compareResponses(t, tc.pkg, reqs, got, solo(t, tc.pkg).RunAll(context.Background(), reqs))
			s := e.Stats().Components[f.component]
			if s.Invocations < 2 {
				t.Errorf("a request over a budget ran in %d invocation(s)", s.Invocations)
			}
			checkBudgets(t, s)
		})
	}
}

// TestGroupClosesWhenBudgetWouldBeExceeded (§6 group formation, row 19): a
// group closes as soon as a compatible item arrives that would exceed a
// budget; it does not wait out max_delay. Two requests of 10 images each
// cannot share a 16-image group: under a max_delay of an hour, the first
// must still be answered at once. (The second then heads a group of its own
// that waits for company; the test cancels it.) The watchdog is a liveness
// bound, not a timing measurement.
func TestGroupClosesWhenBudgetWouldBeExceeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 19))
	e := open(t, "image_padded", vm.Options{MaxDelay: time.Hour}, nil)
	reqs := []vm.Request{genImagePadded(rng, "a", 10), genImagePadded(rng, "b", 10)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan vm.Response, len(reqs))
	for _, r := range reqs {
		go func() { done <- e.Run(ctx, r) }()
	}
	select {
	case first := <-done:
		if first.Err != nil {
			t.Fatalf("%s: %v", first.ID, first.Err)
		}
		if d := diff(first.Outputs["embeddings"], reference(t, "image_padded", reqs[index(reqs, first.ID)])["embeddings"], tolerance); d != "" {
			t.Errorf("%s: %s", first.ID, d)
		}
	case <-time.After(10 * time.Second):
		cancel()
		// Runtime bug: grouper.gather (vm/grouper.go) puts a compatible
		// item that does not fit (take: compatible && fits, else held) on
		// the held list and keeps the group open until it is exactly full
		// or max_delay passes; §6 closes the group when a budget would be
		// exceeded. Every group that a waiting item cannot join waits out
		// max_delay (in BenchmarkThroughput, image_padded at max_delay=1ms
		// runs slower grouped than solo).
		t.Fatalf("neither request was answered 10s after both arrived: the first group waits for max_delay although the next item would exceed its budget")
	}
	cancel()
	if second := <-done; !errors.Is(second.Err, context.Canceled) {
		t.Errorf("%s: got %v, want it cancelled while waiting for company", second.ID, second.Err)
	}
}

func index(reqs []vm.Request, id string) int {
	return slices.IndexFunc(reqs, func(r vm.Request) bool { return r.ID == id })
}
