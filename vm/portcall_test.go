package vm

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// portBackend loads its inner backend's sessions as PortSessions whose
// ports are the component's in reverse order (so that a caller mixing up
// the positions sees the wrong tensors), plus extra, a name the plan does
// not have, when set. It counts the calls each way.
type portBackend struct {
	inner           backend.Backend
	extra           string
	byName, byPorts atomic.Int64
}

func (b *portBackend) Name() string { return b.inner.Name() }

func (b *portBackend) Load(comp *ir.Component, dir string) (backend.Session, error) {
	s, err := b.inner.Load(comp, dir)
	if err != nil {
		return nil, err
	}
	ps := &portSession{Session: s, b: b}
	for _, p := range slices.Backward(comp.Inputs) {
		ps.ins = append(ps.ins, p.Name)
	}
	if b.extra != "" {
		ps.ins = append(ps.ins, b.extra)
	}
	for _, p := range slices.Backward(comp.Outputs) {
		ps.outs = append(ps.outs, p.Name)
	}
	return ps, nil
}

type portSession struct {
	backend.Session
	b         *portBackend
	ins, outs []string
}

func (s *portSession) Run(ctx context.Context, in map[string]*backend.Tensor, outs []string) (map[string]*backend.Tensor, error) {
	s.b.byName.Add(1)
	return s.Session.Run(ctx, in, outs)
}

func (s *portSession) Ports() (inputs, outputs []string) { return s.ins, s.outs }

func (s *portSession) RunPorts(ctx context.Context, ins []*backend.Tensor, want []bool, outs []*backend.Tensor) error {
	s.b.byPorts.Add(1)
	if len(ins) != len(s.ins) || len(outs) != len(s.outs) {
		return fmt.Errorf("RunPorts got %d inputs and %d outputs for ports %v and %v", len(ins), len(outs), s.ins, s.outs)
	}
	named := map[string]*backend.Tensor{}
	for i, t := range ins {
		named[s.ins[i]] = t
	}
	res, err := s.Session.Run(ctx, named, nil)
	if err != nil {
		return err
	}
	for j, name := range s.outs {
		outs[j] = nil
		if want == nil || want[j] {
			outs[j] = res[name]
		}
	}
	return nil
}

// TestGroupsRunByPort: a session that runs by port position gets every
// group so, each tensor at its own port whatever the graph's order, and
// the results equal solo; a session whose ports are not the plan's is
// called by name.
func TestGroupsRunByPort(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	var reqs []Request
	for i := range 60 {
		reqs = append(reqs, multimodalRequest(rng, fmt.Sprint("p", i)))
	}
	want := multimodalEngine(t, Options{Solo: true}).RunAll(context.Background(), reqs)
	for _, tc := range []struct {
		name   string
		extra  string
		byPort bool
	}{
		{"ports", "", true},
		{"ports not the plan's", "stray", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &backend.Bindings{}
			b.Register("image", imageBinding)
			b.Register("video", videoBinding)
			b.Register("text", textBinding)
			pb := &portBackend{inner: b, extra: tc.extra}
			e, err := Open(compilePlan(t, "testdata/multimodal.yaml"), "testdata", Backends{ir.ImplBinding: pb}, Options{MaxDelay: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			compareMultimodal(t, reqs, e, want)
			byName, byPorts := pb.byName.Load(), pb.byPorts.Load()
			if tc.byPort && (byPorts == 0 || byName != 0) {
				t.Errorf("a session running by port was called %d times by port and %d by name", byPorts, byName)
			}
			if !tc.byPort && (byPorts != 0 || byName == 0) {
				t.Errorf("a session whose ports are not the plan's was called %d times by port and %d by name", byPorts, byName)
			}
			// The stats say which way each grouped component's calls go.
			for name, cs := range e.Stats().Components {
				if why := cs.CallByName; tc.byPort != (why == "") || !tc.byPort && !strings.Contains(why, "input(s)") {
					t.Errorf("component %s: call_by_name %q for a session %s", name, why, tc.name)
				}
			}
		})
	}
}
