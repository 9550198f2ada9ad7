package sched

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A Scheduler is one grouped component's queue, its policy, and the
// execution slots that form and run its groups. A slot is held by one
// goroutine at a time, which takes the next group the policy closes
// (Policy.Next) and hands it to the Executor to run:
//
//   - a runner: one goroutine per slot, for the life of the component;
//     while every slot is busy nothing is formed, arrivals queue up, and
//     the next group forms from all of them when a slot frees up;
//   - a lone caller (RunInline), on its own goroutine: where nothing waits,
//     a slot is free and the policy would close a group of this one item at
//     once, the caller runs it rather than waking a runner and waiting to
//     be woken in turn (two thread wakes);
//   - a lockstep batch (StartBatch, RunOwn), on its own goroutine: a batch
//     that finds the component idle runs the groups of its items itself,
//     with one slot, or with several where a group is expected to run
//     shorter than runOwnBelow; longer groups go to the runners, which run
//     them side by side.
//
// Whoever holds a slot forms a group the same way, under the scheduler's
// lock, so no item is taken twice and no more groups run at once than
// there are slots.
type Scheduler struct {
	exec  Executor
	hints Hints

	mu sync.Mutex
	// pol holds the waiting items and decides the groups; it is read and
	// changed under mu only (its cost model has a lock of its own).
	pol      *Policy
	limit    int // the most items the queue may hold
	idle     int // runners waiting for a group
	inFlight int // items handed to slots and not yet answered
	// slots bounds the groups run at once: running by the runners and the
	// batches running their own, inline by lone callers.
	slots, running, inline int
	spares                 []any // slot storage for the runs off the runners
	closed                 bool
	promised               int // items a lockstep batch is admitting now
	// own counts the lockstep batches running their own groups now, which
	// keep the runners asleep; RunOwnBelow is the rule's threshold (0:
	// batches never do, which tests set to take the runners' path).
	own         int
	RunOwnBelow time.Duration

	// room, while a batch's request waits for room in the full queue
	// (awaitRoom), is closed once items leave it (freed); nil otherwise.
	room chan struct{}

	wake chan struct{}  // something changed for an idle runner (cap 1)
	wg   sync.WaitGroup // the runners and the runs off them, which Close waits for

	// holding counts the runners that wait with items queued (for more
	// to come, or a timer): the only ones a finished request may let
	// close a group (RequestDone). A runner counts itself before it reads
	// how many requests run (next), so that a request that finishes
	// meanwhile is either seen finished or sees the runner counted.
	holding atomic.Int32
}

// An Executor runs the groups a Scheduler forms.
type Executor interface {
	// NewSlot returns the storage one slot's runs reuse from group to
	// group; no two runs use the same storage at once.
	NewSlot() any
	// Run runs group (entries the caller queued, in group order), formed
	// at formed, on slot's storage, the way by says. It calls
	// release.Done once, when the group's invocation has ended and before
	// its items are answered, so that a caller's next request never finds
	// the group still counted; it reports whether it answered callers
	// that wait on goroutines of their own (the runner then lets them
	// run).
	Run(slot any, group []*Entry, formed time.Time, by Way, release Release) (answeredCallers bool)
	// Drop answers an entry that leaves the queue without running: with
	// its context's error where its request was cancelled while it
	// waited, or with a *QueueError (Full) where a more urgent request
	// displaced it from a full queue.
	Drop(e *Entry, err error)
}

// Way is which kind of holder ran a group.
type Way int

const (
	ByRunner Way = iota // a runner goroutine
	Inline              // a lone caller, on its own goroutine
	ByBatch             // a lockstep batch, on its own goroutine
)

// Hints is what the caller knows of requests still to come, shared by
// every component of an engine: requests announced by a lockstep run and
// not started, requests running, and whether they come from callers that
// never announce them (a server's).
type Hints struct {
	Announced, Active *atomic.Int64
	OpenEnded         *atomic.Bool
}

// runOwnBelow is the expected run below which a group of a lockstep batch
// costs less run on the batch's goroutine than handed to another slot's
// thread: about the time it takes to wake a parked thread and hand it a
// group's items.
const runOwnBelow = 50 * time.Microsecond

