package vm

import (
	"context"
	"fmt"
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
	e, g := encoderGrouper(t, picky)
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

// TestFailedRowsFailAloneTheOthersRunAsOneGroup: a backend that lays a
// group's failure at some rows' items (backend.RowErrors, as an adapter
// does an image that does not decode) fails only those requests, each
// with its row's error worded for a group of its own, and the others run
// again as one group: two calls, whatever the group's size. Rows that are
// not the group's items (out of range, twice) are not trusted: each item
// runs alone, as for any other failure.
func TestFailedRowsFailAloneTheOthersRunAsOneGroup(t *testing.T) {
	const poison = -1
	var calls atomic.Int64
	var lie atomic.Bool // name a row past the group's
	rowed := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		calls.Add(1)
		offs, lengths := in["image_offsets"].Int64s(), in["patch_lengths"].Int64s()
		x := in["pixel_patches"]
		per := x.Shape[1] * x.Shape[2] // an image's elements, padded
		var rows backend.RowErrors
		for r := 0; r+1 < len(offs); r++ {
			for i := offs[r]; i < offs[r+1]; i++ {
				if slices.Contains(x.Float32s()[i*per:(i+1)*per], poison) {
					row := r
					if lie.Load() {
						row += len(offs)
					}
					rows = append(rows, backend.RowError{Row: row, Err: &backend.RunError{Rule: backend.RunInput, Message: fmt.Sprintf("image %d of %d patches is poisoned", i-offs[r], lengths[i])}})
					break
				}
			}
		}
		if rows != nil {
			return nil, rows
		}
		return maskedMean(ctx, in)
	}
	e, g := encoderGrouper(t, rowed)
	for _, tc := range []struct {
		name      string
		lie       bool
		bad       []bool // which request's item is poisoned
		calls     int64
		regrouped int64
	}{
		{"one bad of four", false, []bool{false, true, false, false}, 2, 1},
		{"two bad of four", false, []bool{true, false, false, true}, 2, 1},
		{"all bad", false, []bool{true, true, true}, 1, 1},
		{"rows past the group", true, []bool{false, true, false}, 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			lie.Store(tc.lie)
			before := e.Stats().Components["encoder"].Regrouped
			batch := make([]*pending, len(tc.bad))
			for i, bad := range tc.bad {
				batch[i] = paddedItem(t, g, int64(2+i), time.Now())
				if bad {
					batch[i].it.ports[0].t.Float32s()[1] = poison
				}
			}
			g.run(newArena(len(g.spec.gp.Inputs)), batch, time.Now(), sched.Release{})
			for i, p := range batch {
				s := <-p.done
				if (s.err != nil) != tc.bad[i] {
					t.Fatalf("request %d answered with error %v, want an error: %v", i, s.err, tc.bad[i])
				}
				if s.err == nil {
					continue
				}
				// As its own group would have failed: run/input, its own
				// image 0 of its own patches, a group of one.
				want := fmt.Sprintf("component `encoder` (a group of 1 request(s)): image 0 of %d patches is poisoned", 2+i)
				if re := AsRunError(s.err); re.Rule != backend.RunInput || re.Message != want {
					t.Errorf("request %d failed with %s %q, want run/input %q", i, re.Rule, re.Message, want)
				}
			}
			regrouped := e.Stats().Components["encoder"].Regrouped - before
			if n := calls.Load(); n != tc.calls || regrouped != tc.regrouped {
				t.Errorf("%d backend calls, %d regrouped; want %d, %d", n, regrouped, tc.calls, tc.regrouped)
			}
		})
	}
}

// encoderGrouper opens image_padded's engine on the binding f and returns
// it with the encoder's grouper, whose groups a test runs itself.
func encoderGrouper(t *testing.T, f backend.Func) (*Engine, *grouper) {
	e := engineWith(t, f, Options{MaxDelay: time.Second}, nil)
	t.Cleanup(func() { e.Close() })
	return e, e.groupers["encoder"]
}
