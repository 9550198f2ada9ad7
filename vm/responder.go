package vm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A responder answers a runner's callers from another processor, so that
// the runner goes straight on to its next group.
//
// A caller of Run waits parked on its channel. A runner that answers it
// readies the caller on the runner's own processor, and Go's scheduler
// wakes a parked thread to take it to an idle processor: a futex call on
// the runner's thread, once per group, of 10 to 15 µs on the virtual
// machines this project runs on. After that the runner either yields, so
// that its callers send their next requests before the next group forms,
// or leaves them queued behind its next invocation. Where a server's
// callers outnumber a group, the next group is already waiting, and both
// are time taken from the invocations: on the 64-image workload with 64
// callers, a group's 30 µs invocation was followed by as much again of
// waking and answering.
//
// So when the queue already holds the next group (the callers' next
// requests cannot make it fuller), the runner hands the answers to the
// responder (hand) and forms the next group at once. The responder runs on
// another processor, where it answers the callers; they run there too,
// and since the runner's processor is busy no other thread has to be
// woken for them. After its last answers the responder polls for more for
// responderSpin before it parks: where invocations are short it is still
// awake when the next group's answers come, and no thread is woken at
// all; where they are long it parks during the invocation, and the runner
// wakes it once per group, as it would have woken a thread for its
// callers. With one processor there is nowhere else to answer, and the
// runner answers as before.
type responder struct {
	mu     sync.Mutex
	queue  []answer // handed over, not yet sent
	spare  []answer // the storage of the last queue answered
	queued atomic.Bool
	awake  atomic.Bool   // answering or polling: it needs no wake
	wake   chan struct{} // cap 1
	stop   chan struct{} // closed once no runner can hand over any more
	done   chan struct{} // closed when the responder has stopped
	// gap is the usual time between the answers it is handed (a moving
	// average): it polls only where the next ones are due within
	// responderSpin.
	gap time.Duration
}

// answer is an item's share, to be sent to its caller.
type answer struct {
	p *pending
	s share
}

// responderSpin is how long an idle responder polls for answers before it
// parks (where a poller's place is free: startPolling): a few times what waking it costs, and longer than the short
// invocations it saves the wakes of (the 64-image workload's are 20 to
// 30 µs). It polls on another processor than the invocation's and
// yields every responderPolls polls, so that callers made runnable there
// run.
const (
	responderSpin  = 50 * time.Microsecond
	responderPolls = 64
)

func newResponder() *responder {
	r := &responder{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// hand queues an answer for the responder to send; the runner wakes it
// (nudge) once it has handed over its group's answers.
func (r *responder) hand(p *pending, s share) {
	r.mu.Lock()
	r.queue = append(r.queue, answer{p, s})
	r.mu.Unlock()
	r.queued.Store(true)
}

// nudge wakes the responder unless it is awake. A responder that stops
// polling clears awake before it looks at the queue one last time, so an
// answer handed over meanwhile is either seen there or nudged.
func (r *responder) nudge() {
	if r.awake.Load() {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// answerQueued sends every answer handed over so far, reporting whether
// there was any.
func (r *responder) answerQueued() bool {
	if !r.queued.Load() {
		return false
	}
	r.mu.Lock()
	q := r.queue
	r.queue = r.spare[:0]
	r.queued.Store(false)
	r.mu.Unlock()
	for i := range q {
		q[i].p.answer(q[i].s)
		q[i] = answer{}
	}
	r.spare = q[:0]
	return true
}

// loop answers while there are answers, polls for responderSpin after the
// last, and parks until nudged. Once stopped it answers what is left.
func (r *responder) loop() {
	defer close(r.done)
	for {
		select {
		case <-r.wake:
		case <-r.stop:
			r.answerQueued()
			return
		}
		r.awake.Store(true)
		last, polling := time.Now(), false
		for polls := 1; ; polls++ {
			if r.answerQueued() {
				// The callers just answered are runnable on this
				// processor: let them run and send their next requests.
				runtime.Gosched()
				now := time.Now()
				r.gap = (3*r.gap + now.Sub(last)) / 4
				last = now
				if r.gap > responderSpin {
					break // the next answers are far off: park meanwhile
				}
				if !polling && !startPolling() {
					break // other responders keep the processors busy
				}
				polling = true
				continue
			}
			if !polling {
				break // nothing to answer, and no poller's place
			}
			if polls%responderPolls == 0 {
				if time.Since(last) > responderSpin {
					break
				}
				runtime.Gosched()
			}
		}
		if polling {
			pollers.Add(-1)
		}
		r.awake.Store(false)
		r.answerQueued()
	}
}

// pollers counts the responders of the process that poll now. At most
// half the processors poll (one of two), so that the components of an
// engine, or the engines of a process, leave processors to their
// invocations and their callers.
var pollers atomic.Int32

// startPolling takes a poller's place if one is free.
func startPolling() bool {
	limit := int32(max(1, runtime.GOMAXPROCS(0)/2))
	for {
		n := pollers.Load()
		if n >= limit {
			return false
		}
		if pollers.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// close stops the responder once it has sent every answer handed over:
// the runners have stopped.
func (r *responder) close() {
	close(r.stop)
	<-r.done
}
