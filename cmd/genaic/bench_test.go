package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/engine"
)

// benchJSON is the part of bench --json the tests read.
type benchJSON struct {
	Requests    int     `json:"requests"`
	Loop        string  `json:"loop"`
	RoundTimeMS float64 `json:"round_time_ms"`
	MaxDelay    string  `json:"max_delay"`
	CPUClass    string  `json:"cpu_class"`
	Server      *struct {
		URL, GRPC, Model string
		Priority         int
	} `json:"server"`
	Modes []struct {
		Name              string  `json:"name"`
		Concurrency       int     `json:"concurrency"`
		Procs             int     `json:"procs"`
		VsOneAtATime      float64 `json:"vs_one_at_a_time"`
		VsDirect          float64 `json:"vs_direct"`
		RequestsPerSecond float64 `json:"requests_per_second"`
		ItemsPerSecond    float64 `json:"items_per_second"`
		Latency           struct {
			Mean float64 `json:"mean"`
			P50  float64 `json:"p50"`
			P90  float64 `json:"p90"`
			P99  float64 `json:"p99"`
		} `json:"latency_ms"`
		Groups map[string]struct {
			Invocations  int64         `json:"invocations"`
			Requests     int64         `json:"requests"`
			Sizes        map[int]int64 `json:"sizes"`
			Padding      *float64      `json:"padding_overhead"`
			QueueMS      float64       `json:"queue_ms"`
			InvocationMS float64       `json:"invocation_ms"`
		} `json:"groups"`
		ServerRequestMS float64 `json:"server_request_ms"`
		Requests        int     `json:"requests"`
		PeakInFlight    int     `json:"peak_in_flight"`
		ArrivalGapUS    float64 `json:"arrival_gap_us"`
		ArrivalCV       float64 `json:"arrival_cv"`
		Failed          int     `json:"failed"`
		Execution       *struct {
			Slots, Threads, Cores int
			Planned               bool
			Tried                 []triedJSON
		} `json:"execution"`
		Direct *struct {
			directJSON
			Tried []directJSON
		} `json:"direct"`
	} `json:"modes"`
}

// triedJSON is a way of dividing the cores a plan tried.
type triedJSON struct {
	Slots, Threads    int
	RequestsPerSecond float64 `json:"requests_per_second"`
}

// directJSON is a strategy of the direct mode.
type directJSON struct {
	Calls             string
	Callers, Threads  int
	RequestsPerSecond float64 `json:"requests_per_second"`
}

// bench runs genaic bench --json and decodes its report; it fails the test
// unless the command exits 0. Planning the execution measures each mode
// for a while first: where args leave workers and threads unset, bench
// runs one worker (TestBenchJSON plans, with benchPlanned).
func bench(t *testing.T, args ...string) benchJSON {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--workers" || a == "--threads" || a == "--url" || a == "--grpc" }) {
		args = append([]string{"--workers", "1"}, args...)
	}
	return benchPlanned(t, args...)
}

// benchPlanned is bench with the execution left as args say.
func benchPlanned(t *testing.T, args ...string) benchJSON {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"bench", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("bench exit %d: %s", code, errOut)
	}
	var rep benchJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed no JSON: %v\n%s", err, out)
	}
	return rep
}

// TestBenchDirectRepeatsAShortDocument: the direct mode's batched calls
// are recorded over a short document repeated, as the clients repeat it:
// five requests, whose images fill the budget in groups of five to
// eleven, are not called in batches of at most five.
func TestBenchDirectRepeatsAShortDocument(t *testing.T) {
	short := largeDocument(t, filepath.Join(imagePkg, "requests64.json"), 5) // its first 5
	rep := bench(t, imagePkg, "--requests", short, "--rounds", "1", "--round-time", "0", "--concurrency", "4")
	for _, m := range rep.Modes {
		if g := m.Groups["encoder"]; m.Name == "direct" && (g.Invocations == 0 || g.Requests <= 5*g.Invocations) {
			t.Errorf("direct: %d requests in %d invocations; want batches of more than the document's 5", g.Requests, g.Invocations)
		}
	}
}

