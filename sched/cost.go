package sched

import (
	"math"
	"sync"
	"time"
)

// Cost learns, per component and online, what grouping is worth: what an
// invocation costs whatever it holds, what each element it materializes
// costs, and from which group size on larger groups stop paying.
//
// An invocation's time is fitted as t = a + c·F, F being the elements the
// group's inputs materialize (padding included): a is what one invocation
// costs whatever it holds, c what each element costs. Adding an item to a
// group saves one invocation (a) and costs the padding it adds (c times
// those elements), so an item joins only where c·waste ≤ a: with packed
// inputs there is no waste and grouping always pays; with padded inputs of
// very different extents it may not, and such items go to other groups.
//
// Beside the fit, it keeps the time per real element by group size class
// (1, 2, 3–4, 5–8, ...), its mean and its spread, and caps group size
// above the largest class not shown to cost more than 10 % over the best
// one: where larger groups stop paying (caches that overflow, a model
// whose cost grows faster than its batch), groups stop growing, down to
// one item. "Shown" means beyond three standard errors of the two means:
// invocation times vary by tens of percent from call to call, and where
// time per element is flat over the larger sizes (the usual case once a
// model is saturated) a cap read off the means alone comes and goes with
// that noise, each time costing an invocation that gains nothing. One
// group in costExplore is formed without the cap, so that a cap follows
// the component as conditions change.
//
// A Cost is safe for concurrent use: the goroutines that run groups
// report to it while one of them forms the next group.
type Cost struct {
	mu sync.Mutex
	// decayed sums of the least-squares fit of time (ns) on elements
	n, sx, sy, sxx, sxy float64
	classes             [costClasses]classStat
	formed              int
	// runMean and runVar are the mean and the variance of recent runs
	// (ns), exponentially weighted (runWeight per observation).
	runMean, runVar float64
	runs            int
}

const (
	costClasses  = 12   // group sizes up to 2^11 and beyond
	costDecay    = 0.98 // weight of the past per observation
	costMinFit   = 8    // observations before the fit is trusted
	costMinClass = 4    // observations before a size class is trusted
	costExplore  = 16   // every costExplore-th group ignores the cap
	costSlack    = 1.10 // a class within 10 % of the best still pays
	runWeight    = 0.2  // weight of the newest run in runMean and runVar
)

// classStat is the time per real element (ns) of one group size class:
// its mean and squared deviations, exponentially weighted (classDecay per
// observation), and the weight of the observations they hold.
type classStat struct {
	mean, m2, weight float64
	seen             int
}

// classDecay is the weight of a class's past per observation: its mean
// follows the last twenty or so groups of that size.
const classDecay = 0.95

// costSignificance is how many standard errors a class's mean must
// exceed the slack over the best class's for the class to count as
// costing more.
const costSignificance = 3

func (c *classStat) add(x float64) {
	c.weight = classDecay*c.weight + 1
	d := x - c.mean
	c.mean += d / c.weight
	c.m2 = classDecay*c.m2 + d*(x-c.mean)
	c.seen++
}

// variance is the spread of the class's mean (its standard error, squared).
func (c *classStat) variance() float64 { return c.m2 / c.weight / c.weight }

// worse reports whether class c is shown to cost more per element than
// costSlack times the best class's.
func (c *classStat) worse(best *classStat) bool {
	margin := costSignificance * math.Sqrt(c.variance()+best.variance())
	return c.mean > costSlack*best.mean+margin
}

// sizeClass is the class of a group of n items: 0 for 1, 1 for 2, 2 for
// 3–4, 3 for 5–8, ...
func sizeClass(n int) int {
	c := 0
	for m := n - 1; m > 0; m >>= 1 {
		c++
	}
	return min(c, costClasses-1)
}

// classMax is the largest group size of class c.
func classMax(c int) int { return 1 << c }

