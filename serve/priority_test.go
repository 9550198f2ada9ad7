package serve

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// TestPriorityParameter: the `priority` parameter is read from HTTP's
// JSON (a number) and gRPC's parameters (int64 or uint64) alike; 0 and
// none are the model's default; anything but an integer from 0 to
// MaxPriority is run/input, saying what to give.
func TestPriorityParameter(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
		bad  bool
	}{
		{nil, 0, false}, {float64(0), 0, false}, {float64(3), 3, false}, {int64(7), 7, false}, {uint64(MaxPriority), MaxPriority, false},
		{1.5, 0, true}, {float64(-1), 0, true}, {int64(-2), 0, true}, {uint64(MaxPriority + 1), 0, true}, {float64(1 << 62), 0, true},
		{"2", 0, true}, {true, 0, true},
	} {
		got, err := parsePriority(c.v)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "`priority`") || vm.AsRunError(err).Rule != "run/input" {
				t.Errorf("priority %#v: %d, %v; want a run/input error naming the parameter", c.v, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("priority %#v: %d, %v; want %d", c.v, got, err, c.want)
		}
	}

	s := newServer(t, Config{Repo: repo(t, "image_padded"), NoWarmup: true})
	md := s.model("image_padded")
	reqs, err := readRequests(md.Dir)
	if err != nil {
		t.Fatal(err)
	}
	body, hlen := oipJSON(t, reqs[0], map[string]any{"priority": 4, "timeout": "2s"}, true)
	if _, _, _, cp, err := s.decodeHTTP(md, strconv.Itoa(hlen), body); err != nil || cp.priority != 4 || cp.timeout.String() != "2s" {
		t.Errorf("HTTP: %+v, %v; want priority 4, timeout 2s", cp, err)
	}
	for _, p := range []*oippb.InferParameter{
		{ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: 4}},
		{ParameterChoice: &oippb.InferParameter_Uint64Param{Uint64Param: 4}},
	} {
		m := grpcRequest("image_padded", reqs[0], true, map[string]*oippb.InferParameter{"priority": p})
		if _, cp, err := decodeGRPC(md, m); err != nil || cp.priority != 4 {
			t.Errorf("gRPC %v: %+v, %v; want priority 4", p, cp, err)
		}
	}
	m := grpcRequest("image_padded", reqs[0], true, map[string]*oippb.InferParameter{
		"priority": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: -1}}})
	if _, _, err := decodeGRPC(md, m); err == nil {
		t.Error("gRPC priority -1 was taken")
	}
}

// TestPriorityIsRelativeToTheDefault: a request reaches the engine at its
// priority less the model's default_priority (so that the default is the
// engine's level 0), and a request of the default priority, or of none,
// carries no level of its own.
func TestPriorityIsRelativeToTheDefault(t *testing.T) {
	base := context.WithValue(context.Background(), struct{}{}, "base")
	for _, c := range []struct{ def, p, want int }{
		{1, 0, 0}, {1, 1, 0}, {1, 3, 2}, {5, 0, 0}, {5, 5, 0}, {5, 1, -4}, {5, 9, 4},
	} {
		md := &Model{defaultPriority: c.def}
		ctx := md.prioritized(base, c.p)
		if got := vm.PriorityOf(ctx); got != c.want {
			t.Errorf("default %d, priority %d: level %d, want %d", c.def, c.p, got, c.want)
		}
		if c.want == 0 && ctx != base {
			t.Errorf("default %d, priority %d: a context of its own for the default level", c.def, c.p)
		}
	}
}
