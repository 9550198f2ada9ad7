package vm

import (
	"context"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/sched"
)

// A request whose items exceed a budget together, but not one by one, is
// split across invocations item by item (§6): each chunk is a sub-item over
// a run of the request's outermost units (images, clips, windows), with its
// payload and lengths viewed, not copied, and its offsets rebased. The
// chunks' shares are concatenated back in order.

// splittable returns the packed port a request may be split along: the
// component's only packed input, when nothing else is per request (no row
// inputs, no row outputs that could not be concatenated).
func (s *componentSpec) splittable() (string, bool) {
	port := ""
	for _, in := range s.gp.Inputs {
		switch in.Role {
		case plan.RolePacked:
			if port != "" {
				return "", false
			}
			port = in.Name
		case plan.RoleRows, plan.RoleExpanded:
			return "", false
		}
	}
	for _, o := range s.gp.Outputs {
		if o.Split == plan.SplitRows || o.Split == plan.SplitExpanded {
			return "", false
		}
	}
	return port, port != ""
}

// overBudget returns the first budget it alone exceeds, or -1.
func (s *componentSpec) overBudget(it *item) int { return s.budgets.Over(s.terms(it)) }

// chunk splits an item that exceeds a budget into the fewest runs of
// consecutive outermost units that each fit every budget. An item that
// fits is returned alone; a single unit that does not fit is run/budget.
func (s *componentSpec) chunk(it *item) ([]*item, error) {
	b := s.overBudget(it)
	if b < 0 {
		return []*item{it}, nil
	}
	port, ok := s.splittable()
	units := int64(0)
	if ok {
		levels := it.ports[s.at(port)].levels
		units = levels[len(levels)-1][1]
	}
	if !ok || units < 2 {
		return nil, s.budgetError(b, it)
	}
	var chunks []*item
	start := int64(0)
	for start < units {
		end := start + 1
		if one := s.subItem(it, port, start, end); s.overBudget(one) >= 0 {
			return nil, s.budgetError(s.overBudget(one), one)
		}
		for end < units && s.overBudget(s.subItem(it, port, start, end+1)) < 0 {
			end++
		}
		chunks = append(chunks, s.subItem(it, port, start, end))
		start = end
	}
	return chunks, nil
}

// refusal is why submit would refuse an admitted item at once (one of
// its units alone exceeds a budget), or nil.
func (s *componentSpec) refusal(it *item) error {
	if it.empty() || s.overBudget(it) < 0 {
		return nil
	}
	_, err := s.chunk(it)
	return err
}

func (s *componentSpec) budgetError(i int, it *item) error {
	b := s.gp.Budgets[i]
	return runErr("run/budget", "an item of this request has footprint %d on budget %v of component `%s`, above its max_total %d; it can never be grouped",
		s.budgets.Footprint(i, s.terms(it)), b.Dimensions, s.comp.Name, b.MaxTotal)
}

// subItem is the part of it made of outermost units [a, b) of port.
func (s *componentSpec) subItem(it *item, port string, a, b int64) *item {
	at := s.at(port)
	levels := it.ports[at].levels
	sub := newItem(len(it.ports))
	sub.uniform, sub.isolated, sub.key = it.uniform, it.isolated, it.key
	subLevels := make([][]int64, len(levels))
	subLevels[len(levels)-1] = []int64{0, b - a}
	lo, hi := a, b
	for k := len(levels) - 2; k >= 0; k-- {
		subLevels[k] = rebase(levels[k][lo : hi+1])
		lo, hi = levels[k][lo], levels[k][hi]
	}
	copy(sub.ports, it.ports)
	sub.ports[at].t = it.ports[at].t.View(lo, hi)
	sub.ports[at].levels = subLevels
	sub.ports[at].owners = nil // the request's owners cover all of it: derive the chunk's
	if ls := it.ports[at].lengths; ls != nil {
		sub.ports[at].lengths = make([]*backend.Tensor, len(ls))
		for k, l := range ls {
			sub.ports[at].lengths[k] = l.View(lo, hi)
		}
	}
	return sub
}

