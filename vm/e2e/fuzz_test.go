package e2e

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// FuzzRunRequests: a request of any fixture, edited by the fuzzer (a value
// made extreme, its data cut short, an axis grown or shrunk, its dtype
// changed, a rank added, an input dropped or an unexpected one added, an
// axis declared far larger than its data, an input made a scalar or
// replaced by another input's tensor), runs between two good
// requests of the same fixture, all three grouped together where they can
// be, in lockstep (RunAll) or, for odd seeds, each through Run, on the VM
// or (by the seed's next bit) the fixture's committed executor. The edited
// request gets its outputs or a run/* error, never a panic, a hang or an
// allocation its data does not account for; the good ones get their
// outputs, as if it had not been there.
func FuzzRunRequests(f *testing.F) {
	// runners[e][i] is engine e (engines: the VM, then the generated
	// executor) on fixture i.
	runners := make([][]Runner, len(engines))
	for e, kind := range engines {
		for _, fx := range fixtures.All {
			var r Runner
			if kind.runs(fx) {
				r = kind.start(f, fx, genrt.WithMaxDelay(time.Millisecond))
			}
			runners[e] = append(runners[e], r)
		}
	}
	for i := range fixtures.All {
		f.Add(uint8(i), uint64(i), []byte{})
		for op := range byte(editOps) {
			f.Add(uint8(i), uint64(7*i+int(op)), []byte{op, 0, 1, op, 1, 200})
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, edits []byte) {
		k := int(which) % len(fixtures.All)
		fx := fixtures.All[k]
		rng := rand.New(rand.NewPCG(seed, 29))
		reqs := []vm.Request{fx.Gen(rng, "good1", 1+rng.IntN(fx.MaxItems)), fx.Gen(rng, "edited", 1+rng.IntN(fx.MaxItems)), fx.Gen(rng, "good2", 1+rng.IntN(fx.MaxItems))}
		reqs[1].Inputs = edit(reqs[1].Inputs, edits)
		served := seed%2 == 1 // through Run, as a server's requests come
		r := runners[seed/2%uint64(len(engines))][k]
		if r == nil { // an engine that does not run the fixture
			r = runners[0][k]
		}
		alone := runAllWithin(t, r, []vm.Request{reqs[0], reqs[2]}, served)
		res := runAllWithin(t, r, reqs, served)
		var re *backend.RunError
		if err := res[1].Err; err != nil && (!errors.As(err, &re) || !strings.HasPrefix(re.Rule, "run/")) {
			t.Errorf("%s: the edited request failed without a run/* rule (edits %v): %v", fx.Name, edits, err)
		}
		for i, want := range alone {
			got := res[2*i]
			if got.Err != nil || want.Err != nil {
				if got.Err == nil || want.Err == nil || got.Err.Error() != want.Err.Error() {
					t.Errorf("%s: %s beside the edited request (edits %v): %v; without it: %v", fx.Name, got.ID, edits, got.Err, want.Err)
				}
				continue
			}
			for name, out := range want.Outputs.All() {
				if d := fixtures.Diff(got.Outputs.Get(name), out, tolerance); d != "" {
					t.Errorf("%s: %s's output %s beside the edited request (edits %v) differs: %s", fx.Name, got.ID, name, edits, d)
				}
			}
		}
	})
}

// runAllWithin runs reqs, with RunAll or (served) with one Run per
// request, all at once, and fails the test if they have not finished within
// two minutes (a hang).
func runAllWithin(t *testing.T, r Runner, reqs []vm.Request, served bool) []vm.Response {
	t.Helper()
	done := make(chan []vm.Response, 1)
	go func() {
		if !served {
			done <- r.RunAll(context.Background(), reqs)
			return
		}
		res := make([]vm.Response, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() { res[i] = r.Run(context.Background(), reqs[i]) })
		}
		wg.Wait()
		done <- res
	}()
	select {
	case res := <-done:
		return res
	case <-time.After(2 * time.Minute):
		t.Fatalf("the requests did not finish: %v", reqs)
		return nil
	}
}

