package serve

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
)

// verified runs the package's requests.json (its first
// engine.CompareRequests) grouped, then each request alone, and compares
// the answers (engine.CompareAlone). Where one differs, the package's grouping changes
// what it computes, which check cannot see (engine.DivergenceCauses): the
// log says which request and how, and the model is opened again with
// grouping declined on every grouped component, which then runs one
// request per invocation, slower and never wrong; unless the model
// quantizes per call (engine.QuantizesPerCall), whose answers differ by its
// design: then it warns and keeps grouping. It returns the engine to serve
// with.
func (s *Server) verified(name string, f *plan.File, dir string, opts engine.Options, eng *vm.Engine) (*vm.Engine, error) {
	reqs, err := readRequests(dir)
	if err != nil || len(reqs) < 2 {
		return eng, nil
	}
	reqs = reqs[:min(len(reqs), engine.CompareRequests)]
	ctx, cancel := context.WithTimeout(context.Background(), verifyBudget)
	defer cancel()
	grouped := eng.RunAll(ctx, reqs)
	most := engine.LargestGroup(eng)
	divs := engine.CompareAlone(ctx, eng, reqs, grouped)
	for _, r := range grouped {
		r.Release()
	}
	if len(divs) == 0 {
		if most >= 2 {
			s.log.Info("grouped answers agree with answers alone on the package's requests.json", "model", name, "compared", len(reqs), "largest_group", most)
		}
		return eng, nil
	}
	if q := engine.QuantizesPerCall(f); len(q) > 0 {
		// The model's own design, not the package's declaration: grouping
		// stays, and the operator is told.
		s.log.Warn("grouped answers differ from answers alone on the package's requests.json, as the model quantizes per call; grouping stays on",
			"model", name, "differing", engine.DifferingRequests(divs), "compared", len(reqs), "first", divs[0].String(),
			"help", engine.QuantizationNote(q)+"; where that matters, decline grouping of the component (--decline COMPONENT=REASON)")
		return eng, nil
	}
	declines := maps.Clone(opts.Declines)
	if declines == nil {
		declines = backend.Declines{}
	}
	var declined []string
	for _, g := range f.Components {
		if g.Grouped {
			declines[backend.ReadinessKey{Component: g.Component}] = differedReason
			declined = append(declined, g.Component)
		}
	}
	s.log.Error("grouped answers differ from answers alone on the package's requests.json: its grouping changes what it computes, so its components run one request per invocation",
		"model", name, "differing", engine.DifferingRequests(divs), "compared", len(reqs), "first", divs[0].String(), "declined", strings.Join(declined, ","),
		"help", engine.DivergenceCauses+"; `genaic run --verify` on the package's requests lists every difference")
	eng.Close()
	opts.Declines = declines
	return engine.Open(f, dir, opts)
}

// verifyBudget bounds the time verified compares: no more than a slow
// model's load can spare (the requests not compared by then are not).
const verifyBudget = 30 * time.Second

// differedReason is the decline of the components of a model whose
// requests were answered otherwise grouped than alone (verified).
const differedReason = "grouped answers differed from answers alone at load"

// warm runs requests through a model before it is ready, so that every
// component has run once (sessions initialised, allocations made): the
// first request of the package's requests.json when it has one, else (or
// when that request fails) a request synthesized from the workflow
// inputs' contracts. Warm-up never blocks readiness: a request that fails
// is logged and the model turns ready all the same; components that no
// warm-up request reached are logged too.
func (s *Server) warm(md *Model) {
	start := time.Now()
	ran := false
	if reqs, err := readRequests(md.Dir); err == nil && len(reqs) > 0 {
		ran = s.warmWith(md, reqs[0], "requests.json")
	}
	if !ran {
		req, err := synthRequest(md.plan.IR, graphExtents(md.plan.IR, md.Dir))
		if err != nil {
			s.log.Warn("no warm-up: no request can be synthesized from the workflow's inputs", "model", md.Name, "error", err.Error())
			return
		}
		ran = s.warmWith(md, req, "synthesized")
	}
	var cold []string
	for name, cs := range md.eng.Stats().Components {
		if cs.Invocations == 0 {
			cold = append(cold, name)
		}
	}
	if len(cold) > 0 {
		s.log.Warn("warm-up left components cold: their first request will pay for their start", "model", md.Name, "components", strings.Join(sortedStrings(cold), ","), "help", giveRequests)
	}
	if ran {
		s.log.Info("model warmed up", "model", md.Name, "elapsed", time.Since(start).String())
	}
}

