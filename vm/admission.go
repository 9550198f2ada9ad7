package vm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/genaic/genaic/backend"
)

// BatchOptions say how RunBatch admits the requests of a batch and tells
// of their responses.
type BatchOptions struct {
	// Limit bounds the requests in flight (0: all of them).
	Limit int
	// Stop, once closed, ends admission: no request of the batch starts
	// after it, while every request already started runs to its end under
	// the batch's context (cancelling that context fails them instead).
	// A request never started is answered with a run/cancelled error that
	// NotStarted recognises. A nil Stop never closes.
	Stop <-chan struct{}
	// Finished, when set, is called once for every request of the batch,
	// with its index and its response, as soon as the response is known
	// (a request never started included). Calls come from the goroutines
	// that ran the requests, possibly at once; the batch waits for them.
	Finished func(i int, r Response)
}

// errNotStarted is what a request a batch never started was answered
// with.
var errNotStarted = errors.New("the run stopped admitting requests before this one started")

// NotStarted reports whether err answers a request that RunBatch never
// started because its Stop closed first.
func NotStarted(err error) bool { return errors.Is(err, errNotStarted) }

// notStarted is the response of a request a batch never started.
func notStarted(req Request) Response {
	return Response{ID: req.ID, Err: &backend.RunError{Rule: backend.RunCancelled, Message: errNotStarted.Error(), Err: errNotStarted}}
}

// stopped reports whether stop has closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// RunBatch runs requests concurrently, as RunAllLimit does, and returns
// their responses in order, admitting and reporting them as opts say.
//
// A request that gives items (Request.Items) runs as the plain requests
// its items pack into (items.go) and is answered once they all are.
func (e *Engine) RunBatch(ctx context.Context, reqs []Request, opts BatchOptions) []Response {
	return e.admit(ctx, reqs, opts, nil)
}

// RunFunc runs one plain request (no items; its Err nil) in place of the
// interpreter: a generated executor's workflow. RunBatchWith counts the
// request as running while RunFunc runs it, so RunFunc must not count it
// again (Begin, End).
type RunFunc func(ctx context.Context, req Request) Response

// RunBatchWith is RunBatch with each plain request run by run rather than
// interpreted: generated executors admit, pack items and report as the VM
// does this way, with the same Limit, Stop and Finished. A request that
// could not be read (its Err set) is answered run/input without run.
func (e *Engine) RunBatchWith(ctx context.Context, reqs []Request, opts BatchOptions, run RunFunc) []Response {
	if run == nil {
		run = e.exec
	}
	return e.admit(ctx, reqs, opts, run)
}

// admit is RunBatch and RunBatchWith: run nil interprets each request,
// in lockstep windows where the workflow allows. A batch's requests wait
// for room in a full queue rather than fail (grouper.enqueue).
func (e *Engine) admit(ctx context.Context, reqs []Request, opts BatchOptions, run RunFunc) []Response {
	ctx = context.WithValue(ctx, waitsKey{}, true)
	if hasItems(reqs) {
		return e.runBatchItems(ctx, reqs, opts, run)
	}
	exec := e.exec
	if run != nil {
		exec = func(ctx context.Context, req Request) Response {
			if req.Err != nil {
				return Response{ID: req.ID, Err: Unreadable(req.Err)}
			}
			ctx, finish := WithPart(ctx, req)
			resp := run(ctx, req)
			finish(resp.Err)
			return resp
		}
	}
	limit := opts.Limit
	if limit <= 0 || limit > len(reqs) {
		limit = len(reqs)
	}
	out := responsesFor(len(reqs))
	answer := func(i int, r Response) {
		out[i] = r
		if opts.Finished != nil {
			opts.Finished(i, r)
		}
	}
	// The parts of a request its items split wait for each other at their
	// admissions (parts.go), which a lockstep window, admitting one
	// request after another on one goroutine, cannot do.
	if e.lockstep && run == nil && !gated(reqs) {
		e.runWindows(ctx, reqs, min(limit, e.opts.Queue), opts.Stop, out, opts.Finished)
		return out
	}
	e.announced.Add(int64(len(reqs)))
	var next atomic.Int64
	// refuse answers every request not yet taken as never started, and
	// withdraws its announcement, so that no group waits for it.
	refuse := func() {
		n := 0
		for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
			e.announced.Add(-1)
			answer(int(i), notStarted(reqs[i]))
			n++
		}
		if n > 0 {
			e.done(0)
		}
	}
	finished := make(chan struct{})
	var refused sync.WaitGroup
	if opts.Stop != nil {
		// Admission ends when Stop closes, not when a worker next looks.
		refused.Go(func() {
			select {
			case <-opts.Stop:
				refuse()
			case <-finished:
			}
		})
	}
	var wg sync.WaitGroup
	wg.Add(limit)
	for range limit {
		e.goroutines.run(func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
				if stopped(opts.Stop) {
					e.announced.Add(-1)
					answer(int(i), notStarted(reqs[i]))
					e.done(0)
					continue
				}
				e.active.Add(1) // before the announcement ends: never both zero
				e.announced.Add(-1)
				resp := exec(ctx, reqs[i])
				e.done(1)
				answer(int(i), resp)
			}
		})
	}
	wg.Wait()
	close(finished)
	refused.Wait()
	return out
}

// runWindows runs reqs in lockstep (batch.go), window by window: a window
// is as many requests as may be in flight and as the queues hold. Its
// requests are not counted as active: at each invoke the batch promises
// the grouper exactly the items still to come, and once they are all in,
// none of the window's requests will bring another. Once stop closes, no
// window starts; the one running finishes.
func (e *Engine) runWindows(ctx context.Context, reqs []Request, window int, stop <-chan struct{}, out []Response, finished func(int, Response)) {
	for lo := 0; lo < len(reqs); lo += window {
		hi := min(lo+window, len(reqs))
		halted := stopped(stop)
		if halted {
			hi = len(reqs)
			for i := lo; i < hi; i++ {
				out[i] = notStarted(reqs[i])
			}
		} else {
			e.runBatch(ctx, reqs[lo:hi], out[lo:hi])
		}
		if finished != nil {
			for i := lo; i < hi; i++ {
				finished(i, out[i])
			}
		}
		if halted {
			return
		}
	}
}