// TestBenchJSON: the three modes, each with throughput, latency
// percentiles in order, the group-size histogram of the component, every
// request of every timed round accounted for, and the execution planned
// for it on this machine (every way of dividing the cores tried, the one
// chosen among them); with --threads the execution is as configured, its
// workers as many as the cores hold (engine.Divide).
func TestBenchJSON(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests64.json")
	rep := benchPlanned(t, imagePkg, "--requests", reqs, "--rounds", "2", "--round-time", "0", "--concurrency", "16")
	divisions := engine.Divisions(runtime.NumCPU())
	for _, m := range rep.Modes {
		if m.Name == "direct" {
			checkDirect(t, m.Direct, len(divisions))
			continue
		}
		x := m.Execution
		if x == nil || !x.Planned || x.Cores != runtime.NumCPU() || len(x.Tried) == 0 ||
			!slices.ContainsFunc(x.Tried, func(c triedJSON) bool { return c.Slots == x.Slots && c.Threads == x.Threads && c.RequestsPerSecond > 0 }) {
			t.Errorf("%s: execution %+v; want one planned on %d cores among those tried", m.Name, x, runtime.NumCPU())
		}
	}
	configured := bench(t, imagePkg, "--requests", reqs, "--rounds", "1", "--round-time", "0", "--concurrency", "16", "--threads", "1")
	cores := engine.CPUs()
	for _, m := range configured.Modes {
		if m.Name == "direct" {
			if d := m.Direct; checkDirect(t, d, 1) && (d.Callers != cores || d.Threads != 1) {
				t.Errorf("direct with --threads 1: %+v; want %d callers × 1 thread", d, cores)
			}
			continue
		}
		if x := m.Execution; x == nil || x.Planned || x.Slots != cores || x.Threads != 1 {
			t.Errorf("%s with --threads 1: execution %+v; want %d slots × 1 thread", m.Name, x, cores)
		}
	}
	if rep.Requests != 64 || rep.Loop != "closed" {
		t.Errorf("requests %d, loop %q; want 64, closed", rep.Requests, rep.Loop)
	}
	if want := string(engine.DefaultCPUClass()); rep.CPUClass != want {
		t.Errorf("cpu_class %q; want the default, %q", rep.CPUClass, want)
	}
	var names []string
	for _, m := range rep.Modes {
		names = append(names, m.Name)
		if m.RequestsPerSecond <= 0 || m.ItemsPerSecond < m.RequestsPerSecond {
			t.Errorf("%s: %g requests/s, %g items/s (every request holds at least one image)", m.Name, m.RequestsPerSecond, m.ItemsPerSecond)
		}
		if l := m.Latency; m.Name != "direct" && (l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.Mean <= 0) {
			t.Errorf("%s: latency percentiles %+v", m.Name, l)
		}
		if want := m.RequestsPerSecond / rep.Modes[3].RequestsPerSecond; math.Abs(m.VsDirect-want) > 1e-9 {
			t.Errorf("%s: %g × direct, want %g", m.Name, m.VsDirect, want)
		}
		if m.ServerRequestMS != 0 || m.Groups["encoder"].InvocationMS != 0 {
			t.Errorf("%s: a server's times (%g ms per request) for engines in the process", m.Name, m.ServerRequestMS)
		}
		g, ok := m.Groups["encoder"]
		if !ok || g.Padding == nil || g.Requests != 128 || sum(g.Sizes) != g.Invocations {
			t.Errorf("%s: groups %+v; want the encoder's 128 requests over 2 rounds, a histogram summing to the invocations", m.Name, m.Groups)
		}
		if m.Requests != 128 || m.Failed != 0 {
			t.Errorf("%s: %d requests, %d failed; want 128, 0", m.Name, m.Requests, m.Failed)
		}
	}
	if got := strings.Join(names, ","); got != "grouped,one-at-a-time,sequential,direct" {
		t.Errorf("modes %s", got)
	}
}

// checkDirect checks the direct mode's choice: batched and single calls
// tried on every one of divisions of the cores, each measured, the one
// chosen the fastest of them.
func checkDirect(t *testing.T, d *struct {
	directJSON
	Tried []directJSON
}, divisions int) bool {
	t.Helper()
	if d == nil {
		t.Errorf("direct: no strategy reported")
		return false
	}
	fastest := slices.MaxFunc(d.Tried, func(a, b directJSON) int { return cmp.Compare(a.RequestsPerSecond, b.RequestsPerSecond) })
	batched := func(w directJSON) bool { return w.Calls == "batched" && w.RequestsPerSecond > 0 }
	single := func(w directJSON) bool { return w.Calls == "single" && w.RequestsPerSecond > 0 }
	if len(d.Tried) != 2*divisions || slices.IndexFunc(d.Tried, batched) < 0 || slices.IndexFunc(d.Tried, single) < 0 ||
		d.directJSON != fastest {
		t.Errorf("direct: %+v; want batched and single calls tried on %d divisions, the fastest chosen", d, divisions)
		return false
	}
	return true
}

func sum(m map[int]int64) int64 {
	var s int64
	for _, n := range m {
		s += n
	}
	return s
}

