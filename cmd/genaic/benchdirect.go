package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
)

// The direct mode is the reference a grouped runtime is held to: the
// package's components called straight on their backends, with nothing
// of the runtime between the calls, on the best division of the cores a
// person could assemble by hand. Its calls are the runtime's own,
// recorded once before the clock: those of a lockstep run of the
// document on one slot (budget-sized batches, padded as the runtime pads
// them), and those of a run with one request per invocation. Each is
// tried from P callers of one session per component (as the runtime's
// slots share one), each taking the next call as it is free, the session
// made with T backend threads, for every division of the cores
// (engine.Divisions), and the fastest of them is timed in the rounds: a
// pass runs every component's calls in the order the components first
// ran. It has no clients and no latency; its throughput is the
// document's requests per pass over the pass's time, and every mode's
// vs_direct is taken against it.

// directChoice is the strategy the direct mode runs and those it tried.
type directChoice struct {
	directWay
	// Tried are the strategies measured when the mode was opened, with
	// the requests per second each served.
	Tried []directWay `json:"tried"`
}

// directWay is one hand-assembled strategy: its calls (batched or
// single), the callers making them at once and the backend threads of
// the session they call.
type directWay struct {
	Calls             string  `json:"calls"`
	Callers           int     `json:"callers"`
	Threads           int     `json:"threads"`
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
}

func (w directWay) String() string {
	return fmt.Sprintf("%s calls from %d %s × %s %s", w.Calls, w.Callers, plural(w.Callers, "caller"), w.threads(), plural(w.Threads, "thread"))
}

// threads is the way's thread count, or "default" (0: the backend's).
func (w directWay) threads() string {
	if w.Threads == 0 {
		return "default"
	}
	return fmt.Sprint(w.Threads)
}

func (c *directChoice) String() string {
	var tried []string
	for _, w := range c.Tried {
		tried = append(tried, fmt.Sprintf("%s %d×%s: %.0f req/s", w.Calls, w.Callers, w.threads(), w.RequestsPerSecond))
	}
	return fmt.Sprintf("%s, the fastest of %s", c.directWay, strings.Join(tried, "; "))
}

// directTurns is how many turns each strategy gets when the mode is
// opened, the strategies of a division taking turns, and directTurn the
// least time a turn runs (at least one pass).
const (
	directTurns = 3
	directTurn  = 30 * time.Millisecond
)

// openDirect records the calls and chooses the strategy of the direct
// mode: over every division of the cores where the flags leave the
// execution to be planned, else over the division they set.
func (b *bencher) openDirect() (target, error) {
	batched, err := b.record(false)
	if err != nil {
		return nil, err
	}
	single, err := b.record(true)
	if err != nil {
		return nil, err
	}
	divisions := engine.Divisions(engine.CPUs())
	if !b.flags.planned() {
		x := b.flags.division()
		divisions = []vm.Candidate{{Slots: x.Slots, Threads: x.Threads}}
	}
	t := &directTarget{}
	for _, d := range divisions {
		stages, err := b.loadStages(d)
		if err != nil {
			t.close()
			return nil, err
		}
		ways := []*replay{
			{way: directWay{Calls: "batched", Callers: d.Slots, Threads: d.Threads}, stages: stages, calls: batched},
			{way: directWay{Calls: "single", Callers: d.Slots, Threads: d.Threads}, stages: stages, calls: single},
		}
		took := make([]time.Duration, len(ways))
		passes := make([]int, len(ways))
		for turn := range directTurns + 1 {
			for i, w := range ways {
				n, elapsed, err := w.passFor(directTurn)
				if err != nil {
					closeStages(stages)
					t.close()
					return nil, err
				}
				if turn > 0 { // the first turn warms up
					took[i] += elapsed
					passes[i] += n
				}
			}
		}
		kept := false
		for i, w := range ways {
			w.way.RequestsPerSecond = float64(passes[i]*w.calls.answered) / took[i].Seconds()
			t.choice.Tried = append(t.choice.Tried, w.way)
			if t.best == nil || w.way.RequestsPerSecond > t.best.way.RequestsPerSecond {
				if t.best != nil && !kept {
					closeStages(t.best.stages) // the best so far was another division's
				}
				kept, t.best = true, w
			}
		}
		if !kept {
			closeStages(stages)
		}
	}
	t.choice.directWay = t.best.way
	return t, nil
}

