package serve

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// Two of Triton's extensions to the protocol, which its tools (perf_analyzer,
// the tritonclient libraries' get_model_config and get_inference_statistics)
// ask a server for beside inference:
//
//   - statistics: GET /v2/models[/{model}[/versions/{version}]]/stats, the
//     cumulative counts and durations of each model's requests and
//     invocations in Triton's schema;
//   - model_configuration: GET /v2/models/{model}[/versions/{version}]/config,
//     the model's configuration in Triton's schema, as far as genaic has one;
//
// and over gRPC, the ModelStatistics and ModelConfig calls of Triton's
// GRPCInferenceService (oippb), with the same contents.
//
// How genaic's terms map onto Triton's, for the statistics: a request is
// one inference (inference_count; it may hold several items, which genaic
// groups, not the client); an execution is one invocation of a component,
// so a workflow of two components counts two per group (execution_count
// and batch_stats, by the requests in the group); queue is the time items
// waited at components for their groups; compute_infer is an invocation's
// time (assembly, the model's run and the split into views, which genaic
// does not time apart), counted, as Triton does, once per request in the
// group with the whole invocation's duration, so that ns/count is the
// invocation time a request saw. compute_input and compute_output are
// inside compute_infer: they come with its count and 0 ns.

// inferStats counts one model's requests and invocations for the
// statistics extension. Requests and items update the counters without a
// lock; batch sizes, one per invocation, under mu.
type inferStats struct {
	// serving is set once the model is warmed up: the warm-up's
	// invocations are not counted.
	serving                     atomic.Bool
	success, fail, queue, infer durationStat
	executions                  atomic.Uint64
	// pending counts the requests admitted and not yet answered.
	pending atomic.Int64
	last    atomic.Int64 // ms since the epoch
	mu      sync.Mutex
	batches map[int]*durationStat // by group size
}

// durationStat is Triton's $duration_stat: a count and nanoseconds.
type durationStat struct {
	count, ns atomic.Uint64
}

func (d *durationStat) add(count uint64, ns time.Duration) {
	d.count.Add(count)
	d.ns.Add(uint64(max(ns, 0)))
}

func (d *durationStat) json() durationJSON {
	return durationJSON{Count: d.count.Load(), NS: d.ns.Load()}
}

// answered counts a request answered (failed, or not) after d.
func (st *inferStats) answered(failed bool, d time.Duration) {
	if failed {
		st.fail.add(1, d)
	} else {
		st.success.add(1, d)
	}
	st.last.Store(time.Now().UnixMilli())
}

// invoked counts one invocation, of a group of that many requests, which
// took d (0 where the engine did not time it).
func (st *inferStats) invoked(requests int, d time.Duration) {
	st.executions.Add(1)
	st.infer.add(uint64(requests), time.Duration(requests)*d)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.batches == nil {
		st.batches = map[int]*durationStat{}
	}
	b := st.batches[requests]
	if b == nil {
		b = &durationStat{}
		st.batches[requests] = b
	}
	b.add(1, d)
}

// statsObserver feeds a model's Prometheus histograms and its statistics.
type statsObserver struct {
	vm.Observer
	st *inferStats
}

func (o statsObserver) QueueWait(component string, d time.Duration) {
	o.Observer.QueueWait(component, d)
	if o.st.serving.Load() {
		o.st.queue.add(1, d)
	}
}

func (o statsObserver) Invoked(component string, requests int, footprint, real int64, d time.Duration) {
	o.Observer.Invoked(component, requests, footprint, real, d)
	if o.st.serving.Load() {
		o.st.invoked(requests, d)
	}
}

type durationJSON struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

type modelStatJSON struct {
	Name           string          `json:"name"`
	Version        string          `json:"version"`
	LastInference  int64           `json:"last_inference"`
	InferenceCount uint64          `json:"inference_count"`
	ExecutionCount uint64          `json:"execution_count"`
	InferenceStats inferStatsJSON  `json:"inference_stats"`
	BatchStats     []batchStatJSON `json:"batch_stats"`
}

type inferStatsJSON struct {
	Success       durationJSON `json:"success"`
	Fail          durationJSON `json:"fail"`
	Queue         durationJSON `json:"queue"`
	ComputeInput  durationJSON `json:"compute_input"`
	ComputeInfer  durationJSON `json:"compute_infer"`
	ComputeOutput durationJSON `json:"compute_output"`
	CacheHit      durationJSON `json:"cache_hit"`
	CacheMiss     durationJSON `json:"cache_miss"`
}

type batchStatJSON struct {
	BatchSize     int          `json:"batch_size"`
	ComputeInput  durationJSON `json:"compute_input"`
	ComputeInfer  durationJSON `json:"compute_infer"`
	ComputeOutput durationJSON `json:"compute_output"`
}

