package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/vm"
)

// TestAcceptedDocumentsAnswerEveryRequest: bad input gets a run/* error
// for that request alone, never a panic or a hang, whatever document the
// checks accepted. Every accepted document the tests know, and every
// accepted mutant of it (testenv.Mutants: its integers set to 1, 2 and
// 3), is opened grouped, solo and with two runners, on a backend whose
// every call fails and on one that answers each output with an input of
// its dtype and rank; each engine gets 12 requests of random tensors
// shaped by the workflow inputs' contracts (probeRequests: most pass
// admission, so that groups are formed, assembled, invoked, run again
// alone after a failure, and split). Every request is answered, with
// outputs or a catalogued run/* error, within 20 s.
func TestAcceptedDocumentsAnswerEveryRequest(t *testing.T) {
	var docs []string
	for _, doc := range testenv.Documents(t) {
		docs = append(docs, doc)
		docs = append(docs, testenv.Mutants(doc, []string{"1", "2", "3"}, false)...)
	}
	rng := rand.New(rand.NewSource(1))
	engines, rules := 0, map[string]int{}
	for _, doc := range docs {
		d, err := passes.CheckSource("probe.yaml", []byte(doc), passes.Options{Check: true})
		if err != nil || !d.Valid() {
			continue
		}
		pf, err := passes.BuildPlan(d, ".")
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		for _, echo := range []bool{false, true} {
			for _, opts := range []vm.Options{{}, {Solo: true}, {MaxDelay: time.Millisecond, Workers: 2}} {
				be := probeBackend{echo: echo}
				e, err := vm.Open(pf, ".", vm.Backends{ir.ImplONNX: be, ir.ImplAdapter: be, ir.ImplBinding: be}, opts)
				if err != nil {
					if re := vm.AsRunError(err); re == nil || re.Rule != string(diag.RunUnsupported) {
						t.Fatalf("open: %v\n%s", err, doc)
					}
					continue // a serving workflow
				}
				engines++
				reqs := probeRequests(pf.IR, rng, 12)
				done := make(chan []vm.Response, 1)
				go func() { done <- e.RunAll(context.Background(), reqs) }()
				select {
				case res := <-done:
					for i, r := range res {
						re := vm.AsRunError(r.Err)
						switch {
						case re == nil:
							rules["answered"]++
						case !diag.KnownRule(diag.Rule(re.Rule)) || strings.Contains(re.Message, "panicked"):
							t.Fatalf("request %d: %v\n%s", i, re, doc)
						default:
							rules[re.Rule]++
						}
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("requests unanswered after 20 s\n%s", doc)
				}
				e.Close()
			}
		}
	}
	if engines < 1000 || rules["answered"] == 0 {
		t.Fatalf("only %d engines, %v", engines, rules)
	}
	t.Logf("%d documents, %d engines, 12 requests each: %v", len(docs), engines, rules)
}

// probeBackend's sessions fail every call or, with echo, answer each
// output with the first input of its dtype and rank (none where no input
// has them: the runtime then says the output is missing).
type probeBackend struct{ echo bool }

func (probeBackend) Name() string { return "probe" }

func (b probeBackend) Load(c *ir.Component, _ string) (backend.Session, error) {
	return probeSession{c: c, echo: b.echo}, nil
}

type probeSession struct {
	c    *ir.Component
	echo bool
}

func (s probeSession) Run(_ context.Context, in map[string]*backend.Tensor, _ []string) (map[string]*backend.Tensor, error) {
	if !s.echo {
		return nil, fmt.Errorf("the probe backend fails every call")
	}
	res := map[string]*backend.Tensor{}
	for _, o := range s.c.Outputs {
		for _, p := range s.c.Inputs {
			if t := in[p.Name]; t != nil && o.Contract != nil && t.DType == o.Contract.DType && t.Rank() == len(o.Contract.Shape) {
				res[o.Name] = t
				break
			}
		}
	}
	return res, nil
}

func (probeSession) Ready() backend.Readiness { return backend.Readiness{Ready: true} }
func (probeSession) Close() error             { return nil }

// probeRequests makes n requests of the workflow's inputs (but literals
// and artifacts, which the runtime does not load), shaped
// by their contracts so that many pass admission: each shape symbol one
// extent (1 to 3) per request, a request axis one request's rows, a
// token_packed input given as 1 to 3 items (nested for two levels: the
// runtime derives its offsets and owners, and its lengths where padded),
// a padded input's lengths at most its extent; contents random.
func probeRequests(m *ir.Module, rng *rand.Rand, n int) []vm.Request {
	derived := map[string]bool{} // companions the items derive
	for _, in := range m.Inputs {
		if k := in.Contract; k != nil && k.Layout.Kind == ir.TokenPacked {
			for _, l := range k.Layout.Levels {
				derived[l.Offsets.Name], derived[l.Owner.Name] = true, true
			}
			for _, pd := range k.Padding {
				derived[pd.Lengths.Name] = true
			}
		}
	}
	reqs := make([]vm.Request, n)
	for i := range reqs {
		r := vm.Request{ID: fmt.Sprint("p", i), Inputs: map[string]*backend.Tensor{}, Items: map[string][]vm.Item{}}
		sym := map[string]int64{}
		extent := func(d ir.Dim) int64 {
			if !d.IsSym() {
				return d.Size
			}
			if _, ok := sym[d.Sym]; !ok {
				sym[d.Sym] = 1 + rng.Int63n(3)
			}
			return sym[d.Sym]
		}
		for _, in := range m.Inputs {
			if k := in.Contract; k != nil && (k.Layout.Kind == ir.RequestAligned || k.Layout.Kind == ir.RequestExpanded) && int(k.Layout.Axis) < len(k.Shape) {
				if d := k.Shape[k.Layout.Axis]; d.IsSym() {
					sym[d.Sym] = max(k.Layout.Factor, 1)
				}
			}
		}
		lengths := map[string]*ir.Input{} // lengths input → the padded input
		for _, in := range m.Inputs {
			if in.Contract != nil && in.Contract.Layout.Kind != ir.TokenPacked {
				for _, pd := range in.Contract.Padding {
					lengths[pd.Lengths.Name] = in
				}
			}
		}
		for _, in := range m.Inputs {
			k := in.Contract
			if k == nil || in.Source == "literal" || in.Source == "artifact" || derived[in.Name] || lengths[in.Name] != nil {
				continue
			}
			if k.Layout.Kind == ir.TokenPacked && len(k.Shape) > 0 {
				r.Items[in.Name] = probeItems(k, len(k.Layout.Levels), rng, extent)
				continue
			}
			shape := make([]int64, max(len(k.Shape), k.Rank))
			for j := range shape {
				if j < len(k.Shape) {
					shape[j] = extent(k.Shape[j])
				} else {
					shape[j] = 1 + rng.Int63n(3)
				}
			}
			r.Inputs[in.Name] = probeTensor(k.DType, shape, rng, 4)
			for _, pd := range k.Padding {
				// the lengths cover the axes before the padded one
				at := k.Axis(pd.Dim.Name)
				if at < 0 {
					continue
				}
				r.Inputs[pd.Lengths.Name] = probeTensor("int64", shape[:at], rng, shape[at]+1)
			}
		}
		reqs[i] = r
	}
	return reqs
}

// probeItems makes 1 to 3 items of a token_packed input of levels levels:
// rows, each a tensor of the contract's rank less one with the request's
// extents, or for two levels items of 1 to 3 such rows each.
func probeItems(k *ir.Contract, levels int, rng *rand.Rand, extent func(ir.Dim) int64) []vm.Item {
	items := make([]vm.Item, 1+rng.Intn(3))
	for i := range items {
		if levels > 1 {
			items[i] = vm.Item{Items: probeItems(k, levels-1, rng, extent)}
			continue
		}
		var shape []int64
		for _, d := range k.Shape[1:] {
			shape = append(shape, extent(d))
		}
		items[i] = vm.Item{Tensor: probeTensor(k.DType, shape, rng, 4)}
	}
	return items
}

// probeTensor is a tensor of dtype (an alias resolved; nil for one the
// host cannot hold) and shape: int64 contents below most, float32 in
// [0, 1), others zero.
func probeTensor(dtype string, shape []int64, rng *rand.Rand, most int64) *backend.Tensor {
	d, ok := ir.LookupDType(dtype)
	if !ok {
		return nil
	}
	t, err := backend.NewTensor(d.Name, slices.Clone(shape))
	if err != nil {
		return nil
	}
	switch xs := t.Data.(type) {
	case []int64:
		for j := range xs {
			xs[j] = rng.Int63n(max(most, 1))
		}
	case []float32:
		for j := range xs {
			xs[j] = rng.Float32()
		}
	}
	return t
}