// directCalls are the calls of one pass (over the document, or the
// documents record repeated it to), component by component in the order
// they first ran, and what they did: requests and group sizes per
// component, and the pass's requests answered (with their items) and
// failed.
type directCalls struct {
	mu       sync.Mutex // held while a call is recorded
	comps    []*ir.Component
	calls    map[string][]recordedCall
	stats    map[string]vm.ComponentStats
	answered int
	items    int64
	failed   int
	firstErr string
}

type recordedCall struct {
	inputs  map[string]*backend.Tensor
	outputs []string
}

// directStream is the fewest requests the direct mode's batched calls are
// recorded over: a shorter document is repeated, as the clients of the
// other modes repeat it, so that the batches are the budget-sized ones a
// stream of such documents makes, not the document's own last, partial
// one (twelve requests under a budget of eight would leave every other
// call half full, and the reference slower than the runtime it judges).
const directStream = 64

// record runs the document once on an engine whose backends keep a copy
// of every call: a lockstep run on one slot (of the document repeated to
// directStream requests, a pass then being as many documents), or one
// request per invocation where solo.
func (b *bencher) record(solo bool) (*directCalls, error) {
	opts := b.flags.options(solo)
	opts.Workers, opts.Execution = 1, nil
	bes, err := engine.Backends(b.f.IR, opts)
	if err != nil {
		return nil, err
	}
	rec := &directCalls{calls: map[string][]recordedCall{}}
	for kind, be := range bes {
		bes[kind] = recordingBackend{Backend: be, rec: rec}
	}
	eng, err := vm.Open(b.f, b.pkgDir, bes, opts.Options)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	reqs, items := b.reqs, b.items
	for !solo && len(reqs) < directStream && len(b.reqs) > 0 {
		reqs, items = append(reqs, b.reqs...), append(items, b.items...)
	}
	for i, r := range eng.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			if rec.failed == 0 {
				rec.firstErr = fmt.Sprintf("request %s: %v", r.ID, r.Err)
			}
			rec.failed++
			continue
		}
		rec.answered++
		rec.items += items[i]
		r.Release()
	}
	rec.stats = eng.Stats().Components
	return rec, nil
}

// recordingBackend loads sessions that keep a copy of every call's
// inputs. They run through Run, and answer the optional questions a
// session may (Keyer, InputShaper, ShapeHinter) as the session they wrap
// does, so that the runtime groups and pads as it would on it.
type recordingBackend struct {
	backend.Backend
	rec *directCalls
}

func (b recordingBackend) Load(comp *ir.Component, pkgDir string) (backend.Session, error) {
	s, err := b.Backend.Load(comp, pkgDir)
	if err != nil {
		return nil, err
	}
	return &recordingSession{Session: s, comp: comp, rec: b.rec}, nil
}

type recordingSession struct {
	backend.Session
	comp *ir.Component
	rec  *directCalls
}

func (s *recordingSession) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	call := recordedCall{inputs: make(map[string]*backend.Tensor, len(inputs)), outputs: slices.Clone(outputs)}
	for name, x := range inputs {
		c, err := backend.NewTensor(x.DType, x.Shape)
		if err != nil {
			return nil, err
		}
		c.CopyElems(0, x, 0, x.Len())
		call.inputs[name] = c
	}
	rec := s.rec
	rec.mu.Lock()
	if _, seen := rec.calls[s.comp.Name]; !seen {
		rec.comps = append(rec.comps, s.comp)
	}
	rec.calls[s.comp.Name] = append(rec.calls[s.comp.Name], call)
	rec.mu.Unlock()
	return s.Session.Run(ctx, inputs, outputs)
}

func (s *recordingSession) Key(inputs map[string]*backend.Tensor) (string, error) {
	if k, ok := s.Session.(backend.Keyer); ok {
		return k.Key(inputs)
	}
	return "", nil
}

// KeysWhole forwards backend.WholeKeyer, so that a session keyed whole is
// keyed so when recorded too.
func (s *recordingSession) KeysWhole() bool {
	w, ok := s.Session.(backend.WholeKeyer)
	return ok && w.KeysWhole()
}

func (s *recordingSession) InputShape(name string) []int64 {
	if sh, ok := s.Session.(backend.InputShaper); ok {
		return sh.InputShape(name)
	}
	return nil
}

func (s *recordingSession) OutputShape(name string) []int64 {
	if h, ok := s.Session.(backend.ShapeHinter); ok {
		return h.OutputShape(name)
	}
	return nil
}

// stage is one component's session of a division and its callers.
type stage struct {
	comp    *ir.Component
	session backend.Session
	callers int
}

