package sched

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeExec runs groups for the scheduler's tests: each Run records its
// group and holds its slot until the test lets it go (hold), then
// releases; dropped records the entries dropped with their errors.
type fakeExec struct {
	mu      sync.Mutex
	groups  [][]*Entry
	ways    []Way
	dropped map[*Entry]error
	hold    chan struct{} // nil: runs end at once
	started chan struct{} // a Run began (buffered)
}

func (f *fakeExec) NewSlot() any { return new(int) }

func (f *fakeExec) Run(_ any, group []*Entry, _ time.Time, by Way, release Release) bool {
	f.mu.Lock()
	f.groups = append(f.groups, append([]*Entry(nil), group...))
	f.ways = append(f.ways, by)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold
	}
	release.Done()
	return false
}

func (f *fakeExec) Drop(e *Entry, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropped == nil {
		f.dropped = map[*Entry]error{}
	}
	f.dropped[e] = err
}

// newTestScheduler is a scheduler of the image policy (queue limit
// limit, slots slots) on f, for callers that announce nothing.
func newTestScheduler(t *testing.T, f *fakeExec, limit, slots int) *Scheduler {
	var announced, active atomic.Int64
	var openEnded atomic.Bool
	s := NewScheduler(imagePolicy(time.Millisecond), limit, slots, f, Hints{Announced: &announced, Active: &active, OpenEnded: &openEnded})
	t.Cleanup(s.Close)
	return s
}

// awaitIdle returns once n of s's runners have found nothing to run and
// sleep: a runner still starting up takes what it finds queued, whatever
// a batch claimed, so a test of which way ran a group waits for this.
func awaitIdle(t *testing.T, s *Scheduler, n int) {
	t.Helper()
	for range 100000 {
		s.mu.Lock()
		idle := s.idle
		s.mu.Unlock()
		if idle >= n {
			return
		}
		time.Sleep(10 * time.Microsecond)
	}
	t.Fatalf("fewer than %d runners went idle", n)
}

// undoOwn ends a batch's claim that StartBatch granted and no RunOwn
// takes up.
func undoOwn(s *Scheduler) {
	s.mu.Lock()
	s.own--
	s.mu.Unlock()
	s.wg.Done()
}

// TestRunOwnRule: a lockstep batch that finds the component idle runs its
// own groups with one slot; with two, only once the groups are measured
// to run shorter than runOwnBelow (none measured yet, or longer: the
// runners run them side by side). A busy component's batch hands its
// groups over, as a batch does where the rule is off (RunOwnBelow 0).
func TestRunOwnRule(t *testing.T) {
	start := func(s *Scheduler) bool {
		own := s.StartBatch()
		if own {
			undoOwn(s)
		}
		return own
	}
	f := &fakeExec{hold: make(chan struct{}), started: make(chan struct{}, 1)}
	one := newTestScheduler(t, f, 8, 1)
	if !start(one) {
		t.Error("one slot, idle: the batch hands its groups to the runner")
	}
	if err := one.Enqueue(context.Background(), false, image(4, time.Now())); err != nil {
		t.Fatal(err)
	}
	<-f.started // the runner holds the slot
	if start(one) {
		t.Error("one slot, busy: the batch runs its own groups")
	}
	f.hold <- struct{}{}
	for one.Counts().Running > 0 {
		time.Sleep(time.Millisecond)
	}
	one.Lock()
	one.RunOwnBelow = 0
	one.Unlock()
	if start(one) {
		t.Error("the rule off: the batch runs its own groups")
	}

	two := newTestScheduler(t, &fakeExec{}, 8, 2)
	if start(two) {
		t.Error("two slots, no group measured: the batch runs its own groups")
	}
	cost := two.Cost()
	cost.Observe(4, 64, 64, 2*runOwnBelow)
	if start(two) {
		t.Error("two slots, groups measured long: the batch runs its own groups")
	}
	for range 64 { // the mean comes down to short runs
		cost.Observe(4, 64, 64, runOwnBelow/10)
	}
	if run, _ := cost.ExpectedRun(); run >= runOwnBelow {
		t.Fatalf("expected run %v after short runs", run)
	}
	if !start(two) {
		t.Error("two slots, groups measured short: the batch hands them to the runners")
	}
}

