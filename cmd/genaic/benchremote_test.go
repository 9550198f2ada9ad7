package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/vm"
)

const textPkg = "../../testdata/packages/text_packed"

// startServer serves pkg as genaic serve does, over HTTP and gRPC on
// loopback, and returns their addresses.
func startServer(t *testing.T, pkg string) (url, grpcAddr string) {
	t.Helper()
	_, url, grpcAddr = startServing(t, pkg)
	return url, grpcAddr
}

func startServing(t *testing.T, pkg string) (s *serve.Server, url, grpcAddr string) {
	t.Helper()
	s, err := serve.New(serve.Config{Repo: pkg, NoWarmup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewGRPCServer()
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return s, hs.URL, lis.Addr().String()
}

// TestBenchServer: against a server, the modes are the ways a client
// reaches it, each answering every request of every timed round, with
// latency percentiles in order; the groups read from the server's
// metrics account for exactly the requests each mode sent (nothing else
// loads this server).
func TestBenchServer(t *testing.T) {
	url, grpcAddr := startServer(t, textPkg)
	rep := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", url, "--grpc", grpcAddr,
		"--rounds", "2", "--warmup", "0", "--round-time", "0", "--concurrency", "8")
	var names []string
	for _, m := range rep.Modes {
		names = append(names, m.Name)
		if m.Requests != 128 || m.Failed != 0 || m.RequestsPerSecond <= 0 || m.ItemsPerSecond < m.RequestsPerSecond {
			t.Errorf("%s: %d requests, %d failed, %g requests/s, %g items/s; want 128 answered", m.Name, m.Requests, m.Failed, m.RequestsPerSecond, m.ItemsPerSecond)
		}
		if l := m.Latency; l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 {
			t.Errorf("%s: latency percentiles %+v", m.Name, l)
		}
		g := m.Groups["text_encoder"]
		if g.Requests != 128 || g.Invocations < 1 || g.Invocations > 128 {
			t.Errorf("%s: the server's metrics show %+v for the 128 requests sent", m.Name, g)
		}
		// The server's own time per request is part of what the client
		// waited, and an invocation part of the server's.
		if m.ServerRequestMS <= 0 || m.ServerRequestMS > m.Latency.Mean || g.InvocationMS <= 0 || g.InvocationMS > m.ServerRequestMS || g.QueueMS < 0 {
			t.Errorf("%s: server %g ms per request, invocations %g ms, queue %g ms, the client's mean %g ms", m.Name, m.ServerRequestMS, g.InvocationMS, g.QueueMS, m.Latency.Mean)
		}
	}
	if got := strings.Join(names, ","); got != "http,http_json,grpc,grpc_stream" {
		t.Errorf("modes %s", got)
	}
	if sv := rep.Server; sv == nil || sv.URL != url || sv.GRPC != grpcAddr || sv.Model != "text_packed" || rep.MaxDelay != "" {
		t.Errorf("server %+v, max delay %q; want the addresses and the model named by the package's folder, no max delay", sv, rep.MaxDelay)
	}
	bare := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", strings.TrimPrefix(url, "http://"), "--protocols", "http",
		"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "2")
	if m := bare.Modes; len(m) != 1 || m[0].Failed != 0 || m[0].Requests != 64 {
		t.Errorf("--url host:port (no scheme, as perf_analyzer takes it): %+v", m)
	}
	one := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--grpc", grpcAddr, "--protocols", "grpc_stream",
		"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "4")
	// With no --url, the groups and times come from the statistics over
	// gRPC (ModelStatistics), the model as one group former.
	if len(one.Modes) != 1 || one.Modes[0].Name != "grpc_stream" || one.Modes[0].Failed != 0 {
		t.Fatalf("--protocols grpc_stream with no --url: %+v; want that mode alone", one.Modes)
	}
	if m := one.Modes[0]; len(m.Groups) != 1 || m.Groups["text_packed"].Requests != 64 || m.ServerRequestMS <= 0 || m.Groups["text_packed"].InvocationMS <= 0 {
		t.Errorf("--grpc alone: groups %+v, server %g ms per request; want the 64 requests, from ModelStatistics", m.Groups, m.ServerRequestMS)
	}
}

// TestBenchServerPackageHere: bench of the package "." (the folder it
// runs in) asks the server for the model serve names by that folder, as
// it does for a path that names it (it asked for a model ".").
func TestBenchServerPackageHere(t *testing.T) {
	url, _ := startServer(t, textPkg)
	t.Chdir(textPkg)
	rep := bench(t, ".", "--requests", "requests.json", "--url", url, "--protocols", "http",
		"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "2")
	if m := rep.Modes; len(m) != 1 || m[0].Failed != 0 || m[0].Requests != 64 || rep.Server == nil || rep.Server.Model != "text_packed" {
		t.Errorf("bench . --url: server %+v, modes %+v; want model text_packed, 64 answered", rep.Server, m)
	}
}

// TestBenchTritonStats: against a server that has no genaic /metrics but
// answers Triton's statistics extension (a genaic server behind a front
// that hides its /metrics, as a Triton server would look), the groups,
// batch sizes and server times come from the statistics, for the model
// as one component, and account for the requests sent.
func TestBenchTritonStats(t *testing.T) {
	s, _, _ := startServing(t, textPkg)
	h := s.Handler()
	var scraped atomic.Int64
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			scraped.Add(1)
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer foreign.Close()
	rep := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", foreign.URL, "--protocols", "http",
		"--rounds", "2", "--warmup", "0", "--round-time", "0", "--concurrency", "8")
	if scraped.Load() == 0 || len(rep.Modes) != 1 {
		t.Fatalf("/metrics read %d times, modes %+v", scraped.Load(), rep.Modes)
	}
	m := rep.Modes[0]
	g, ok := m.Groups["text_packed"]
	if !ok || len(m.Groups) != 1 {
		t.Fatalf("groups %+v; want the model's alone", m.Groups)
	}
	var invocations, requests int64
	for size, n := range g.Sizes {
		invocations += n
		requests += int64(size) * n
	}
	if m.Failed != 0 || g.Requests != 128 || requests != 128 || invocations != g.Invocations || g.Invocations < 1 {
		t.Errorf("%d failed; groups %+v (sizes account for %d requests in %d invocations); want the 128 requests sent", m.Failed, g, requests, invocations)
	}
	if m.ServerRequestMS <= 0 || m.ServerRequestMS > m.Latency.Mean || g.InvocationMS <= 0 || g.InvocationMS > m.ServerRequestMS || g.QueueMS < 0 {
		t.Errorf("server %g ms per request, invocations %g ms, queue %g ms, the client's mean %g ms", m.ServerRequestMS, g.InvocationMS, g.QueueMS, m.Latency.Mean)
	}
}

// TestBenchMetricsSource: the reads of one bench keep to the source that
// first answered: a genaic server's /metrics that fails now and then
// gives a round no groups, never groups mixed with the statistics
// extension's (the model read as one component).
func TestBenchMetricsSource(t *testing.T) {
	s, _, _ := startServing(t, textPkg)
	h := s.Handler()
	var scrapes atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" && scrapes.Add(1)%2 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer flaky.Close()
	rep := bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", flaky.URL, "--protocols", "http",
		"--rounds", "3", "--warmup", "0", "--round-time", "0", "--concurrency", "4")
	if scrapes.Load() < 4 {
		t.Fatalf("/metrics read %d times", scrapes.Load())
	}
	for _, m := range rep.Modes {
		if _, mixed := m.Groups["text_packed"]; mixed {
			t.Errorf("groups read from both sources: %+v", m.Groups)
		}
	}
}

