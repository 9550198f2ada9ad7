package serve

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// TestClientEncoding: every request of the packages' requests.json (packed
// tensors, and ocr_lines' items), encoded as a client sends it
// (EncodeHTTP with binary tensors and with JSON, EncodeGRPC), is read back
// by the server's own decoders as the same request, binary outputs asked
// for exactly when the inputs were binary; items the items form cannot
// carry are refused.
func TestClientEncoding(t *testing.T) {
	models := []string{"image_padded", "ocr_lines", "text_packed", "text_padded"}
	s := newServer(t, Config{Repo: repo(t, models...), NoWarmup: true})
	for _, model := range models {
		md := s.model(model)
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
					err = sameRequest(got, r)
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
				err = sameRequest(got, r)
			}
			if err != nil || m.Id != r.ID || m.ModelName != model {
				t.Errorf("%s %s (gRPC): %v", model, r.ID, err)
			}
		}
	}
	f32 := func(shape ...int64) *backend.Tensor {
		x, _ := backend.NewTensor("float32", shape)
		return x
	}
	for what, items := range map[string][]vm.Item{
		"items that differ beyond their first axis": vm.TensorItems(f32(2, 8), f32(3, 4)),
		"nested items":  {{Items: vm.TensorItems(f32(2, 8))}},
		"a scalar item": vm.TensorItems(f32()),
	} {
		r := vm.Request{ID: "x", Items: map[string][]vm.Item{"line_images": items}}
		if _, _, err := EncodeHTTP(r, true); err == nil {
			t.Errorf("EncodeHTTP took %s", what)
		}
		if _, err := EncodeGRPC("ocr_lines", r); err == nil {
			t.Errorf("EncodeGRPC took %s", what)
		}
	}
}

// sameRequest compares a decoded request's inputs and items with the one
// encoded.
func sameRequest(got, want vm.Request) error {
	if err := same(got.Inputs, want.Inputs); err != nil {
		return err
	}
	if len(got.Items) != len(want.Items) {
		return fmt.Errorf("items of %v, want %v", sortedKeys(got.Items), sortedKeys(want.Items))
	}
	for name, items := range want.Items {
		if len(got.Items[name]) != len(items) {
			return fmt.Errorf("input %s: %d items, want %d", name, len(got.Items[name]), len(items))
		}
		for i, it := range items {
			g := got.Items[name][i]
			if err := same(map[string]*backend.Tensor{name: g.Tensor}, map[string]*backend.Tensor{name: it.Tensor}); err != nil {
				return fmt.Errorf("item %d: %v", i, err)
			}
		}
	}
	return nil
}
