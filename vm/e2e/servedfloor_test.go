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
// beyond what that needs. A caller checks its request on its own goroutine, queues it and
// waits on a channel of its own; a slot, one per session, takes the
// oldest requests that fit the budgets once they are its share of the
// callers (callers over slots: what each slot runs when all are busy), or
// once the oldest has waited the delay, assembles them into its own
// buffers, makes the call the hand strategies make (the session's Run,
// its outputs allocated afresh) and hands each caller views of its rows.
// One mutex, one channel that wakes a waiting slot; no IR, no stats, no
// cancellation. It serves text_packed, whose groups need no ordering:
// FIFO under the segments and tokens budgets. BenchmarkBest runs it
// beside the served engine (floorC): floorC/best says what serving
// waiting callers costs on this machine beyond the hand strategy's own
// calls, and servedC/floor what genaic's generality costs them.
type servedFloor struct {
	maxSegments, maxTokens int64
	share                  int           // requests a slot waits for
	delay                  time.Duration // the longest a request waits for them

	mu     sync.Mutex
	queue  []*floorCall
	kick   chan struct{} // wakes a waiting slot: a request came, or the share
	closed chan struct{}
	slots  sync.WaitGroup
}

// floorCall is one request on its way through a served floor.
type floorCall struct {
	q      textRequest
	r      vm.Request
	queued time.Time
	outs   [3]*backend.Tensor
	err    error
	done   chan struct{}
}

// serveFloor starts a served floor of text_packed for callers under
// budgets, a slot on each session; stop ends it once its queue is empty.
func serveFloor(budgets []plan.Budget, sessions []backend.Session, callers int, delay time.Duration) (f *servedFloor, stop func()) {
	f = &servedFloor{maxSegments: limit(budgets, "segments"), maxTokens: limit(budgets, "tokens"),
		share: max(1, (callers+len(sessions)-1)/len(sessions)), delay: delay,
		kick: make(chan struct{}, 1), closed: make(chan struct{})}
	for _, s := range sessions {
		f.slots.Go(func() { f.slot(s) })
	}
	return f, func() {
		close(f.closed)
		f.slots.Wait()
	}
}

var floorCalls = sync.Pool{New: func() any { return &floorCall{done: make(chan struct{}, 1)} }}

// serve runs one request and hands its outputs (segment_embeddings,
// segment_offsets, segment_owner) to use before it returns.
func (f *servedFloor) serve(r vm.Request, use func(outs [3]*backend.Tensor)) error {
	c := floorCalls.Get().(*floorCall)
	defer floorCalls.Put(c)
	var tf textFloor
	if err := tf.admit(r, &c.q); err != nil {
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
func (f *servedFloor) take(now time.Time) (n int, wait time.Duration) {
	tokens, segments := int64(0), int64(0)
	for ; n < len(f.queue) && n < f.share; n++ {
		q := &f.queue[n].q
		t, sg := tokens+int64(len(q.ids)), segments+q.segments
		if n > 0 && (t > f.maxTokens || sg > f.maxSegments) {
			return n, 0 // the budgets are full
		}
		tokens, segments = t, sg
	}
	if n == 0 || n == f.share {
		return n, 0
	}
	if waited := now.Sub(f.queue[0].queued); waited < f.delay {
		return 0, f.delay - waited
	}
	return n, 0
}

// slot runs groups on s until the floor is stopped and its queue empty.
func (f *servedFloor) slot(s backend.Session) {
	var group []*floorCall
	var ids, offs, owner []int64
	var tensors [3]backend.Tensor
	in := map[string]*backend.Tensor{}
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

		ids, offs, owner = ids[:0], append(offs[:0], 0), owner[:0]
		for _, c := range group {
			base, first := int64(len(ids)), int64(len(offs)-1)
			ids = append(ids, c.q.ids...)
			for k := 1; k < len(c.q.offs); k++ {
				offs = append(offs, base+c.q.offs[k])
				for range c.q.offs[k] - c.q.offs[k-1] {
					owner = append(owner, first+int64(k-1))
				}
			}
		}
		tensors = [3]backend.Tensor{vector(ids), vector(offs), vector(owner)}
		in["token_ids"], in["token_offsets"], in["token_owner"] = &tensors[0], &tensors[1], &tensors[2]
		out, err := s.Run(context.Background(), in, []string{"segment_embeddings"})
		row := int64(0)
		for _, c := range group {
			if err != nil {
				c.err = err
			} else {
				n := c.q.segments
				c.outs = [3]*backend.Tensor{out["segment_embeddings"].View(row, row+n), c.r.Inputs["segment_offsets"], c.r.Inputs["segment_owner"]}
				row += n
			}
			c.done <- struct{}{}
		}
		clear(group)
	}
}

// errFloorClosed is what a served floor's request fails with once the
// floor is stopped.
var errFloorClosed = errors.New("the served floor is stopped")

// TestServedFloor: a served floor answers every request of text_packed's
// documents, sent by concurrent callers, with the engine's outputs, and
// refuses a request whose companions disagree, as the engine does.
func TestServedFloor(t *testing.T) {
	be := ortBackend(t)
	for _, w := range workloads {
		if w.pkg != "text_packed" {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			fx := fixtures.Lookup(w.pkg)
			reqs := readDocument(t, w.pkg, w.doc)
			e := vmEngine.start(t, fx, genrt.WithBackend(ir.ImplONNX, be))
			want := runAll(context.Background(), e, reqs)
			f, _ := fixtures.Compile(t, fx)
			fl, stop := serveFloor(f.Component(fx.Component).Budgets,
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
			names := [3]string{"segment_embeddings", "segment_offsets", "segment_owner"}
			for i, r := range want {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.ID, r.Err)
				}
				if r.Outputs.Len() != len(names) {
					t.Errorf("%s: the engine gave %d outputs, the floor %d", r.ID, r.Outputs.Len(), len(names))
				}
				for k, name := range names {
					if d := fixtures.Diff(got[i][k], r.Outputs.Get(name), tolerance); d != "" {
						t.Errorf("%s: output %s: %s", r.ID, name, d)
					}
				}
			}
			// One request's owner off by one: the floor refuses it.
			r := reqs[len(reqs)/2]
			owner := r.Inputs["token_owner"]
			wrong := make([]int64, owner.Len())
			for i, v := range owner.Int64s() {
				wrong[i] = v + 1
			}
			r.Inputs = maps.Clone(r.Inputs)
			r.Inputs["token_owner"] = fixtures.I64(wrong...)
			if err := fl.serve(r, func([3]*backend.Tensor) {}); !errors.Is(err, errFloorInput) {
				t.Errorf("the floor served a request whose owner disagrees with its offsets (%v)", err)
			}
			stop()
			if err := fl.serve(reqs[0], func([3]*backend.Tensor) {}); !errors.Is(err, errFloorClosed) {
				t.Errorf("a stopped floor answered %v, not that it is stopped", err)
			}
		})
	}
}
