package sched

import (
	"math"
	"time"
)

// Arrivals estimates when the next item of an open-ended stream arrives:
// from the last gap (a burst goes on at its own pace) and from an
// exponentially weighted mean of the gaps (the steady rate), whichever
// expects it sooner, so that neither a quiet spell before a burst nor one
// stray gap in a steady stream closes groups early. It also measures how
// often an arrival finds other items waiting or running: a lone caller's
// next request comes after its answer, never while its item waits.
type Arrivals struct {
	last    time.Time
	lastGap time.Duration
	mean    float64 // mean gap, in nanoseconds
	seen    int
	// overlap is the weighted share of arrivals that found other items
	// of the component waiting or running.
	overlap float64
}

// Arrived records an arrival at t; busy says whether other items were
// waiting or running then.
func (a *Arrivals) Arrived(t time.Time, busy bool) {
	x := 0.0
	if busy {
		x = 1
	}
	if a.seen == 0 {
		a.overlap = 1 // a new stream may be a burst until it shows otherwise
	}
	a.overlap = 0.8*a.overlap + 0.2*x
	if a.seen > 0 {
		a.lastGap = t.Sub(a.last)
		if a.seen == 1 {
			a.mean = float64(a.lastGap)
		} else {
			a.mean = 0.75*a.mean + 0.25*float64(a.lastGap)
		}
	}
	a.last = t
	a.seen++
}

// ArrivedAgain records k more arrivals at the time of the last, each
// finding items waiting: what k calls of Arrived at that time would.
func (a *Arrivals) ArrivedAgain(k int) {
	if k == 0 {
		return
	}
	decay := math.Pow(0.8, float64(k))
	a.overlap = decay*a.overlap + (1 - decay)
	a.mean *= math.Pow(0.75, float64(k)) // 0 after one arrival, and gaps of 0 keep it so
	a.lastGap = 0
	a.seen += k
}

// due returns how long until the next arrival is expected, when at least
// two arrivals have been seen; it is negative once the arrival is overdue
// by more than a gap (the stream has paused or ended, as it does after the
// last request of a burst).
func (a *Arrivals) due(now time.Time) (time.Duration, bool) {
	if a.seen < 2 {
		return 0, false
	}
	gap := min(a.lastGap, time.Duration(a.mean))
	due := gap - now.Sub(a.last)
	if due < -gap {
		return -1, true
	}
	return max(due, 0), true
}

// apart reports whether the stream's items usually arrive alone: at least
// two were seen, and fewer than half of the recent ones found another
// item waiting or running.
func (a *Arrivals) apart() bool { return a.seen >= 2 && a.overlap < 0.5 }