// TestServerCPU: a round's server CPU per request is what the server
// process's CPU counter grew by over what its model's request count grew
// by; a server whose metrics lack the counter says nothing of its CPU.
func TestServerCPU(t *testing.T) {
	var page atomic.Pointer[string]
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, *page.Load()) }))
	defer metrics.Close()
	text := func(cpu float64, requests int, withCPU bool) *string {
		s := fmt.Sprintf("genaic_model_ready{model=\"m\"} 1\n"+
			"# TYPE genaic_request_duration_seconds histogram\n"+
			"genaic_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} %d\n"+
			"genaic_request_duration_seconds_sum{model=\"m\"} %g\n"+
			"genaic_request_duration_seconds_count{model=\"m\"} %d\n", requests, 1e-4*float64(requests), requests)
		if withCPU {
			s = "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + fmt.Sprint(cpu) + "\n" + s
		}
		return &s
	}
	m := newMetricsReader(metrics.Client(), metrics.URL, "m")
	round := func(before, after *string) modeResult {
		page.Store(before)
		b := m.read()
		page.Store(after)
		a := m.read()
		d := a.server.minus(*b.server)
		return summarize("http", 1, []roundResult{{elapsed: time.Second, ok: 1, server: &d}}, vm.Stats{})
	}
	if got := round(text(10, 1000, true), text(10.5, 6000, true)).ServerCPUUS; math.Abs(got-100) > 1e-6 {
		t.Errorf("0.5 s of CPU over 5000 requests: %g µs a request, want 100", got)
	}
	if got := round(text(0, 1000, false), text(0, 6000, false)).ServerCPUUS; got != 0 {
		t.Errorf("no CPU counter: %g µs a request, want 0 (not known)", got)
	}
}