// TestBenchRoundTime: a round runs the document again and again until
// --round-time has passed: on a fast model far more requests than the
// document holds, every one of them run by the component.
func TestBenchRoundTime(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests64.json")
	rep := bench(t, imagePkg, "--requests", reqs, "--rounds", "1", "--warmup", "0", "--round-time", "200ms", "--concurrency", "4")
	if rep.RoundTimeMS != 200 {
		t.Errorf("round_time_ms %g, want 200", rep.RoundTimeMS)
	}
	for _, m := range rep.Modes {
		if m.Requests <= 64 || m.Failed != 0 {
			t.Errorf("%s: %d requests in a round of at least 200ms, %d failed; want the 64 of the document many times over", m.Name, m.Requests, m.Failed)
		}
		if g := m.Groups["encoder"]; g.Requests != int64(m.Requests) {
			t.Errorf("%s: the encoder ran %d requests of the %d sent", m.Name, g.Requests, m.Requests)
		}
	}
}

// TestBenchSweepAndPlot: a list of concurrency levels measures grouped and
// one-at-a-time at each, sequential once, and the plot files are written.
func TestBenchSweepAndPlot(t *testing.T) {
	pkg := "../../testdata/packages/text_packed"
	dir := t.TempDir()
	svg := filepath.Join(dir, "sweep.svg")
	rep := bench(t, pkg, "--requests", filepath.Join(pkg, "requests.json"), "--rounds", "1", "--warmup", "0",
		"--concurrency", "1,4,16", "--plot", svg)
	var got []string
	for _, m := range rep.Modes {
		got = append(got, fmt.Sprintf("%s@%d", m.Name, m.Concurrency))
	}
	want := "grouped@1,one-at-a-time@1,sequential@1,direct@1,grouped@4,one-at-a-time@4,grouped@16,one-at-a-time@16"
	if strings.Join(got, ",") != want {
		t.Errorf("modes %s, want %s", strings.Join(got, ","), want)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("%s: %v, %d bytes without <svg", svg, err, len(b))
	}
	png := filepath.Join(dir, "sweep.png")
	bench(t, pkg, "--requests", filepath.Join(pkg, "requests.json"), "--rounds", "1", "--warmup", "0", "--concurrency", "2,8", "--plot", png)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s: %v, %d bytes that are no PNG", png, err, len(b))
	}
}

// TestBenchProcs: --procs runs every mode under each processor count,
// the rounds reporting the count they ran under, each mode's ratio taken
// to one-at-a-time under the same count; the process's own count is
// restored afterwards.
func TestBenchProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	rep := bench(t, imagePkg, "--requests", filepath.Join(imagePkg, "requests64.json"), "--rounds", "1", "--warmup", "0",
		"--round-time", "0", "--concurrency", "8", "--procs", "1,3")
	var got []string
	for _, m := range rep.Modes {
		got = append(got, fmt.Sprintf("%s@%d", m.Name, m.Procs))
		if m.Name == "one-at-a-time" && m.VsOneAtATime != 1 {
			t.Errorf("one-at-a-time under %d processors: %g × one-at-a-time", m.Procs, m.VsOneAtATime)
		}
		if m.Requests != 64 || m.Failed != 0 {
			t.Errorf("%s@%d: %d requests, %d failed; want 64, 0", m.Name, m.Procs, m.Requests, m.Failed)
		}
	}
	want := "grouped@1,grouped@3,one-at-a-time@1,one-at-a-time@3,sequential@1,sequential@3,direct@1,direct@3"
	if strings.Join(got, ",") != want {
		t.Errorf("modes %s, want %s", strings.Join(got, ","), want)
	}
	if now := runtime.GOMAXPROCS(0); now != was {
		t.Errorf("GOMAXPROCS %d after bench, was %d", now, was)
	}
}

// TestBenchOpenLoop: requests sent at a rate, at most 4 in flight; every
// request is either answered or counted as failed, none blocks.
func TestBenchOpenLoop(t *testing.T) {
	pkg := "../../testdata/packages/text_padded"
	for _, arrivals := range []string{"poisson", "fixed"} {
		rep := bench(t, pkg, "--requests", filepath.Join(pkg, "requests_long.json"), "--rounds", "1", "--warmup", "0", "--round-time", "0",
			"--rate", "5000", "--arrivals", arrivals, "--concurrency", "4")
		if rep.Loop != "open" || len(rep.Modes) != 3 {
			t.Fatalf("%s: loop %q, %d modes", arrivals, rep.Loop, len(rep.Modes))
		}
		for _, m := range rep.Modes {
			if m.Requests != 64 || m.Failed > 64 {
				t.Errorf("%s %s: %d requests, %d failed; want all 64 accounted for", arrivals, m.Name, m.Requests, m.Failed)
			}
		}
	}
}

