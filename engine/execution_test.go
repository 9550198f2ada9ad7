package engine

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
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
		for _, c := range Divisions(cores) {
			got = append(got, [2]int{c.Slots, c.Threads})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d cores: %v, want %v", cores, got, want)
		}
	}
}

// TestDivide: one half of a division set, the other divides the cores;
// both set stay, both unset stay one slot of the backend's threads.
func TestDivide(t *testing.T) {
	for _, c := range []struct{ workers, threads, cores, slots, perSlot int }{
		{4, 0, 16, 4, 4},
		{1, 0, 16, 1, 16},
		{3, 0, 16, 3, 5},
		{32, 0, 16, 32, 1},
		{0, 1, 16, 16, 1},
		{0, 4, 16, 4, 4},
		{0, 32, 16, 1, 32},
		{2, 3, 16, 2, 3},
		{0, 0, 16, 1, 0},
		{2, 0, 0, 2, 1},
	} {
		if x := Divide(c.workers, c.threads, c.cores); x.Slots != c.slots || x.Threads != c.perSlot || x.Planned {
			t.Errorf("Divide(%d, %d, %d) = %+v, want %d×%d", c.workers, c.threads, c.cores, x, c.slots, c.perSlot)
		}
	}
}

// TestChoose: the candidate that came closest to the best at both loads
// wins, unless one with fewer slots came within the margin of it; a way
// that groups wins over the same division apart only by a clear margin.
func TestChoose(t *testing.T) {
	rates := func(rps, light []float64) []candidate {
		out := make([]candidate, len(rps))
		for i, r := range rps {
			out[i] = candidate{Slots: 1 << i, RequestsPerSecond: r}
			if light != nil {
				out[i].LightClients, out[i].LightRequestsPerSecond = 16, light[i]
			}
		}
		return out
	}
	for _, c := range []struct {
		rps, light []float64
		want       int
	}{
		{[]float64{100, 200, 150}, nil, 1},
		{[]float64{199, 200, 150}, nil, 0}, // within the margin: fewer slots
		{[]float64{150, 195, 200}, nil, 1},
		{[]float64{150, 180, 200}, nil, 2},
		{[]float64{0, 0}, nil, 0},
		// One slot idles at the light load: two, nearly as good at full.
		{[]float64{200, 190}, []float64{70, 100}, 1},
		// Each best at one load: the better of the worse loads.
		{[]float64{200, 150}, []float64{90, 100}, 0},
		{[]float64{200, 170}, []float64{50, 100}, 1},
		// Within the margin at both: fewer slots.
		{[]float64{200, 199}, []float64{99, 100}, 0},
	} {
		if got := choose(rates(c.rps, c.light)); got != c.want {
			t.Errorf("%v, light %v: chose %d, want %d", c.rps, c.light, got, c.want)
		}
	}
	// Each division apart, then grouped: grouping is kept only where it
	// serves clearly more than apart.
	ways := func(rps ...float64) []candidate {
		out := make([]candidate, len(rps))
		for i, r := range rps {
			out[i] = candidate{Slots: 1 << (i / 2), RequestsPerSecond: r}
			if i%2 == 0 {
				out[i].Ungrouped = []string{"encoder"}
			}
		}
		return out
	}
	for _, c := range []struct {
		rps  []float64
		want int
	}{
		{[]float64{100, 105}, 0},
		{[]float64{100, 120}, 1},
		{[]float64{100, 90, 150, 160}, 2},
		{[]float64{100, 90, 150, 200}, 3},
		{[]float64{50, 305, 150, 310}, 1}, // within plannedMargin: fewer slots
	} {
		if got := choose(ways(c.rps...)); got != c.want {
			t.Errorf("grouping, %v: chose %d, want %d", c.rps, got, c.want)
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
	reqs := readRequests(t, dir)
	po := PlanOptions{Cores: 2, Clients: 8, Round: 20 * time.Millisecond, Rounds: 2}
	x, err := PlanExecution(context.Background(), f, dir, Options{}, reqs, po)
	if err != nil {
		t.Fatal(err)
	}
	// Two divisions of the cores, each with the encoder apart, then grouped.
	if !x.Planned || x.Cores != 2 || len(x.Tried) != 4 {
		t.Fatalf("plan %+v", x)
	}
	for i, c := range x.Tried {
		if apart := i%2 == 0; apart != slices.Equal(c.Ungrouped, []string{"text_encoder"}) || c.Slots != x.Tried[i&^1].Slots {
			t.Errorf("way %d is %v: want each division apart, then grouped", i, c)
		}
	}
	for _, c := range x.Tried {
		if c.RequestsPerSecond <= 0 || c.LightClients != 2 || c.LightRequestsPerSecond <= 0 {
			t.Errorf("candidate %+v served nothing at a load, or not at 2 callers (a quarter of 8)", c)
		}
	}
	if !slices.ContainsFunc(x.Tried, func(c vm.Candidate) bool {
		return c.Slots == x.Slots && c.Threads == x.Threads && slices.Equal(c.Ungrouped, x.Ungrouped)
	}) {
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
	if err != nil || len(alone.Tried) != 4 || slices.ContainsFunc(alone.Tried, func(c vm.Candidate) bool { return c.RequestsPerSecond <= 0 }) {
		t.Errorf("ways measured one at a time: %+v, %v", alone, err)
	}

	goOnly, gdir := compile(t, "vm/adapters/testdata/image_grouped.yaml")
	x, err = PlanExecution(context.Background(), goOnly, gdir, Options{}, nil, po)
	if err != nil || x.Slots != 1 || x.Threads != 0 || len(x.Tried) != 0 {
		t.Errorf("a workflow without ONNX components: %+v, %v; want one slot, nothing measured", x, err)
	}
}

// TestPlannedApart: a component whose cost per item grows with its group
// (each call here sleeps in proportion to the square of its images) is
// planned apart, and the engine Apply makes runs it one request per
// invocation, saying why; one whose call costs the same whatever it holds
// stays grouped.
func TestPlannedApart(t *testing.T) {
	f, dir := compile(t, "testdata/packages/image_padded")
	reqs := readRequests(t, dir)
	encoder := func(perCall func(images int64) time.Duration) backend.Func {
		return func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
			x := in["pixel_patches"]
			time.Sleep(perCall(x.Shape[0]))
			out := make([]float32, x.Shape[0]*x.Shape[2])
			return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{x.Shape[0], x.Shape[2]}, Data: out}}, nil
		}
	}
	optsWith := func(fn backend.Func) Options {
		b := &backend.Bindings{}
		b.Register("encoder", fn)
		return Options{Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"}, Config: Config{Bindings: b}}
	}
	// A sleep overshoots by a cost per call, which favours grouping: the
	// quadratic term is several times a loaded machine's overshoot, and
	// each way is measured three times, the median taken.
	quadratic := optsWith(encoder(func(n int64) time.Duration { return time.Duration(n*n) * time.Millisecond }))
	fixed := optsWith(encoder(func(int64) time.Duration { return 2 * time.Millisecond }))
	ctx := context.Background()

	po := PlanOptions{Cores: 2, Clients: 8, Round: 30 * time.Millisecond, Rounds: 3}
	if x, err := PlanExecution(ctx, f, dir, fixed, reqs, po); err != nil || len(x.Ungrouped) != 0 {
		t.Errorf("a cost per call: planned %v, %v; want it grouped", x, err)
	}
	x, err := PlanExecution(ctx, f, dir, quadratic, reqs, po)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Ungrouped, []string{"encoder"}) || !strings.Contains(x.String(), "one request per invocation of encoder") {
		t.Fatalf("planned %v (%+v), want the encoder apart", x, x)
	}
	e, err := Open(f, dir, Apply(quadratic, x))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, r := range e.RunAll(ctx, reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	cs := e.Stats().Components["encoder"]
	said := slices.ContainsFunc(slices.Collect(maps.Keys(cs.Declines)), func(why string) bool { return strings.HasSuffix(why, ungroupedReason) })
	if cs.MaxGroupRequests != 1 || !said {
		t.Errorf("the planned engine grouped the encoder: max group %d, declines %v", cs.MaxGroupRequests, cs.Declines)
	}
}

func readRequests(t *testing.T, dir string) []vm.Request {
	t.Helper()
	b, err := os.ReadFile(dir + "/requests.json")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(strings.NewReader(string(b)), dir)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// TestServeForEndsWithItsPass: once a round's time is up, every client
// stops at the end of the pass over the requests under way, not each at
// the next pass boundary it happens to draw (which kept a round of many
// clients going for as many passes as it had clients).
func TestServeForEndsWithItsPass(t *testing.T) {
	f, dir := compile(t, "testdata/packages/image_padded")
	reqs := readRequests(t, dir)
	b := &backend.Bindings{}
	b.Register("encoder", func(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
		x := in["pixel_patches"]
		return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{x.Shape[0], x.Shape[2]}, Data: make([]float32, x.Shape[0]*x.Shape[2])}}, nil
	})
	e, err := Open(f, dir, Options{Backends: map[ir.ImplKind]string{ir.ImplONNX: "go"}, Config: Config{Bindings: b}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The time is up at the first request: no request has been sent when
	// the first client finds it so, and the clients have drawn at most one
	// each, so the round ends with the pass that holds their draws.
	const clients = 16
	if _, err := serveFor(context.Background(), e, reqs, clients, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	n := len(reqs)
	most := (clients + n - 1) / n * n
	if got := e.Stats().Components["encoder"].Requests; got == 0 || got > int64(most) {
		t.Errorf("a round of %d clients over %d requests served %d requests, want 1 to %d", clients, n, got, most)
	}
}
