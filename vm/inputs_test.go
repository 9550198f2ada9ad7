package vm

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// TestUnexpectedInput: a request that supplies a tensor no workflow input
// declares fails alone with run/input naming it, on both the lockstep
// batch and the single-request path; its neighbours are answered.
func TestUnexpectedInput(t *testing.T) {
	e := imageEngine(t, Options{})
	defer e.Close()
	rng := rand.New(rand.NewSource(5))
	good := imageRequest(rng, "good", 2)
	bad := imageRequest(rng, "bad", 1)
	bad.Inputs["bogus"] = &backend.Tensor{DType: "float32", Shape: []int64{1}, Data: []float32{1}}
	check := func(how string, r Response) {
		t.Helper()
		var re *backend.RunError
		if !errors.As(r.Err, &re) || re.Rule != backend.RunInput || !strings.Contains(re.Message, "`bogus`") {
			t.Errorf("%s: %v, want run/input naming `bogus`", how, r.Err)
		}
	}
	resps := e.RunAll(context.Background(), []Request{good, bad})
	if resps[0].Err != nil {
		t.Errorf("a neighbour failed: %v", resps[0].Err)
	}
	check("RunAll", resps[1])
	check("Run", e.Run(context.Background(), bad))
}

// TestContractCheck: a request tensor is held to its workflow input's
// contract as written, the contract's dtype alias resolved at Open.
func TestContractCheck(t *testing.T) {
	f32 := func(shape ...int64) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: shape, Data: make([]float32, backend.Elements(shape))}
	}
	contract := &ir.Contract{DType: "fp32", Rank: 3, Shape: []ir.Dim{{Sym: "n"}, {Size: 2}, {Sym: "f"}}}
	cases := []struct {
		name string
		c    *ir.Contract
		t    *backend.Tensor
		want string // "" passes
	}{
		{"alias", contract, f32(5, 2, 3), ""},
		{"nil tensor", contract, nil, ""},
		{"no contract", nil, f32(1), ""},
		{"unknown dtype", &ir.Contract{DType: "complex64", Rank: -1}, f32(1), ""},
		{"dtype", contract, &backend.Tensor{DType: "int64", Shape: []int64{5, 2, 3}, Data: make([]int64, 30)}, "is declared fp32, got int64"},
		{"rank", contract, f32(5, 2), "is declared with rank 3"},
		{"fixed axis", contract, f32(5, 3, 3), "fixes axis 1 at 2"},
		{"data", contract, &backend.Tensor{DType: "float32", Shape: []int64{1, 2, 1}, Data: []float32{1}}, "carries a different number of elements"},
	}
	for _, c := range cases {
		k := newContractCheck("x", c.c)
		err := k.check(c.t)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
