package serve

import (
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// TestClientEncoding: every request of the packages, encoded as a client
// sends it (EncodeHTTP with binary tensors and with JSON, EncodeGRPC), is
// read back by the server's own decoders as the same request, binary
// outputs asked for exactly when the inputs were binary; a request that
// gives items is refused.
func TestClientEncoding(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "image_padded", "text_packed"), NoWarmup: true})
	for _, model := range []string{"image_padded", "text_packed"} {
		md := s.models[model]
		reqs, err := readRequests(md.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			for _, binary := range []bool{true, false} {
				body, hlen, err := EncodeHTTP(r, binary)
				if err != nil {
					t.Fatalf("%s %s: %v", model, r.ID, err)
				}
				header := ""
				if binary {
					header = strconv.Itoa(hlen)
				}
				got, asked, binaryOut, _, err := s.decodeHTTP(md, header, body)
				if err == nil {
					err = same(got.Inputs, r.Inputs)
				}
				if err != nil {
					t.Errorf("%s %s (binary %v): %v", model, r.ID, binary, err)
				}
				if got.ID != r.ID || len(asked) != 0 || binaryOut[""] != binary {
					t.Errorf("%s %s (binary %v): id %q, outputs asked %v, binary outputs %+v", model, r.ID, binary, got.ID, asked, binaryOut)
				}
			}
			m, err := EncodeGRPC(model, r)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := decodeGRPC(md, m)
			if err == nil {
				err = same(got.Inputs, r.Inputs)
			}
			if err != nil || m.Id != r.ID || m.ModelName != model {
				t.Errorf("%s %s (gRPC): %v", model, r.ID, err)
			}
		}
	}
	items := vm.Request{ID: "x", Items: map[string][]vm.Item{"pixel_patches": vm.TensorItems(&backend.Tensor{DType: "float32", Shape: []int64{1, 8}, Data: make([]float32, 8)})}}
	if _, _, err := EncodeHTTP(items, true); err == nil {
		t.Error("EncodeHTTP took a request of items")
	}
	if _, err := EncodeGRPC("image_padded", items); err == nil {
		t.Error("EncodeGRPC took a request of items")
	}
}
