package e2e

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// A served floor is a floor (floor_test.go) for callers that wait for
// their answers, as a server's handlers do: it serves them with nothing
// beyond what that needs. A caller checks its request on its own
// goroutine, queues it and waits on a channel of its own; a slot, one per
// session, takes the oldest requests that fit the budgets once they are
// its share of the callers (callers over slots: what each slot runs when
// all are busy), or once the oldest has waited the delay, assembles them
// into its own buffers, makes the call the hand strategies make (the
// session's Run, its outputs allocated afresh) and hands each caller
// views of its rows. One mutex, one channel that wakes a waiting slot; no
// IR, no stats, no cancellation. Groups are FIFO, as the hand strategies'
// batches are. BenchmarkBest runs it beside the served engine (floorC):
// floorC/best says what serving waiting callers costs on this machine
// beyond the hand strategy's own calls, and servedC/floor what genaic's
// generality costs them.
type servedFloor[Q any] struct {
	layout floorLayout[Q]
	share  int           // requests a slot waits for
	delay  time.Duration // the longest a request waits for them

	mu     sync.Mutex
	queue  []*floorCall[Q]
	kick   chan struct{} // wakes a waiting slot: a request came, or the share
	closed chan struct{}
	slots  sync.WaitGroup
	calls  sync.Pool // of *floorCall[Q]
}

// floorLayout is what a served floor knows of its package: Q is a checked
// request.
type floorLayout[Q any] interface {
	// admit checks request r into q.
	admit(r vm.Request, q *Q) error
	// fits adds q to a group whose use of the budgets is sum (the
	// layout's own figures, zero for an empty group), reporting whether it
	// fits; a group's first request always does.
	fits(sum *[3]int64, q *Q, first bool) bool
	// slot makes a slot's call: it runs group on s in buffers of the
	// slot's own and sets each request's outputs or error.
	slot() func(s backend.Session, group []*floorCall[Q])
	// outputs are the names of a request's outputs.
	outputs() [3]string
}

// floorCall is one request on its way through a served floor.
type floorCall[Q any] struct {
	q      Q
	r      vm.Request
	queued time.Time
	outs   [3]*backend.Tensor
	err    error
	done   chan struct{}
}

// floorServer is a running served floor: serve runs a request, handing
// its outputs (names) to use before it returns; stop ends the floor once
// its queue is empty.
type floorServer struct {
	serve func(r vm.Request, use func(outs [3]*backend.Tensor)) error
	stop  func()
	names [3]string
}

// serveFloor starts a served floor of layout for callers, a slot on each
// session.
func serveFloor[Q any](layout floorLayout[Q], sessions []backend.Session, callers int, delay time.Duration) floorServer {
	f := &servedFloor[Q]{layout: layout, share: max(1, (callers+len(sessions)-1)/len(sessions)), delay: delay,
		kick: make(chan struct{}, 1), closed: make(chan struct{})}
	f.calls.New = func() any { return &floorCall[Q]{done: make(chan struct{}, 1)} }
	for _, s := range sessions {
		call := layout.slot()
		f.slots.Go(func() { f.slot(s, call) })
	}
	return floorServer{serve: f.serve, names: layout.outputs(), stop: func() {
		close(f.closed)
		f.slots.Wait()
	}}
}