// NewScheduler starts the scheduler of a component with policy pol,
// whose queue holds at most limit items, with slots execution slots (a
// runner each), running groups with exec.
func NewScheduler(pol *Policy, limit, slots int, exec Executor, hints Hints) *Scheduler {
	s := &Scheduler{exec: exec, hints: hints, pol: pol, limit: limit, slots: max(slots, 1),
		RunOwnBelow: runOwnBelow, wake: make(chan struct{}, 1)}
	s.wg.Add(s.slots)
	for range s.slots {
		go s.runner(exec.NewSlot())
	}
	return s
}

// Counts is what a Scheduler holds at one moment: the items waiting, the
// items a lockstep batch still promises, the groups running (on runners
// and batches) and inline, and the items handed out and not answered.
type Counts struct {
	Waiting, Promised, Running, Inline, InFlight int
}

// Counts reads what the scheduler holds now.
func (s *Scheduler) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Counts{Waiting: s.pol.Len(), Promised: s.promised, Running: s.running, Inline: s.inline, InFlight: s.inFlight}
}

// Lock and Unlock hold the scheduler's lock, under which its Policy may
// be read (a snapshot of what it learned).
func (s *Scheduler) Lock()   { s.mu.Lock() }
func (s *Scheduler) Unlock() { s.mu.Unlock() }

// Closed reports whether Close was called.
func (s *Scheduler) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Policy is the component's policy; read it under the lock only.
func (s *Scheduler) Policy() *Policy { return s.pol }

// Cost is the policy's cost model, which every run reports to; it has a
// lock of its own.
func (s *Scheduler) Cost() *Cost { return s.pol.Cost }

