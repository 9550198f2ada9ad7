package vm

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/genaic/genaic/plan"
)

// ComponentStats is what one component's invocations did.
type ComponentStats struct {
	Invocations      int64            `json:"invocations"`
	Requests         int64            `json:"requests"`
	MaxGroupRequests int              `json:"max_group_requests"`
	GroupSizes       map[int]int64    `json:"group_sizes"`
	CopiedBytes      int64            `json:"copied_bytes"`
	PaddingOverhead  float64          `json:"padding_overhead"`
	BudgetPeaks      []BudgetPeak     `json:"budget_peaks"`
	Declines         map[string]int64 `json:"declines,omitempty"`
	// Failed counts the calls the backend failed (not counted in
	// Invocations); a group of several requests that fails is then run
	// again (Regrouped), and each of those calls that fails counts too.
	Failed int64 `json:"failed"`
	// Regrouped counts groups of several requests the backend failed that
	// were then run again so that only the failing requests failed: the
	// others as one group where the backend laid the failure at some
	// requests' items (backend.RowErrors: an adapter's undecodable image),
	// else one request at a time.
	Regrouped int64 `json:"regrouped,omitempty"`
	// Inline counts the requests a lone caller ran on its own goroutine,
	// sparing the handoffs to a runner and back (sched.Scheduler).
	Inline int64 `json:"inline,omitempty"`
	// OwnGroups counts the groups a lockstep batch formed and ran on its
	// own goroutine, where waking a runner does not pay
	// (sched.Scheduler).
	OwnGroups int64 `json:"own_groups,omitempty"`
	// Isolated counts the requests run in a group of their own because a
	// floating-point input held NaN or an infinity, which a model that
	// mixes positions would spread to the other items of its invocation.
	Isolated int64 `json:"isolated,omitempty"`
	// Displaced counts the items a more urgent request took the place of
	// in the full queue, each failing its request run/queue-full.
	Displaced int64 `json:"displaced,omitempty"`
	// OutputsReused counts the groups whose output buffers went back to
	// the session, every response viewing them released, to hold a later
	// group's outputs (lease.go).
	OutputsReused int64 `json:"outputs_reused,omitempty"`
	// BackendTime is the time all the component's runs, grouped or not,
	// spent in its backend's own work (inside ONNX Runtime's Run), where
	// its session counts it (backend.Timed). For a grouped component whose
	// runs all went through groups, RunTime less BackendTime is what the
	// runtime took to assemble, call and split them.
	BackendTime time.Duration `json:"backend_time_ns,omitempty"`
	// CallByName says why the component's groups are handed to its
	// session by input name rather than by port position (vm/portcall.go;
	// a map built and read per group); empty where they go by position,
	// or the component does not group.
	CallByName string        `json:"call_by_name,omitempty"`
	RunTime    time.Duration `json:"run_time_ns"`
	// QueueWait and Run are latency percentiles over the most recent
	// samples: how long items waited for their group, and how long a group
	// took from assembly to split.
	QueueWait Percentiles `json:"queue_wait"`
	Run       Percentiles `json:"run"`
	// GroupPadding is the padding overhead of single groups (padded
	// elements beyond the real ones, per real element), over the most
	// recent groups with padded inputs.
	GroupPadding Spread `json:"group_padding"`
	// Scheduler is what the component's scheduler learned and decided.
	Scheduler SchedulerStats `json:"scheduler"`
}

// Spread summarises ratios: median, 90th percentile and maximum.
type Spread struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
}