// TestBenchOpenLoopPacing: the open loop reports the arrivals it sent
// (their mean gap and its variation), and the gaps it schedules are the
// rate's: exactly 1/rate apart for fixed arrivals, and 1/rate on average,
// spread as Poisson arrivals are (a coefficient of variation of 1), for
// poisson ones. How evenly the arrivals go out depends on the machine's
// load; BenchmarkPacer measures the pacer's wakes.
func TestBenchOpenLoopPacing(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests64.json")
	rep := bench(t, imagePkg, "--requests", reqs, "--rounds", "1", "--warmup", "0", "--round-time", "200ms",
		"--rate", "2000", "--arrivals", "fixed", "--concurrency", "64")
	for _, m := range rep.Modes[:2] {
		if m.ArrivalGapUS <= 0 || m.ArrivalCV < 0 {
			t.Errorf("%s: arrivals %.0f µs apart on average, coefficient of variation %.2f; want both reported", m.Name, m.ArrivalGapUS, m.ArrivalCV)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fixed := &bencher{flags: benchFlags{rate: 2000, arrivals: "fixed"}}
	if d := fixed.gap(rng); d != 500*time.Microsecond {
		t.Errorf("fixed arrivals at 2000/s: gap %v, want 500µs", d)
	}
	poisson := &bencher{flags: benchFlags{rate: 2000, arrivals: "poisson"}}
	var w welford
	for range 20000 {
		w.add(float64(poisson.gap(rng)))
	}
	if mean, cv := w.mean/1e3, w.cv(); math.Abs(mean-500) > 15 || math.Abs(cv-1) > 0.03 {
		t.Errorf("poisson arrivals at 2000/s: mean gap %.1f µs, coefficient of variation %.3f; want 500 and 1", mean, cv)
	}
}

// BenchmarkPacer measures how late the open loop's pacer wakes from a
// 200 µs sleep (median and slowest, in µs). Paced by time.Sleep, which
// wakes once a millisecond on Linux, evenly spaced arrivals at 3,000
// requests/s went out in clumps (a coefficient of variation of their gaps
// of 1.5, where it should be 0).
func BenchmarkPacer(b *testing.B) {
	sleep := newPacer()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		sleep(200 * time.Microsecond)
		ds = append(ds, time.Since(start)-200*time.Microsecond)
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "median-late-us")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds()), "slowest-late-us")
}

