package vm

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
)

// Outputs given back.
//
// A group's outputs are one buffer per output port, which the split cuts
// into its requests' views: the buffer lives as long as any response
// that views it. A caller that is done with a response (a server once it
// has written it) says so with Release; when every request of a group
// has, no view of the group's outputs is read any more, and the runtime
// gives them back to the session (backend.Recycler), which writes a later
// group's outputs into them. A response never released keeps its views
// valid for good (its group's buffers are simply never given back), so
// Release is an optimisation a caller opts into, never a duty.

// lease holds a group's outputs for the requests that got a share of
// them; the last of those to let go gives them back.
type lease struct {
	refs  atomic.Int32
	rec   backend.Recycler
	stats *counter
	outs  []*backend.Tensor
	// parts, where set, are the leases of a request's chunks (one item
	// split across groups): the merged outputs may view any of them, so
	// letting go of the request's share lets go of them all.
	parts []*lease
	// room, where set, is the split room the lease is part of, put back
	// into rooms once the last request lets go.
	room  *splitRoom
	rooms *sync.Pool
}

// splitRoom is what a group's split hands its requests, kept with the
// lease of the group's outputs and used again once every request has let
// go (a grouper's rooms): the lease itself, the requests' share slab and
// their views. A group whose responses are released allocates none of
// them again, which spares the collector the largest part of a group's
// garbage, its views.
type splitRoom struct {
	lease lease
	slab  []*backend.Tensor
	views backend.ViewRoom
}

// splitRoom is the split room of the group a lease is of, or nil.
func (l *lease) splitRoom() *splitRoom {
	if l == nil {
		return nil
	}
	return l.room
}

// newLease is the lease of a group's outputs (by plan output) for its n
// requests, nil where the session takes none back; taken with a split
// room from rooms where that is not nil.
func newLease(rec backend.Recycler, stats *counter, outs outputs, n int, rooms *sync.Pool) *lease {
	if rec == nil || n == 0 {
		return nil
	}
	var l *lease
	if rooms != nil {
		r, _ := rooms.Get().(*splitRoom)
		if r == nil {
			r = new(splitRoom)
		}
		l = &r.lease
		l.room, l.rooms = r, rooms
	} else {
		l = new(lease)
	}
	l.rec, l.stats = rec, stats
	for _, t := range outs {
		if t != nil {
			l.outs = append(l.outs, t)
		}
	}
	l.refs.Store(int32(n))
	return l
}

