package engine

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// TestCandidates: the cores are divided by threads 1, 2, 4, ... and the
// cores themselves, each with cores/threads slots, fewest slots first.
func TestCandidates(t *testing.T) {
	for cores, want := range map[int][][2]int{
		1:  {{1, 1}},
		2:  {{1, 2}, {2, 1}},
		6:  {{1, 6}, {1, 4}, {3, 2}, {6, 1}},
		16: {{1, 16}, {2, 8}, {4, 4}, {8, 2}, {16, 1}},
	} {
		var got [][2]int
		for _, c := range candidates(cores) {
			got = append(got, [2]int{c.Slots, c.Threads})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d cores: %v, want %v", cores, got, want)
		}
	}
}

// TestChoose: the candidate that served the most wins, unless one with
// fewer slots served within the margin of it.
func TestChoose(t *testing.T) {
	rates := func(rps ...float64) []candidate {
		out := make([]candidate, len(rps))
		for i, r := range rps {
			out[i] = candidate{Slots: 1 << i, RequestsPerSecond: r}
		}
		return out
	}
	for _, c := range []struct {
		rps  []float64
		want int
	}{
		{[]float64{100, 200, 150}, 1},
		{[]float64{199, 200, 150}, 0}, // within the margin: fewer slots
		{[]float64{150, 195, 200}, 1},
		{[]float64{150, 180, 200}, 2},
	} {
		if got := choose(rates(c.rps...)); got != c.want {
			t.Errorf("%v: chose %d, want %d", c.rps, got, c.want)
		}
	}
}

// TestPlanExecution plans the text encoder on 2 cores with its requests:
// both ways are tried and measured, the one chosen is one of them, and
// Apply runs an engine that reports it. A workflow without an ONNX
// component is one slot, planned without measuring; a request that fails
// fails the plan.
func TestPlanExecution(t *testing.T) {
	f, dir := compile(t, "testdata/packages/text_packed")
	b, err := os.ReadFile(dir + "/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(strings.NewReader(string(b)), dir)
	if err != nil {
		t.Fatal(err)
	}
	po := PlanOptions{Cores: 2, Clients: 8, Round: 20 * time.Millisecond, Rounds: 2}
	x, err := PlanExecution(context.Background(), f, dir, Options{}, reqs, po)
	if err != nil {
		t.Fatal(err)
	}
	if !x.Planned || x.Cores != 2 || len(x.Tried) != 2 {
		t.Fatalf("plan %+v", x)
	}
	for _, c := range x.Tried {
		if c.RequestsPerSecond <= 0 {
			t.Errorf("candidate %+v served nothing", c)
		}
	}
	if !slices.ContainsFunc(x.Tried, func(c vm.Candidate) bool { return c.Slots == x.Slots && c.Threads == x.Threads }) {
		t.Errorf("chose %d×%d, which it did not try (%+v)", x.Slots, x.Threads, x.Tried)
	}
	opts := Apply(Options{}, x)
	if opts.Workers != x.Slots || opts.Config.IntraOpThreads != x.Threads {
		t.Errorf("Apply: %d workers, %d threads; want %d, %d", opts.Workers, opts.Config.IntraOpThreads, x.Slots, x.Threads)
	}
	e, err := Open(f, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.Stats().Execution; got != x {
		t.Errorf("the engine reports %v, want the plan", got)
	}
	if !strings.Contains(x.String(), "planned on 2 cores") {
		t.Errorf("String: %s", x)
	}

	bad := vm.Request{ID: "bad", Inputs: map[string]*backend.Tensor{"token_ids": {DType: "int64", Shape: []int64{1}, Data: []int64{1}}}}
	if _, err := PlanExecution(context.Background(), f, dir, Options{}, []vm.Request{bad}, po); err == nil || !strings.Contains(err.Error(), "request bad failed") {
		t.Errorf("planning with a failing request: %v", err)
	}

	// Large models: the ways one after another, each measured.
	defer func(n int64) { planTogetherBytes = n }(planTogetherBytes)
	planTogetherBytes = 0
	alone, err := PlanExecution(context.Background(), f, dir, Options{}, reqs, po)
	if err != nil || len(alone.Tried) != 2 || slices.ContainsFunc(alone.Tried, func(c vm.Candidate) bool { return c.RequestsPerSecond <= 0 }) {
		t.Errorf("ways measured one at a time: %+v, %v", alone, err)
	}

	goOnly, gdir := compile(t, "vm/adapters/testdata/image_grouped.yaml")
	x, err = PlanExecution(context.Background(), goOnly, gdir, Options{}, nil, po)
	if err != nil || x.Slots != 1 || x.Threads != 0 || len(x.Tried) != 0 {
		t.Errorf("a workflow without ONNX components: %+v, %v; want one slot, nothing measured", x, err)
	}
}
