package vm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
)

// givenBack is a backend.Recycler that counts what it is given back.
type givenBack struct {
	backend.PortSession
	mu    sync.Mutex
	given []*backend.Tensor
}

func (g *givenBack) Recycle(outs []*backend.Tensor) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.given = append(g.given, outs...)
}

func (g *givenBack) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.given)
}

// TestLeases: a group's outputs go back once every request of the group
// has let go, each response's release counting once however often it is
// called; a share merged from chunks holds the chunks' outputs where a
// broadcast output may pass one through, and lets go of them at once where
// the merge copied every output.
func TestLeases(t *testing.T) {
	rec := &givenBack{}
	out := func() outputs { t, _ := backend.NewTensor("float32", []int64{2}); return outputs{t, nil} }
	stats := &counter{}

	l := newLease(rec, stats, out(), 2, nil)
	a, b := &held{one: l}, &held{one: l}
	a.release(0)
	a.release(0)
	if rec.count() != 0 {
		t.Fatalf("a group of two gave its outputs back after one response was released (twice)")
	}
	b.release(0)
	if rec.count() != 1 || stats.s.OutputsReused != 1 {
		t.Fatalf("given back %d outputs (%d counted) once both responses were released, want 1", rec.count(), stats.s.OutputsReused)
	}

	rows := &componentSpec{gp: &plan.GroupPlan{Outputs: []plan.Port{{Name: "x", Split: plan.SplitRows}}}}
	bcast := &componentSpec{gp: &plan.GroupPlan{Outputs: []plan.Port{{Name: "x", Split: plan.SplitRows}, {Name: "v", Split: plan.SplitBroadcast}}}}
	chunks := func() []*lease {
		return []*lease{newLease(rec, stats, out(), 1, nil), nil, newLease(rec, stats, out(), 1, nil)}
	}
	if m := rows.mergedLease(chunks()); m != nil || rec.count() != 3 {
		t.Errorf("merged by copies: lease %v, %d given back, want none held and both chunks' given back", m, rec.count())
	}
	m := bcast.mergedLease(chunks())
	if m == nil || rec.count() != 3 {
		t.Fatalf("merged with a broadcast output: lease %v, %d given back, want the chunks' held", m, rec.count())
	}
	(&held{one: m}).release(0)
	if rec.count() != 5 {
		t.Errorf("the merged share's release gave back %d outputs in all, want both chunks' (5)", rec.count())
	}
	if compose([]*lease{nil, nil}) != nil || newLease(nil, stats, out(), 3, nil) != nil {
		t.Errorf("a lease was made where no session takes outputs back")
	}
}

// TestSplitRooms: a group's lease comes with a split room, whose share
// slab and views go back to the grouper's rooms, cleared, only once every
// request of the group has let go; the next group takes the same room.
func TestSplitRooms(t *testing.T) {
	rec := &givenBack{}
	stats := &counter{}
	var rooms sync.Pool
	x, _ := backend.NewTensor("float32", []int64{4, 2})
	l := newLease(rec, stats, outputs{x}, 2, &rooms)
	r := l.splitRoom()
	if r == nil || &r.lease != l {
		t.Fatalf("a pooled lease is not its room's: %p, %v", l, r)
	}
	r.slab = append(r.slab[:0], x, x)
	vs := r.views.Append(x, nil, [][2]int64{{0, 1}, {1, 4}})
	a, b := &held{one: l}, &held{one: l}
	a.release(0)
	if r.slab[0] == nil || vs[1].Data == nil {
		t.Fatalf("the room was emptied while a request still held the group's outputs")
	}
	if rooms.Get() != nil {
		t.Fatalf("the room went back while a request still held the group's outputs")
	}
	b.release(0)
	if r.slab[0] != nil || vs[1].Data != nil || len(l.outs) != 0 {
		t.Errorf("the room went back holding the group's outputs: slab %v, view %v, outs %v", r.slab, vs[1].Data, l.outs)
	}
	// The pool may drop what it holds (a collection empties it, and so
	// does the race detector now and then), so the next lease may have a
	// new room; it has one.
	if next := newLease(rec, stats, outputs{x}, 1, &rooms); next.splitRoom() == nil {
		t.Errorf("the next group's lease has no room")
	}
}

// TestHoldingCopies: a Holding's copies share what it holds, as a
// Response's do: a generated executor's Response copied and both copies
// released lets go of its groups' outputs once, not once per copy, so the
// group's other requests keep theirs.
func TestHoldingCopies(t *testing.T) {
	rec := &givenBack{}
	x, _ := backend.NewTensor("float32", []int64{2})
	l := newLease(rec, &counter{}, outputs{x}, 2, nil)
	var h Holding
	h.add(l)
	c := h
	h.Release()
	c.Release()
	resp := h.Respond("r", Outputs{})
	resp.Release()
	if rec.count() != 0 {
		t.Fatalf("a request of a group of two, its Holding copied and every copy released, gave the group's outputs back")
	}
	other := &held{one: l}
	other.release(0)
	if rec.count() != 1 {
		t.Errorf("given back %d outputs once both requests let go, want 1", rec.count())
	}
	var none Holding
	none.Release()
	if r := none.Respond("empty", Outputs{}); r.held != nil {
		t.Errorf("an empty Holding's response holds something")
	}
}

