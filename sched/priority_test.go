package sched

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// urgent is an image entry of priority level.
func urgent(patches int64, t time.Time, level int) *Entry {
	e := image(patches, t)
	e.Priority = level
	return e
}

// TestPriorityOrdersTheQueue: an item joins the queue after every item of
// its priority or a more urgent one, and before the less urgent ones,
// whenever they came; items of one priority keep their order.
func TestPriorityOrdersTheQueue(t *testing.T) {
	p := imagePolicy(time.Second)
	now := time.Now()
	var want [5]*Entry
	for i, level := range []int{0, 0, -1, 3, -1} {
		e := urgent(int64(i+1), now.Add(time.Duration(i)), level)
		p.Push(e)
		want[i] = e
	}
	// -1 (pushed 3rd, 5th), 0 (1st, 2nd), 3 (4th).
	if got := p.Queue(); !slices.Equal(got, []*Entry{want[2], want[4], want[0], want[1], want[3]}) {
		t.Errorf("queue by patches %v, want [3 5 1 2 4]", patchesOf(got))
	}
	// Random pushes: the queue is the pushes stably sorted by priority.
	rng := rand.New(rand.NewSource(4))
	for range 50 {
		p := imagePolicy(time.Second)
		var pushed []*Entry
		for range 1 + rng.Intn(40) {
			e := urgent(1, now, rng.Intn(5)-2)
			p.Push(e)
			pushed = append(pushed, e)
		}
		slices.SortStableFunc(pushed, func(a, b *Entry) int { return a.Priority - b.Priority })
		if !slices.Equal(p.Queue(), pushed) {
			t.Fatal("the queue is not the pushes in order of priority, then of arrival")
		}
	}
}

// TestMoreUrgentItemsGroupFirst: a group is formed from the most urgent
// waiting item, takes the items of its priority before any less urgent
// one (the overdue less urgent ones included), and fills what room is
// left with less urgent items, unless a budget kept an urgent item out.
func TestMoreUrgentItemsGroupFirst(t *testing.T) {
	now := time.Now()
	p := imagePolicy(time.Millisecond)
	late := now.Add(-time.Hour) // long past the delay
	for range 10 {
		p.Push(urgent(1, late, 2))
	}
	for range 10 {
		p.Push(urgent(1, now, 1))
	}
	group, _ := p.Next(now, Outlook{Closed: true}, nil)
	levels := map[int]int{}
	for _, e := range group {
		levels[e.Priority]++
	}
	if len(group) != 16 || levels[1] != 10 || levels[2] != 6 {
		t.Errorf("group of %d, by priority %v; want the 10 urgent items and 6 of the others", len(group), levels)
	}

	// 4096 image-patches a group, padded: an urgent image of 1000 patches,
	// then one of 3000, which would make it 2 × 3000, and a less urgent one
	// of 1000, which would fit. A group that a budget closed on an urgent
	// item takes no less urgent one.
	p = imagePolicy(time.Hour)
	p.Push(urgent(1000, now, 0))
	p.Push(urgent(3000, now, 0))
	p.Push(urgent(1000, now, 1))
	for _, want := range [][]int64{{1000}, {3000}, {1000}} {
		if group, _ := p.Next(now, Outlook{Closed: true}, nil); !slices.Equal(patchesOf(group), want) {
			t.Errorf("a group took %v, want %v", patchesOf(group), want)
		}
	}
}

// TestPriorityKeepsBurstsApart: a burst whose items differ in priority is
// not reordered by extent: its levels stay in order.
func TestPriorityKeepsBurstsApart(t *testing.T) {
	p := paddingCostly(imagePolicy(time.Second))
	now := time.Now()
	for i, patches := range []int64{60, 2, 60, 2} {
		p.Push(urgent(patches, now, i%2))
	}
	p.sortBurst()
	if p.sorted {
		t.Fatal("a burst of two priorities was sorted by extent")
	}
	if got := patchesOf(p.Queue()); !slices.Equal(got, []int64{60, 60, 2, 2}) {
		t.Errorf("queue %v, want the level-0 items first: [60 60 2 2]", got)
	}
}

