package vm

import (
	"fmt"
	"strings"
)

// Execution is how an engine divides the machine among its groups: Slots
// groups of a component run at once (Options.Workers), each computing on
// Threads threads of its backend (ONNX Runtime's intra-op threads; 0: the
// backend's default). Planned says it was measured on this machine
// (engine.PlanExecution), which Tried records: what each way of dividing
// the cores served of the package's own requests. The engine reports it
// in its stats; it changes nothing by itself.
type Execution struct {
	Slots   int         `json:"slots"`
	Threads int         `json:"threads"`
	Cores   int         `json:"cores,omitempty"`
	Planned bool        `json:"planned,omitempty"`
	Tried   []Candidate `json:"tried,omitempty"`
}

// Candidate is one way of dividing the cores a plan tried, and the
// requests per second the package's requests were served at that way
// (the median of its rounds).
type Candidate struct {
	Slots             int     `json:"slots"`
	Threads           int     `json:"threads"`
	RequestsPerSecond float64 `json:"requests_per_second"`
}

// String says the execution in a line: "2 slots × 1 thread, planned on 2
// cores (1×2: 69000 req/s, 2×1: 154000 req/s)".
func (x *Execution) String() string {
	if x == nil {
		return ""
	}
	threads := fmt.Sprint(x.Threads)
	if x.Threads == 0 {
		threads = "the backend's default"
	}
	s := fmt.Sprintf("%d %s × %s %s", x.Slots, plural(x.Slots, "slot"), threads, plural(x.Threads, "thread"))
	if !x.Planned {
		return s + ", as configured"
	}
	var tried []string
	for _, c := range x.Tried {
		tried = append(tried, fmt.Sprintf("%d×%d: %.0f req/s", c.Slots, c.Threads, c.RequestsPerSecond))
	}
	return fmt.Sprintf("%s, planned on %d cores (%s)", s, x.Cores, strings.Join(tried, ", "))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