// Observe records one invocation: the items in the group, the elements
// its inputs materialized (padded) and those that were its items' own
// (real), and its run time.
func (s *Cost) Observe(items int, padded, real int64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, y := float64(padded), float64(d.Nanoseconds())
	if s.runs == 0 {
		s.runMean = y
	} else {
		d := y - s.runMean
		s.runMean += runWeight * d
		s.runVar = (1 - runWeight) * (s.runVar + runWeight*d*d)
	}
	s.runs++
	s.n = costDecay*s.n + 1
	s.sx = costDecay*s.sx + x
	s.sy = costDecay*s.sy + y
	s.sxx = costDecay*s.sxx + x*x
	s.sxy = costDecay*s.sxy + x*y
	if real > 0 {
		s.classes[sizeClass(items)].add(y / float64(real))
	}
}

// fit returns the fixed cost a and the cost per element c (ns), and
// whether enough varied observations support them. A fit with no
// positive fixed cost is no fit: every invocation costs something whatever
// it holds, so a line through the origin or below it says that the groups
// seen were too alike in size for the noise in their times (budget-sized
// groups usually are), and refusing every item that adds padding on its
// word would split groups by extent for nothing.
func (s *Cost) fit() (a, c float64, ok bool) {
	if s.n < costMinFit {
		return 0, 0, false
	}
	den := s.n*s.sxx - s.sx*s.sx
	if den <= 1e-9*s.n*s.sxx || math.IsNaN(den) {
		return 0, 0, false
	}
	c = (s.n*s.sxy - s.sx*s.sy) / den
	a = (s.sy - c*s.sx) / s.n
	return a, c, a > 0
}

// ExpectedRun returns how long a group is expected to run: the mean of
// recent runs; false before any run.
func (s *Cost) ExpectedRun() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.runMean), s.runs > 0
}

// RunBound returns how long a group may be expected to run at most: the
// mean of recent runs and twice their spread (runs vary with the group's
// size and with the machine); false before any run. A group that must end
// by a deadline stops waiting for more items this long before it.
func (s *Cost) RunBound() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.runMean + 2*math.Sqrt(s.runVar)), s.runs > 0
}

// Payable returns the most padding elements an item may add to a group
// and still cost less than the invocation it saves: the fit's fixed cost
// over its cost per element; +Inf while the fit does not say.
func (s *Cost) Payable() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, c, ok := s.fit()
	if !ok || c <= 0 {
		return math.Inf(1)
	}
	return a / c
}

// Limit returns the group size cap for the next group formed, 0 for none:
// the cap, except for every costExplore-th group.
func (s *Cost) Limit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.formed++
	if s.formed%costExplore == 0 {
		return 0
	}
	return s.capLocked()
}

// Cap returns the group size cap (0: none) without forming a group.
func (s *Cost) Cap() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capLocked()
}

func (s *Cost) capLocked() int {
	var best *classStat
	for k := range s.classes {
		if c := &s.classes[k]; c.seen >= costMinClass && (best == nil || c.mean < best.mean) {
			best = c
		}
	}
	if best == nil {
		return 0
	}
	limit, worse := 0, false
	for k := range s.classes {
		c := &s.classes[k]
		if c.seen < costMinClass {
			continue
		}
		if !c.worse(best) {
			limit = classMax(k)
			worse = false
		} else {
			worse = true
		}
	}
	if !worse {
		return 0 // the largest class seen pays: no cap
	}
	return limit
}

// CostStats is what a Cost has learned and decided.
type CostStats struct {
	// FixedNS and PerElementNS are the fit of invocation time on the
	// elements a group materializes: t = fixed + per_element × elements.
	FixedNS, PerElementNS float64
	Fitted                bool
	// Cap is the group size above which groups stop paying (0: none).
	Cap int
	// PerElementBySize is the mean time per real element (ns) by group
	// size class, keyed by the largest size of the class.
	PerElementBySize map[int]float64
}

// Snapshot returns what the Cost has learned and decided so far.
func (s *Cost) Snapshot() CostStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, c, ok := s.fit()
	out := CostStats{FixedNS: a, PerElementNS: c, Fitted: ok, Cap: s.capLocked()}
	for k, cl := range s.classes {
		if cl.seen > 0 {
			if out.PerElementBySize == nil {
				out.PerElementBySize = map[int]float64{}
			}
			out.PerElementBySize[classMax(k)] = cl.mean
		}
	}
	return out
}