func (s *Server) warmWith(md *Model, req vm.Request, from string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp := md.eng.Run(ctx, req)
	resp.Release()
	if resp.Err != nil {
		s.log.Warn("warm-up request failed", "model", md.Name, "request", from, "error", resp.Err.Error())
		return false
	}
	return true
}

func sortedStrings(ss []string) []string {
	for i := range ss {
		for j := i + 1; j < len(ss); j++ {
			if ss[j] < ss[i] {
				ss[i], ss[j] = ss[j], ss[i]
			}
		}
	}
	return ss
}

// graphExtents returns the extents the components' ONNX graphs fix for
// the shape symbols of their ports (a contract may leave symbolic what
// the graph fixes, such as a feature width or an embedding's size).
func graphExtents(m *ir.Module, dir string) map[string]int64 {
	fixed := map[string]int64{}
	for _, comp := range m.Components {
		if comp.Impl != ir.ImplONNX || comp.Artifact == "" {
			continue
		}
		path := filepath.FromSlash(comp.Artifact)
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		g, err := onnx.Read(path)
		if err != nil {
			continue
		}
		ports := func(ps []*ir.Port, value func(string) *onnx.Value) {
			for _, p := range ps {
				v := value(p.Name)
				if v == nil || p.Contract == nil || !p.Contract.HasShape || len(v.Dims) != len(p.Contract.Shape) {
					continue
				}
				for i, d := range p.Contract.Shape {
					if n, ok := v.Fixed(i); ok && d.IsSym() && n > 0 {
						fixed[d.Sym] = n
					}
				}
			}
		}
		ports(comp.Inputs, g.Input)
		ports(comp.Outputs, g.Output)
	}
	return fixed
}

// synthRequest builds a minimal request from the workflow inputs'
// contracts: zeros, every shape symbol the extent a component's graph
// fixes for it (fixed) or 1, a request_expanded axis its factor; a
// token_packed input is one item
// (vm.Request.Items), so that the runtime derives its companions (offsets
// [0,1], owner zeros, valid lengths the extent); an input of encoded
// media for a built-in adapter is one item of valid media (warmMedia).
// Optional inputs and inputs requests do not bring are left out.
func synthRequest(m *ir.Module, fixed map[string]int64) (vm.Request, error) {
	req := vm.Request{ID: "warm-up", Inputs: map[string]*backend.Tensor{}, Items: map[string][]vm.Item{}}
	media, err := warmMedia(m)
	if err != nil {
		return req, err
	}
	derived := map[string]bool{}
	for _, in := range m.Inputs {
		if c := in.Contract; fromRequest(in) && c != nil && c.Layout.Kind == ir.TokenPacked {
			for _, comp := range companions(c) {
				derived[comp] = true
			}
		}
	}
	for _, in := range m.Inputs {
		c := in.Contract
		if !fromRequest(in) || derived[in.Name] || (c != nil && c.Optional) || (in.Required != nil && !*in.Required) {
			continue
		}
		if b := media[in.Name]; b != nil {
			if err := putBytes(&req, in.Name, c, [][]byte{b}); err != nil {
				return req, err
			}
			continue
		}
		if c == nil || c.DType == "" || !c.HasShape {
			return req, fmt.Errorf("input `%s` declares no dtype and shape", in.Name)
		}
		shape := make([]int64, len(c.Shape))
		for i, d := range c.Shape {
			switch {
			case !d.IsSym():
				shape[i] = d.Size
			case fixed[d.Sym] > 0:
				shape[i] = fixed[d.Sym]
			default:
				shape[i] = 1
			}
		}
		if c.Layout.Kind == ir.RequestExpanded && c.Layout.Factor > 0 && int(c.Layout.Axis) < len(shape) {
			shape[c.Layout.Axis] = c.Layout.Factor
		}
		if c.Layout.Kind == ir.TokenPacked && len(c.Layout.Levels) > 0 {
			if len(c.Layout.Levels) == 1 {
				shape = shape[1:] // an item is one row
			}
			t, err := backend.NewTensor(c.DType, shape)
			if err != nil {
				return req, fmt.Errorf("input `%s`: %v", in.Name, err)
			}
			req.Items[in.Name] = vm.TensorItems(t)
			continue
		}
		t, err := backend.NewTensor(c.DType, shape)
		if err != nil {
			return req, fmt.Errorf("input `%s`: %v", in.Name, err)
		}
		req.Inputs[in.Name] = t
	}
	if len(req.Items) == 0 {
		req.Items = nil
	}
	return req, nil
}
