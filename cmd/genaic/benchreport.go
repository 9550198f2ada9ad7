package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/genaic/genaic/vm"
)

// modeResult is one mode at one concurrency level, over the timed rounds:
// medians with their spread, latency over every request of every round.
type modeResult struct {
	Name        string `json:"name"`
	Concurrency int    `json:"concurrency"`
	// RoundMS is the least a timed round ran: --round-time, or longer for
	// a mode that serves too slowly for such a round (leastRound).
	RoundMS float64 `json:"round_ms"`
	// Procs is the Go processor count (GOMAXPROCS) the mode ran under.
	Procs             int     `json:"procs"`
	Rounds            int     `json:"rounds"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	ItemsPerSecond    float64 `json:"items_per_second"`
	// Spread is the slowest and the fastest round of each median.
	Spread struct {
		RequestsPerSecond [2]float64 `json:"requests_per_second"`
		ItemsPerSecond    [2]float64 `json:"items_per_second"`
	} `json:"spread"`
	// VsOneAtATime is the median requests/s over one-at-a-time's at the
	// same level (0 where there is none).
	VsOneAtATime float64 `json:"vs_one_at_a_time,omitempty"`
	// VsDirect is the median requests/s over the direct mode's under the
	// same processor count (0 where there is none): how close the mode
	// comes to the components called straight on the best division of
	// the cores.
	VsDirect float64                `json:"vs_direct,omitempty"`
	Latency  latencyMS              `json:"latency_ms"`
	Groups   map[string]groupReport `json:"groups"`
	// Execution is how the mode's engine divided the machine (planned, or
	// as the flags said); nil for a server.
	Execution *vm.Execution `json:"execution,omitempty"`
	// Direct is the direct mode's strategy and those it tried; its
	// Concurrency is the strategy's callers, and it has no latency (it
	// sends no requests).
	Direct   *directChoice `json:"direct,omitempty"`
	Requests int           `json:"requests"` // sent over the timed rounds
	// PeakInFlight is the most requests in flight at once in any timed
	// round: the concurrency the load reached (below Concurrency where
	// the rounds send each request of a short document once).
	PeakInFlight int64 `json:"peak_in_flight"`
	// ArrivalGapUS and ArrivalCV are the open loop's arrivals as sent:
	// the median over rounds of the mean gap between them and of its
	// coefficient of variation (1 for Poisson, 0 for fixed).
	ArrivalGapUS float64 `json:"arrival_gap_us,omitempty"`
	ArrivalCV    float64 `json:"arrival_cv,omitempty"`
	Failed       int     `json:"failed"`
	FirstError   string  `json:"first_error,omitempty"`
	// ServerRequestMS is a genaic server's mean time per request over the
	// timed rounds, decoded to answered, as its metrics tell (0: not
	// known); the rest of the client's latency is the network, the
	// protocol's framing and the client.
	ServerRequestMS float64 `json:"server_request_ms,omitempty"`
	// ServerCPUUS is a genaic server process's CPU time over the timed
	// rounds, in microseconds per request of the model answered (0: not
	// known): all of its CPU, so the model's alone where nothing else
	// loads that server meanwhile.
	ServerCPUUS float64 `json:"server_cpu_us,omitempty"`
}

type latencyMS struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// groupReport is what one component's groups did over the timed rounds.
type groupReport struct {
	Invocations int64 `json:"invocations"`
	Requests    int64 `json:"requests"`
	// MeanSize is requests per invocation.
	MeanSize float64 `json:"mean_size"`
	// Sizes is the group-size histogram: requests per invocation → count.
	Sizes map[int]int64 `json:"sizes"`
	// PaddingOverhead is the engine's, over every round of this mode and
	// level, warm-up included (the same document each time).
	PaddingOverhead float64 `json:"padding_overhead"`
	// QueueMS and InvocationMS are a genaic server's means over the timed
	// rounds: an item's wait for its group, and an invocation (assembly to
	// split); 0 where not known.
	QueueMS      float64 `json:"queue_ms,omitempty"`
	InvocationMS float64 `json:"invocation_ms,omitempty"`
}

// summarize folds a mode's rounds into medians, spreads and percentiles.
func summarize(name string, c int, runs []roundResult, stats vm.Stats) modeResult {
	m := modeResult{Name: name, Concurrency: c, Rounds: len(runs), Groups: map[string]groupReport{}, Execution: stats.Execution}
	var rps, ips, gaps, cvs []float64
	var lat []time.Duration
	var server *serverTimes
	for _, r := range runs {
		if r.server != nil {
			if server == nil {
				server = &serverTimes{}
			}
			server.add(*r.server)
		}
		if r.gaps.n > 1 {
			gaps, cvs = append(gaps, r.gaps.mean/1e3), append(cvs, r.gaps.cv())
		}
		s := r.elapsed.Seconds()
		rps = append(rps, float64(r.ok)/s)
		ips = append(ips, float64(r.items)/s)
		lat = append(lat, r.latencies...)
		m.Requests += r.ok + r.failed
		if m.Failed == 0 && r.failed > 0 {
			m.FirstError = r.firstErr
		}
		m.Failed += r.failed
		m.Procs = r.procs
		m.PeakInFlight = max(m.PeakInFlight, r.peak)
		addGroups(m.Groups, r.groups)
	}
	m.RequestsPerSecond, m.Spread.RequestsPerSecond = medianSpread(rps)
	m.ItemsPerSecond, m.Spread.ItemsPerSecond = medianSpread(ips)
	if len(gaps) > 0 {
		m.ArrivalGapUS, _ = medianSpread(gaps)
		m.ArrivalCV, _ = medianSpread(cvs)
	}
	slices.Sort(lat)
	m.Latency = latencyMS{Mean: meanMS(lat), P50: quantileMS(lat, 0.50), P90: quantileMS(lat, 0.90), P99: quantileMS(lat, 0.99)}
	for name, g := range m.Groups {
		if g.Invocations > 0 {
			g.MeanSize = float64(g.Requests) / float64(g.Invocations)
		}
		g.PaddingOverhead = stats.Components[name].PaddingOverhead
		if server != nil {
			g.QueueMS, g.InvocationMS = server.queue[name].meanMS(), server.invoke[name].meanMS()
		}
		m.Groups[name] = g
	}
	if server != nil {
		m.ServerRequestMS, m.ServerCPUUS = server.request.meanMS(), 1e3*server.cpu.meanMS()
	}
	return m
}

func addGroups(into map[string]groupReport, d map[string]groupDelta) {
	for name, g := range d {
		r := into[name]
		if r.Sizes == nil {
			r.Sizes = map[int]int64{}
		}
		r.Invocations += g.invocations
		r.Requests += g.requests
		for size, n := range g.sizes {
			r.Sizes[size] += n
		}
		into[name] = r
	}
}

// medianSpread returns the median and the [min, max] of xs.
func medianSpread(xs []float64) (float64, [2]float64) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, [2]float64{s[0], s[n-1]}
}

// meanMS is the mean of durations, in ms.
func meanMS(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds)) / float64(time.Millisecond)
}

// quantileMS is the nearest-rank q-quantile of sorted durations, in ms.
func quantileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// setRatios sets each result's ratio to one-at-a-time at the same level
// and processor count.
func setRatios(rs []modeResult) {
	for j := range rs {
		i := slices.IndexFunc(rs, func(r modeResult) bool { return r.Name == "one-at-a-time" && r.Procs == rs[j].Procs })
		if i >= 0 && rs[i].RequestsPerSecond > 0 {
			rs[j].VsOneAtATime = rs[j].RequestsPerSecond / rs[i].RequestsPerSecond
		}
	}
}

// setVsDirect sets each result's ratio to the direct mode under the same
// processor count (it runs at the first concurrency level only).
func setVsDirect(rs []modeResult) {
	for j := range rs {
		i := slices.IndexFunc(rs, func(r modeResult) bool { return r.Direct != nil && r.Procs == rs[j].Procs })
		if i >= 0 && rs[i].RequestsPerSecond > 0 {
			rs[j].VsDirect = rs[j].RequestsPerSecond / rs[i].RequestsPerSecond
		}
	}
}

// benchReport is the --json document.
type benchReport struct {
	Requests int     `json:"requests"`
	Loop     string  `json:"loop"` // closed or open
	Rate     float64 `json:"rate,omitempty"`
	Arrivals string  `json:"arrivals,omitempty"`
	Rounds   int     `json:"rounds"`
	// RoundTimeMS is the least a round ran (--round-time).
	RoundTimeMS float64 `json:"round_time_ms"`
	Warmup      int     `json:"warmup"`
	MaxDelay    string  `json:"max_delay,omitempty"` // of engines in this process
	// CPUClass is the scheduling class of this process's threads
	// (--cpu-class), where it was set.
	CPUClass string `json:"cpu_class,omitempty"`
	// Server is the server a bench against one loaded: its addresses and
	// the model's name there.
	Server *benchServer `json:"server,omitempty"`
	Modes  []modeResult `json:"modes"`
}

type benchServer struct {
	URL   string `json:"url,omitempty"`
	GRPC  string `json:"grpc,omitempty"`
	Model string `json:"model"`
	// Priority is the priority every request named (--priority); 0: none.
	Priority int `json:"priority,omitempty"`
}

func writeBenchJSON(w io.Writer, b *bencher, rs []modeResult) error {
	rep := benchReport{Requests: len(b.reqs), Loop: loopName(b), Rounds: b.flags.rounds, Warmup: b.flags.warmup,
		RoundTimeMS: float64(b.flags.roundTime) / float64(time.Millisecond), CPUClass: b.flags.inClass, Modes: rs}
	if rf := b.flags.remoteFlags; rf.remote() {
		rep.Server = &benchServer{URL: rf.url, GRPC: rf.grpc, Model: rf.model, Priority: rf.priority}
	} else {
		rep.MaxDelay = b.flags.maxDelay.String()
	}
	if b.flags.rate > 0 {
		rep.Rate, rep.Arrivals = b.flags.rate, b.flags.arrivals
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func loopName(b *bencher) string {
	if b.flags.rate > 0 {
		return "open"
	}
	return "closed"
}

func writeBenchText(w io.Writer, b *bencher, rs []modeResult) {
	load := "closed loop"
	if b.flags.rate > 0 {
		load = fmt.Sprintf("open loop at %g requests/s (%s)", b.flags.rate, b.flags.arrivals)
	}
	where := fmt.Sprintf("max delay %v", b.flags.maxDelay)
	if rf := b.flags.remoteFlags; rf.remote() {
		where = fmt.Sprintf("model %s at %s", rf.model, strings.Trim(rf.url+" "+rf.grpc, " "))
		if rf.priority != 0 {
			where += fmt.Sprintf(", every request at priority %d", rf.priority)
		}
	}
	if c := b.flags.inClass; c != "" {
		where += fmt.Sprintf(", threads in the %s CPU class", c)
	}
	fmt.Fprintf(w, "%d requests, %s, %d timed rounds per mode after %d warm-up, each at least %v (the document repeated), modes interleaved, %s\n",
		len(b.reqs), load, b.flags.rounds, b.flags.warmup, b.flags.roundTime, where)
	// The column of ratios to the direct mode, where it ran (not against
	// a server, nor in the open loop).
	direct := slices.ContainsFunc(rs, func(r modeResult) bool { return r.Direct != nil })
	column := func(s string) string {
		if !direct {
			return ""
		}
		return fmt.Sprintf(" %9s", s)
	}
	fmt.Fprintf(w, "%-14s %7s %5s %22s %10s %8s %8s %8s %8s%s %7s\n",
		"mode", "clients", "procs", "requests/s (min–max)", "items/s", "p50 ms", "p90 ms", "p99 ms", "vs 1-at", column("vs direct"), "failed")
	for _, r := range rs {
		spread := fmt.Sprintf("%.0f (%.0f–%.0f)", r.RequestsPerSecond, r.Spread.RequestsPerSecond[0], r.Spread.RequestsPerSecond[1])
		p50, p90, p99 := "–", "–", "–"
		if r.Direct == nil {
			p50, p90, p99 = fmt.Sprintf("%.2f", r.Latency.P50), fmt.Sprintf("%.2f", r.Latency.P90), fmt.Sprintf("%.2f", r.Latency.P99)
		}
		fmt.Fprintf(w, "%-14s %7d %5d %22s %10.0f %8s %8s %8s %8s%s %7d\n",
			r.Name, r.Concurrency, r.Procs, spread, r.ItemsPerSecond, p50, p90, p99, ratio(r.VsOneAtATime), column(ratio(r.VsDirect)), r.Failed)
		for _, name := range slices.Sorted(maps.Keys(r.Groups)) {
			g := r.Groups[name]
			sizes := "" // a server's metrics give no histogram of exact sizes
			if len(g.Sizes) > 0 {
				sizes = "; sizes " + histogram(g.Sizes)
			}
			times := ""
			if g.InvocationMS > 0 {
				times = fmt.Sprintf("; items waited %.3f ms for a group, invocations took %.3f ms (means)", g.QueueMS, g.InvocationMS)
			}
			fmt.Fprintf(w, "  %s: %d invocations, %.1f requests each, padding overhead %.2f%s%s\n",
				name, g.Invocations, g.MeanSize, g.PaddingOverhead, sizes, times)
		}
		if r.Execution != nil {
			fmt.Fprintf(w, "  execution: %s\n", r.Execution)
		}
		if r.Direct != nil {
			fmt.Fprintf(w, "  direct: %s (clients: its callers)\n", r.Direct)
		}
		if least := time.Duration(r.RoundMS * float64(time.Millisecond)); least > b.flags.roundTime {
			fmt.Fprintf(w, "  rounds of at least %v, longer than --round-time: every client answered about twice at the warm-up's rate\n", least.Round(time.Millisecond))
		}
		if r.ServerRequestMS > 0 {
			cpu := ""
			if r.ServerCPUUS > 0 {
				cpu = fmt.Sprintf("; its process spent %.0f µs of CPU per request", r.ServerCPUUS)
			}
			fmt.Fprintf(w, "  the server: %.3f ms per request on average, decoded to answered (the client saw a mean of %.3f ms)%s\n", r.ServerRequestMS, r.Latency.Mean, cpu)
		}
		if r.ArrivalGapUS > 0 {
			fmt.Fprintf(w, "  arrivals as sent: a mean gap of %.1f µs, coefficient of variation %.2f (%s)\n",
				r.ArrivalGapUS, r.ArrivalCV, cvMeaning(b.flags.arrivals))
		}
		// A round that sends each request once cannot keep more clients
		// busy than the document holds.
		if b.flags.rate == 0 && b.flags.roundTime == 0 && len(b.reqs) < r.Concurrency {
			fmt.Fprintf(w, "  at most %d %s in flight at once: each round sends the document's %d once (--round-time repeats it)\n",
				r.PeakInFlight, plural(int(r.PeakInFlight), "request"), len(b.reqs))
		}
		if r.FirstError != "" {
			fmt.Fprintf(w, "  first failure: %s\n", r.FirstError)
		}
	}
}

// ratio prints a ratio to another mode, "–" where there is none.
func ratio(x float64) string {
	if x <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", x)
}

// cvMeaning is what the arrivals' coefficient of variation should be.
func cvMeaning(arrivals string) string {
	if arrivals == "fixed" {
		return "0 for evenly spaced"
	}
	return "1 for Poisson"
}

// histogram prints group sizes as size×count, smallest first.
func histogram(sizes map[int]int64) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(sizes)) {
		parts = append(parts, fmt.Sprintf("%d×%d", s, sizes[s]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
