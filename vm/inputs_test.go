package vm

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
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
