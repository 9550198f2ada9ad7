package vm

import (
	"math"
	"sync"
	"time"
)

// scheduler learns, per component and online, what grouping is worth.
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
// group in schedExplore is formed without the cap, so that a cap follows
// the component as conditions change.
type scheduler struct {
	mu sync.Mutex
	// decayed sums of the least-squares fit of time (ns) on elements
	n, sx, sy, sxx, sxy float64
	classes             [schedClasses]classStat
	formed              int
	runMean             float64 // ns, exponentially weighted
	runs                int
}

const (
	schedClasses  = 12   // group sizes up to 2^11 and beyond
	schedDecay    = 0.98 // weight of the past per observation
	schedMinFit   = 8    // observations before the fit is trusted
	schedMinClass = 4    // observations before a size class is trusted
	schedExplore  = 16   // every schedExplore-th group ignores the cap
	schedSlack    = 1.10 // a class within 10 % of the best still pays
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

// schedSignificance is how many standard errors a class's mean must
// exceed the slack over the best class's for the class to count as
// costing more.
const schedSignificance = 3

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
// schedSlack times the best class's.
func (c *classStat) worse(best *classStat) bool {
	margin := schedSignificance * math.Sqrt(c.variance()+best.variance())
	return c.mean > schedSlack*best.mean+margin
}

func newScheduler() *scheduler { return &scheduler{} }

// sizeClass is the class of a group of n items: 0 for 1, 1 for 2, 2 for
// 3–4, 3 for 5–8, ...
func sizeClass(n int) int {
	c := 0
	for m := n - 1; m > 0; m >>= 1 {
		c++
	}
	return min(c, schedClasses-1)
}

// classMax is the largest group size of class c.
func classMax(c int) int { return 1 << c }

// observe records one invocation: items in the group, the elements its
// inputs materialized and those that were real, and its run time.
func (s *scheduler) observe(items int, e groupElements, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, y := float64(e.padded), float64(d.Nanoseconds())
	if s.runs == 0 {
		s.runMean = y
	} else {
		s.runMean = 0.8*s.runMean + 0.2*y
	}
	s.runs++
	s.n = schedDecay*s.n + 1
	s.sx = schedDecay*s.sx + x
	s.sy = schedDecay*s.sy + y
	s.sxx = schedDecay*s.sxx + x*x
	s.sxy = schedDecay*s.sxy + x*y
	if e.real > 0 {
		s.classes[sizeClass(items)].add(y / float64(e.real))
	}
}

// fit returns the fixed cost a and the cost per element c (ns), and
// whether enough varied observations support them. A fit with no
// positive fixed cost is no fit: every invocation costs something whatever
// it holds, so a line through the origin or below it says that the groups
// seen were too alike in size for the noise in their times (budget-sized
// groups usually are), and refusing every item that adds padding on its
// word would split groups by extent for nothing.
func (s *scheduler) fit() (a, c float64, ok bool) {
	if s.n < schedMinFit {
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

// expectedRun returns how long a group is expected to run: the mean of
// recent runs; false before any run.
func (s *scheduler) expectedRun() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.runMean), s.runs > 0
}

// pays reports whether an item that adds waste padding elements to a group
// costs less than the invocation it saves.
func (s *scheduler) pays(waste int64) bool { return paysWithin(waste, s.payable()) }

// paysWithin reports whether adding waste padding elements stays within
// payable (scheduler.payable).
func paysWithin(waste int64, payable float64) bool {
	return waste <= 0 || float64(waste) <= payable
}

// payable returns the most padding elements an item may add to a group
// and still cost less than the invocation it saves: the fit's fixed cost
// over its cost per element; +Inf while the fit does not say.
func (s *scheduler) payable() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, c, ok := s.fit()
	if !ok || c <= 0 {
		return math.Inf(1)
	}
	return a / c
}

// limit returns the group size cap for the next group, 0 for none.
func (s *scheduler) limit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.formed++
	if s.formed%schedExplore == 0 {
		return 0
	}
	return s.capLocked()
}

func (s *scheduler) capLocked() int {
	var best *classStat
	for k := range s.classes {
		if c := &s.classes[k]; c.seen >= schedMinClass && (best == nil || c.mean < best.mean) {
			best = c
		}
	}
	if best == nil {
		return 0
	}
	limit, worse := 0, false
	for k := range s.classes {
		c := &s.classes[k]
		if c.seen < schedMinClass {
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

// SchedulerStats is what a component's scheduler has learned and decided.
type SchedulerStats struct {
	// FixedNS and PerElementNS are the fit of invocation time on the
	// elements a group materializes: t = fixed + per_element × elements.
	FixedNS      float64 `json:"fixed_ns"`
	PerElementNS float64 `json:"per_element_ns"`
	Fitted       bool    `json:"fitted"`
	// Cap is the group size above which groups stop paying (0: none).
	Cap int `json:"cap,omitempty"`
	// PerElementBySize is the mean time per real element (ns) by group
	// size class, keyed by the largest size of the class.
	PerElementBySize map[int]float64 `json:"per_element_by_size,omitempty"`
	// KeptForPadding counts the times an item was kept out of a group
	// because the padding it would add costs more than its own invocation.
	KeptForPadding int64 `json:"kept_for_padding,omitempty"`
	// RunnerOverlap is the measured share of lockstep batches, of those
	// that found the component idle and woke its runner, during whose
	// admission the runner started a group; below one half, batches run
	// their own groups (ComponentStats.OwnGroups; vm/selfrun.go).
	RunnerOverlap float64 `json:"runner_overlap"`
	// RunnerExploreEvery is how many such batches pass, while they run
	// their own groups, between two that wake the runner to measure again.
	RunnerExploreEvery int `json:"runner_explore_every,omitempty"`
	// RunnersBatchNS and OwnBatchNS are, with several worker slots, the
	// median time per item (ns) of the last lockstep batches that found
	// the component idle and handed their groups to the runners, and of
	// those that ran their own; a batch takes the clearly faster way
	// (vm/selfrun.go).
	RunnersBatchNS float64 `json:"runners_batch_ns_per_item,omitempty"`
	OwnBatchNS     float64 `json:"own_batch_ns_per_item,omitempty"`
}

func (s *scheduler) snapshot() SchedulerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, c, ok := s.fit()
	out := SchedulerStats{FixedNS: a, PerElementNS: c, Fitted: ok, Cap: s.capLocked()}
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
