package vm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/genaic/genaic/backend"
)

// grouper forms groups for one grouped component from items of requests
// that arrive independently (§6 Group formation): FIFO with a compatibility
// key, items added while every budget holds, the group closed when a budget
// would be exceeded, the queue stays empty for max_delay, or the group can
// grow no further.
type grouper struct {
	spec     *componentSpec
	sess     backend.Session
	maxDelay time.Duration
	solo     bool // every invocation carries exactly one item
	stats    *counter
	copies   *Copies

	queue  chan *pending
	wg     sync.WaitGroup
	mu     sync.RWMutex // guards closed against submits racing Close
	closed bool
}

type pending struct {
	ctx    context.Context
	it     *item
	done   chan share
	queued time.Time
}

type share struct {
	outs map[string]*backend.Tensor
	err  error
}

// ErrClosed is returned to requests submitted to, or still waiting in, an
// engine that was closed.
var ErrClosed = errors.New("the engine is closed: the request was not run")

// QueueFullError is returned when a component's queue holds its limit of
// waiting items: the request fails at once instead of waiting unboundedly.
type QueueFullError struct {
	Component string
	Limit     int
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("component `%s` already has %d items waiting (the queue limit); retry later or raise the limit", e.Component, e.Limit)
}

func newGrouper(spec *componentSpec, sess backend.Session, r backend.Readiness, maxDelay time.Duration, solo bool, queue, workers int, stats *counter, copies *Copies) *grouper {
	g := &grouper{spec: spec, sess: sess, maxDelay: maxDelay, solo: solo, stats: stats, copies: copies,
		queue: make(chan *pending, queue)}
	if !r.Ready {
		g.solo = true
		stats.decline(fmt.Sprintf("%s/%s: %s", r.Provider, r.OpClass, r.Reason))
	}
	for range max(workers, 1) {
		g.wg.Add(1)
		go (&worker{g: g}).loop()
	}
	return g
}

// submit runs an item: alone when it fits every budget, else split into
// chunks across invocations; an item no split can fit is refused at once.
func (g *grouper) submit(ctx context.Context, it *item) (map[string]*backend.Tensor, error) {
	chunks, err := g.spec.chunk(it)
	if err != nil {
		return nil, err
	}
	if len(chunks) == 1 {
		return g.submitOne(ctx, it)
	}
	return g.submitChunks(ctx, chunks)
}

// submitOne queues an item that fits and waits for its share.
func (g *grouper) submitOne(ctx context.Context, it *item) (map[string]*backend.Tensor, error) {
	p := &pending{ctx: ctx, it: it, done: make(chan share, 1), queued: time.Now()}
	if err := g.enqueue(p); err != nil {
		return nil, err
	}
	select {
	case s := <-p.done:
		return s.outs, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// enqueue adds p to the queue without blocking: a full queue is an error.
func (g *grouper) enqueue(p *pending) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return ErrClosed
	}
	select {
	case g.queue <- p:
		return nil
	default:
		return &QueueFullError{Component: g.spec.comp.Name, Limit: cap(g.queue)}
	}
}

// close stops accepting items and waits for the workers to drain the queue
// and what they held.
func (g *grouper) close() {
	g.mu.Lock()
	g.closed = true
	close(g.queue)
	g.mu.Unlock()
	g.wg.Wait()
}

// worker forms and runs groups. A component may have several, so that one
// group is gathered while another runs.
type worker struct {
	g    *grouper
	held []*pending // items passed over by this worker's last group, served first
}

func (w *worker) loop() {
	defer w.g.wg.Done()
	for {
		head, ok := w.next()
		if !ok {
			return
		}
		w.g.run(w.gather(head))
	}
}

// next returns the oldest waiting item: a held one first, then the queue.
func (w *worker) next() (*pending, bool) {
	for len(w.held) > 0 {
		p := w.held[0]
		w.held = w.held[1:]
		if p.ctx.Err() == nil {
			return p, true
		}
		p.done <- share{err: p.ctx.Err()}
	}
	p, ok := <-w.g.queue
	return p, ok
}

// forming is a group being gathered: its items, the items passed over for
// a later group, and whether it must close now.
type forming struct {
	g       *grouper
	head    *pending
	batch   []*pending
	held    []*pending
	closing bool // a compatible item would exceed a budget
}

// take considers one waiting item: a cancelled one is answered, an
// incompatible one waits for a later group, a compatible one joins while
// every budget holds, and the first that would exceed one closes the group.
func (f *forming) take(p *pending) {
	switch {
	case p.ctx.Err() != nil:
		p.done <- share{err: p.ctx.Err()}
	case !f.g.spec.compatible(f.head.it, p.it):
		f.held = append(f.held, p)
	case !f.closing && f.g.fits(f.batch, p):
		f.batch = append(f.batch, p)
	default:
		f.closing = true
		f.held = append(f.held, p)
	}
}

