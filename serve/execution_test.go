package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/vm"
)

// TestPlannedAtLoad: a model whose workers and threads the configuration
// leaves unset has its execution planned at load, on this machine, with
// its package's requests: the engine's stats (what inspect --stats reads)
// and /metrics say the choice, one of the ways tried; a model configured
// with a worker count runs as configured, on the cores divided among its
// workers.
func TestPlannedAtLoad(t *testing.T) {
	s := newPlannedServer(t, Config{Repo: repo(t, "text_packed", "image_padded"), Models: map[string]ModelConfig{"image_padded": {Workers: 1}}})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	stats := func(model string) vm.Stats {
		t.Helper()
		resp, err := http.Get(ts.URL + "/v2/models/" + model + "/genaic/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st vm.Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	x := stats("text_packed").Execution
	if x == nil || !x.Planned || x.Cores != runtime.NumCPU() || len(x.Tried) == 0 ||
		!slices.ContainsFunc(x.Tried, func(c vm.Candidate) bool {
			return c.Slots == x.Slots && c.Threads == x.Threads && c.RequestsPerSecond > 0
		}) {
		t.Fatalf("text_packed: execution %+v; want one planned on %d cores among those tried", x, runtime.NumCPU())
	}
	if c := stats("image_padded").Execution; c == nil || c.Planned || c.Slots != 1 || c.Threads != engine.CPUs() {
		t.Errorf("image_padded with workers 1: execution %+v; want 1 slot as configured, of %d threads", c, engine.CPUs())
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := metric(t, string(b), `genaic_execution_slots{model="text_packed"}`); got != float64(x.Slots) {
		t.Errorf("genaic_execution_slots = %v, want %d", got, x.Slots)
	}
	if got := metric(t, string(b), `genaic_execution_threads{model="text_packed"}`); got != float64(x.Threads) {
		t.Errorf("genaic_execution_threads = %v, want %d", got, x.Threads)
	}
}