// Percentiles summarise durations.
type Percentiles struct {
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// recent keeps the most recent values in a ring, so that percentiles
// describe the engine as it is now, in bounded memory.
type recent[T ~int64 | ~float64] struct {
	ring []T
	next int
}

const maxSamples = 4096

func (r *recent[T]) add(x T) {
	if len(r.ring) < maxSamples {
		r.ring = append(r.ring, x)
		return
	}
	r.ring[r.next] = x
	r.next = (r.next + 1) % maxSamples
}

// quantiles returns the values at the quantiles qs, and false when empty.
func (r *recent[T]) quantiles(qs ...float64) ([]T, bool) {
	if len(r.ring) == 0 {
		return nil, false
	}
	s := slices.Clone(r.ring)
	slices.Sort(s)
	out := make([]T, len(qs))
	for i, q := range qs {
		out[i] = s[min(len(s)-1, int(q*float64(len(s))))]
	}
	return out, true
}

func percentiles(r *recent[time.Duration]) Percentiles {
	q, ok := r.quantiles(0.5, 0.9, 0.99, 1)
	if !ok {
		return Percentiles{}
	}
	return Percentiles{P50: q[0], P90: q[1], P99: q[2], Max: q[3]}
}

func spread(r *recent[float64]) Spread {
	q, ok := r.quantiles(0.5, 0.9, 1)
	if !ok {
		return Spread{}
	}
	return Spread{P50: q[0], P90: q[1], Max: q[2]}
}

// counter accumulates a component's stats under a lock.
type counter struct {
	mu           sync.Mutex
	s            ComponentStats
	padded, real int64
	wait, run    recent[time.Duration]
	groupPadding recent[float64]
	// name is the component's, obs the engine's observer (nil: none).
	name string
	obs  Observer
}

// waited records how long each item of a group formed at now waited in
// the queue, under one lock for the group. An item queued after now (it
// joined the group as it formed, its clock read after the former's)
// waited nothing: a wait is never negative.
func (c *counter) waited(now time.Time, batch []*pending) {
	wait := func(p *pending) time.Duration { return max(0, now.Sub(p.e.Queued)) }
	if c.obs != nil {
		for _, p := range batch {
			c.obs.QueueWait(c.name, wait(p))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range batch {
		c.wait.add(wait(p))
	}
}

// BudgetPeak is the largest footprint any group reached on a budget.
type BudgetPeak struct {
	Dimensions []string `json:"dimensions"`
	MaxTotal   int64    `json:"max_total"`
	Peak       int64    `json:"peak"`
}

func newCounter(gp *plan.GroupPlan) *counter {
	c := &counter{s: ComponentStats{GroupSizes: map[int]int64{}}}
	for _, b := range gp.Budgets {
		c.s.BudgetPeaks = append(c.s.BudgetPeaks, BudgetPeak{Dimensions: b.Dimensions, MaxTotal: b.MaxTotal})
	}
	return c
}

func (c *counter) decline(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.Declines == nil {
		c.s.Declines = map[string]int64{}
	}
	c.s.Declines[reason]++
}

func (c *counter) fail() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Failed++
}

func (c *counter) regroup() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Regrouped++
}

func (c *counter) ranInline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Inline++
}

func (c *counter) ranOwn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.OwnGroups++
}

func (c *counter) reused() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.OutputsReused++
}

func (c *counter) isolate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Isolated++
}

func (c *counter) displace() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Displaced++
}

func (c *counter) invoked(requests int, g *group, peaks []int64, d time.Duration) {
	if c.obs != nil {
		var footprint, real int64
		if g != nil {
			footprint, real = g.elems, g.realElems
		}
		c.obs.Invoked(c.name, requests, footprint, real, d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.s
	s.Invocations++
	s.Requests += int64(requests)
	s.MaxGroupRequests = max(s.MaxGroupRequests, requests)
	s.GroupSizes[requests]++
	s.RunTime += d
	c.run.add(d)
	for i, p := range peaks {
		s.BudgetPeaks[i].Peak = max(s.BudgetPeaks[i].Peak, p)
	}
	if g != nil {
		c.padded += g.padded
		c.real += g.real
		if c.real > 0 {
			s.PaddingOverhead = float64(c.padded-c.real) / float64(c.real)
		}
		if g.real > 0 {
			c.groupPadding.add(float64(g.padded-g.real) / float64(g.real))
		}
	}
}

// snapshot copies the stats for a reader.
func (c *counter) snapshot(copied int64) ComponentStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.s
	out := ComponentStats{Invocations: s.Invocations, Requests: s.Requests, MaxGroupRequests: s.MaxGroupRequests,
		GroupSizes: map[int]int64{}, CopiedBytes: copied, PaddingOverhead: s.PaddingOverhead, RunTime: s.RunTime,
		Failed: s.Failed, Regrouped: s.Regrouped, Inline: s.Inline, OwnGroups: s.OwnGroups, Isolated: s.Isolated, Displaced: s.Displaced, OutputsReused: s.OutputsReused, BudgetPeaks: append([]BudgetPeak{}, s.BudgetPeaks...), QueueWait: percentiles(&c.wait), Run: percentiles(&c.run),
		GroupPadding: spread(&c.groupPadding)}
	for k, v := range s.GroupSizes {
		out.GroupSizes[k] = v
	}
	if len(s.Declines) > 0 {
		out.Declines = map[string]int64{}
		for k, v := range s.Declines {
			out.Declines[k] = v
		}
	}
	return out
}

// Stats is what the engine did, per component.
type Stats struct {
	Components map[string]ComponentStats `json:"components"`
	// Execution is how the engine divides the machine among its groups,
	// where its opener said (Options.Execution).
	Execution *Execution `json:"execution,omitempty"`
}

// Names returns the component names in order.
func (s Stats) Names() []string {
	var ns []string
	for n := range s.Components {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
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
}

// schedulerStats is what g's policy and its lockstep batches have learned
// and decided.
func (g *grouper) schedulerStats() SchedulerStats {
	c := g.s.Cost().Snapshot()
	out := SchedulerStats{FixedNS: c.FixedNS, PerElementNS: c.PerElementNS, Fitted: c.Fitted, Cap: c.Cap, PerElementBySize: c.PerElementBySize}
	g.s.Lock()
	defer g.s.Unlock()
	out.KeptForPadding = g.s.Policy().KeptForPadding()
	return out
}
