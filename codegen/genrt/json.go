package genrt

import (
	"bytes"
	"context"
	"sync"

	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// RunFunc runs one request of a decoded requests document.
type RunFunc func(ctx context.Context, req vm.Request) vm.Response

// BatchFunc runs requests concurrently and returns their responses in order.
type BatchFunc func(ctx context.Context, reqs []vm.Request) []vm.Response

// RunItems runs one request that gives inputs as items (vm.Request.Items):
// packed into the plain requests vm.PackItems makes, which run at once
// with run, and joined into its response.
func RunItems(ctx context.Context, e *vm.Engine, req vm.Request, run RunFunc) vm.Response {
	return e.RunItems([]vm.Request{req}, func(reqs []vm.Request) []vm.Response {
		out := make([]vm.Response, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() {
				ctx, finish := vm.WithPart(ctx, reqs[i])
				out[i] = run(ctx, reqs[i])
				finish(out[i].Err)
			})
		}
		wg.Wait()
		return out
	})[0]
}

// RunJSON runs a requests document of `genaic run`
// ({"requests":[{"id","inputs":{NAME: TENSOR}}]}) with runAll and returns
// the responses document `genaic run` writes without --stats. A failed
// request (a malformed tensor included) is a response with an error, not
// an error of RunJSON; RunJSON fails only on a document it cannot read. Paths of .npy tensors are
// relative to the working directory.
func RunJSON(ctx context.Context, requests []byte, runAll BatchFunc) ([]byte, error) {
	reqs, err := jsonio.ReadRequests(bytes.NewReader(requests), ".")
	if err != nil {
		return nil, err
	}
	// A request with a malformed tensor fails alone, answered here; the
	// others run.
	out := make([]vm.Response, len(reqs))
	var readable []vm.Request
	var at []int
	for i, r := range reqs {
		if r.Err != nil {
			out[i] = vm.Response{ID: r.ID, Err: vm.Unreadable(r.Err)}
			continue
		}
		readable = append(readable, r)
		at = append(at, i)
	}
	if len(readable) > 0 {
		for k, r := range runAll(ctx, readable) {
			out[at[k]] = r
		}
	}
	var b bytes.Buffer
	if err := jsonio.WriteResponses(&b, out, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
