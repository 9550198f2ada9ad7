package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/sched"
)

// TestSelfRunFollowsTheMeasuredOverlap: a lockstep batch at an idle
// component runs its own groups only while runners were seen not to start
// during admissions (overlap below one half), a batch now and then still
// goes to the runner to keep measuring (less often while they keep finding
// it late), a busy component never self-runs, and admissions that
// overlap bring the runner path back. (With more worker slots the choice
// is TestSelfRunSideBySide's.)
func TestSelfRunFollowsTheMeasuredOverlap(t *testing.T) {
	e := imageEngine(t, Options{MaxDelay: time.Millisecond})
	g := e.groupers["encoder"]
	start := func() bool {
		self, idleAt := g.startBatch()
		if self {
			undoSelfRun(g)
		} else if idleAt >= 0 {
			g.admitted(idleAt) // no runner group started meanwhile
		}
		return self
	}
	if start() {
		t.Fatal("a new component self-runs before any batch showed that runners start late")
	}
	for range 10 {
		start()
	}
	if g.overlap >= 0.5 {
		t.Fatalf("overlap %.2f after batches whose runner never started during admission", g.overlap)
	}
	// Explorers that find the runner late space out, doubling up to the
	// cap; one that finds it in time brings the interval back.
	g.exploreEvery, g.untilExplore = selfRunExplore, selfRunExplore
	gaps := func(n int) []int {
		var out []int
		for i := 1; len(out) < n; i++ {
			if !start() {
				out = append(out, i)
				i = 0
			}
		}
		return out
	}
	if got, want := gaps(7), []int{16, 32, 64, 128, 256, 256, 256}; !slices.Equal(got, want) {
		t.Errorf("batches between explorers finding no overlap: %v, want %v", got, want)
	}
	for range selfRunExploreMax - 1 {
		start()
	}
	self, idleAt := g.startBatch()
	if self {
		t.Fatal("no batch explores after the longest interval")
	}
	g.mu.Lock()
	g.runnerGroups++
	g.mu.Unlock()
	g.admitted(idleAt)
	g.overlap = 0
	if got, want := gaps(2), []int{16, 32}; !slices.Equal(got, want) {
		t.Errorf("batches between explorers after one found overlap: %v, want %v", got, want)
	}
	// The explorers find a runner that starts during their admission: the
	// first within the longest interval, the next ones every
	// selfRunExplore batches.
	for range selfRunExploreMax + 5*selfRunExplore {
		self, idleAt := g.startBatch()
		if self {
			undoSelfRun(g)
			continue
		}
		g.mu.Lock()
		g.runnerGroups++
		g.mu.Unlock()
		g.admitted(idleAt)
	}
	if start() || g.overlap < 0.5 {
		t.Errorf("overlap %.2f: batches whose runner starts during admission still self-run", g.overlap)
	}
	g.overlap = 0
	g.mu.Lock()
	g.running++ // a group of another request runs
	g.mu.Unlock()
	if self, idleAt := g.startBatch(); self || idleAt >= 0 {
		t.Errorf("a batch at a busy component self-runs (%v) or measures (%d)", self, idleAt)
	}
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
}

