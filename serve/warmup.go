package serve

import (
	"context"
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
// engine.CompareRequests), or where it has none requests synthesized from
// its workflow's inputs (Synthesized: short items beside long ones, so
// that a model that lets the padding in shows it), grouped, then each
// request alone, and compares the answers (engine.CompareAlone). Where one
// differs, the package's grouping changes
// what it computes, which check cannot see (engine.DivergenceCauses): the
// log says which request and how, and the model is opened again with
// grouping declined on every grouped component, which then runs one
// request per invocation, slower and never wrong; unless the model
// quantizes per call (engine.QuantizesPerCall), whose answers differ by its
// design: then it warns and keeps grouping. It returns the engine to serve
// with.
func (s *Server) verified(name string, f *plan.File, dir string, opts engine.Options, eng *vm.Engine) (*vm.Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), verifyBudget)
	defer cancel()
	reqs, err := readRequests(dir)
	on := "the package's requests.json"
	if err != nil || len(reqs) < 2 {
		if reqs, err = Synthesized(ctx, f.IR, dir, eng); len(reqs) < 2 {
			s.log.Warn("grouped answers are not compared with answers alone: the package has no requests.json and no request synthesized from the workflow's inputs runs",
				"model", name, "first", err, "help", "put a requests.json (the document genaic run reads) in the package folder, with requests the model accepts: serve compares them grouped and alone")
			return eng, nil
		}
		on = "requests synthesized from the workflow's inputs"
	}
	reqs = reqs[:min(len(reqs), engine.CompareRequests)]
	grouped := eng.RunAll(ctx, reqs)
	most := engine.LargestGroup(eng)
	divs := engine.CompareAlone(ctx, eng, reqs, grouped)
	for _, r := range grouped {
		r.Release()
	}
	if len(divs) == 0 {
		if most >= 2 {
			s.log.Info("grouped answers agree with answers alone on "+on, "model", name, "compared", len(reqs), "largest_group", most)
		}
		return eng, nil
	}
	if q := engine.QuantizesPerCall(f); len(q) > 0 {
		// The model's own design, not the package's declaration: grouping
		// stays, and the operator is told.
		s.log.Warn("grouped answers differ from answers alone on "+on+", as the model quantizes per call; grouping stays on",
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
	s.log.Error("grouped answers differ from answers alone on "+on+": its grouping changes what it computes, so its components run one request per invocation",
		"model", name, "differing", engine.DifferingRequests(divs), "compared", len(reqs), "first", divs[0].String(), "declined", strings.Join(declined, ","),
		"help", engine.Causes(divs)+"; `genaic run --verify` on the package's requests lists every difference")
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
// inputs' contracts (synthSets: the minimal one, then larger ones until
// one runs). Warm-up never blocks readiness: a request that fails
// is logged and the model turns ready all the same; components that no
// warm-up request reached are logged too.
func (s *Server) warm(md *Model) {
	start := time.Now()
	ran := false
	if reqs, err := readRequests(md.Dir); err == nil && len(reqs) > 0 {
		ran = s.warmWith(md, reqs[0], "requests.json", true)
	}
	if !ran {
		// The minimal request, then one of each scale until one runs;
		// where none does, the first one's failure is logged.
		var first *vm.Request
		for _, ss := range synthSets(md.plan.IR, md.Dir) {
			set, err := ss.make(md.plan.IR)
			if err != nil {
				s.log.Warn("no warm-up: no request can be synthesized from the workflow's inputs", "model", md.Name, "error", err.Error())
				return
			}
			if first == nil {
				first = &set[0]
			}
			if ran = s.warmWith(md, set[0], "synthesized", false); ran {
				break
			}
		}
		if !ran && first != nil {
			s.warmWith(md, *first, "synthesized", true)
		}
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

func (s *Server) warmWith(md *Model, req vm.Request, from string, tell bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp := md.eng.Run(ctx, req)
	resp.Release()
	if resp.Err != nil {
		if tell {
			s.log.Warn("warm-up request failed", "model", md.Name, "request", from, "error", resp.Err.Error())
		}
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
