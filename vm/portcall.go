package vm

import (
	"context"
	"fmt"

	"github.com/genaic/genaic/backend"
)

// sessionCall is how a grouper hands its groups to its session: by port
// position where the session runs so (backend.PortSession) and takes and
// gives exactly the plan's ports, with no map built or read per group;
// by name otherwise (and then a session's refusal of a port names it, as
// an ungrouped call's would). byName says why a call goes by name, for
// the component's stats (ComponentStats.CallByName).
type sessionCall struct {
	sess   backend.Session
	ports  backend.PortSession // nil: by name
	inAt   []int               // session input i is the group's input inAt[i]
	outAt  []int               // session output j is plan output outAt[j]; -1: not asked for
	want   []bool              // by session output: outAt[j] >= 0
	byName string
}

func newSessionCall(spec *componentSpec, sess backend.Session) *sessionCall {
	c := &sessionCall{sess: sess}
	ps, ok := sess.(backend.PortSession)
	if !ok {
		c.byName = fmt.Sprintf("its backend's sessions (%T) take tensors by name only", sess)
		return c
	}
	ins, outs := ps.Ports()
	if len(ins) != len(spec.gp.Inputs) {
		c.byName = fmt.Sprintf("the session takes %d input(s), the plan gives %d", len(ins), len(spec.gp.Inputs))
		return c
	}
	c.inAt = make([]int, len(ins))
	for i, name := range ins {
		k, ok := spec.index[name]
		if !ok {
			c.byName = fmt.Sprintf("the session's input `%s` is no port of the plan's", name)
			return c
		}
		c.inAt[i] = k
	}
	c.outAt, c.want = make([]int, len(outs)), make([]bool, len(outs))
	found := 0
	for j, name := range outs {
		c.outAt[j] = -1
		for k := range spec.gp.Outputs {
			if spec.gp.Outputs[k].Name == name {
				c.outAt[j], c.want[j] = k, true
				found++
				break
			}
		}
	}
	if found != len(spec.gp.Outputs) {
		// an output the graph lacks: the name path says which
		c.byName = "an output of the plan's is none of the session's"
		return c
	}
	c.ports = ps
	return c
}

// callRoom is what one runner's calls reuse from group to group.
type callRoom struct {
	ins, outs []*backend.Tensor          // by session port
	res       outputs                    // by plan output
	byName    map[string]*backend.Tensor // the name path's inputs
}

// run invokes the session on a group's inputs and returns its outputs by
// plan output, in a's room: valid until the runner's next group.
func (c *sessionCall) run(spec *componentSpec, a *arena, grp *group) (outputs, error) {
	r := &a.call
	if r.res == nil {
		r.res = make(outputs, len(spec.gp.Outputs))
	}
	clear(r.res)
	if c.ports != nil {
		if r.ins == nil {
			r.ins, r.outs = make([]*backend.Tensor, len(c.inAt)), make([]*backend.Tensor, len(c.outAt))
		}
		for i, k := range c.inAt {
			r.ins[i] = grp.ins[k]
		}
		err := c.ports.RunPorts(context.Background(), r.ins, c.want, r.outs)
		clear(r.ins)
		if err != nil {
			return nil, err
		}
		for j, k := range c.outAt {
			if k >= 0 {
				r.res[k] = r.outs[j]
			}
		}
		clear(r.outs)
		return r.res, nil
	}
	if r.byName == nil {
		r.byName = make(map[string]*backend.Tensor, len(spec.gp.Inputs))
	}
	for k, t := range grp.ins {
		if t != nil {
			r.byName[spec.gp.Inputs[k].Name] = t
		}
	}
	outs, err := c.sess.Run(context.Background(), r.byName, spec.outputNames())
	clear(r.byName)
	if err != nil {
		return nil, err
	}
	for k, o := range spec.gp.Outputs {
		r.res[k] = outs[o.Name]
	}
	return r.res, nil
}