// TestEnqueueBurst: a batch that runs its own groups queues its requests'
// items at once, past the queue's limit if need be (it runs them itself
// at once: waiting for room would wait for itself), but never a request
// whose items no queue of that limit could hold (TooMany, told to that
// request alone); a request that brings nothing is passed over; the
// batch's promise ends. RunOwn then runs them, on the batch's way, and
// the scheduler forgets a batch that a panic unwinds (Abandon).
func TestEnqueueBurst(t *testing.T) {
	f := &fakeExec{}
	s := newTestScheduler(t, f, 3, 1)
	awaitIdle(t, s, 1)
	if !s.StartBatch() {
		t.Fatal("an idle one-slot component: the batch does not run its own groups")
	}
	s.Promise(6)
	now := time.Now()
	items := [][]*Entry{{image(4, now)}, nil, {image(4, now)}, {image(4, now), image(4, now), image(4, now), image(4, now)}, {image(4, now)}, {image(4, now)}}
	refused := map[int]error{}
	queued := s.EnqueueBurst(len(items), func(i int) []*Entry { return items[i] }, func(i int, err error) { refused[i] = err }, 6)
	c := s.Counts()
	if queued != 4 || c.Waiting != 4 || c.Promised != 0 {
		t.Errorf("queued %d, %+v; want 4 items of the batch waiting past the limit of 3, nothing promised", queued, c)
	}
	var qe *QueueError
	if len(refused) != 1 || !errors.As(refused[3], &qe) || qe.Refusal != TooMany || qe.Items != 4 || qe.Limit != 3 {
		t.Errorf("refused %v; want request 3 alone, TooMany (4 items, limit 3)", refused)
	}
	s.RunOwn()
	n := 0
	for i, g := range f.groups {
		n += len(g)
		if f.ways[i] != ByBatch {
			t.Errorf("group %d ran by way %d, want the batch's", i, f.ways[i])
		}
	}
	if n != 4 || s.Counts().Waiting != 0 {
		t.Errorf("RunOwn ran %d items, %d left; want the 4", n, s.Counts().Waiting)
	}

	// A batch unwound by a panic: its promise, its claim and its items go.
	if !s.StartBatch() {
		t.Fatal("the batch does not run its own groups")
	}
	s.Promise(2)
	mine := image(4, now)
	s.EnqueueBurst(1, func(int) []*Entry { return []*Entry{mine} }, func(int, error) {}, 1)
	s.Abandon(1, true, func(e *Entry) bool { return e == mine })
	if c := s.Counts(); c.Waiting != 0 || c.Promised != 0 {
		t.Errorf("after Abandon: %+v, want nothing waiting or promised", c)
	}
}