// modelStat is a model's statistics in Triton's schema. Counters read one
// after another may be a request apart from each other.
func (md *Model) modelStat() modelStatJSON {
	st := md.stats
	infer := st.infer.json()
	ms := modelStatJSON{
		Name: md.Name, Version: Version,
		LastInference:  st.last.Load(),
		InferenceCount: st.success.count.Load(),
		ExecutionCount: st.executions.Load(),
		InferenceStats: inferStatsJSON{
			Success: st.success.json(), Fail: st.fail.json(), Queue: st.queue.json(),
			ComputeInput: durationJSON{Count: infer.Count}, ComputeInfer: infer, ComputeOutput: durationJSON{Count: infer.Count},
		},
		BatchStats: []batchStatJSON{},
	}
	st.mu.Lock()
	for size, b := range st.batches {
		d := b.json()
		ms.BatchStats = append(ms.BatchStats, batchStatJSON{BatchSize: size,
			ComputeInput: durationJSON{Count: d.Count}, ComputeInfer: d, ComputeOutput: durationJSON{Count: d.Count}})
	}
	st.mu.Unlock()
	slices.SortFunc(ms.BatchStats, func(a, b batchStatJSON) int { return a.BatchSize - b.BatchSize })
	return ms
}

// tritonCollector exports, with Config.MetricsNames "triton", the
// statistics under the names of Triton's metrics, so that dashboards
// built for Triton read a genaic server: per model and version, the
// requests that succeeded and failed, the inferences and executions (as
// the statistics count them), the cumulative request, queue and compute
// durations in microseconds (request_duration of the successful requests,
// as Triton's), and the requests pending.
type tritonCollector struct{ s *Server }

var (
	tritonLabels      = []string{"model", "version"}
	descTritonSuccess = prometheus.NewDesc("nv_inference_request_success", "Number of successful inference requests, all batch sizes.", tritonLabels, nil)
	descTritonFailure = prometheus.NewDesc("nv_inference_request_failure", "Number of failed inference requests, all batch sizes.", tritonLabels, nil)
	descTritonCount   = prometheus.NewDesc("nv_inference_count", "Number of inferences performed (a genaic request is one).", tritonLabels, nil)
	descTritonExec    = prometheus.NewDesc("nv_inference_exec_count", "Number of model executions performed (a genaic component's invocations, summed over components).", tritonLabels, nil)
	descTritonRequest = prometheus.NewDesc("nv_inference_request_duration_us", "Cumulative inference request duration in microseconds.", tritonLabels, nil)
	descTritonQueue   = prometheus.NewDesc("nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds.", tritonLabels, nil)
	descTritonCompute = prometheus.NewDesc("nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds.", tritonLabels, nil)
	descTritonPending = prometheus.NewDesc("nv_inference_pending_request_count", "Instantaneous number of pending requests awaiting execution per-model.", tritonLabels, nil)
)

// Describe implements prometheus.Collector.
func (c tritonCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTritonSuccess, descTritonFailure, descTritonCount, descTritonExec, descTritonRequest, descTritonQueue, descTritonCompute, descTritonPending} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c tritonCollector) Collect(ch chan<- prometheus.Metric) {
	reg := c.s.reg.Load()
	for _, name := range reg.names {
		md := reg.models[name]
		ms := md.modelStat()
		st := ms.InferenceStats
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), md.Name, Version)
		}
		counter(descTritonSuccess, st.Success.Count)
		counter(descTritonFailure, st.Fail.Count)
		counter(descTritonCount, ms.InferenceCount)
		counter(descTritonExec, ms.ExecutionCount)
		counter(descTritonRequest, st.Success.NS/1000)
		counter(descTritonQueue, st.Queue.NS/1000)
		counter(descTritonCompute, st.ComputeInfer.NS/1000)
		ch <- prometheus.MustNewConstMetric(descTritonPending, prometheus.GaugeValue, float64(md.stats.pending.Load()), md.Name, Version)
	}
}

// tritonExtensions are the extensions of Triton's this server speaks,
// over both protocols (the model repository's in repository.go).
var tritonExtensions = []string{"statistics", "model_configuration", "model_repository"}

// statsOf is the statistics of one model, or of every model (md nil).
func (s *Server) statsOf(md *Model) []modelStatJSON {
	if md != nil {
		return []modelStatJSON{md.modelStat()}
	}
	reg := s.reg.Load()
	stats := make([]modelStatJSON, len(reg.names))
	for i, name := range reg.names {
		stats[i] = reg.models[name].modelStat()
	}
	return stats
}

// configJSON is a model's configuration in Triton's schema: the fields
// that describe a genaic model. max_batch_size is 0: a request's first
// axis is not a batch axis to Triton's tools, since genaic groups whole
// requests itself (their tensors are sent as the metadata shapes them);
// dynamic_batching carries the max delay, the priorities a request may
// name (1 the most urgent) and the model's default, and the queue policy:
// a request past its deadline is rejected, its own timeout winning over
// the model's default.
type configJSON struct {
	Name            string             `json:"name"`
	Platform        string             `json:"platform"`
	Backend         string             `json:"backend"`
	MaxBatchSize    int32              `json:"max_batch_size"`
	Input           []configTensorJSON `json:"input"`
	Output          []configTensorJSON `json:"output"`
	DynamicBatching struct {
		MaxQueueDelayMicroseconds uint64 `json:"max_queue_delay_microseconds"`
		PriorityLevels            uint64 `json:"priority_levels"`
		DefaultPriorityLevel      uint64 `json:"default_priority_level"`
		DefaultQueuePolicy        struct {
			TimeoutAction              string `json:"timeout_action"`
			DefaultTimeoutMicroseconds uint64 `json:"default_timeout_microseconds"`
			AllowTimeoutOverride       bool   `json:"allow_timeout_override"`
		} `json:"default_queue_policy"`
	} `json:"dynamic_batching"`
}