// TestHoldsSeesAnInsertedItem: Holds's scan, which follows items joining
// at the end, starts over when a more urgent item is inserted before it.
func TestHoldsSeesAnInsertedItem(t *testing.T) {
	p := imagePolicy(0)
	now := time.Now()
	p.Push(urgent(1, now, 1))
	p.Push(urgent(1, now, 1))
	if p.Holds(1) {
		t.Fatal("two images of one patch hold a full group")
	}
	// Padded to 3000 patches, two images take 6000 of 4096 image-patches.
	p.Push(urgent(3000, now, 0))
	if !p.Holds(1) {
		t.Error("an image of 3000 patches inserted before two of one: Holds(1) is false")
	}
}

// TestDeadlineBoundsTheWait: a group whose items may still be joined
// waits up to max_delay, but no longer than leaves the time it may be
// expected to run (Cost.RunBound) before the earliest deadline of its
// items' requests; one that cannot end its run by that deadline closes at
// once.
func TestDeadlineBoundsTheWait(t *testing.T) {
	now := time.Now()
	p := imagePolicy(time.Second)
	p.Cost.Observe(1, 1, 1, 2*time.Millisecond) // groups run for 2 ms
	soon, cancel := context.WithDeadline(context.Background(), now.Add(10*time.Millisecond))
	defer cancel()
	e := image(4, now)
	p.Push(e)
	coming := Outlook{Coming: true}
	if _, wait := p.Next(now, coming, nil); wait != time.Second {
		t.Errorf("no deadline: the group waits %v, want max_delay (1s)", wait)
	}
	e2 := image(4, now)
	e2.Ctx = soon
	p.Push(e2)
	if _, wait := p.Next(now, coming, nil); wait != 8*time.Millisecond {
		t.Errorf("a deadline 10ms away, runs of 2ms: the group waits %v, want 8ms", wait)
	}
	if group, wait := p.Next(now.Add(9*time.Millisecond), coming, nil); len(group) != 2 {
		t.Errorf("1ms before the deadline: a group of %d formed (wait %v), want both items at once", len(group), wait)
	}

	// Runs that vary: the group stops waiting the mean run and twice the
	// runs' spread before the deadline, not the mean run alone.
	p = imagePolicy(time.Second)
	for i := range 20 {
		p.Cost.Observe(1, 1, 1, time.Duration(2+4*(i%2))*time.Millisecond) // 2 and 6 ms
	}
	mean, _ := p.Cost.ExpectedRun()
	bound, _ := p.Cost.RunBound()
	if bound < mean+2*time.Millisecond || bound > 10*time.Millisecond {
		t.Fatalf("runs of 2 and 6 ms: bound %v, mean %v; want the bound about 4 ms above the mean", bound, mean)
	}
	e3 := image(4, now)
	e3.Ctx = soon
	p.Push(e3)
	if _, wait := p.Next(now, coming, nil); wait != 10*time.Millisecond-bound {
		t.Errorf("a deadline 10ms away, runs of 2 and 6 ms (bound %v): the group waits %v, want %v", bound, wait, 10*time.Millisecond-bound)
	}
}

// TestOldestItemBoundsTheWait: a group waits no longer than max_delay
// after its oldest item was queued, which is not its first where a less
// urgent item has waited longer than the urgent one it joins.
func TestOldestItemBoundsTheWait(t *testing.T) {
	now := time.Now()
	p := imagePolicy(10 * time.Millisecond)
	p.Push(urgent(4, now.Add(-6*time.Millisecond), 1))
	p.Push(urgent(4, now, 0))
	if _, wait := p.Next(now, Outlook{Coming: true}, nil); wait != 4*time.Millisecond {
		t.Errorf("the less urgent item queued 6ms ago: the group waits %v, want 4ms", wait)
	}
}

