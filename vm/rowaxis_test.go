package vm

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
)

// The time-major workflow (testdata/rowaxis.yaml) stacks requests on an
// inner axis: frames and spans on axis 1 of steps × requests × …, pairs
// two rows each on axis 1, and its outputs states and echo hand each
// request its rows of axis 1 back.

// rnnBinding is the component as a Go function. Each request's results
// depend on its own rows only, so grouped results equal solo ones exactly;
// it also checks the group's budgets and that padding positions are zero.
func rnnBinding(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	frames, gain, pairs, spans, lens := in["frames"], in["gain"], in["pairs"], in["spans"], in["span_lens"]
	S, B, F, P := frames.Shape[0], frames.Shape[1], frames.Shape[2], spans.Shape[2]
	switch {
	case B > 6 || B*S*P > 96:
		return nil, fmt.Errorf("a group of %d requests × %d steps × %d positions exceeds the budgets", B, S, P)
	case gain.Shape[0] != B || pairs.Shape[1] != 2*B || spans.Shape[1] != B || lens.Shape[1] != B:
		return nil, fmt.Errorf("inputs disagree on the group's requests: %v %v %v %v %v", frames, gain, pairs, spans, lens)
	}
	fr, g, pr, sp, ln := frames.Float32s(), gain.Float32s(), pairs.Float32s(), spans.Float32s(), lens.Int64s()
	states := make([]float32, F*B)
	summary := make([]float32, B*F)
	for b := range B {
		for f := range F {
			v := pr[f*2*B+2*b] - 2*pr[f*2*B+2*b+1]
			for t := range S {
				v += fr[(t*B+b)*F+f] * g[b*F+f]
			}
			states[f*B+b] = v
		}
		var sum float32
		for t := range S {
			for p := range P {
				x := sp[(t*B+b)*P+p]
				if p >= ln[t*B+b] && x != 0 {
					return nil, fmt.Errorf("padding position %d of step %d of request %d holds %v", p, t, b, x)
				}
				sum += x
			}
		}
		for f := range F {
			summary[b*F+f] = sum + float32(f)*g[b*F+f]
		}
	}
	echo := &backend.Tensor{DType: "float32", Shape: []int64{S, B, P}, Data: append([]float32(nil), sp...)}
	echoLens := &backend.Tensor{DType: "int64", Shape: []int64{S, B}, Data: append([]int64(nil), ln...)}
	return map[string]*backend.Tensor{
		"states":    {DType: "float32", Shape: []int64{F, B}, Data: states},
		"summary":   {DType: "float32", Shape: []int64{B, F}, Data: summary},
		"echo":      echo,
		"echo_lens": echoLens,
	}, nil
}

func rowAxisEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	b := &backend.Bindings{}
	b.Register("rnn", rnnBinding)
	return bindingEngine(t, "rowaxis.yaml", b, opts)
}

// rowAxisRequest is one request: steps of 2 or 3 (a uniform dimension,
// so requests group with their like), 1 to 4 positions with lengths of
// 0 up to them.
func rowAxisRequest(rng *rand.Rand, id string) Request {
	const F = 3
	S, P := int64(2+rng.Intn(2)), int64(1+rng.Intn(4))
	val := func(n int64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.Intn(64)-32) / 8
		}
		return out
	}
	lens := make([]int64, S)
	spans := make([]float32, S*P)
	for t := range S {
		lens[t] = rng.Int63n(P + 1)
		for p := range lens[t] {
			spans[t*P+p] = float32(1+rng.Intn(16)) / 4
		}
	}
	f32 := func(shape []int64, data []float32) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: shape, Data: data}
	}
	return Request{ID: id, Inputs: map[string]*backend.Tensor{
		"frames":    f32([]int64{S, 1, F}, val(S*F)),
		"gain":      f32([]int64{1, F}, val(F)),
		"pairs":     f32([]int64{F, 2}, val(2*F)),
		"spans":     f32([]int64{S, 1, P}, spans),
		"span_lens": {DType: "int64", Shape: []int64{S, 1}, Data: lens},
	}}
}

// TestRowsOnAnInnerAxis: requests whose rows are on axis 1 group (fewer
// invocations than requests, within the budgets), and every request gets
// exactly its solo results: states and summary equal, echo equal on the
// positions its lengths count (the group's padding beyond them is zero),
// echo's lengths its own. Handing out rows of an inner axis copies them.
func TestRowsOnAnInnerAxis(t *testing.T) {
	grouped := rowAxisEngine(t, Options{MaxDelay: 50 * time.Millisecond})
	solo := rowAxisEngine(t, Options{Solo: true})
	rng := rand.New(rand.NewSource(31))
	var reqs []Request
	for i := range 40 {
		reqs = append(reqs, rowAxisRequest(rng, fmt.Sprint("r", i)))
	}
	got := grouped.RunAll(context.Background(), reqs)
	for i, req := range reqs {
		g, w := got[i], solo.Run(context.Background(), req)
		if g.Err != nil || w.Err != nil {
			t.Fatalf("%s: grouped %v, solo %v", req.ID, g.Err, w.Err)
		}
		for _, name := range []string{"states", "summary", "echo_lens"} {
			if !sameResult(g.Outputs.Get(name), w.Outputs.Get(name)) {
				t.Errorf("%s: %s grouped %v, solo %v", req.ID, name, g.Outputs.Get(name), w.Outputs.Get(name))
			}
		}
		ge, we, lens := g.Outputs.Get("echo"), w.Outputs.Get("echo"), w.Outputs.Get("echo_lens").Int64s()
		if ge.Rank() != 3 || ge.Shape[0] != we.Shape[0] || ge.Shape[1] != 1 || ge.Shape[2] < we.Shape[2] {
			t.Fatalf("%s: echo grouped %v, solo %v", req.ID, ge, we)
		}
		for s := range ge.Shape[0] {
			for p := range ge.Shape[2] {
				x := ge.Float32s()[s*ge.Shape[2]+p]
				want := float32(0)
				if p < lens[s] {
					want = we.Float32s()[s*we.Shape[2]+p]
				}
				if x != want {
					t.Errorf("%s: echo step %d position %d grouped %v, want %v", req.ID, s, p, x, want)
				}
			}
		}
	}
	st := grouped.Stats().Components["rnn"]
	t.Logf("%d requests in %d invocations; copies %v", len(reqs), st.Invocations, grouped.Copies("rnn").ByReason())
	if st.Invocations >= int64(len(reqs)) {
		t.Errorf("%d invocations for %d requests: nothing grouped", st.Invocations, len(reqs))
	}
	if by := grouped.Copies("rnn").ByReason(); by["unstack"] == 0 {
		t.Errorf("rows of axis 1 handed out without a copy: %v", by)
	}
}