// editOps counts the kinds of edit (edit's switch).
const editOps = 11

// edit applies edits, three bytes each (what, which input, an argument),
// to a copy of a request's inputs.
func edit(in map[string]*backend.Tensor, edits []byte) map[string]*backend.Tensor {
	out := make(map[string]*backend.Tensor, len(in))
	for name, t := range in {
		c := *t
		c.Shape = slices.Clone(t.Shape)
		c.Data = resized(t.Data, backend.DataLen(t.Data))
		out[name] = &c
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range out {
			if !yield(n) {
				return
			}
		}
	})
	for ; len(edits) >= 3 && len(names) > 0; edits = edits[3:] {
		op, name, arg := edits[0]%editOps, names[int(edits[1])%len(names)], edits[2]
		t := out[name]
		if t == nil {
			continue
		}
		n := backend.DataLen(t.Data)
		switch op {
		case 0: // one value made extreme
			if n > 0 {
				setExtreme(t.Data, int(arg)%int(n), arg)
			}
		case 1: // data cut short of the shape
			if n > 0 {
				t.Data = resized(t.Data, n-1)
			}
		case 2, 3: // an axis grown or shrunk, the data following it
			if len(t.Shape) == 0 {
				continue
			}
			a := int(arg) % len(t.Shape)
			if op == 2 {
				t.Shape[a]++
			} else if t.Shape[a] > 0 {
				t.Shape[a]--
			}
			if m := t.Len(); m >= 0 && m <= 1<<16 {
				t.Data = resized(t.Data, m)
			}
		case 4: // another dtype
			dtypes := []string{"float32", "int64", "int32", "uint8", "bool", "float64"}
			d := dtypes[int(arg)%len(dtypes)]
			if m := t.Len(); m < 0 || m > 1<<16 {
				continue
			}
			if nt, err := backend.NewTensor(d, t.Shape); err == nil {
				out[name] = nt
			}
		case 5: // a rank added
			t.Shape = append([]int64{1}, t.Shape...)
		case 6: // dropped
			delete(out, name)
		case 7: // an input the workflow does not declare
			out["unexpected_"+name] = t
		case 8: // an axis declared far beyond its data
			if len(t.Shape) > 0 {
				t.Shape[int(arg)%len(t.Shape)] = 1 << (33 + arg%30)
			}
		case 9: // a scalar of its first element
			if n > 0 {
				t.Shape, t.Data = nil, resized(t.Data, 1)
			}
		case 10: // another input's tensor under this name
			if o := out[names[int(arg)%len(names)]]; o != nil {
				out[name] = o
			}
		}
	}
	return out
}

// setExtreme sets element i of data to an extreme of its dtype, or to a
// small negative or out-of-range count.
func setExtreme(data any, i int, arg byte) {
	ints := []int64{-1, -1 << 40, math.MaxInt64, math.MinInt64, 1 << 31, int64(arg)}
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 1e30}
	switch d := data.(type) {
	case []int64:
		d[i] = ints[int(arg)%len(ints)]
	case []int32:
		d[i] = int32(ints[int(arg)%len(ints)])
	case []float32:
		d[i] = float32(floats[int(arg)%len(floats)])
	case []float64:
		d[i] = floats[int(arg)%len(floats)]
	case []uint8:
		d[i] = arg
	case []bool:
		d[i] = !d[i]
	}
}

// resized returns a copy of data with n elements: cut, or grown with
// zeros.
func resized(data any, n int64) any {
	switch d := data.(type) {
	case []float32:
		return withLen(d, n)
	case []float64:
		return withLen(d, n)
	case []int64:
		return withLen(d, n)
	case []int32:
		return withLen(d, n)
	case []int8:
		return withLen(d, n)
	case []uint8:
		return withLen(d, n)
	case []bool:
		return withLen(d, n)
	case []uint16:
		return withLen(d, n)
	}
	return data
}

func withLen[T any](d []T, n int64) []T {
	out := make([]T, n)
	copy(out, d)
	return out
}