// configTensorJSON is an input or output of Triton's model configuration.
type configTensorJSON struct {
	Name     string  `json:"name"`
	DataType string  `json:"data_type"`
	Dims     []int64 `json:"dims"`
}

func (md *Model) config() configJSON {
	tensors := func(ts []tensorMeta) []configTensorJSON {
		out := make([]configTensorJSON, len(ts))
		for i, t := range ts {
			out[i] = configTensorJSON{Name: t.Name, DataType: "TYPE_" + tritonType(t.Datatype), Dims: t.Shape}
		}
		return out
	}
	c := configJSON{Name: md.Name, Platform: "genaic", Backend: "genaic", Input: tensors(md.inputs), Output: tensors(md.outputs)}
	db := &c.DynamicBatching
	db.MaxQueueDelayMicroseconds = uint64(max(md.maxDelay.Microseconds(), 0))
	db.PriorityLevels, db.DefaultPriorityLevel = MaxPriority, uint64(max(md.defaultPriority, 0))
	db.DefaultQueuePolicy.TimeoutAction = "REJECT"
	db.DefaultQueuePolicy.DefaultTimeoutMicroseconds = uint64(max(md.defaultTimeout.Microseconds(), 0))
	db.DefaultQueuePolicy.AllowTimeoutOverride = true
	return c
}

// tritonType is the model configuration's name of an OIP datatype: the
// same but for BYTES, which it calls STRING.
func tritonType(datatype string) string {
	if datatype == "BYTES" {
		return "STRING"
	}
	return datatype
}

// The gRPC forms of the same answers.

func (ms modelStatJSON) proto() *oippb.ModelStatistics {
	is := ms.InferenceStats
	p := &oippb.ModelStatistics{
		Name: ms.Name, Version: ms.Version,
		LastInference:  uint64(max(ms.LastInference, 0)),
		InferenceCount: ms.InferenceCount,
		ExecutionCount: ms.ExecutionCount,
		InferenceStats: &oippb.InferStatistics{
			Success: is.Success.proto(), Fail: is.Fail.proto(), Queue: is.Queue.proto(),
			ComputeInput: is.ComputeInput.proto(), ComputeInfer: is.ComputeInfer.proto(), ComputeOutput: is.ComputeOutput.proto(),
			CacheHit: is.CacheHit.proto(), CacheMiss: is.CacheMiss.proto(),
		},
	}
	for _, b := range ms.BatchStats {
		p.BatchStats = append(p.BatchStats, &oippb.InferBatchStatistics{BatchSize: uint64(b.BatchSize),
			ComputeInput: b.ComputeInput.proto(), ComputeInfer: b.ComputeInfer.proto(), ComputeOutput: b.ComputeOutput.proto()})
	}
	return p
}

func (d durationJSON) proto() *oippb.StatisticDuration {
	return &oippb.StatisticDuration{Count: d.Count, Ns: d.NS}
}

func (c configJSON) proto() *oippb.ModelConfig {
	db, qp := c.DynamicBatching, c.DynamicBatching.DefaultQueuePolicy
	p := &oippb.ModelConfig{Name: c.Name, Platform: c.Platform, Backend: c.Backend, MaxBatchSize: c.MaxBatchSize,
		DynamicBatching: &oippb.ModelDynamicBatching{MaxQueueDelayMicroseconds: db.MaxQueueDelayMicroseconds,
			PriorityLevels: db.PriorityLevels, DefaultPriorityLevel: db.DefaultPriorityLevel,
			DefaultQueuePolicy: &oippb.ModelQueuePolicy{
				TimeoutAction:              oippb.ModelQueuePolicy_TimeoutAction(oippb.ModelQueuePolicy_TimeoutAction_value[qp.TimeoutAction]),
				DefaultTimeoutMicroseconds: qp.DefaultTimeoutMicroseconds, AllowTimeoutOverride: qp.AllowTimeoutOverride}}}
	for _, t := range c.Input {
		p.Input = append(p.Input, &oippb.ModelInput{Name: t.Name, DataType: oippb.DataType(oippb.DataType_value[t.DataType]), Dims: t.Dims})
	}
	for _, t := range c.Output {
		p.Output = append(p.Output, &oippb.ModelOutput{Name: t.Name, DataType: oippb.DataType(oippb.DataType_value[t.DataType]), Dims: t.Dims})
	}
	return p
}
