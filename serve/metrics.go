package serve

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/genaic/genaic/vm"
)

// metrics are a server's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	depth    *prometheus.GaugeVec
	ready    *prometheus.GaugeVec
	control  *prometheus.CounterVec
	// refusedBodies counts HTTP bodies refused unread or cut off, by
	// reason (too_large, timeout).
	refusedBodies *prometheus.CounterVec
	*EngineMetrics
}

// protocols are the fronts a request comes by, as the requests counter
// labels them.
var protocols = []string{"http", "grpc", "grpc_stream"}

// modelMetrics are one model's series of the per-request metrics, looked
// up by their labels once, at load, instead of on every request.
type modelMetrics struct {
	model    string
	all      *prometheus.CounterVec
	requests map[string]prometheus.Counter // by protocol
	latency  prometheus.Observer
	depth    prometheus.Gauge
}

func (m *metrics) of(model string) *modelMetrics {
	mm := &modelMetrics{model: model, all: m.requests, requests: map[string]prometheus.Counter{},
		latency: m.latency.WithLabelValues(model), depth: m.depth.WithLabelValues(model)}
	for _, p := range protocols {
		mm.requests[p] = m.requests.WithLabelValues(model, p)
	}
	return mm
}

// counted counts a request of a protocol.
func (mm *modelMetrics) counted(protocol string) {
	if c, ok := mm.requests[protocol]; ok {
		c.Inc()
		return
	}
	mm.all.WithLabelValues(mm.model, protocol).Inc()
}

// EngineMetrics are the histograms engines feed as they run (through
// vm.Options.Observer): queue wait, invocation time and padded footprint,
// by model and component. (Group sizes are the StatsCollector's
// genaic_component_group_size.)
type EngineMetrics struct {
	queueWait *prometheus.HistogramVec
	invoke    *prometheus.HistogramVec
	footprint *prometheus.HistogramVec
}

// latencyBuckets run from 100µs to about 26s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2, 19)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "genaic_requests_total",
		Help: "Inference requests received, by model and protocol (http, grpc, grpc_stream)."}, []string{"model", "protocol"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "genaic_request_errors_total",
		Help: "Inference requests that failed, by model and rule id (run/queue-full, run/deadline, run/input, ...)."}, []string{"model", "rule"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "genaic_request_duration_seconds",
		Help: "End-to-end latency of inference requests, from decoded to answered.", Buckets: latencyBuckets}, []string{"model"})
	m.depth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "genaic_queue_depth",
		Help: "Inference requests accepted and not yet answered (waiting in a queue or running): the autoscaling signal."}, []string{"model"})
	m.ready = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "genaic_model_ready",
		Help: "1 when the model is loaded, warmed up and accepting requests."}, []string{"model"})
	m.control = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "genaic_model_control_total",
		Help: "Loads and unloads asked through the repository extension, by model, action (load, reload, unload) and result (ok, failed)."}, []string{"model", "action", "result"})
	m.refusedBodies = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "genaic_refused_bodies_total",
		Help: "HTTP request bodies refused, by reason: too_large (over the request size limit, 413) or timeout (not arrived within the body timeout, 408)."}, []string{"reason"})
	m.EngineMetrics = NewEngineMetrics(m.reg)
	m.reg.MustRegister(m.requests, m.errors, m.latency, m.depth, m.ready, m.control, m.refusedBodies,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return m
}

// NewEngineMetrics makes the engine histograms and registers them on reg.
// A service embedding a generated executor passes the observer of its
// model to it (genrt.WithObserver(em.Observer("mymodel"))) and registers
// a StatsCollector over its Stats beside them.
func NewEngineMetrics(reg prometheus.Registerer) *EngineMetrics {
	m := &EngineMetrics{}
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "genaic_queue_wait_seconds",
		Help: "How long an item waited at a component for its group.", Buckets: latencyBuckets}, []string{"model", "component"})
	m.invoke = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "genaic_invocation_seconds",
		Help: "How long a component's grouped invocation took, from assembly to split.", Buckets: latencyBuckets}, []string{"model", "component"})
	m.footprint = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "genaic_group_padded_elements",
		Help: "Elements of a group's payload inputs as assembled, padding included (the padded footprint).", Buckets: prometheus.ExponentialBuckets(16, 4, 12)}, []string{"model", "component"})
	reg.MustRegister(m.queueWait, m.invoke, m.footprint)
	return m
}

