package serve

import (
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/genaic/genaic/vm"
)

// TestSchedulerMetrics: the scheduler's decisions reach /metrics: its fit
// in seconds once it has one (and no fit is exported before), its cap, the
// items it kept out for their padding, the groups batches ran on their
// own goroutine, the calls the backend failed and the groups run again,
// the execution planned (slots and threads) and, with several worker slots, the two ways' measured times (absent
// before), per component.
func TestSchedulerMetrics(t *testing.T) {
	stats := vm.Stats{Execution: &vm.Execution{Slots: 4, Threads: 2, Planned: true}, Components: map[string]vm.ComponentStats{
		"encoder": {OwnGroups: 5, Isolated: 2, Displaced: 4, Failed: 3, Regrouped: 1, BackendTime: 250 * time.Millisecond, Scheduler: vm.SchedulerStats{FixedNS: 12500, PerElementNS: 16.5, Fitted: true, Cap: 16, KeptForPadding: 7}},
		"text":    {Scheduler: vm.SchedulerStats{FixedNS: -3, PerElementNS: 2}},
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewStatsCollector("m", func() vm.Stats { return stats }))
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for sample, want := range map[string]float64{
		`genaic_scheduler_fixed_seconds{component="encoder",model="m"}`:          12.5e-6,
		`genaic_scheduler_element_seconds{component="encoder",model="m"}`:        16.5e-9,
		`genaic_scheduler_group_cap{component="encoder",model="m"}`:              16,
		`genaic_scheduler_kept_for_padding_total{component="encoder",model="m"}`: 7,
		`genaic_scheduler_group_cap{component="text",model="m"}`:                 0,
		`genaic_scheduler_kept_for_padding_total{component="text",model="m"}`:    0,
		`genaic_own_groups_total{component="encoder",model="m"}`:                 5,
		`genaic_isolated_requests_total{component="encoder",model="m"}`:          2,
		`genaic_displaced_requests_total{component="encoder",model="m"}`:         4,
		`genaic_failed_calls_total{component="encoder",model="m"}`:               3,
		`genaic_regrouped_total{component="encoder",model="m"}`:                  1,
		`genaic_failed_calls_total{component="text",model="m"}`:                  0,
		`genaic_backend_seconds_total{component="encoder",model="m"}`:            0.25,
	} {
		if got := metric(t, text, sample); math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) || math.IsNaN(got) {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	for _, sample := range []string{
		`genaic_scheduler_fixed_seconds{component="text",model="m"}`,
		`genaic_scheduler_element_seconds{component="text",model="m"}`,
		`genaic_backend_seconds_total{component="text",model="m"}`,
	} {
		if got := metric(t, text, sample); !math.IsNaN(got) {
			t.Errorf("%s = %v before the scheduler has a fit", sample, got)
		}
	}
}