// compose is the lease of a request's share merged from its chunks'
// shares (leases: theirs, nil where a chunk holds none), nil where none
// holds any.
func compose(leases []*lease) *lease {
	var parts []*lease
	for _, l := range leases {
		if l != nil {
			parts = append(parts, l)
		}
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	l := &lease{parts: parts}
	l.refs.Store(1)
	return l
}

// mergedLease is the lease a request's share merged from its chunks'
// shares holds: none where the merge copied every output (the chunks'
// leases are let go of at once), all of the chunks' where a broadcast
// output passes one chunk's through.
func (s *componentSpec) mergedLease(leases []*lease) *lease {
	if !slices.ContainsFunc(s.gp.Outputs, func(o plan.Port) bool { return o.Split == plan.SplitBroadcast }) {
		for _, l := range leases {
			l.drop()
		}
		return nil
	}
	return compose(leases)
}

// drop is one request letting go of the group's outputs.
func (l *lease) drop() {
	if l == nil || l.refs.Add(-1) != 0 {
		return
	}
	if l.parts != nil {
		for _, p := range l.parts {
			p.drop()
		}
		return
	}
	l.rec.Recycle(l.outs)
	l.stats.reused()
	if r := l.room; r != nil {
		clear(l.outs)
		l.outs = l.outs[:0]
		clear(r.slab)
		r.views.Reset()
		l.rooms.Put(r)
	}
}

// held is what a response holds of its groups' outputs: the leases of
// its request's shares, let go once. Most requests hold one (a workflow
// of one grouped invoke), kept inline. A lockstep window's records are
// used again once all its responses are released (records, below): a
// record counts its uses, and a response names the use it holds, so that
// a copy of an earlier use's response released late lets go of nothing.
type held struct {
	state atomic.Uint64 // the use << 1, | 1 once released or taken
	one   *lease
	more  []*lease
	recs  *records // the window's records this is one of; nil: its own
}

// use is the use of h a response made now holds (0 for a nil record, or
// one never used again).
func (h *held) use() uint64 {
	if h == nil {
		return 0
	}
	return h.state.Load() >> 1
}

// claim reports whether this is the first release (or take) of h's use.
func (h *held) claim(use uint64) bool {
	return h.state.CompareAndSwap(use<<1, use<<1|1)
}

// release lets go of h's leases, once for its use.
func (h *held) release(use uint64) {
	if h == nil || !h.claim(use) {
		return
	}
	h.one.drop()
	for _, l := range h.more {
		l.drop()
	}
	if h.recs != nil {
		h.recs.letGo()
	}
}

// records are what a lockstep window hands its responses beside their
// outputs: the table their Outputs are parts of and their held records,
// one allocation each. Once every response of the window has been
// released they go back to the engine's pool for a later window, so that
// a caller that releases what it was answered leaves the collector none
// of them. A window
// gives them back only if each of its answered requests holds a record
// (each can release); one that does not, or a record taken into another
// response (a request given as items), keeps them from going back.
type records struct {
	outs []*backend.Tensor
	held []held
	n    int          // requests of the window using them
	live atomic.Int64 // records handed out and not yet released
	pool *sync.Pool
}

// letGo is one of the window's responses released: the last gives the
// records back, emptied, each held record's use counted up.
func (w *records) letGo() {
	if w.live.Add(-1) != 0 {
		return
	}
	w.empty()
	w.pool.Put(w)
}

// empty clears what the records pointed to and counts every held record's
// use up, so that no response handed out before can release it again.
func (w *records) empty() {
	clear(w.outs)
	for i := range w.held[:min(w.n, len(w.held))] {
		h := &w.held[i]
		h.one = nil
		clear(h.more)
		h.more = h.more[:0]
		h.state.Store((h.state.Load()>>1 + 1) << 1)
	}
}

// add keeps one more lease.
func (h *held) add(l *lease) {
	if h.one == nil {
		h.one = l
	} else {
		h.more = append(h.more, l)
	}
}

// absorb moves the leases of parts, the responses one request's answer is
// made of (its items' plain requests), into one held for that answer
// (nil where none holds any): the parts are never seen by the caller, and
// their own Release does nothing after.
func absorb(parts []Response) *held {
	var h *held
	for _, r := range parts {
		if r.held == nil {
			continue
		}
		if h == nil {
			h = new(held)
		}
		h.take(r.held, r.use)
	}
	if h != nil && h.one == nil {
		return nil // every part was released before
	}
	return h
}

// take moves the leases of p's use into h, unless it was released or
// taken before. A window's record taken is never released: the response
// that took it views the window's output table, so the window's records
// are not used again.
func (h *held) take(p *held, use uint64) {
	if p == nil || p == h || !p.claim(use) {
		return
	}
	if p.one != nil {
		h.add(p.one)
	}
	for _, l := range p.more {
		h.add(l)
	}
}

// Release says that the caller reads the response's outputs no more, nor
// those of any copy of it, nor anything made from them without a copy
// (a view, Engine.Compact's reslice): the memory they view may then hold
// the outputs of later requests. A server calls it once it has written
// the response.
// Releasing a response (or a copy of it) again does nothing; a response
// never released stays valid.
func (r Response) Release() { r.held.release(r.use) }

// ReleaseAll releases every response of resps (Release) and gives the
// slice itself back, emptied, for a later RunAll or RunBatch to answer
// in: the caller reads neither resps nor anything it released after. A
// caller that runs document after document in lockstep then leaves the
// collector none of its answers (their outputs, views, records, and the
// slice of them). Calling it again at once on the same slice does
// nothing; once a later RunAll may have been answered in the slice, it
// would release that RunAll's responses.
func ReleaseAll(resps []Response) {
	if cap(resps) == 0 || resps[:1][0].use == releasedAll {
		return
	}
	for _, r := range resps {
		r.Release()
	}
	resps = resps[:cap(resps)]
	clear(resps)
	resps[0].use = releasedAll
	responseSlices.Put(&resps)
}

// releasedAll marks the first response of a slice ReleaseAll gave back: no
// response's use is ever that (a record's fits in 63 bits).
const releasedAll = ^uint64(0)

// responseSlices holds the slices ReleaseAll gave back.
var responseSlices sync.Pool // of *[]Response

// responsesFor returns a slice of n empty responses, one given back where
// one is long enough.
func responsesFor(n int) []Response {
	if p, _ := responseSlices.Get().(*[]Response); p != nil && cap(*p) >= n {
		out := (*p)[:n]
		out[:1][0].use = 0
		return out
	}
	return make([]Response, n)
}

// Holding is what a request run outside the interpreter (a generated
// executor's) holds of its groups' output buffers: each InvokeHolding
// adds its share's, and Take a response's. Release lets go of them, once;
// Respond makes a Response that holds them instead, for a caller that
// releases that. A Holding is one request's, filled by one goroutine at a
// time; once filled, its copies share what it holds, as a Response's do,
// so that releasing a copy too does nothing more (a struct that holds it,
// a generated executor's Response, may be copied).
type Holding struct{ h *held }

// Release says that the outputs of the request's invocations, and
// everything made from them without a copy, are read no more (as
// Response.Release does for a response). Releasing again does nothing.
func (h *Holding) Release() { h.h.release(0) }

// Respond is the request's response, holding what h holds: releasing
// either releases both.
func (h *Holding) Respond(id string, outs Outputs) Response {
	return Response{ID: id, Outputs: outs, held: h.h}
}

// Take moves what r holds into h: r's own Release does nothing after.
func (h *Holding) Take(r Response) {
	if r.held != nil {
		h.record().take(r.held, r.use)
	}
}

// add keeps one more lease.
func (h *Holding) add(l *lease) { h.record().add(l) }

// record is h's record of what it holds, made on first use.
func (h *Holding) record() *held {
	if h.h == nil {
		h.h = new(held)
	}
	return h.h
}

// hold keeps the lease of a share the run took.
func (r *run) hold(l *lease) {
	if l != nil {
		r.leases = append(r.leases, l)
	}
}

// letGo drops the leases of a run that answers with an error: its
// shares are read no more.
func (r *run) letGo() {
	for _, l := range r.leases {
		l.drop()
	}
	clear(r.leases)
	r.leases = r.leases[:0]
}

// heldBy moves a run's leases into h (a new one where h is nil), h's
// response's now; nil where the run holds none.
func (r *run) heldBy(h *held) *held {
	if len(r.leases) == 0 {
		return nil
	}
	if h == nil {
		h = new(held)
	}
	h.one = r.leases[0]
	if len(r.leases) > 1 {
		h.more = append(h.more[:0], r.leases[1:]...)
	}
	clear(r.leases)
	r.leases = r.leases[:0]
	return h
}