func (f *servedFloor[Q]) serve(r vm.Request, use func(outs [3]*backend.Tensor)) error {
	c := f.calls.Get().(*floorCall[Q])
	defer f.calls.Put(c)
	if err := f.layout.admit(r, &c.q); err != nil {
		return err
	}
	f.mu.Lock()
	select {
	case <-f.closed: // its slots may have left (they leave under the lock)
		f.mu.Unlock()
		return errFloorClosed
	default:
	}
	c.r, c.err, c.queued = r, nil, time.Now()
	f.queue = append(f.queue, c)
	if n := len(f.queue); n == 1 || n == f.share {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	f.mu.Unlock()
	<-c.done
	if c.err == nil {
		use(c.outs)
	}
	c.r, c.outs = vm.Request{}, [3]*backend.Tensor{}
	return c.err
}

// take is how many of the oldest queued requests a slot takes now (0:
// none yet) and, where none, how long to wait before looking again (0:
// until woken).
func (f *servedFloor[Q]) take(now time.Time) (n int, wait time.Duration) {
	var sum [3]int64
	for ; n < len(f.queue) && n < f.share; n++ {
		if !f.layout.fits(&sum, &f.queue[n].q, n == 0) {
			return n, 0 // the budgets are full
		}
	}
	if n == 0 || n == f.share {
		return n, 0
	}
	if waited := now.Sub(f.queue[0].queued); waited < f.delay {
		return 0, f.delay - waited
	}
	return n, 0
}

// slot runs groups on s with call until the floor is stopped and its
// queue empty.
func (f *servedFloor[Q]) slot(s backend.Session, call func(backend.Session, []*floorCall[Q])) {
	var group []*floorCall[Q]
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		f.mu.Lock()
		n, wait := f.take(time.Now())
		for n == 0 {
			f.mu.Unlock()
			stopped := false
			if wait == 0 {
				select {
				case <-f.kick:
				case <-f.closed:
					stopped = true
				}
			} else {
				timer.Reset(wait)
				select {
				case <-f.kick:
				case <-timer.C:
				case <-f.closed:
					stopped = true
				}
				timer.Stop()
			}
			f.mu.Lock()
			if n, wait = f.take(time.Now()); n == 0 && stopped && len(f.queue) == 0 {
				f.mu.Unlock()
				return
			}
			if stopped && n == 0 {
				n = min(len(f.queue), f.share) // the last requests: no one comes
			}
		}
		group = append(group[:0], f.queue[:n]...)
		f.queue = f.queue[:copy(f.queue, f.queue[n:])]
		if len(f.queue) > 0 {
			select { // the rest may be another slot's
			case f.kick <- struct{}{}:
			default:
			}
		}
		f.mu.Unlock()
		call(s, group)
		for _, c := range group {
			c.done <- struct{}{}
		}
		clear(group)
	}
}

// textLayout is text_packed's served layout: FIFO groups under the
// segments and tokens budgets.
type textLayout struct{ maxSegments, maxTokens int64 }

func newTextLayout(budgets []plan.Budget) floorLayout[textRequest] {
	return textLayout{maxSegments: limit(budgets, "segments"), maxTokens: limit(budgets, "tokens")}
}

func (l textLayout) admit(r vm.Request, q *textRequest) error { return admitText(r, q) }

func (l textLayout) fits(sum *[3]int64, q *textRequest, first bool) bool {
	tokens, segments := sum[0]+int64(len(q.ids)), sum[1]+q.segments
	if !first && (tokens > l.maxTokens || segments > l.maxSegments) {
		return false
	}
	sum[0], sum[1] = tokens, segments
	return true
}

func (l textLayout) outputs() [3]string {
	return [3]string{"segment_embeddings", "segment_offsets", "segment_owner"}
}

func (l textLayout) slot() func(backend.Session, []*floorCall[textRequest]) {
	var g textGroup
	in := map[string]*backend.Tensor{}
	return func(s backend.Session, group []*floorCall[textRequest]) {
		g.assemble(func(yield func(*textRequest) bool) {
			for _, c := range group {
				if !yield(&c.q) {
					return
				}
			}
		}, in)
		out, err := s.Run(context.Background(), in, []string{"segment_embeddings"})
		row := int64(0)
		for _, c := range group {
			if c.err = err; err == nil {
				n := c.q.segments
				c.outs = [3]*backend.Tensor{out["segment_embeddings"].View(row, row+n), c.r.Inputs["segment_offsets"], c.r.Inputs["segment_owner"]}
				row += n
			}
		}
	}
}

// paddedLayout is a padded package's served layout (image_padded,
// text_padded): FIFO groups under the items and items×extent budgets,
// padded to the widest of the group, as the hand strategies' batches are.
type paddedLayout[T float32 | int64] struct{ f *paddedFloor[T] }

func newPaddedLayout[T float32 | int64](n paddedNames) func(budgets []plan.Budget) floorLayout[paddedRequest[T]] {
	return func(budgets []plan.Budget) floorLayout[paddedRequest[T]] {
		return paddedLayout[T]{f: newPaddedFloor[T](n)(budgets).(*paddedFloor[T])}
	}
}

func (l paddedLayout[T]) admit(r vm.Request, q *paddedRequest[T]) error { return l.f.admit(r, q) }

// fits keeps the items, the widest extent and the elements of a position
// (a group's inner shape is uniform) in sum.
func (l paddedLayout[T]) fits(sum *[3]int64, q *paddedRequest[T], first bool) bool {
	items, extent := sum[0]+q.items, max(sum[1], q.extent)
	if !first && (items > l.f.maxItems || items*extent > l.f.maxArea || q.inner != sum[2]) {
		return false
	}
	sum[0], sum[1], sum[2] = items, extent, q.inner
	return true
}