// Observer returns the vm.Observer that feeds one model's histograms.
func (m *EngineMetrics) Observer(model string) vm.Observer {
	return observer{m: m, model: model, series: &sync.Map{}}
}

// observer feeds one model's histograms from its engine (vm.Observer).
type observer struct {
	m     *EngineMetrics
	model string
	// series holds each component's componentSeries: resolved once,
	// since the engine observes every item and every invocation.
	series *sync.Map
}

// componentSeries are one component's series of the engine histograms.
type componentSeries struct{ queueWait, invoke, footprint prometheus.Observer }

func (o observer) of(component string) *componentSeries {
	if c, ok := o.series.Load(component); ok {
		return c.(*componentSeries)
	}
	c := &componentSeries{
		queueWait: o.m.queueWait.WithLabelValues(o.model, component),
		invoke:    o.m.invoke.WithLabelValues(o.model, component),
		footprint: o.m.footprint.WithLabelValues(o.model, component),
	}
	got, _ := o.series.LoadOrStore(component, c)
	return got.(*componentSeries)
}

func (o observer) QueueWait(component string, d time.Duration) {
	o.of(component).queueWait.Observe(d.Seconds())
}

func (o observer) Invoked(component string, _ int, footprint, _ int64, d time.Duration) {
	c := o.of(component)
	if d > 0 {
		c.invoke.Observe(d.Seconds())
	}
	if footprint > 0 {
		c.footprint.Observe(float64(footprint))
	}
}

// StatsCollector exports what an engine's Stats count, read at each scrape:
// invocations, requests, the group-size distribution, budget peaks,
// declines by reason, padding overhead, the scheduler's decisions (its
// fitted costs, its group-size cap, the items it kept out for their
// padding) and the groups batches ran themselves. A service that embeds a
// generated
// executor registers one over the executor's Stats method:
//
//	reg.MustRegister(serve.NewStatsCollector("mymodel", ex.Stats))
//
// One collector may export several models (Add); a registry takes one.
type StatsCollector struct {
	mu      sync.Mutex
	sources []statsSource
}

type statsSource struct {
	model string
	stats func() vm.Stats
}

// NewStatsCollector returns the collector of one model's stats.
func NewStatsCollector(model string, stats func() vm.Stats) *StatsCollector {
	c := &StatsCollector{}
	c.Add(model, stats)
	return c
}

// Add exports one more model's stats, or replaces the source of a model
// already added (a model loaded again).
func (c *StatsCollector) Add(model string, stats func() vm.Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.sources {
		if c.sources[i].model == model {
			c.sources[i].stats = stats // a model loaded again
			return
		}
	}
	c.sources = append(c.sources, statsSource{model, stats})
}