// TestSelfRunSideBySide: with two worker slots, whether a batch at an idle
// component runs its own groups follows the measured time per item of the
// two ways, not the runner's overlap: the first batches go to the runners
// unmeasured, the next take each way in runs of sideRun, then the way
// faster by a margin is taken and every sideExplore-th choice runs the
// other way sideRun times; the first batch of a run is not measured, a
// change in which way is faster turns the choice around, and one slow
// batch does not.
func TestSelfRunSideBySide(t *testing.T) {
	g := imageEngine(t, Options{MaxDelay: time.Millisecond, Workers: 2}).groupers["encoder"]
	g.overlap = 0 // a one-slot grouper would run its own groups now
	batch := func(perItem map[bool]time.Duration) bool {
		self, idleAt := g.startBatch()
		if self {
			undoSelfRun(g)
		} else if idleAt < 0 {
			t.Fatal("a batch at an idle component does not measure")
		}
		g.batchEnded(self, 10, 10*perItem[self])
		return self
	}
	// runs gives the ways of n batches as runs: +k for k batches running
	// their own groups, -k for k handing them to the runners.
	runs := func(n int, perItem map[bool]time.Duration) []int {
		var out []int
		for range n {
			v := -1
			if batch(perItem) {
				v = 1
			}
			if k := len(out) - 1; k >= 0 && (out[k] > 0) == (v > 0) {
				out[k] += v
			} else {
				out = append(out, v)
			}
		}
		return out
	}
	ownFaster := map[bool]time.Duration{true: 20 * time.Microsecond, false: 30 * time.Microsecond}
	// Three runs of each way, the first batch of each not measured, give
	// both ways sideMinBatches samples.
	if got, want := runs(6*sideRun, ownFaster), []int{-3, 3, -3, 3, -3, 3}; !slices.Equal(got, want) {
		t.Fatalf("first batches: runs %v, want %v", got, want)
	}
	if s := &g.side; s.runners.seen < sideMinBatches || s.own.seen < sideMinBatches {
		t.Fatalf("%d and %d batches measured after the first runs", s.runners.seen, s.own.seen)
	}
	// Where running their own is faster, the runners get a run of
	// sideRun once in sideExplore choices.
	cycle := sideExplore - 1 + sideRun
	got := runs(4*cycle, ownFaster)
	explorers := 0
	for _, r := range got {
		if r < 0 {
			explorers++
			if r != -sideRun {
				t.Errorf("the runners explored in a run of %d batches, want %d: %v", -r, sideRun, got)
			}
		}
	}
	if explorers != 4 {
		t.Errorf("%d exploring runs in %d batches, want 4: %v", explorers, 4*cycle, got)
	}
	// Once the runners are faster, the choice turns: a cycle later the
	// batches hand their groups over, but for one run of their own.
	runnersFaster := map[bool]time.Duration{true: 30 * time.Microsecond, false: 20 * time.Microsecond}
	runs(4*cycle, runnersFaster)
	own := 0
	for _, r := range runs(cycle, runnersFaster) {
		if r > 0 {
			own += r
		}
	}
	if own != sideRun {
		t.Errorf("%d of %d batches ran their own groups once the runners were faster, want one run of %d", own, cycle, sideRun)
	}
	// One slow batch of the way taken (a wake that took long) does not
	// turn the choice around.
	for !batch(runnersFaster) { // up to an exploring run
	}
	for batch(runnersFaster) { // through it, to the first runners' batch (not measured)
	}
	slow := map[bool]time.Duration{true: 30 * time.Microsecond, false: 300 * time.Microsecond}
	if batch(slow) {
		t.Fatal("the second batch after an exploring run ran its own groups")
	}
	if got := runs(sideExplore-4, runnersFaster); len(got) != 1 || got[0] > 0 {
		t.Errorf("after one slow batch of the runners, which stay the faster: runs %v", got)
	}
	if s := g.e.Stats().Components["encoder"].Scheduler; s.RunnersBatchNS <= 0 || s.OwnBatchNS <= s.RunnersBatchNS {
		t.Errorf("stats: %.0f ns per item to the runners, %.0f on their own; want both, the runners' the lower", s.RunnersBatchNS, s.OwnBatchNS)
	}
}

// undoSelfRun ends a self-run that startBatch began and no batch runs.
func undoSelfRun(g *grouper) {
	g.mu.Lock()
	g.selfRun--
	g.mu.Unlock()
	g.wg.Done()
}

// TestSelfRunGroupsEqualSolo: batches that run their own groups, while
// other callers send requests at the same component, answer every request
// as solo does, never run more groups at once than the worker slots, and
// run their groups on their own goroutine (counted in the stats), with
// one worker slot and with two (where running their own was measured the
// faster way).
func TestSelfRunGroupsEqualSolo(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) { selfRunEqualsSolo(t, workers) })
	}
}