// runner runs groups: when its slot is free it forms the next group
// itself (under the lock, so runners never take one item twice), runs
// it, and looks again; with nothing worth running yet it waits for an
// arrival, a timer, or the end of a promise. Forming on the runner that
// will run the group saves a goroutine handoff per group. After a group
// of callers, it yields to the callers it answered (their next requests
// may join the next group) unless the next group already waits.
func (s *Scheduler) runner(slot any) {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle, holds := false, false
	var buf []*Entry // the groups' storage, reused
	for {
		now := time.Now()
		group, wait, ok := s.next(now, idle, &holds, buf)
		idle = group == nil
		if group != nil {
			buf = group[:0]
		}
		switch {
		case !ok:
			return
		case group != nil:
			if s.runTaken(slot, group, now, ByRunner) && !s.nextWaits() {
				// The group's leader, readied on this processor behind
				// this runner, answers the other callers: let them run
				// (and send their next requests) before the next group
				// forms.
				runtime.Gosched()
			}
		case wait > 0:
			timer.Reset(wait)
			select {
			case <-s.wake:
			case <-timer.C:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		default:
			<-s.wake
		}
	}
}

// runTaken runs a group that next or take handed out (a slot counted in
// running) and gives the slot back once its invocation ends.
func (s *Scheduler) runTaken(slot any, group []*Entry, now time.Time, by Way) (answeredCallers bool) {
	answeredCallers = s.exec.Run(slot, group, now, by, Release{s: s, items: len(group)})
	clear(group)
	return answeredCallers
}

// A Release gives a running group's slot back: a value, so that handing
// it to the executor allocates nothing.
type Release struct {
	s      *Scheduler
	items  int
	inline bool
}

// Done gives the slot back; call it once. The end of an inline run wakes
// a runner for what queued meanwhile (every slot may have been taken).
// The zero Release gives nothing back (a group run outside a scheduler).
func (r Release) Done() {
	s := r.s
	if s == nil {
		return
	}
	s.mu.Lock()
	s.inFlight -= r.items
	if r.inline {
		s.inline--
		s.unlockWaking()
		return
	}
	s.running--
	s.mu.Unlock()
}

// next forms the group a free runner runs now (into into's storage), or
// says how long to wait before looking again (0: until something
// changes), counting the runner idle meanwhile, and holding (*holds)
// where items wait. ok is false once the scheduler is closed and every
// item has been handed out.
func (s *Scheduler) next(now time.Time, wasIdle bool, holds *bool, into []*Entry) (group []*Entry, wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wasIdle {
		s.idle--
	}
	if !*holds {
		s.holding.Add(1) // before take reads the requests running
	}
	group, wait, ok = s.take(now, into)
	if *holds = group == nil && ok && s.pol.Len() > 0; !*holds {
		s.holding.Add(-1)
	}
	if group != nil {
		s.running++
	}
	if group == nil && ok {
		s.idle++
	} else if group != nil && s.pol.Len() > 0 && s.idle > 0 {
		s.poke() // another runner may take what is left
	}
	return group, wait, ok
}

// nextWaits reports whether the next group already waits and another
// processor can run the callers just answered: their next requests cannot
// make it fuller, so the runner goes on to it rather than yielding.
func (s *Scheduler) nextWaits() bool {
	if runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pol.Holds(1)
}

// take is next under the lock: the group the policy closes now, taken
// into into's storage, or how long to wait.
func (s *Scheduler) take(now time.Time, into []*Entry) (group []*Entry, wait time.Duration, ok bool) {
	s.dropCancelled()
	if s.pol.Len() == 0 {
		if s.closed {
			s.poke() // let the other runners see it too
		}
		return nil, 0, !s.closed
	}
	if s.running+s.inline >= s.slots {
		return nil, 0, true // a lone caller's inline run holds the last slot; its end pokes
	}
	group, wait = s.pol.Next(now, s.outlook(0), into)
	if group == nil {
		return nil, wait, true
	}
	s.freed()
	s.inFlight += len(group)
	return group, 0, true
}

// outlook is, under the lock, what the scheduler knows of the items still
// to come. A request may still bring an item when a lockstep run has
// announced one and not started it, or when more requests are being run
// than items wait or run here; arriving counts those that are running and
// arriving here now, not yet counted.
func (s *Scheduler) outlook(arriving int) Outlook {
	// Nothing is coming to a group while nothing can join the queue.
	blocked := s.blocked()
	announced := s.hints.Announced.Load()
	coming := s.hints.Active.Load() - int64(s.pol.Len()+s.inFlight+arriving)
	o := Outlook{
		Closed:    s.closed,
		Promised:  s.promised > 0 && !blocked,
		Coming:    !blocked && (announced > 0 || coming > 0),
		OpenEnded: s.hints.OpenEnded.Load(),
	}
	// A group takes one slot's share of the items it is formed from,
	// leaving the other slots theirs, so that they run side by side rather
	// than one after another. A server's callers come back once answered:
	// the items go round, waiting, running on every slot and coming, and
	// each slot takes its share of all of them, all the time. A group of
	// more would leave the slot running next too few, and the callers of
	// the two groups would come back out of step, group after group. A
	// lockstep batch's requests are answered at its end: while items are
	// coming, the free slots share what waits and what is coming.
	switch free := s.slots - s.running - s.inline; {
	case s.slots > 1 && o.OpenEnded:
		all := int64(s.pol.Len()+arriving+s.inFlight) + max(coming, 0) + announced
		o.Share = share(all, s.slots)
	case o.Coming && free > 1:
		o.Share = share(int64(s.pol.Len()+arriving)+max(coming, 0)+announced, free)
	}
	return o
}

// share is one of n slots' share of items: items/n, rounded up.
func share(items int64, n int) int {
	return int(min((items+int64(n)-1)/int64(n), 1<<30))
}

// dropCancelled removes, under the lock, the queued items whose request
// was cancelled, answering them.
func (s *Scheduler) dropCancelled() {
	// A burst's items share their context: it is asked once per run of
	// items that share it.
	var ctx context.Context
	var err error
	cancelled := func(e *Entry) bool {
		if e.Ctx != ctx {
			ctx, err = e.Ctx, nil
			if ctx != nil {
				err = ctx.Err()
			}
		}
		return err != nil
	}
	if !containsFunc(s.pol.Queue(), cancelled) {
		return
	}
	s.pol.Drop(func(e *Entry) bool {
		if !cancelled(e) {
			return false
		}
		s.exec.Drop(e, err)
		return true
	})
	s.freed()
}

// containsFunc is slices.ContainsFunc, written here where the test
// inlines: the queue is scanned once per group formed.
func containsFunc(q []*Entry, f func(*Entry) bool) bool {
	for _, e := range q {
		if f(e) {
			return true
		}
	}
	return false
}

// Submit takes a lone caller's item e: where e may run at once on its
// caller's goroutine (inlineSlot), it returns a slot's storage to run it
// on (RunInline); otherwise it queues e as Enqueue does, returning nil
// and the error e could not join the queue with. One lock serves both,
// so that an item that queues takes it once.
func (s *Scheduler) Submit(ctx context.Context, wait bool, e *Entry) (slot any, err error) {
	s.mu.Lock()
	if slot = s.inlineSlot(e); slot != nil {
		s.mu.Unlock()
		return slot, nil
	}
	return nil, s.enqueueLocked(ctx, wait, e)
}

// inlineSlot takes, under the lock, for a lone caller's item e, a slot
// and its storage to run e on its own goroutine (RunInline), and returns
// the storage; nil when e must queue: something waits, every slot is
// taken, or the policy would let a group of e wait for more.
func (s *Scheduler) inlineSlot(e *Entry) any {
	// e's request is running and not yet counted here: one arriving.
	if s.closed || s.pol.Len() > 0 || s.running+s.inline >= s.slots || !s.pol.Lone(s.outlook(1)) {
		return nil
	}
	s.pol.Arrivals.Arrived(e.Queued, s.inFlight > 0)
	s.inline++
	s.inFlight++
	s.wg.Add(1) // Close waits for inline runs as for runners
	return s.spareSlot()
}

// spareSlot returns, under the lock, storage for a group run off the
// runners (inline, or by its batch): a spare one, or a new one. The run
// puts it back in spares.
func (s *Scheduler) spareSlot() any {
	if n := len(s.spares); n > 0 {
		slot := s.spares[n-1]
		s.spares = s.spares[:n-1]
		return slot
	}
	return s.exec.NewSlot()
}

// RunInline runs group (the lone caller's item Submit let run) on the
// caller's goroutine, on the storage Submit gave, and gives the slot
// back; the storage goes back to the spares once the run has answered
// (an executor's panic drops it).
func (s *Scheduler) RunInline(slot any, group []*Entry) {
	defer s.wg.Done()
	s.exec.Run(slot, group, time.Now(), Inline, Release{s: s, items: len(group), inline: true})
	s.mu.Lock()
	s.spares = append(s.spares, slot)
	s.mu.Unlock()
}

// StartBatch is called as a lockstep batch starts admitting; it reports
// whether the batch runs its own groups (RunOwn, after EnqueueBurst), and
// counts it so. A busy component's batch hands its groups to the runners.
func (s *Scheduler) StartBatch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.pol.Len() > 0 || s.running+s.inline > 0 || !s.batchesRunOwn() {
		return false
	}
	s.own++
	s.wg.Add(1) // Close waits for the batch's groups as for the runners'
	return true
}

