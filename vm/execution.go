package vm

import (
	"fmt"
	"strings"
	"time"
)

// Execution is how an engine divides the machine among its groups: Slots
// groups of a component run at once (Options.Workers), each computing on
// Threads threads of its backend (ONNX Runtime's intra-op threads; 0: the
// backend's default). Planned says it was measured on this machine
// (engine.PlanExecution), which Tried records: what each way of dividing
// the cores served of the package's own requests. The engine reports it
// in its stats; it changes nothing by itself. Ungrouped names the grouped
// components the plan runs one request per invocation, because running
// their items apart served more than grouping them (engine.Apply declines
// their grouping, saying so).
type Execution struct {
	Slots     int         `json:"slots"`
	Threads   int         `json:"threads"`
	Cores     int         `json:"cores,omitempty"`
	Planned   bool        `json:"planned,omitempty"`
	Ungrouped []string    `json:"ungrouped,omitempty"`
	Tried     []Candidate `json:"tried,omitempty"`
	// MeasuredAt is when the plan was measured, where it was kept to be
	// taken again (engine.PlanCache), and Kept says this execution is
	// one so taken, not measured by this process.
	MeasuredAt time.Time `json:"measured_at,omitzero"`
	Kept       bool      `json:"kept,omitempty"`
}

// Candidate is one way of dividing the cores a plan tried, the grouped
// components it runs one request per invocation (a plan tries each
// division with them apart and grouped), and the requests per second the
// package's requests were served at that way (the median of its rounds):
// by the plan's callers, and by its light load of LightClients callers
// (none where the plan had one caller).
type Candidate struct {
	Slots                  int      `json:"slots"`
	Threads                int      `json:"threads"`
	Ungrouped              []string `json:"ungrouped,omitempty"`
	RequestsPerSecond      float64  `json:"requests_per_second"`
	LightClients           int      `json:"light_clients,omitempty"`
	LightRequestsPerSecond float64  `json:"light_requests_per_second,omitempty"`
}

// String is the way in a few characters: "2×1", or "2×1 (recognizer
// apart)" where it runs a grouped component one request per invocation.
func (c Candidate) String() string {
	s := fmt.Sprintf("%d×%d", c.Slots, c.Threads)
	if len(c.Ungrouped) > 0 {
		s += fmt.Sprintf(" (%s apart)", strings.Join(c.Ungrouped, ", "))
	}
	return s
}

// String says the execution in a line: "2 slots × 1 thread, planned on 2
// cores (1×2: A req/s, a with 16 callers; 2×1: B req/s, b with 16
// callers)", with the throughput each candidate reached at both loads.
func (x *Execution) String() string {
	if x == nil {
		return ""
	}
	threads := fmt.Sprint(x.Threads)
	if x.Threads == 0 {
		threads = "the backend's default"
	}
	s := fmt.Sprintf("%d %s × %s %s", x.Slots, plural(x.Slots, "slot"), threads, plural(x.Threads, "thread"))
	if len(x.Ungrouped) > 0 {
		s += fmt.Sprintf(", one request per invocation of %s", strings.Join(x.Ungrouped, ", "))
	}
	if !x.Planned {
		return s + ", as configured"
	}
	var tried []string
	for _, c := range x.Tried {
		t := fmt.Sprintf("%s: %.0f req/s", c, c.RequestsPerSecond)
		if c.LightClients > 0 {
			t += fmt.Sprintf(", %.0f with %d callers", c.LightRequestsPerSecond, c.LightClients)
		}
		tried = append(tried, t)
	}
	s = fmt.Sprintf("%s, planned on %d cores (%s)", s, x.Cores, strings.Join(tried, "; "))
	if x.Kept {
		s += ", kept from " + x.MeasuredAt.Format(time.RFC3339)
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