// TestEnqueueRefusals: a server's caller finds a full queue Full at once,
// a batch's request waits for room until its context ends, items more
// than the queue holds are TooMany, and after Close everything is Closed;
// an item whose request is cancelled while it waits is dropped with the
// context's error, never run.
func TestEnqueueRefusals(t *testing.T) {
	f := &fakeExec{hold: make(chan struct{}), started: make(chan struct{}, 1)}
	s := newTestScheduler(t, f, 2, 1)
	now := time.Now()
	if err := s.Enqueue(context.Background(), false, image(4, now)); err != nil {
		t.Fatal(err)
	}
	<-f.started // the runner holds the one slot: the queue stays as filled
	gone, stop := context.WithCancel(context.Background())
	stop()
	cancelled := image(4, now)
	cancelled.Ctx = gone
	for _, e := range []*Entry{cancelled, image(4, now)} {
		if err := s.Enqueue(context.Background(), false, e); err != nil {
			t.Fatal(err)
		}
	}
	var qe *QueueError
	if err := s.Enqueue(context.Background(), false, image(4, now)); !errors.As(err, &qe) || qe.Refusal != Full || qe.Limit != 2 {
		t.Errorf("a caller at a full queue: %v, want Full", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Enqueue(ctx, true, image(4, now)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a batch's request waiting for room: %v, want its deadline", err)
	}
	if err := s.Enqueue(context.Background(), false, image(4, now), image(4, now), image(4, now)); !errors.As(err, &qe) || qe.Refusal != TooMany {
		t.Errorf("three items at a queue of two: %v, want TooMany", err)
	}
	close(f.hold) // the runner goes on: the cancelled item is dropped, the other runs
	s.Close()
	if err := f.dropped[cancelled]; !errors.Is(err, context.Canceled) || len(f.groups) != 2 || len(f.groups[1]) != 1 || f.groups[1][0] == cancelled {
		t.Errorf("a cancelled item: dropped with %v, groups %v; want context.Canceled, and the other item run alone", err, f.groups)
	}
	if err := s.Enqueue(context.Background(), false, image(4, now)); !errors.As(err, &qe) || qe.Refusal != Closed {
		t.Errorf("after Close: %v, want Closed", err)
	}
}

// TestFreeSlotsShareWhatIsComing: with two slots free, a group closes
// once it holds its share of what waits and what is coming (half: the
// other slot runs the rest side by side), rather than waiting for every
// request coming, which would leave the other slot idle while it runs;
// with one slot free, the group waits for every request coming.
func TestFreeSlotsShareWhatIsComing(t *testing.T) {
	f := &fakeExec{hold: make(chan struct{}), started: make(chan struct{}, 2)}
	var announced, active atomic.Int64
	var openEnded atomic.Bool
	s := NewScheduler(imagePolicy(time.Hour), 16, 2, f, Hints{Announced: &announced, Active: &active, OpenEnded: &openEnded})
	defer s.Close()
	defer close(f.hold)
	active.Store(8) // eight requests running, none here yet
	arrive := func(n int) {
		for range n {
			if err := s.Enqueue(context.Background(), false, image(4, time.Now())); err != nil {
				t.Fatal(err)
			}
		}
	}
	started := func() {
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("no group formed; groups %v, %+v", f.groups, s.Counts())
		}
	}
	arrive(4)
	started()
	arrive(4)
	started()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.groups) != 2 || len(f.groups[0]) != 4 || len(f.groups[1]) != 4 {
		t.Errorf("groups of %v items, want 4 and 4", f.groups)
	}
}

// TestServedSlotsKeepTheirShare: where callers come back once answered
// (open-ended), a group holds at most its share of the items going round,
// waiting, running or coming: with two slots, the 15 requests that come
// while one slot runs a group of one make a group of 8, and the other 7
// are left to the slot running that one. A group of all 15 would leave
// the other slot one caller to run, and the two groups' callers would
// come back out of step from then on.
func TestServedSlotsKeepTheirShare(t *testing.T) {
	f := &fakeExec{hold: make(chan struct{}), started: make(chan struct{}, 3)}
	var announced, active atomic.Int64
	var openEnded atomic.Bool
	s := NewScheduler(imagePolicy(time.Hour), 64, 2, f, Hints{Announced: &announced, Active: &active, OpenEnded: &openEnded})
	started := func() {
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("no group formed; groups %v, %+v", f.groups, s.Counts())
		}
	}
	enqueue := func() {
		if err := s.Enqueue(context.Background(), false, image(4, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	// A request of the one caller the engine knows of runs at once.
	active.Store(1)
	enqueue()
	started()
	// Fifteen more callers, open-ended, while it runs.
	openEnded.Store(true)
	active.Store(16)
	for range 15 {
		enqueue()
	}
	started()
	if c := s.Counts(); c.Waiting != 7 || c.Running != 2 {
		t.Errorf("%+v once 15 arrived; want 7 waiting, 2 groups running", c)
	}
	close(f.hold)
	s.Close()
	var sizes []int
	for _, g := range f.groups {
		sizes = append(sizes, len(g))
	}
	if !slices.Equal(sizes, []int{1, 8, 7}) {
		t.Errorf("groups of %v items, want 1, 8 and 7", sizes)
	}
}
