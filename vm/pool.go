package vm

import "time"

// pool runs functions on goroutines it keeps between calls. The
// interpreter's call stack is deep enough that a fresh goroutine grows its
// stack several times per request; a kept goroutine has grown it already,
// and starting one costs nothing. Idle goroutines leave after idleFor.
type pool struct {
	work chan func()
	quit chan struct{}
}

const idleFor = 2 * time.Second

func newPool() *pool { return &pool{work: make(chan func()), quit: make(chan struct{})} }

// stop lets the idle goroutines leave now; busy ones leave when done.
func (p *pool) stop() { close(p.quit) }

// run runs f on an idle goroutine, or on a new one when none is idle.
func (p *pool) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.loop(f)
	}
}

func (p *pool) loop(f func()) {
	timer := time.NewTimer(idleFor)
	defer timer.Stop()
	for {
		f()
		timer.Reset(idleFor)
		select {
		case f = <-p.work:
		case <-timer.C:
			return
		case <-p.quit:
			return
		}
	}
}