func (l paddedLayout[T]) outputs() [3]string {
	n := l.f.names
	return [3]string{n.output, n.offsets, n.owner}
}

func (l paddedLayout[T]) slot() func(backend.Session, []*floorCall[paddedRequest[T]]) {
	var g paddedGroup[T]
	in := map[string]*backend.Tensor{}
	n := l.f.names
	return func(s backend.Session, group []*floorCall[paddedRequest[T]]) {
		items, extent := int64(0), int64(0)
		for _, c := range group {
			items, extent = items+c.q.items, max(extent, c.q.extent)
		}
		inner := group[0].r.Inputs[n.payload].Shape[2:]
		g.assemble(n, func(yield func(*paddedRequest[T]) bool) {
			for _, c := range group {
				if !yield(&c.q) {
					return
				}
			}
		}, items, extent, inner, in)
		out, err := s.Run(context.Background(), in, []string{n.output})
		row := int64(0)
		for _, c := range group {
			if c.err = err; err == nil {
				m := c.q.items
				c.outs = [3]*backend.Tensor{out[n.output].View(row, row+m), c.r.Inputs[n.offsets], c.r.Inputs[n.owner]}
				row += m
			}
		}
	}
}

// errFloorClosed is what a served floor's request fails with once the
// floor is stopped.
var errFloorClosed = errors.New("the served floor is stopped")

// TestServedFloor: a served floor answers every request of its workload's
// document, sent by concurrent callers, with the engine's outputs, and
// refuses a request whose companions disagree, as the engine does.
func TestServedFloor(t *testing.T) {
	be := ortBackend(t)
	for _, w := range workloads {
		start := floors[w.name].serve
		if start == nil {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			fx := fixtures.Lookup(w.pkg)
			reqs := readDocument(t, w.pkg, w.doc)
			e := vmEngine.start(t, fx, genrt.WithBackend(ir.ImplONNX, be))
			want := runAll(context.Background(), e, reqs)
			f, _ := fixtures.Compile(t, fx)
			fl := start(f.Component(fx.Component).Budgets,
				[]backend.Session{session(t, fx, fx.Component, be), session(t, fx, fx.Component, be)}, 16, genrt.DefaultMaxDelay)
			got := make([][3]*backend.Tensor, len(reqs))
			var wg sync.WaitGroup
			for c := range 16 {
				wg.Go(func() {
					for i := c; i < len(reqs); i += 16 {
						if err := fl.serve(reqs[i], func(outs [3]*backend.Tensor) { got[i] = outs }); err != nil {
							t.Errorf("%s: %v", reqs[i].ID, err)
						}
					}
				})
			}
			wg.Wait()
			for i, r := range want {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.ID, r.Err)
				}
				if r.Outputs.Len() != len(fl.names) {
					t.Errorf("%s: the engine gave %d outputs, the floor %d", r.ID, r.Outputs.Len(), len(fl.names))
				}
				for k, name := range fl.names {
					if d := fixtures.Diff(got[i][k], r.Outputs.Get(name), tolerance); d != "" {
						t.Errorf("%s: output %s: %s", r.ID, name, d)
					}
				}
			}
			// One request's owner off by one: the floor refuses it.
			r := reqs[len(reqs)/2]
			name := floors[w.name].owner
			owner := r.Inputs[name]
			wrong := make([]int64, owner.Len())
			for i, v := range owner.Int64s() {
				wrong[i] = v + 1
			}
			r.Inputs = maps.Clone(r.Inputs)
			r.Inputs[name] = fixtures.I64(wrong...)
			if err := fl.serve(r, func([3]*backend.Tensor) {}); !errors.Is(err, errFloorInput) {
				t.Errorf("the floor served a request whose owner disagrees with its offsets (%v)", err)
			}
			fl.stop()
			if err := fl.serve(reqs[0], func([3]*backend.Tensor) {}); !errors.Is(err, errFloorClosed) {
				t.Errorf("a stopped floor answered %v, not that it is stopped", err)
			}
		})
	}
}

// floorStarter starts a package's served floor under its budgets for
// callers, a slot on each session.
type floorStarter func(budgets []plan.Budget, sessions []backend.Session, callers int, delay time.Duration) floorServer

// served is the floorStarter of a layout.
func served[Q any](layout func(budgets []plan.Budget) floorLayout[Q]) floorStarter {
	return func(budgets []plan.Budget, sessions []backend.Session, callers int, delay time.Duration) floorServer {
		return serveFloor(layout(budgets), sessions, callers, delay)
	}
}