// TestBenchLargeDocument: 5,000 requests run in every mode without a
// fatal error; with a queue of one item and many clients, the requests
// the engine refuses are counted, not fatal.
func TestBenchLargeDocument(t *testing.T) {
	pkg := "../../testdata/packages/text_packed"
	doc := largeDocument(t, filepath.Join(pkg, "requests.json"), 5000)
	rep := bench(t, pkg, "--requests", doc, "--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "5000")
	for _, m := range rep.Modes {
		if m.Requests != 5000 {
			t.Errorf("%s: %d requests accounted for, want 5000", m.Name, m.Requests)
		}
	}
	rep = bench(t, pkg, "--requests", doc, "--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "256", "--queue", "1")
	for _, m := range rep.Modes {
		if m.Requests != 5000 {
			t.Errorf("queue 1, %s: %d requests accounted for, want 5000", m.Name, m.Requests)
		}
	}
}

// largeDocument writes a requests document of n requests, cycling through
// those of src under fresh ids (fewer than src holds: its first n).
func largeDocument(t *testing.T, src string, n int) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests []map[string]json.RawMessage `json:"requests"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]json.RawMessage, n)
	for i := range out {
		r := map[string]json.RawMessage{}
		for k, v := range doc.Requests[i%len(doc.Requests)] {
			r[k] = v
		}
		r["id"] = json.RawMessage(fmt.Sprintf("%q", fmt.Sprint("r", i)))
		out[i] = r
	}
	b, err = json.Marshal(map[string]any{"requests": out})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "large.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBenchUsage: bad flags are usage errors (exit 2) before anything runs.
func TestBenchUsage(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	for _, args := range [][]string{
		{},
		{imagePkg, "--requests", reqs, "--plot", "out.pdf"},
		{imagePkg, "--requests", reqs, "--concurrency", "0"},
		{imagePkg, "--requests", reqs, "--concurrency", "4,x"},
		{imagePkg, "--requests", reqs, "--procs", "0"},
		{imagePkg, "--requests", reqs, "--procs", "2,5000"},
		{imagePkg, "--requests", reqs, "--rounds", "0"},
		{imagePkg, "--requests", reqs, "--round-time", "-1s"},
		{imagePkg, "--requests", reqs, "--round-time", "2h"},
		{imagePkg, "--requests", reqs, "--rate", "10", "--arrivals", "bursty"},
		{imagePkg, "--requests", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if _, errOut, code := runCLI(t, append([]string{"bench"}, args...)...); code != exitUsage {
			t.Errorf("bench %v: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
}

// TestBenchText: the text report names every mode and the component's
// groups.
func TestBenchText(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", imagePkg, "--requests", filepath.Join(imagePkg, "requests.json"), "--rounds", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"grouped", "one-at-a-time", "sequential", "direct", "encoder:", "p99 ms", "procs", "sizes 1×", "vs direct", "the fastest of batched"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchClientsOutnumberDocument: --concurrency is the clients the
// closed loop runs even where they outnumber the document's requests: on
// a document of 3 requests repeated for a round, 8 clients put more than
// 3 requests in flight at once (they once stopped at the document's
// length while the report said 8). A round that sends each request once
// has at most the document in flight, and says so.
func TestBenchClientsOutnumberDocument(t *testing.T) {
	pkg := "../../testdata/packages/ocr_lines"
	reqs := filepath.Join(pkg, "requests.json")
	rep := bench(t, pkg, "--requests", reqs, "--rounds", "1", "--warmup", "0", "--round-time", "150ms", "--concurrency", "8")
	if rep.Requests != 3 {
		t.Fatalf("the document holds %d requests, want 3", rep.Requests)
	}
	for _, m := range rep.Modes {
		if m.Name != "direct" && (m.PeakInFlight < 1 || m.PeakInFlight > m.Concurrency) {
			t.Errorf("%s: peak of %d in flight with %d clients", m.Name, m.PeakInFlight, m.Concurrency)
		}
		if m.Failed != 0 {
			t.Errorf("%s: %d failed", m.Name, m.Failed)
		}
	}
	// Grouped requests wait for their group to form: with 8 clients, more
	// than the document's 3 wait at some moment.
	if g := rep.Modes[0]; g.Name != "grouped" || g.PeakInFlight <= 3 {
		t.Errorf("%s: peak of %d in flight with 8 clients on a 3-request document; want more than 3", g.Name, g.PeakInFlight)
	}
	once := bench(t, pkg, "--requests", reqs, "--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "8")
	for _, m := range once.Modes {
		switch {
		case m.Name == "direct":
			// Its one pass is the document repeated to directStream.
			if m.Requests != 3*((directStream+2)/3) {
				t.Errorf("direct: one pass of %d requests, want the document repeated to %d", m.Requests, directStream)
			}
		case m.PeakInFlight > 3 || m.Requests != 3:
			t.Errorf("%s: each request sent once: %d sent, a peak of %d in flight; want 3 and at most 3", m.Name, m.Requests, m.PeakInFlight)
		}
	}
}

// TestLeastRound: a closed loop's round lasts --round-time, or long enough
// for every client to be answered about twice at the warm-up's rate, up
// to maxRoundTime; --round-time 0, the open loop and a warm-up that
// answered nothing keep --round-time.
func TestLeastRound(t *testing.T) {
	b := &bencher{flags: benchFlags{roundTime: 100 * time.Millisecond}}
	warm := func(ok int, d time.Duration) roundResult { return roundResult{ok: ok, elapsed: d} }
	for _, c := range []struct {
		w       roundResult
		clients int
		want    time.Duration
	}{
		{warm(10000, time.Second), 64, 100 * time.Millisecond}, // fast: 12.8 ms would do
		{warm(400, time.Second), 64, 320 * time.Millisecond},   // 2·64/400 s
		{warm(1, 10*time.Second), 64, maxRoundTime},            // capped
		{warm(0, time.Second), 64, 100 * time.Millisecond},     // nothing answered
	} {
		if got := b.leastRound(c.w, c.clients); got != c.want {
			t.Errorf("%d answered in %v by %d clients: %v, want %v", c.w.ok, c.w.elapsed, c.clients, got, c.want)
		}
	}
	b.flags.rate = 50
	if got := b.leastRound(warm(400, time.Second), 64); got != 100*time.Millisecond {
		t.Errorf("open loop: %v, want --round-time", got)
	}
	b.flags.rate, b.flags.roundTime = 0, 0
	if got := b.leastRound(warm(400, time.Second), 64); got != 0 {
		t.Errorf("--round-time 0: %v, want 0 (each request once)", got)
	}
}