var (
	descInvocations = prometheus.NewDesc("genaic_component_invocations_total", "Invocations of a component.", []string{"model", "component"}, nil)
	descRequests    = prometheus.NewDesc("genaic_component_requests_total", "Requests a component's invocations served (summed over groups).", []string{"model", "component"}, nil)
	descGroups      = prometheus.NewDesc("genaic_component_group_size", "Distribution of requests per invocation since start (cumulative buckets).", []string{"model", "component"}, nil)
	descMaxGroup    = prometheus.NewDesc("genaic_component_max_group_requests", "The largest group a component ran.", []string{"model", "component"}, nil)
	descPeak        = prometheus.NewDesc("genaic_budget_peak", "The largest footprint a group reached on a budget.", []string{"model", "component", "budget"}, nil)
	descBudget      = prometheus.NewDesc("genaic_budget_limit", "A budget's max_total: the largest footprint a group may reach on it.", []string{"model", "component", "budget"}, nil)
	descDeclines    = prometheus.NewDesc("genaic_declines_total", "Invocations run one request at a time because grouping was declined, by reason.", []string{"model", "component", "reason"}, nil)
	descRegrouped   = prometheus.NewDesc("genaic_regrouped_total", "Failed groups run again without the failing requests.", []string{"model", "component"}, nil)
	descFailed      = prometheus.NewDesc("genaic_failed_calls_total", "Calls the backend failed (not counted in genaic_invocations_total).", []string{"model", "component"}, nil)
	descSlots       = prometheus.NewDesc("genaic_execution_slots", "Groups of one component that run at once (planned on the machine at load, or configured).", []string{"model"}, nil)
	descThreads     = prometheus.NewDesc("genaic_execution_threads", "Threads each run computes on (ONNX Runtime's intra-op threads; 0: its default).", []string{"model"}, nil)
	descInline      = prometheus.NewDesc("genaic_inline_requests_total", "Requests a lone caller ran on its own goroutine, without a handoff to a runner.", []string{"model", "component"}, nil)
	descPadding     = prometheus.NewDesc("genaic_padding_overhead_ratio", "Padded elements beyond the real ones, per real element, since start.", []string{"model", "component"}, nil)
	descCopied      = prometheus.NewDesc("genaic_copied_bytes_total", "Bytes copied assembling and splitting groups.", []string{"model", "component"}, nil)
	descBackend     = prometheus.NewDesc("genaic_backend_seconds_total", "Time a component's runs spent inside its backend (ONNX Runtime's Run), where the backend counts it.", []string{"model", "component"}, nil)

	// The scheduler's decisions: what it learned an invocation costs, the
	// group size it caps at, the items it kept out for their padding, and
	// the groups batches ran themselves (sched.Scheduler).
	descFixed = prometheus.NewDesc("genaic_scheduler_fixed_seconds",
		"The fixed cost of an invocation the scheduler fitted (absent until it has a fit).", []string{"model", "component"}, nil)
	descPerElement = prometheus.NewDesc("genaic_scheduler_element_seconds",
		"The cost per materialized input element the scheduler fitted (absent until it has a fit).", []string{"model", "component"}, nil)
	descCap = prometheus.NewDesc("genaic_scheduler_group_cap",
		"The group size above which groups stopped paying, in requests (0: no cap).", []string{"model", "component"}, nil)
	descKept = prometheus.NewDesc("genaic_scheduler_kept_for_padding_total",
		"Times an item was kept out of a group because the padding it would add costs more than its own invocation.", []string{"model", "component"}, nil)
	descOwn = prometheus.NewDesc("genaic_own_groups_total",
		"Groups a lockstep batch of requests ran on its own goroutine rather than handing them to a runner: with one worker slot, or where its groups run shorter than waking another thread costs.", []string{"model", "component"}, nil)
	descIsolated = prometheus.NewDesc("genaic_isolated_requests_total",
		"Requests run in a group of their own because an input held NaN or an infinity, which the model could spread to the other items of its invocation.", []string{"model", "component"}, nil)
	descDisplaced = prometheus.NewDesc("genaic_displaced_requests_total",
		"Items a more urgent request took the place of in the component's full queue, each failing its request run/queue-full.", []string{"model", "component"}, nil)
	descReused = prometheus.NewDesc("genaic_outputs_reused_groups_total",
		"Groups whose output buffers went back to the session for a later group's outputs, every response viewing them written and released.", []string{"model", "component"}, nil)
)

// Describe implements prometheus.Collector.
func (c *StatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInvocations, descRequests, descGroups, descMaxGroup, descPeak, descBudget, descDeclines, descRegrouped, descFailed, descSlots, descThreads, descInline, descPadding, descCopied, descBackend, descFixed, descPerElement, descCap, descKept, descOwn, descIsolated, descDisplaced, descReused} {
		ch <- d
	}
}

var groupBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}

// Collect implements prometheus.Collector.
func (c *StatsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := append([]statsSource(nil), c.sources...)
	c.mu.Unlock()
	for _, src := range sources {
		collect(ch, src.model, src.stats())
	}
}

func collect(ch chan<- prometheus.Metric, model string, s vm.Stats) {
	if x := s.Execution; x != nil {
		ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(x.Slots), model)
		ch <- prometheus.MustNewConstMetric(descThreads, prometheus.GaugeValue, float64(x.Threads), model)
	}
	for _, name := range s.Names() {
		cs := s.Components[name]
		lv := []string{model, name}
		ch <- prometheus.MustNewConstMetric(descInvocations, prometheus.CounterValue, float64(cs.Invocations), lv...)
		ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(cs.Requests), lv...)
		ch <- prometheus.MustNewConstMetric(descMaxGroup, prometheus.GaugeValue, float64(cs.MaxGroupRequests), lv...)
		ch <- prometheus.MustNewConstMetric(descRegrouped, prometheus.CounterValue, float64(cs.Regrouped), lv...)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(cs.Failed), lv...)
		ch <- prometheus.MustNewConstMetric(descInline, prometheus.CounterValue, float64(cs.Inline), lv...)
		ch <- prometheus.MustNewConstMetric(descPadding, prometheus.GaugeValue, cs.PaddingOverhead, lv...)
		ch <- prometheus.MustNewConstMetric(descCopied, prometheus.CounterValue, float64(cs.CopiedBytes), lv...)
		if cs.BackendTime > 0 {
			ch <- prometheus.MustNewConstMetric(descBackend, prometheus.CounterValue, cs.BackendTime.Seconds(), lv...)
		}
		sched := cs.Scheduler
		if sched.Fitted {
			ch <- prometheus.MustNewConstMetric(descFixed, prometheus.GaugeValue, sched.FixedNS/1e9, lv...)
			ch <- prometheus.MustNewConstMetric(descPerElement, prometheus.GaugeValue, sched.PerElementNS/1e9, lv...)
		}
		ch <- prometheus.MustNewConstMetric(descCap, prometheus.GaugeValue, float64(sched.Cap), lv...)
		ch <- prometheus.MustNewConstMetric(descKept, prometheus.CounterValue, float64(sched.KeptForPadding), lv...)
		ch <- prometheus.MustNewConstMetric(descOwn, prometheus.CounterValue, float64(cs.OwnGroups), lv...)
		ch <- prometheus.MustNewConstMetric(descIsolated, prometheus.CounterValue, float64(cs.Isolated), lv...)
		ch <- prometheus.MustNewConstMetric(descDisplaced, prometheus.CounterValue, float64(cs.Displaced), lv...)
		ch <- prometheus.MustNewConstMetric(descReused, prometheus.CounterValue, float64(cs.OutputsReused), lv...)
		buckets := map[float64]uint64{}
		var count uint64
		var sum float64
		for size, n := range cs.GroupSizes {
			count += uint64(n)
			sum += float64(size) * float64(n)
			for _, b := range groupBuckets {
				if float64(size) <= b {
					buckets[b] += uint64(n)
				}
			}
		}
		ch <- prometheus.MustNewConstHistogram(descGroups, count, sum, buckets, lv...)
		for _, p := range cs.BudgetPeaks {
			budget := strings.Join(p.Dimensions, "*")
			ch <- prometheus.MustNewConstMetric(descPeak, prometheus.GaugeValue, float64(p.Peak), model, name, budget)
			ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, float64(p.MaxTotal), model, name, budget)
		}
		reasons := make([]string, 0, len(cs.Declines))
		for r := range cs.Declines {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			ch <- prometheus.MustNewConstMetric(descDeclines, prometheus.CounterValue, float64(cs.Declines[r]), model, name, r)
		}
	}
}