// loadStages loads a session of every component the package invokes, on
// backends of d.Threads threads, to be called from d.Slots callers.
func (b *bencher) loadStages(d vm.Candidate) ([]stage, error) {
	opts := b.flags.options(false)
	opts.Config.IntraOpThreads = d.Threads
	bes, err := engine.Backends(b.f.IR, opts)
	if err != nil {
		return nil, err
	}
	var stages []stage
	for _, comp := range b.f.IR.Components {
		be := bes[comp.Impl]
		if be == nil {
			continue // a component the workflow never invokes
		}
		s, err := be.Load(comp, b.pkgDir)
		if err != nil {
			closeStages(stages)
			return nil, fmt.Errorf("direct: loading component `%s`: %w", comp.Name, err)
		}
		stages = append(stages, stage{comp: comp, session: s, callers: d.Slots})
	}
	return stages, nil
}

func closeStages(stages []stage) {
	for _, st := range stages {
		st.session.Close()
	}
}

// replay is a strategy with its sessions loaded.
type replay struct {
	way    directWay
	stages []stage
	calls  *directCalls
}

// passes runs every call of the document n times over: component by
// component, each call from the next caller that is free. The passes of
// a component run as one stream of calls, as a hand strategy serving a
// stream of documents would run them, not each pass to its end before
// the next begins.
func (r *replay) passes(n int) error {
	for _, comp := range r.calls.comps {
		i := slices.IndexFunc(r.stages, func(st stage) bool { return st.comp.Name == comp.Name })
		calls := r.calls.calls[comp.Name]
		total := int64(n * len(calls))
		var next atomic.Int64
		var failed atomic.Pointer[error]
		var wg sync.WaitGroup
		st := r.stages[i]
		for range st.callers {
			wg.Go(func() {
				for k := next.Add(1) - 1; k < total && failed.Load() == nil; k = next.Add(1) - 1 {
					c := calls[k%int64(len(calls))]
					if _, err := st.session.Run(context.Background(), c.inputs, c.outputs); err != nil {
						err = fmt.Errorf("direct: component `%s`: %w", comp.Name, err)
						failed.CompareAndSwap(nil, &err)
					}
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			return *err
		}
	}
	return nil
}

// passFor runs passes until least has passed (at least one), returning
// how many and how long they took: one pass, then as many more at once
// as the first says fill the rest of the time.
func (r *replay) passFor(least time.Duration) (int, time.Duration, error) {
	start := time.Now()
	if err := r.passes(1); err != nil {
		return 0, time.Since(start), err
	}
	one := time.Since(start)
	if len(r.calls.comps) == 0 {
		return 1, max(one, time.Microsecond), nil // every request failed: nothing to time
	}
	if more := int((least - one) / max(one, time.Microsecond)); more > 0 {
		if err := r.passes(more); err != nil {
			return 1, time.Since(start), err
		}
		return 1 + more, time.Since(start), nil
	}
	return 1, time.Since(start), nil
}

// directTarget is the direct mode's target: the strategy chosen, timed
// in whole passes (passer) rather than requests sent by clients.
type directTarget struct {
	best   *replay
	choice directChoice
}

// A passer is a target whose rounds are whole passes over the document
// rather than requests clients send.
type passer interface {
	passRound(least time.Duration) roundResult
}

func (t *directTarget) passRound(least time.Duration) roundResult {
	c := t.best.calls
	n, took, err := t.best.passFor(least)
	res := roundResult{elapsed: took, ok: n * c.answered, items: int64(n) * c.items, procs: runtime.GOMAXPROCS(0),
		failed: n * c.failed, firstErr: c.firstErr, groups: map[string]groupDelta{}}
	if err != nil {
		res.ok, res.items = 0, 0
		res.failed, res.firstErr = max(n, 1)*(c.answered+c.failed), err.Error()
	}
	for name, s := range c.stats {
		d := groupDelta{invocations: int64(n) * s.Invocations, requests: int64(n) * s.Requests, sizes: map[int]int64{}}
		for size, k := range s.GroupSizes {
			d.sizes[size] = int64(n) * k
		}
		res.groups[name] = d
	}
	return res
}

func (t *directTarget) run(int) error { return fmt.Errorf("the direct mode runs whole passes") }
func (t *directTarget) snapshot() snapshot {
	return snapshot{stats: vm.Stats{Components: t.best.calls.stats}}
}
func (t *directTarget) close() {
	if t.best != nil {
		closeStages(t.best.stages)
		t.best = nil
	}
}