// batchesRunOwn reports, under the lock, whether a batch that finds the
// component idle runs its own groups: with one slot, the runner would run
// the same groups one after another, overlapping the batch only with its
// admission, which costs less than the thread it wakes; with several,
// handing groups that run shorter than RunOwnBelow to other threads costs
// more than running them side by side gains.
func (s *Scheduler) batchesRunOwn() bool {
	switch {
	case s.RunOwnBelow <= 0:
		return false
	case s.slots == 1:
		return true
	}
	run, measured := s.pol.Cost.ExpectedRun()
	return measured && run < s.RunOwnBelow
}

// RunOwn runs groups from the queue on the batch's goroutine while a slot
// is free and a group is ready to close, then leaves what is left to the
// runners.
func (s *Scheduler) RunOwn() {
	defer s.wg.Done()
	s.mu.Lock()
	slot := s.spareSlot()
	// The batch hands its queue back to the runners at the end, and after
	// an executor's panic too (the storage it was using is dropped), so
	// that a caller that recovers finds the component serving (runTaken
	// gives the group's slot back).
	locked, finished := true, false
	defer func() {
		if !locked {
			s.mu.Lock()
		}
		s.own--
		if finished {
			s.spares = append(s.spares, slot)
		}
		s.unlockWaking()
	}()
	var buf []*Entry
	for {
		// take forms nothing while every slot is taken, or while the group
		// should still wait (a request of another caller may join it): the
		// runners see to it then.
		now := time.Now()
		group, _, _ := s.take(now, buf)
		if group == nil {
			break
		}
		buf = group[:0]
		s.running++
		s.mu.Unlock()
		locked = false
		s.runTaken(slot, group, now, ByBatch)
		s.mu.Lock()
		locked = true
	}
	finished = true
}

