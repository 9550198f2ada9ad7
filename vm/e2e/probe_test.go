package e2e

import (
	"context"
	"fmt"
	"math/rand"
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
// shaped by the workflow inputs' contracts (random extents for their
// symbols, so most are refused at admission). Every request is answered,
// with outputs or a catalogued run/* error, within 20 s.
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

// probeRequests makes n requests of the workflow's request inputs, each a
// tensor of its contract's dtype (a zero-filled one where the dtype has no
// random fill here) and shape, its symbols 0 to 3 at random.
func probeRequests(m *ir.Module, rng *rand.Rand, n int) []vm.Request {
	reqs := make([]vm.Request, n)
	for i := range reqs {
		reqs[i] = vm.Request{ID: fmt.Sprint("p", i), Inputs: map[string]*backend.Tensor{}}
		for _, in := range m.Inputs {
			k := in.Contract
			if k == nil || in.Source != "request" && in.Source != "" {
				continue
			}
			var shape []int64
			for j := range max(len(k.Shape), k.Rank) {
				if j < len(k.Shape) && !k.Shape[j].IsSym() {
					shape = append(shape, k.Shape[j].Size)
				} else {
					shape = append(shape, int64(rng.Intn(4)))
				}
			}
			dt, ok := ir.LookupDType(k.DType)
			if !ok {
				continue
			}
			t, err := backend.NewTensor(dt.Name, shape)
			if err != nil {
				continue
			}
			switch xs := t.Data.(type) {
			case []int64:
				for j := range xs {
					xs[j] = int64(rng.Intn(4))
				}
			case []float32:
				for j := range xs {
					xs[j] = rng.Float32()
				}
			}
			reqs[i].Inputs[in.Name] = t
		}
	}
	return reqs
}
