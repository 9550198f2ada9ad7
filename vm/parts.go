package vm

import (
	"context"
	"sync"

	"github.com/genaic/genaic/backend"
)

// A request whose items differ in an extent nothing reconciles runs as
// several plain requests, its parts (items.go), each through the whole
// workflow. Were they independent, a part could be grouped and invoked
// while a sibling is still to be refused (an item over a budget), and the
// request would fail having spent invocations. So the parts share a gate:
// at each grouped admission a part whose item is admissible waits until
// every sibling has also reached an admissible item (or has finished),
// and a part that is refused fails its waiting siblings, none of which has
// been queued. A waiting part blocks nothing a sibling needs (it holds no
// place in any queue), so the parts always meet.

// partGate is the gate of one request's parts.
type partGate struct {
	mu      sync.Mutex
	running int           // parts neither waiting at an admission nor finished
	waiting int           // parts admitted and held
	err     error         // the first refusal
	open    chan struct{} // closed to let the waiting parts go
}

func newPartGate(parts int) *partGate {
	return &partGate{running: parts, open: make(chan struct{})}
}

// release lets every waiting part go on (under mu).
func (g *partGate) release() {
	g.running += g.waiting
	g.waiting = 0
	close(g.open)
	g.open = make(chan struct{})
}

// admitted holds a part whose item the component admits until its
// siblings are admitted too, and returns the refusal of a sibling, which
// fails it before it is queued.
func (g *partGate) admitted(ctx context.Context) error {
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return g.err
	}
	g.running--
	g.waiting++
	if g.running == 0 {
		g.release()
		g.mu.Unlock()
		return nil
	}
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.err
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.err == nil {
			g.waiting--
			g.running++
		}
		return backend.ContextError(ctx.Err())
	}
}

// refused records a part's refusal and fails the parts that wait.
func (g *partGate) refused(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
		close(g.open)
	}
}

// finished counts a part that ran to its end, which its waiting siblings
// no longer wait for; a part that failed fails them, as a refusal does.
func (g *partGate) finished(err error) {
	if err != nil {
		g.refused(err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.running--
	if g.running == 0 && g.waiting > 0 {
		g.release()
	}
}

type partKey struct{}

// WithPart returns the context to run plain request req under and what to
// call with its error (nil: none) once it has run: where req is a part of
// a request its items split (Engine.PackItems), the context carries the
// parts' gate, which the engine's grouped admissions honour. Generated
// executors run each part this way; the engine's own runs do it
// themselves.
func WithPart(ctx context.Context, req Request) (context.Context, func(error)) {
	if req.parts == nil {
		return ctx, func(error) {}
	}
	return context.WithValue(ctx, partKey{}, req.parts), req.parts.finished
}

// gateOf is the parts' gate ctx carries, or nil.
func gateOf(ctx context.Context) *partGate {
	g, _ := ctx.Value(partKey{}).(*partGate)
	return g
}

// gated reports whether a request of reqs is a part held by a gate.
func gated(reqs []Request) bool {
	for i := range reqs {
		if reqs[i].parts != nil {
			return true
		}
	}
	return false
}