// TestRecords: a window's records are emptied and given back only once
// every record handed out is released, each record then in its next use;
// a response of the earlier use released again (a copy) releases nothing
// of the next use's; and a record taken into another response (a request
// given as items) keeps them from going back.
func TestRecords(t *testing.T) {
	rec := &givenBack{}
	x, _ := backend.NewTensor("float32", []int64{2})
	var e Engine
	// hand answers a window of two requests in w, one group's.
	hand := func(w *records) (*lease, Response, Response) {
		l := newLease(rec, &counter{}, outputs{x}, 2, nil)
		var rs [2]Response
		for i := range rs {
			h := w.record(i)
			h.one, h.recs = l, w
			w.outs[i] = x
			rs[i] = Response{ID: fmt.Sprint(i), held: h, use: h.use()}
		}
		w.live.Store(2)
		return l, rs[0], rs[1]
	}
	w := e.getRecords(2, 1)
	_, a, b := hand(w)
	stale := a
	a.Release()
	if w.outs[0] == nil || w.held[0].one == nil {
		t.Fatalf("a window's records were emptied while one of its responses was held")
	}
	b.Release()
	if rec.count() != 1 || w.outs[0] != nil || w.held[0].one != nil {
		t.Fatalf("both released: %d outputs given back (want 1), records emptied: %v", rec.count(), w.outs[0] == nil && w.held[0].one == nil)
	}
	// The next window answered in the same records (what the pool hands
	// out, when it keeps them): the stale copy releases nothing of it.
	l, c, _ := hand(w)
	if c.use != a.use+1 {
		t.Errorf("the records' next use is %d, want %d", c.use, a.use+1)
	}
	stale.Release()
	if l.refs.Load() != 2 || w.held[0].state.Load()&1 != 0 {
		t.Fatalf("a copy of the earlier use's response, released late, let go of the next use's (refs %d)", l.refs.Load())
	}
	c.Release()
	if l.refs.Load() != 1 {
		t.Errorf("the next use's response let go of %d shares, want 1", 2-l.refs.Load())
	}

	// A record taken into another response: the window's records are
	// never emptied, though every response is released.
	v := e.getRecords(2, 1)
	_, p, q := hand(v)
	var into Holding
	into.Take(p)
	q.Release()
	into.Release()
	if v.outs[0] == nil || v.live.Load() == 0 {
		t.Errorf("a window one of whose records was taken was emptied for use again")
	}
}

// TestReleaseAll: a document's responses released with ReleaseAll leave
// their slice emptied (it holds nothing for the collector to keep), and a
// later RunAll answers in it, each response its own request's.
func TestReleaseAll(t *testing.T) {
	e := imageEngine(t, Options{})
	defer e.Close()
	rng := rand.New(rand.NewSource(3))
	doc := func(prefix string, n int) []Request {
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = imageRequest(rng, fmt.Sprint(prefix, i), 1+rng.Intn(3))
		}
		return reqs
	}
	reused := false
	// The pool may drop what it holds (the race detector does, at
	// random), so the slice is given back a few times.
	for round := range 8 {
		reqs := doc(fmt.Sprint("d", round, "-"), 6)
		resps := e.RunAll(context.Background(), reqs)
		at := &resps[0]
		ReleaseAll(resps)
		if i := slices.IndexFunc(resps[:cap(resps)], func(r Response) bool { return r.ID != "" || r.held != nil }); i >= 0 {
			t.Fatalf("a slice given back still holds response %d", i)
		}
		next := doc(fmt.Sprint("n", round, "-"), 4)
		again := e.RunAll(context.Background(), next)
		for i, r := range again {
			if r.Err != nil || r.ID != next[i].ID || r.Outputs.Get("embeddings") == nil {
				t.Fatalf("response %d of a document answered in a slice given back: %s, %v", i, r.ID, r.Err)
			}
		}
		reused = reused || &again[0] == at
		ReleaseAll(again)
	}
	if !reused {
		t.Errorf("no RunAll answered in a slice ReleaseAll gave back")
	}
	// Given back twice, a slice is given out once.
	twice := e.RunAll(context.Background(), doc("t", 3))
	ReleaseAll(twice)
	ReleaseAll(twice)
	if a, b := responsesFor(3), responsesFor(3); &a[0] == &b[0] {
		t.Errorf("a slice released twice with ReleaseAll was handed to two callers")
	}
}