// TestBenchServerMistakes: what a bench against a server refuses, and a
// model the server does not serve, each said in one line.
func TestBenchServerMistakes(t *testing.T) {
	url, grpcAddr := startServer(t, textPkg)
	reqs := filepath.Join(textPkg, "requests.json")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--url", url, "--max-delay", "1ms"}, "--max-delay configure engines in this process"},
		{[]string{"--grpc", grpcAddr, "--procs", "1"}, "--procs configure engines"},
		{[]string{"--url", url, "--protocols", "grpc"}, "grpc needs --grpc"},
		{[]string{"--url", url, "--protocols", "udp"}, `"udp" is none of`},
		{[]string{"--url", url, "--model", "nope"}, "/v2/models/nope/ready answers 404"},
		{[]string{"--grpc", grpcAddr, "--model", "nope"}, "model nope"},
		{[]string{"--url", url, "--timeout", "0s"}, "--timeout 0s"},
		{[]string{"--url", url, "--priority", "-1"}, "--priority -1: want 1"},
		{[]string{"--priority", "2"}, "give --url or --grpc"},
	} {
		_, errOut, code := runCLI(t, append([]string{"bench", textPkg, "--requests", reqs, "--rounds", "1", "--warmup", "0", "--round-time", "0"}, c.args...)...)
		if code == exitOK || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, %q; want a failure saying %q", c.args, code, errOut, c.says)
		}
	}
}

// TestBenchServerDrains: a server that starts draining while a bench
// sends on a shared stream ends the stream; the requests waiting on it
// and those sent after fail, each counted, and the bench ends without
// waiting for their timeouts.
func TestBenchServerDrains(t *testing.T) {
	s, _, grpcAddr := startServing(t, textPkg)
	// The drain starts once the round has begun: once the server has
	// taken a request (the bench's start-up takes its own time).
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		for admitted, _ := s.Counts(); admitted == 0; admitted, _ = s.Counts() {
			select {
			case <-ended:
				return
			case <-time.After(time.Millisecond):
			}
		}
		s.SetDraining()
	}()
	// A request's timeout of an hour turns a bench that waits for its
	// answers' timeouts rather than the stream's end into one that does
	// not end, which the bound below (a hang guard) reports.
	reports := make(chan benchJSON, 1)
	go func() {
		defer close(reports)
		reports <- bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--grpc", grpcAddr, "--protocols", "grpc_stream",
			"--rounds", "1", "--warmup", "0", "--round-time", "600ms", "--concurrency", "8", "--timeout", "1h")
	}()
	var rep benchJSON
	select {
	case r, ok := <-reports:
		if !ok {
			return // bench failed the test
		}
		rep = r
	case <-time.After(2 * time.Minute):
		t.Fatal("the bench did not end after the server drained: its requests wait for their timeout")
	}
	m := rep.Modes[0]
	if m.Failed == 0 || m.Requests == m.Failed {
		t.Errorf("%d of %d requests failed; want those before the drain answered, those after failed", m.Failed, m.Requests)
	}
}

// TestBenchServerItems: requests that give items (ocr_lines' lines) go in
// the protocol's items form every way, and are answered.
func TestBenchServerItems(t *testing.T) {
	url, grpcAddr := startServer(t, ocrPkg)
	rep := bench(t, ocrPkg, "--requests", filepath.Join(ocrPkg, "requests.json"), "--url", url, "--grpc", grpcAddr,
		"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "4")
	for _, m := range rep.Modes {
		if m.Failed != 0 || m.Requests == 0 || m.ItemsPerSecond <= m.RequestsPerSecond {
			t.Errorf("%s: %d of %d requests failed, %g items/s for %g requests/s", m.Name, m.Failed, m.Requests, m.ItemsPerSecond, m.RequestsPerSecond)
		}
	}
	if len(rep.Modes) != 4 {
		t.Errorf("%d modes", len(rep.Modes))
	}
}

// TestInspectServerStats: genaic inspect --stats reads a running server's
// engine stats from its URL and shows what the engine measured and
// decided for the requests a bench sent; a URL that answers no stats is a
// clear failure.
func TestInspectServerStats(t *testing.T) {
	url, _ := startServer(t, textPkg)
	bench(t, textPkg, "--requests", filepath.Join(textPkg, "requests.json"), "--url", url, "--protocols", "http",
		"--rounds", "1", "--warmup", "0", "--round-time", "0", "--concurrency", "8")
	out, errOut, code := runCLI(t, "inspect", textPkg, "--stats", url+"/v2/models/text_packed/genaic/stats")
	if code != exitOK || !strings.Contains(out, "what the running engine measured and decided") ||
		!strings.Contains(out, "component text_encoder:") || strings.Contains(out, "0 invocations for 0 requests") {
		t.Errorf("exit %d (%s):\n%s", code, errOut, out)
	}
	for _, bad := range []string{url + "/v2/models/nope/genaic/stats", url + "/v2/health/live"} {
		if _, errOut, code := runCLI(t, "inspect", textPkg, "--stats", bad); code == exitOK || !strings.Contains(errOut, bad) {
			t.Errorf("--stats %s: exit %d, %q; want a failure that says why", bad, code, errOut)
		}
	}
}