// Abandon forgets a lockstep batch that a panic unwinds: the items it
// still promised, its claim to run its own groups (own: granted by
// StartBatch, not yet taken up by RunOwn), and its items still queued
// (mine reports them), which no one waits for any more.
func (s *Scheduler) Abandon(promised int, own bool, mine func(*Entry) bool) {
	s.mu.Lock()
	s.promised -= promised
	s.pol.Drop(mine)
	s.freed()
	if own {
		s.own--
		s.wg.Done()
	}
	s.unlockWaking()
}

// Refusal is why items can never join the queue: Closed, or TooMany (the
// items are more than the queue holds at once).
type Refusal int

const (
	Closed Refusal = iota + 1
	TooMany
	Full // the queue holds its limit now: retrying later may help
)

// QueueError is why Enqueue refused items.
type QueueError struct {
	Refusal Refusal
	Items   int // the items refused
	Limit   int // the queue's limit
	// Displaced: the items waited in the full queue, and a more urgent
	// arrival took their place (Full).
	Displaced bool
}

func (e *QueueError) Error() string {
	switch {
	case e.Refusal == Closed:
		return "the component is closed"
	case e.Refusal == TooMany:
		return "more items than the queue holds at once"
	case e.Displaced:
		return "the queue was full, and a more urgent arrival took the items' place"
	}
	return "the queue is full"
}

// Enqueue adds es, one request's items, to the queue, as one arrival.
// Where the queue has no room for them a batch's request (wait) waits
// until it has, or until ctx ends (its error is returned), so that a
// batch job loses no request to a busy queue; a server's caller fails
// Full at once, and may retry later. Items that no queue of this limit
// could ever hold all at once are refused (TooMany) whatever the caller,
// as anything is once the scheduler is closed.
func (s *Scheduler) Enqueue(ctx context.Context, wait bool, es ...*Entry) error {
	s.mu.Lock()
	return s.enqueueLocked(ctx, wait, es...)
}

