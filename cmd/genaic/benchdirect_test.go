package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// TestDirectReplaysTheRuntimesCalls: the direct mode's calls are the
// runtime's own, copied: batched, the lockstep run's groups (every image
// of the document once, in as many calls as the engine counted
// invocations, several requests in some); single, one call per request.
// Replayed on fresh sessions, a batched call gives an embedding per image,
// and a pass counts the document's requests, items and calls.
func TestDirectReplaysTheRuntimesCalls(t *testing.T) {
	var errb bytes.Buffer
	e := &env{stdout: &errb, stderr: &errb}
	f, dir, code := loadPlan(e, imagePkg)
	if code != exitOK {
		t.Fatalf("loading %s: %s", imagePkg, errb.String())
	}
	reqs, err := readRequestsFile(e, filepath.Join(imagePkg, "requests64.json"), jsonio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bencher{f: f, pkgDir: dir, flags: benchFlags{engineFlags: engineFlags{workers: 1, threads: 1, maxDelay: 5 * time.Millisecond}}, reqs: reqs, items: itemCounts(f, reqs)}
	slicesSum := func(xs []int64) (n int64) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	var images int64
	for _, r := range reqs {
		images += r.Inputs["pixel_patches"].Shape[0]
	}
	for _, solo := range []bool{false, true} {
		rec, err := b.record(solo)
		if err != nil {
			t.Fatal(err)
		}
		calls := rec.calls["encoder"]
		var rows int64
		for _, c := range calls {
			rows += c.inputs["pixel_patches"].Shape[0]
		}
		st := rec.stats["encoder"]
		if len(rec.comps) != 1 || int64(len(calls)) != st.Invocations || st.Requests != int64(len(reqs)) || rows != images {
			t.Errorf("solo %v: %d components, %d calls of %d images; the engine counted %d invocations of %d requests, the document holds %d images",
				solo, len(rec.comps), len(calls), rows, st.Invocations, st.Requests, images)
		}
		if solo && len(calls) != len(reqs) || !solo && st.MaxGroupRequests < 2 {
			t.Errorf("solo %v: %d calls for %d requests, groups of at most %d", solo, len(calls), len(reqs), st.MaxGroupRequests)
		}
	}
	t.Run("replay", func(t *testing.T) {
		rec, err := b.record(false)
		if err != nil {
			t.Fatal(err)
		}
		stages, err := b.loadStages(vm.Candidate{Slots: 1, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := &replay{stages: stages, calls: rec}
		tg := &directTarget{best: r}
		defer tg.close()
		res := tg.passRound(0)
		if res.failed != 0 || res.ok != len(reqs) || res.items != slicesSum(b.items) || res.groups["encoder"].invocations != int64(len(rec.calls["encoder"])) {
			t.Errorf("one pass: %d answered, %d failed, %d items, %d invocations; want %d, 0, %d, %d",
				res.ok, res.failed, res.items, res.groups["encoder"].invocations, len(reqs), slicesSum(b.items), len(rec.calls["encoder"]))
		}
		c := rec.calls["encoder"][0]
		got, err := stages[0].session.Run(context.Background(), c.inputs, c.outputs)
		if err != nil {
			t.Fatal(err)
		}
		want := c.inputs["pixel_patches"].Shape[0]
		if x := got["embeddings"]; x == nil || x.Shape[0] != want || slices.ContainsFunc(x.Float32s(), func(v float32) bool { return v != v }) {
			t.Errorf("the first batched call replayed: %v; want the embeddings of its %d images", x, want)
		}
	})
}