func selfRunEqualsSolo(t *testing.T, workers int) {
	var running, most atomic.Int64
	count := func(ctx context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return maskedMean(ctx, in)
	}
	e := engineWith(t, count, Options{MaxDelay: time.Millisecond, Workers: workers}, nil)
	defer e.Close()
	g := e.groupers["encoder"]
	g.mu.Lock()
	g.overlap = 0 // as measured where runners start after admissions
	// as measured where invocations are short against a thread's wake
	for range sideMinBatches {
		g.side.runners.add(3000)
		g.side.own.add(1000)
	}
	g.mu.Unlock()
	solo := imageEngine(t, Options{Solo: true})
	rng := rand.New(rand.NewSource(21))
	var batches [][]Request
	for b := range 6 {
		var reqs []Request
		for i := range 40 {
			reqs = append(reqs, imageRequest(rng, fmt.Sprintf("b%d-%d", b, i), rng.Intn(4)))
		}
		batches = append(batches, reqs)
	}
	var lone []Request
	for i := range 60 {
		lone = append(lone, imageRequest(rng, fmt.Sprint("lone", i), 1+rng.Intn(3)))
	}
	check := func(got, want Response) {
		if got.Err != nil || want.Err != nil || !sameResult(got.Outputs.Get("embeddings"), want.Outputs.Get("embeddings")) {
			t.Errorf("%s: grouped %v (%v), solo %v (%v)", got.ID, got.Outputs.Get("embeddings"), got.Err, want.Outputs.Get("embeddings"), want.Err)
		}
	}
	var wg sync.WaitGroup
	for b, reqs := range batches {
		if b == 2 { // the first batches alone, the others beside a lone caller
			wg.Go(func() {
				for _, r := range lone {
					check(e.Run(context.Background(), r), solo.Run(context.Background(), r))
				}
			})
		}
		got := e.RunAll(context.Background(), reqs)
		want := solo.RunAll(context.Background(), reqs)
		for i := range reqs {
			check(got[i], want[i])
		}
	}
	wg.Wait()
	st := e.Stats().Components["encoder"]
	if st.OwnGroups == 0 {
		t.Errorf("no batch ran its own groups: %+v", st)
	}
	if most.Load() > int64(workers) {
		t.Errorf("%d groups ran at once with %d worker slots", most.Load(), workers)
	}
}

// TestEnqueueOwnQueuesTheWindow: a batch that runs its own groups queues
// its requests' items at the end of its admission, all at once, past the
// queue's limit if need be (it runs them itself at once: waiting for room
// would wait for itself), but never a request whose items no queue of
// that limit could hold (run/budget, alone). A request that failed its
// admission, or brought nothing to queue, is passed over; the batch's
// promise ends.
func TestEnqueueOwnQueuesTheWindow(t *testing.T) {
	e := engineWith(t, maskedMean, Options{MaxDelay: time.Second, Queue: 3}, nil)
	t.Cleanup(func() { e.Close() })
	g := e.groupers["encoder"]
	now := time.Now()
	item := func() []*pending { return []*pending{paddedItem(t, g, 4, now)} }
	g.mu.Lock()
	g.push(item()) // another caller's
	g.promised = 4
	g.mu.Unlock()
	failed := errors.New("its admission failed")
	tooMany := append(append(item(), item()...), append(item(), item()...)...)
	subs := []submission{{ps: item()}, {err: failed}, {}, {ps: item()}, {ps: tooMany}, {ps: item()}}
	var wg sync.WaitGroup
	g.enqueueOwn(subs, 4, &wg)
	g.mu.Lock()
	queued, promised := g.pol.Len(), g.promised
	g.pol.Drop(func(*sched.Entry) bool { return true }) // never run: their requests are this test's
	g.mu.Unlock()
	if queued != 4 || promised != 0 {
		t.Errorf("queue holds %d items, %d promised; want 4 (the other caller's and the batch's three) and 0", queued, promised)
	}
	if subs[1].err != failed || subs[2].err != nil || subs[0].err != nil || subs[3].err != nil || subs[5].err != nil {
		t.Errorf("errors of the queued or passed-over requests: %v, %v, %v, %v, %v", subs[0].err, subs[1].err, subs[2].err, subs[3].err, subs[5].err)
	}
	if ruleOf(subs[4].err) != backend.RunBudget {
		t.Errorf("the request of more items than the queue holds: %v, want run/budget", subs[4].err)
	}
}
