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

// RunJSON runs a requests document of `genaic run`
// ({"requests":[{"id","inputs":{NAME: TENSOR}}]}) concurrently, one
// goroutine per request so that their items meet in the groupers, and
// returns the responses document `genaic run` writes without --stats. A
// failed request is a response with an error, not an error of RunJSON;
// RunJSON fails only on a document it cannot read. Paths of .npy tensors
// are relative to the working directory.
func RunJSON(ctx context.Context, requests []byte, run RunFunc) ([]byte, error) {
	reqs, err := jsonio.ReadRequests(bytes.NewReader(requests), ".")
	if err != nil {
		return nil, err
	}
	resps := make([]vm.Response, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i] = run(ctx, reqs[i])
		}()
	}
	wg.Wait()
	var b bytes.Buffer
	if err := jsonio.WriteResponses(&b, resps, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
