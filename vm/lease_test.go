package vm

import (
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

	l := newLease(rec, stats, out(), 2)
	a, b := &held{one: l}, &held{one: l}
	a.release()
	a.release()
	if rec.count() != 0 {
		t.Fatalf("a group of two gave its outputs back after one response was released (twice)")
	}
	b.release()
	if rec.count() != 1 || stats.s.OutputsReused != 1 {
		t.Fatalf("given back %d outputs (%d counted) once both responses were released, want 1", rec.count(), stats.s.OutputsReused)
	}

	rows := &componentSpec{gp: &plan.GroupPlan{Outputs: []plan.Port{{Name: "x", Split: plan.SplitRows}}}}
	bcast := &componentSpec{gp: &plan.GroupPlan{Outputs: []plan.Port{{Name: "x", Split: plan.SplitRows}, {Name: "v", Split: plan.SplitBroadcast}}}}
	chunks := func() []*lease { return []*lease{newLease(rec, stats, out(), 1), nil, newLease(rec, stats, out(), 1)} }
	if m := rows.mergedLease(chunks()); m != nil || rec.count() != 3 {
		t.Errorf("merged by copies: lease %v, %d given back, want none held and both chunks' given back", m, rec.count())
	}
	m := bcast.mergedLease(chunks())
	if m == nil || rec.count() != 3 {
		t.Fatalf("merged with a broadcast output: lease %v, %d given back, want the chunks' held", m, rec.count())
	}
	(&held{one: m}).release()
	if rec.count() != 5 {
		t.Errorf("the merged share's release gave back %d outputs in all, want both chunks' (5)", rec.count())
	}
	if compose([]*lease{nil, nil}) != nil || newLease(nil, stats, out(), 3) != nil {
		t.Errorf("a lease was made where no session takes outputs back")
	}
}