// TestDisplaceTakesTheNewestLeastUrgent: Displace takes the newest of the
// least urgent items less urgent than the arrival, passing over items
// whose callers wait for room, or nothing where too few such wait.
func TestDisplaceTakesTheNewestLeastUrgent(t *testing.T) {
	now := time.Now()
	p := imagePolicy(time.Second)
	a, b, c, d, e := urgent(1, now, 0), urgent(2, now, 1), urgent(3, now, 1), urgent(4, now, 1), urgent(5, now, 2)
	b.waits = true
	for _, x := range []*Entry{a, b, c, d, e} {
		p.Push(x)
	}
	if out := p.Displace(2, 0); !slices.Equal(out, []*Entry{e, d}) || !slices.Equal(p.Queue(), []*Entry{a, b, c}) {
		t.Errorf("displaced %v, queue %v; want [5 4], [1 2 3]", patchesOf(out), patchesOf(p.Queue()))
	}
	for _, c := range []struct{ n, level int }{{2, 0}, {1, 1}} {
		if out := p.Displace(c.n, c.level); out != nil || len(p.Queue()) != 3 {
			t.Errorf("Displace(%d, %d): took %v, want nothing", c.n, c.level, patchesOf(out))
		}
	}
}

// TestUrgentArrivalDisplaces: at a full queue a server's caller is
// refused Full unless as many less urgent items of callers that do not
// wait for room wait as its own: then the newest of them are answered
// Full (Drop) and it takes their room.
func TestUrgentArrivalDisplaces(t *testing.T) {
	f := &fakeExec{hold: make(chan struct{}), started: make(chan struct{}, 1)}
	s := newTestScheduler(t, f, 2, 1)
	t.Cleanup(func() { close(f.hold) }) // before Close, which waits for the runner
	now := time.Now()
	enqueue := func(e *Entry) error { return s.Enqueue(context.Background(), false, e) }
	if err := enqueue(urgent(1, now, 0)); err != nil {
		t.Fatal(err)
	}
	<-f.started // the runner holds the one slot: the queue stays as filled
	b1, b2 := urgent(2, now, 1), urgent(3, now, 1)
	for _, e := range []*Entry{b1, b2} {
		if err := enqueue(e); err != nil {
			t.Fatal(err)
		}
	}
	var qe *QueueError
	if err := enqueue(urgent(4, now, 1)); !errors.As(err, &qe) || qe.Refusal != Full {
		t.Errorf("an arrival as urgent as the full queue's items: %v, want Full", err)
	}
	u := urgent(5, now, 0)
	if err := enqueue(u); err != nil {
		t.Fatalf("an urgent arrival at a full queue of less urgent items: %v", err)
	}
	if err := f.dropped[b2]; !errors.As(err, &qe) || qe.Refusal != Full || f.dropped[b1] != nil {
		t.Errorf("displaced: b1 %v, b2 %v; want the newest (b2) answered Full", f.dropped[b1], err)
	}
	s.Lock()
	got := slices.Clone(s.Policy().Queue())
	s.Unlock()
	if !slices.Equal(got, []*Entry{u, b1}) {
		t.Errorf("queue %v, want [5 2]", patchesOf(got))
	}
}

