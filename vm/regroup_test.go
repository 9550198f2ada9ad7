package vm

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/sched"
)

// TestFailedGroupRunsAgainOnlyForOthers: when the backend fails a group,
// its items run again one by one only where the group held several
// requests, so that the request whose item fails is the only one to hear
// of it. A group whose items all belong to one request (the chunks of a
// request split across invocations) is not run again: its failure is that
// request's error, every item of it answered with it, after one call.
func TestFailedGroupRunsAgainOnlyForOthers(t *testing.T) {
	const poison = -1
	var calls atomic.Int64
	picky := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		calls.Add(1)
		if slices.Contains(in["pixel_patches"].Float32s(), poison) {
			return nil, &backend.RunError{Rule: backend.RunInput, Message: "a poisoned pixel"}
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, picky, Options{MaxDelay: time.Second}, nil)
	t.Cleanup(func() { e.Close() })
	g := e.groupers["encoder"]
	for _, tc := range []struct {
		name      string
		oneReq    bool
		calls     int64
		regrouped int64
		failed    []bool // which item's answer is an error
	}{
		{"two requests", false, 3, 1, []bool{false, true}},
		{"one request", true, 1, 0, []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			before := e.Stats().Components["encoder"].Regrouped
			good, bad := paddedItem(t, g, 3, time.Now()), paddedItem(t, g, 2, time.Now())
			bad.it.ports[0].t.Float32s()[0] = poison
			if tc.oneReq {
				bad.first = good // the request's second chunk
			}
			g.run(newArena(len(g.spec.gp.Inputs)), []*pending{good, bad}, time.Now(), sched.Release{})
			for i, p := range []*pending{good, bad} {
				s := <-p.done
				if (s.err != nil) != tc.failed[i] {
					t.Errorf("item %d answered with error %v, want an error: %v", i, s.err, tc.failed[i])
				}
				if re := AsRunError(s.err); s.err != nil && re.Rule != backend.RunInput {
					t.Errorf("item %d failed with %s, want the backend's run/input", i, re.Rule)
				}
			}
			regrouped := e.Stats().Components["encoder"].Regrouped - before
			if n := calls.Load(); n != tc.calls || regrouped != tc.regrouped {
				t.Errorf("%d backend calls, %d regrouped; want %d, %d", n, regrouped, tc.calls, tc.regrouped)
			}
		})
	}
}
