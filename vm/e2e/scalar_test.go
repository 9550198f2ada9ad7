package e2e

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// TestScalarInputGrouped: a model input of rank 0 (Silero VAD's sample
// rate, a shared int64) runs grouped and solo, on both engines, with equal
// results that match the reference, and so does the model's rank-0 output
// (shared: every request of a group receives it). Each group passes the
// rate once, as a rank-0 tensor, and holds only requests at that rate.
func TestScalarInputGrouped(t *testing.T) {
	f := fixtures.Lookup("sample_rate")
	forEachEngine(t, func(t *testing.T, e engineKind) {
		// Four requests at 16 kHz, three at 8 kHz, interleaved.
		reqs := sharedRequests(43, fixtures.SampleRate, 16000, 8000, 16000, 16000, 8000, 8000, 16000)
		rec := newRecorder(t, f)
		g := e.start(t, f, withRecorder(genrt.WithMaxDelay(250*time.Millisecond), rec)...)
		got := runAll(context.Background(), g, reqs)
		solo := e.solo(t, f)
		want := runAll(context.Background(), solo, reqs)
		mustSucceed(t, got)
		mustSucceed(t, want)
		compareResponses(t, f, reqs, got, want)
		// Unrecorded, the runners hand groups to ONNX Runtime by port
		// position (backend.PortSession), not by name.
		compareResponses(t, f, reqs, runAll(context.Background(), e.grouped(t, f, nil), reqs), want)
		for i, r := range got {
			if hop := r.Outputs.Get("hop"); hop == nil || hop.Rank() != 0 {
				t.Errorf("%s: hop is %v, want a rank-0 int64", reqs[i].ID, hop)
			}
		}
		rows := map[int64]int64{}
		for _, c := range rec.invocations() {
			checkRateGroup(t, reqs, c, rows)
		}
		if want := map[int64]int64{16000: 4, 8000: 3}; !reflect.DeepEqual(rows, want) {
			t.Errorf("rows run per rate %v, want %v", rows, want)
		}
		s := g.Stats().Components["vad"]
		if s.Invocations != 2 || s.MaxGroupRequests != 4 {
			t.Errorf("%d invocations, largest group %d: want one group per rate, four requests at 16 kHz", s.Invocations, s.MaxGroupRequests)
		}
		if s := solo.Stats().Components["vad"]; s.Invocations != int64(len(reqs)) || s.MaxGroupRequests != 1 {
			t.Errorf("solo: %d invocations, largest group %d; want one per request", s.Invocations, s.MaxGroupRequests)
		}
	})
}

// checkRateGroup checks one invocation of the scorer: a rank-0 rate, and
// rows that are whole requests at that rate; it adds the group's rows to
// rows.
func checkRateGroup(t *testing.T, reqs []vm.Request, c call, rows map[int64]int64) {
	t.Helper()
	audio, sr := c.inputs["audio"], c.inputs["sr"]
	if sr.Rank() != 0 || len(sr.Int64s()) != 1 {
		t.Errorf("a group's sample rate is %v, want one rank-0 value", sr)
		return
	}
	rate := sr.Int64s()[0]
	for r := range audio.Shape[0] {
		row := audio.View(r, r+1)
		owner := slices.IndexFunc(reqs, func(q vm.Request) bool { return fixtures.Identical(q.Inputs["audio"], row) })
		if owner < 0 {
			t.Errorf("row %d of a group is no request's", r)
		} else if q := reqs[owner].Inputs["sr"].Int64s()[0]; q != rate {
			t.Errorf("%s (%d Hz) ran in a group at %d Hz", reqs[owner].ID, q, rate)
		}
	}
	rows[rate] += audio.Shape[0]
}