// submitChunks runs the chunks (each may join a group of its own) and
// concatenates their shares in order, with the lease of the group outputs
// the merged ones may view. The request waits on the chunks in the order
// they finish, under a context of their own: once one fails (displaced
// from a full queue, say, while the others wait), so has the request, and
// the chunks still queued are dropped rather than run for no one.
func (g *grouper) submitChunks(ctx context.Context, chunks []*item) (map[string]*backend.Tensor, *lease, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := time.Now()
	finished := make(chan int, len(chunks))
	ps := make([]*pending, len(chunks))
	for i, c := range chunks {
		ps[i] = &pending{e: sched.Entry{Ctx: ctx}, done: make(chan share, 1), finished: finished, part: i}
		ps[i].hold(g.spec, c, now)
		if i > 0 {
			ps[i].first = ps[0]
		}
	}
	if err := g.enqueue(ctx, waitsForRoom(ctx), ps...); err != nil {
		return nil, nil, err
	}
	shares := make([]map[string]*backend.Tensor, len(chunks))
	leases := make([]*lease, len(chunks))
	for range chunks {
		// Chunks never lead a group (answerGroup), so a share here carries
		// no other caller's answer.
		var i int
		select {
		case i = <-finished:
		case <-ctx.Done():
			return nil, nil, backend.ContextError(ctx.Err())
		}
		s := <-ps[i].done
		if s.err != nil {
			return nil, nil, s.err
		}
		shares[i], leases[i] = g.spec.outMap(s.outs), s.lease
	}
	merged, err := g.spec.merge(shares, g.copies)
	if err != nil {
		return nil, nil, err
	}
	return merged, g.spec.mergedLease(leases), nil
}

// merge concatenates chunk shares: packed payloads and lengths along axis
// 0, delivered offsets composed, owner maps derived from the composed
// offsets of their level.
func (s *componentSpec) merge(shares []map[string]*backend.Tensor, copies *Copies) (map[string]*backend.Tensor, error) {
	out := map[string]*backend.Tensor{}
	for _, o := range s.gp.Outputs {
		parts := make([]*backend.Tensor, len(shares))
		for i, sh := range shares {
			parts[i] = sh[o.Name]
		}
		switch {
		case o.Split == plan.SplitBroadcast:
			out[o.Name] = parts[0]
		case o.Serves != nil && o.Serves.Role == "offsets":
			out[o.Name] = offsetsTensor(concatOffsets(int64Parts(parts)))
		case o.Serves != nil && o.Serves.Role == "owner":
			continue
		default:
			t, err := concatRows(parts, copies)
			if err != nil {
				return nil, err
			}
			out[o.Name] = t
		}
	}
	for _, o := range s.gp.Outputs {
		if o.Serves != nil && o.Serves.Role == "owner" {
			out[o.Name] = s.mergedOwner(o, out, shares)
		}
	}
	return out, nil
}

// mergedOwner derives an owner map from the merged offsets of its level;
// without a delivered offsets output, the outermost owners (all zero for
// one request) are concatenated.
func (s *componentSpec) mergedOwner(o plan.Port, out map[string]*backend.Tensor, shares []map[string]*backend.Tensor) *backend.Tensor {
	for _, p := range s.gp.Outputs {
		if p.Serves != nil && p.Serves.Role == "offsets" && p.Serves.Port == o.Serves.Port && p.Serves.Level == o.Serves.Level {
			return offsetsTensor(ownersFromOffsets(out[p.Name].Int64s()))
		}
	}
	var data []int64
	for _, sh := range shares {
		data = append(data, sh[o.Name].Int64s()...)
	}
	return offsetsTensor(data)
}

func offsetsTensor(data []int64) *backend.Tensor {
	return int64Tensor(data, int64(len(data)))
}

// int64Tensor is an int64 tensor of data in shape (copied): the tensor
// and a shape of up to four axes in one allocation, as offsets, owners
// and lengths are made for every request given as items, and every split
// one.
func int64Tensor(data []int64, shape ...int64) *backend.Tensor {
	v := &struct {
		t     backend.Tensor
		shape [4]int64
	}{}
	sh := v.shape[:0]
	if len(shape) > len(v.shape) {
		sh = make([]int64, 0, len(shape))
	}
	v.t = backend.Tensor{DType: "int64", Shape: append(sh, shape...), Data: data}
	return &v.t
}

func int64Parts(parts []*backend.Tensor) [][]int64 {
	out := make([][]int64, len(parts))
	for i, p := range parts {
		out[i] = p.Int64s()
	}
	return out
}

// concatRows stacks tensors along axis 0 (their other axes must agree).
func concatRows(parts []*backend.Tensor, copies *Copies) (*backend.Tensor, error) {
	shape, err := groupShape(nil, parts, nil, 0)
	if err != nil {
		return nil, err
	}
	out, err := backend.NewTensor(parts[0].DType, shape)
	if err != nil {
		return nil, err
	}
	row := int64(0)
	for _, p := range parts {
		copies.Add(CopyGather, placeInto(out, row, p, 0))
		row += p.Shape[0]
	}
	return out, nil
}