// open reports whether the group may still grow.
func (f *forming) open() bool { return !f.closing && !f.g.full(f.batch) }

// gather grows a group from head: first from the items a previous group
// passed over, then from the queue, until the group must close, no budget
// has room, or the queue stays empty for max_delay.
func (w *worker) gather(head *pending) []*pending {
	g := w.g
	f := &forming{g: g, head: head, batch: []*pending{head}}
	if g.solo {
		return f.batch
	}
	held := w.held
	w.held = nil
	for _, p := range held {
		f.take(p)
	}
	timer := time.NewTimer(g.maxDelay)
	defer timer.Stop()
	for f.open() {
		if !g.receive(f, timer) {
			break
		}
	}
	w.held = f.held
	return f.batch
}

// receive takes the next queued item into f: one already waiting, or one
// that arrives before the timer fires. It reports false when nothing came
// (or the queue closed).
func (g *grouper) receive(f *forming, timer *time.Timer) bool {
	select {
	case p, ok := <-g.queue:
		if ok {
			f.take(p)
		}
		return ok
	default:
	}
	if g.maxDelay <= 0 {
		return false
	}
	select {
	case p, ok := <-g.queue:
		if ok {
			f.take(p)
		}
		return ok
	case <-timer.C:
		return false
	}
}

func (g *grouper) fits(batch []*pending, p *pending) bool {
	items := append(itemsOf(batch), p.it)
	for _, b := range g.spec.gp.Budgets {
		if footprint(b, items) > b.MaxTotal {
			return false
		}
	}
	return true
}

// full reports whether no item can join: some budget is exactly spent.
func (g *grouper) full(batch []*pending) bool {
	items := itemsOf(batch)
	for _, b := range g.spec.gp.Budgets {
		if footprint(b, items) >= b.MaxTotal {
			return true
		}
	}
	return false
}

// run assembles, checks, invokes and splits one group, then answers each
// item. Everything that fails here fails the whole group's requests.
func (g *grouper) run(batch []*pending) {
	items := itemsOf(batch)
	now := time.Now()
	for _, p := range batch {
		g.stats.waited(now.Sub(p.queued))
	}
	shares, err := g.invoke(items)
	if err != nil && len(batch) > 1 {
		// The backend failed the group. Run each request alone, so that
		// only the one whose item fails hears about it (§6: an error fails
		// the request that owns the bad item, never its neighbours).
		g.stats.regroup()
		for _, p := range batch {
			one, err := g.invoke([]*item{p.it})
			if err != nil {
				p.done <- share{err: err}
			} else {
				p.done <- share{outs: one[0]}
			}
		}
		return
	}
	for i, p := range batch {
		if err != nil {
			p.done <- share{err: err}
		} else {
			p.done <- share{outs: shares[i]}
		}
	}
}

func (g *grouper) invoke(items []*item) ([]map[string]*backend.Tensor, error) {
	start := time.Now()
	grp, err := g.spec.assemble(items, g.copies)
	if err != nil {
		return nil, err
	}
	peaks := make([]int64, len(g.spec.gp.Budgets))
	for i, b := range g.spec.gp.Budgets {
		if peaks[i] = footprint(b, items); peaks[i] > b.MaxTotal {
			return nil, runErr("run/budget", "a group of component `%s` has footprint %d on budget %v, above %d", g.spec.comp.Name, peaks[i], b.Dimensions, b.MaxTotal)
		}
	}
	var outs map[string]*backend.Tensor
	if grp.empty() {
		hint, _ := g.sess.(backend.ShapeHinter)
		outs = g.spec.emptyOutputs(grp, hint)
	} else {
		outs, err = g.sess.Run(context.Background(), grp.inputs, g.spec.outputNames())
		if err != nil {
			return nil, backendError(g.spec.comp.Name, len(items), err)
		}
		g.stats.invoked(len(items), grp, peaks, time.Since(start))
	}
	return g.spec.split(grp, outs)
}

// itemsOf returns the items of waiting requests, with room for one more.
func itemsOf(batch []*pending) []*item {
	items := make([]*item, len(batch), len(batch)+1)
	for i, p := range batch {
		items[i] = p.it
	}
	return items
}

// backendError names the component and the group size of a backend
// failure, keeping the rule of a backend that reported a run/* error (a
// preprocessing adapter refusing a corrupt image is run/input).
func backendError(component string, requests int, err error) error {
	var re *backend.RunError
	if errors.As(err, &re) {
		return runErr(re.Rule, "component `%s` (a group of %d request(s)): %s", component, requests, re.Message)
	}
	return runErr("run/backend", "component `%s` failed on a group of %d request(s): %v", component, requests, err)
}