// TestPolicyKeepsEveryItem: random pushes (of several priorities, keys,
// extents and times, bursts among them), groups taken, displacements and
// drops keep every item exactly once (waiting, in a group, displaced or
// dropped); the queue stays in order of priority; a group is formed
// from the most urgent waiting item, holds only items compatible with it,
// keeps within every budget unless it is one item alone, and takes no
// item less urgent than one it left waiting that fits beside it in every
// budget; Displace takes only less urgent items whose callers do not
// wait for room.
func TestPolicyKeepsEveryItem(t *testing.T) {
	rng := rand.New(rand.NewSource(44))
	now := time.Now()
	for round := range 300 {
		p := imagePolicy(time.Duration(rng.Intn(3)) * time.Millisecond)
		costly := round%2 == 0 // padding may keep an item out
		if costly {
			paddingCostly(p)
		}
		where := map[*Entry]string{} // every item pushed, and where it is
		check := func(what string) {
			t.Helper()
			q := p.Queue()
			for i, e := range q {
				if where[e] != "waiting" {
					t.Fatalf("round %d, after %s: a queued item is %q", round, what, where[e])
				}
				if i > 0 && q[i-1].Priority > e.Priority {
					t.Fatalf("round %d, after %s: the queue is out of priority order", round, what)
				}
			}
			waiting := 0
			for _, w := range where {
				if w == "waiting" {
					waiting++
				}
			}
			if waiting != len(q) {
				t.Fatalf("round %d, after %s: %d items waiting, the queue holds %d", round, what, waiting, len(q))
			}
		}
		at := now
		for op := range 120 {
			switch k := rng.Intn(10); {
			case k < 6: // a push, or a burst of them at one time
				if rng.Intn(4) > 0 {
					at = at.Add(time.Duration(rng.Intn(500)) * time.Microsecond)
				}
				for range 1 + rng.Intn(3) {
					e := urgent(1+rng.Int63n(600), at, rng.Intn(3))
					if rng.Intn(5) == 0 {
						e.Key.Name = "other"
					}
					e.waits = rng.Intn(4) == 0
					p.Push(e)
					where[e] = "waiting"
				}
				check("a push")
			case k < 8: // a group
				if p.Len() == 0 {
					continue
				}
				urgentmost := p.Queue()[0].Priority
				o := Outlook{Closed: rng.Intn(2) == 0, Share: rng.Intn(5)}
				group, _ := p.Next(at.Add(time.Duration(rng.Intn(3))*time.Millisecond), o, nil)
				if group == nil {
					continue
				}
				// A burst of one priority may have been sorted by extent: the
				// group's first item is of the most urgent priority.
				head := group[0]
				if head.Priority != urgentmost {
					t.Fatalf("round %d, op %d: a group formed from an item of priority %d, with %d waiting", round, op, head.Priority, urgentmost)
				}
				sum := p.budgets.Sum()
				for _, e := range group {
					if where[e] != "waiting" || !compatible(head, e) {
						t.Fatalf("round %d, op %d: a group took an item %q or incompatible", round, op, where[e])
					}
					where[e] = "grouped"
					sum.Add(e.Terms)
				}
				if len(group) > 1 && sum.Over() >= 0 {
					t.Fatalf("round %d, op %d: a group of %d over budget %d", round, op, len(group), sum.Over())
				}
				least := group[0].Priority
				for _, e := range group {
					least = max(least, e.Priority)
				}
				for _, e := range p.Queue() {
					// Where nothing but the budgets bounds a group, an item
					// that fits beside it is never left for a less urgent one.
					if !costly && o.Share == 0 && compatible(head, e) && e.Priority < least && sum.Fits(e.Terms) {
						t.Fatalf("round %d, op %d: an item of priority %d left waiting for one of %d", round, op, e.Priority, least)
					}
				}
				check("a group")
			case k < 9: // a displacement
				level := rng.Intn(3)
				out := p.Displace(1+rng.Intn(3), level)
				for _, e := range out {
					if e.Priority <= level || e.waits || where[e] != "waiting" {
						t.Fatalf("round %d, op %d: displaced an item of priority %d (waits %v, %q) for level %d", round, op, e.Priority, e.waits, where[e], level)
					}
					where[e] = "displaced"
				}
				check("a displacement")
			default: // drops
				p.Drop(func(e *Entry) bool {
					if rng.Intn(6) == 0 {
						where[e] = "dropped"
						return true
					}
					return false
				})
				check("drops")
			}
		}
	}
}
