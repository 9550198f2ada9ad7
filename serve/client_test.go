package serve

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// TestClientEncoding: every request of the example packages'
// requests.json (packed tensors, encoded media, ocr_lines' items), encoded
// as a client sends it (EncodeHTTP with binary tensors and with JSON,
// EncodeGRPC), is read back by the server's own decoders as the same
// request, binary outputs asked for exactly when the inputs were binary;
// so are items of any shapes, nested ones among them; items no OIP tensor
// holds are refused.
func TestClientEncoding(t *testing.T) {
	s := newServer(t, Config{Repo: filepath.Join("..", "testdata", "packages"), NoWarmup: true})
	for _, model := range s.Models() {
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
	// Items of any shapes go in the shapes form, and come back the same;
	// items no OIP tensor can hold are refused.
	md := s.model("ocr_lines")
	f32 := func(shape ...int64) *backend.Tensor {
		x, _ := backend.NewTensor("float32", shape)
		for i := range x.Float32s() {
			x.Float32s()[i] = float32(i) / 7
		}
		return x
	}
	for what, items := range map[string][]vm.Item{
		"items that differ beyond their first axis": vm.TensorItems(f32(2, 8), f32(3, 4)),
		"nested items":  {{Items: vm.TensorItems(f32(2, 8), f32(3))}, {Items: []vm.Item{}}, {Tensor: f32(1, 8)}},
		"a scalar item": vm.TensorItems(f32(), f32(2)),
	} {
		r := vm.Request{ID: "x", Items: map[string][]vm.Item{"line_images": items}}
		body, hlen, err := EncodeHTTP(r, true)
		if err != nil {
			t.Fatalf("EncodeHTTP refused %s: %v", what, err)
		}
		got, _, _, _, err := s.decodeHTTP(md, strconv.Itoa(hlen), body)
		if err == nil {
			err = sameRequest(got, r)
		}
		if err != nil {
			t.Errorf("%s (HTTP): %v", what, err)
		}
		m, err := EncodeGRPC("ocr_lines", r)
		if err != nil {
			t.Fatalf("EncodeGRPC refused %s: %v", what, err)
		}
		if got, _, err = decodeGRPC(md, m); err == nil {
			err = sameRequest(got, r)
		}
		if err != nil {
			t.Errorf("%s (gRPC): %v", what, err)
		}
	}
	i64, _ := backend.NewTensor("int64", []int64{2})
	for what, items := range map[string][]vm.Item{
		"items of two dtypes": vm.TensorItems(f32(2), i64),
		"units of no items":   {{Items: []vm.Item{}}},
		"items nested 3 deep": {{Items: []vm.Item{{Items: vm.TensorItems(f32(1))}}}},
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
		if err := sameItems(got.Items[name], items); err != nil {
			return fmt.Errorf("input %s: %v", name, err)
		}
	}
	return nil
}

// sameItems compares items, nested ones included.
func sameItems(got, want []vm.Item) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d items, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if (g.Tensor == nil) != (w.Tensor == nil) {
			return fmt.Errorf("item %d is %v, want %v", i, g, w)
		}
		if w.Tensor == nil {
			if err := sameItems(g.Items, w.Items); err != nil {
				return fmt.Errorf("unit %d: %v", i, err)
			}
			continue
		}
		if err := same(map[string]*backend.Tensor{"": g.Tensor}, map[string]*backend.Tensor{"": w.Tensor}); err != nil {
			return fmt.Errorf("item %d: %v", i, err)
		}
	}
	return nil
}