// enqueueLocked is Enqueue with the lock held; it releases it.
func (s *Scheduler) enqueueLocked(ctx context.Context, wait bool, es ...*Entry) error {
	for _, e := range es {
		e.waits = wait
	}
	if wait {
		if err := s.awaitRoom(ctx, len(es)); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if err := s.queueUp(es); err != nil {
		s.mu.Unlock()
		return err
	}
	// While every runner is busy an arrival only joins the queue: the
	// runner looks again when it frees up. While items are promised, an
	// idle runner can only close a full group, so it is woken once the
	// queue holds one (or by the promise's end), not for every item of a
	// burst; or once the queue is full, when nothing more can join.
	wake := s.idle > 0 && s.own == 0 && (s.promised == 0 || s.pol.Filled() || s.blocked())
	s.mu.Unlock()
	if wake {
		s.poke()
	}
	return nil
}

// awaitRoom waits, under the lock (released while it waits), until the
// queue has room for n more items, the scheduler closes, or ctx ends.
// Items too many for the queue are left to refusal.
func (s *Scheduler) awaitRoom(ctx context.Context, n int) error {
	for !s.closed && n <= s.limit && s.pol.Len()+n > s.limit {
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		// An idle runner holding back for promised items must see that
		// nothing more can join (blocked).
		wake := s.idle > 0
		s.mu.Unlock()
		if wake {
			s.poke()
		}
		select {
		case <-room:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	return nil
}

// blocked reports, under the lock, whether nothing more can join the
// queue until items leave it: it holds its limit, or a request waits for
// room. A group then has nothing to wait for.
func (s *Scheduler) blocked() bool { return s.pol.Len() >= s.limit || s.room != nil }

// freed tells, under the lock, the requests waiting for room that items
// left the queue (or that the scheduler closed).
func (s *Scheduler) freed() {
	if s.room != nil && (s.pol.Len() < s.limit || s.closed) {
		close(s.room)
		s.room = nil
	}
}

// queueUp is Enqueue under the lock, without the wake.
func (s *Scheduler) queueUp(es []*Entry) error {
	if err := s.refusal(es); err != nil {
		return err
	}
	if s.pol.Len()+len(es) > s.limit && !s.displace(es) {
		return &QueueError{Refusal: Full, Items: len(es), Limit: s.limit}
	}
	s.pol.Arrivals.Arrived(es[0].Queued, s.pol.Len()+s.inFlight > 0)
	s.push(es)
	return nil
}

// displace makes room, under the lock, for es (one request's items) in a
// full queue by taking out as many of the newest, least urgent waiting
// items as es need, where that many are less urgent than es and their
// callers do not wait for room (Policy.Displace). Each is answered Full,
// as it would have been had es come first: under load the requests that
// fail for want of room are the least urgent. It reports whether it made
// room.
func (s *Scheduler) displace(es []*Entry) bool {
	out := s.pol.Displace(s.pol.Len()+len(es)-s.limit, es[0].Priority)
	for _, e := range out {
		s.exec.Drop(e, &QueueError{Refusal: Full, Items: 1, Limit: s.limit, Displaced: true})
	}
	return out != nil
}

// push queues es, under the lock.
func (s *Scheduler) push(es []*Entry) {
	for _, e := range es {
		s.pol.Push(e)
	}
}

// refusal says, under the lock, why es can never join the queue: the
// scheduler is closed, or the items are more than the queue can hold at
// once (neither waiting nor retrying would help).
func (s *Scheduler) refusal(es []*Entry) error {
	switch {
	case s.closed:
		return &QueueError{Refusal: Closed, Items: len(es), Limit: s.limit}
	case len(es) > s.limit:
		return &QueueError{Refusal: TooMany, Items: len(es), Limit: s.limit}
	}
	return nil
}

// EnqueueBurst queues, under one lock, the items a batch that runs its
// own groups has admitted: request i's are items(i) (none: passed over),
// each request's as Enqueue would, a refused request told to refused; it
// ends the batch's promise of live requests and returns how many items it
// queued. Nothing forms a group while such a batch admits, so queuing its
// items at the end changes only the locking: once per batch, not twice
// per request. The queue may pass its limit here: the batch's window
// bounds its items, and it runs them itself at once (RunOwn), where
// waiting for room would wait for itself.
func (s *Scheduler) EnqueueBurst(requests int, items func(i int) []*Entry, refused func(i int, err error), live int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The burst's items arrive at one time, so that after the first each
	// is recorded as an arrival of no gap that finds items waiting: all of
	// them at once, after the loop (Arrivals.ArrivedAgain).
	queued, again := 0, 0
	for i := range requests {
		es := items(i)
		if len(es) == 0 {
			continue
		}
		if err := s.refusal(es); err != nil {
			refused(i, err)
			continue
		}
		for _, e := range es {
			e.waits = true // a batch's: it runs them itself, at once
		}
		if queued > 0 {
			again++
		} else {
			s.pol.Arrivals.Arrived(es[0].Queued, s.pol.Len()+s.inFlight > 0)
		}
		s.push(es)
		queued += len(es)
	}
	s.pol.Arrivals.ArrivedAgain(again)
	s.promised -= live
	return queued
}

// Promise counts n more items (fewer, when negative) that a batch run in
// lockstep is admitting: while items are promised, a group forms only
// once the queue holds a full one, whatever the delay, since the others
// are already on their way.
func (s *Scheduler) Promise(n int) {
	s.mu.Lock()
	s.promised += n
	wake := s.promised == 0 && s.runnerWanted()
	s.mu.Unlock()
	if wake {
		s.poke()
	}
}

// RequestDone wakes an idle runner when items wait: their group may have
// been waiting for the request that just finished. With nothing queued
// there is no group to close, and waking a runner would cost a thread's
// wake for nothing, once per request; where no runner holds items, it
// takes not even the lock (the request's end is counted before: a
// runner that holds items counted itself before it read the count).
func (s *Scheduler) RequestDone() {
	if s.holding.Load() == 0 {
		return
	}
	s.mu.Lock()
	s.unlockWaking()
}

// unlockWaking releases the lock and wakes an idle runner if items wait
// for one (runnerWanted, read before the release).
func (s *Scheduler) unlockWaking() {
	wake := s.runnerWanted()
	s.mu.Unlock()
	if wake {
		s.poke()
	}
}

// runnerWanted reports, under the lock, whether items wait and a runner
// is idle and not kept asleep by a batch running its own groups: whether
// something that may let a group close should wake one.
func (s *Scheduler) runnerWanted() bool {
	return s.pol.Len() > 0 && s.idle > 0 && s.own == 0
}

// poke wakes an idle runner without blocking.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting items, lets the runners take every queued item at
// once, and waits until every group has been run.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	s.freed()
	s.mu.Unlock()
	s.poke()
	s.wg.Wait()
}
