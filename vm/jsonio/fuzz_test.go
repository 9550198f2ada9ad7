package jsonio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// FuzzReadRequests: any requests document gives requests or an error,
// never a panic; decoded tensors hold exactly their shape's elements; and
// reading it a request at a time accepts what decoding it whole with
// encoding/json accepts (readWhole), with the same requests.
func FuzzReadRequests(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "packages", "image_padded", "requests.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"requests":[{"id":"a","inputs":{"x":{"dtype":"int64","shape":[2],"data":[1,2]}}}]}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"dtype":"bool","shape":[1,0],"data":[]}}}]}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"npy":"../x.npy"}}}]}`))
	f.Add([]byte(`{"requests":[{"id":"i","inputs":{"x":{"items":[{"dtype":"float32","shape":[2],"data":[1,2]},{"dtype":"float32","shape":[1],"data":[3]}]}}}]}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"items":[{"items":[{"dtype":"int64","shape":[1],"data":[1]}]},{"items":[]}]}}}]}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"items":[{"items":[{"items":[]}]}]}}}]}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"items":[],"dtype":"int64"}}}]}`))
	f.Add([]byte(`{"Requests":[{"id":"a"}],"requests":[]}`))
	f.Add([]byte(`{"requests":null} trailing`))
	f.Add([]byte(`{"requests":[{"id":"a"},{"id":"a"}]}`))
	f.Add([]byte(`{"requests":[{"id":"a"}],"x":1}`))
	f.Add([]byte(`{"requests":[{"inputs":{"x":{"file":"a.png"}}},{"inputs":{"x":{"items":[{"file":"a.png"},{"file":"../a.png"}]}}}]}`))
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.png"), []byte("\x89PNG"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		reqs, err := ReadRequests(bytes.NewReader(b), dir)
		whole, wholeErr := readWhole(b, dir)
		if (err == nil) != (wholeErr == nil) {
			t.Fatalf("read a request at a time: %v; decoded whole: %v", err, wholeErr)
		}
		if err != nil {
			return
		}
		if len(reqs) != len(whole) {
			t.Fatalf("%d requests, %d decoded whole", len(reqs), len(whole))
		}
		for i, r := range reqs {
			w := whole[i]
			if r.ID != w.ID || (r.Err == nil) != (w.Err == nil) || len(r.Inputs) != len(w.Inputs) || len(r.Items) != len(w.Items) {
				t.Fatalf("request %d: %+v, decoded whole %+v", i, r, w)
			}
		}
		for _, r := range reqs {
			for name, x := range r.Inputs {
				if x == nil {
					t.Fatalf("%s: nil tensor", name)
				}
				if got := backend.DataLen(x.Data); got != x.Len() {
					t.Fatalf("%s: %d elements for shape %v", name, got, x.Shape)
				}
			}
			for name, its := range r.Items {
				checkFuzzItems(t, name, its, 1)
			}
		}
	})
}

// readWhole reads a requests document as encoding/json decodes it in
// one piece: the reference for ReadRequests, which walks it a request at a
// time.
func readWhole(b []byte, dir string) ([]vm.Request, error) {
	var doc struct {
		Requests []requestJSON `json:"requests"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var out []vm.Request
	seen := map[string]bool{}
	for i, rq := range doc.Requests {
		id := rq.ID
		if id == "" {
			id = fmt.Sprint(i)
		}
		if seen[id] {
			return nil, fmt.Errorf("id %q is used twice", id)
		}
		seen[id] = true
		out = append(out, decodeRequest(id, &rq, dir, ReadOptions{}))
	}
	return out, nil
}

// checkFuzzItems checks decoded items: each a tensor of its shape's
// elements or a list, never both, nested at most two levels.
func checkFuzzItems(t *testing.T, name string, its []vm.Item, depth int) {
	if depth > maxItemsDepth {
		t.Fatalf("%s: items nest %d deep", name, depth)
	}
	for _, it := range its {
		switch {
		case it.Tensor != nil && it.Items != nil:
			t.Fatalf("%s: an item is both a tensor and a list", name)
		case it.Tensor != nil:
			if got := backend.DataLen(it.Tensor.Data); got != it.Tensor.Len() {
				t.Fatalf("%s: item of %d elements for shape %v", name, got, it.Tensor.Shape)
			}
		default:
			checkFuzzItems(t, name, it.Items, depth+1)
		}
	}
}

// FuzzReadNPY: any file gives a tensor or an error, never a panic.
func FuzzReadNPY(f *testing.F) {
	var npy bytes.Buffer
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
	header += strings.Repeat(" ", 118-len(header)-1) + "\n"
	npy.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&npy, binary.LittleEndian, uint16(len(header)))
	npy.WriteString(header)
	binary.Write(&npy, binary.LittleEndian, []float32{1, 2})
	f.Add(npy.Bytes())
	f.Add([]byte("\x93NUMPY\x01\x00\x00\x00"))
	path := filepath.Join(f.TempDir(), "x.npy")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := ReadNPY(path)
		if err == nil && backend.DataLen(x.Data) != x.Len() {
			t.Fatalf("%d elements for shape %v", backend.DataLen(x.Data), x.Shape)
		}
	})
}

// FuzzTensorData: whatever inline data the one-pass reader takes
// (fastData), encoding/json (slowData) takes too, with the same elements
// bit for bit, for every dtype and a shape of the data's count; neither
// panics.
func FuzzTensorData(f *testing.F) {
	for _, s := range []string{`[1, 2.5, -3e2]`, `[null, 0, -0]`, `[true, false]`, `[1e39]`,
		`[[1]]`, `[65535, 255, -128]`, `[4.9e-324, 1.5e-45]`, `null`, `[]`, ` [ 7 ] `} {
		f.Add([]byte(s), uint8(0))
	}
	dtypes := []string{"bool", "float32", "float64", "int8", "int16", "int32", "int64",
		"uint8", "uint16", "uint32", "uint64", "float16", "bfloat16"}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		dtype := dtypes[int(which)%len(dtypes)]
		n := int64(bytes.Count(data, []byte(","))) + 1
		for _, shape := range [][]int64{{n}, {1}, {0}} {
			fast, ok := fastData(dtype, shape, shape[0], data)
			slow, err := slowData(dtype, shape, shape[0], data)
			if !ok {
				continue
			}
			if err != nil {
				t.Fatalf("%s %v %q: the one-pass reader took it, encoding/json refused it: %v", dtype, shape, data, err)
			}
			var fb, sb bytes.Buffer
			if err := binary.Write(&fb, binary.LittleEndian, fast.Data); err != nil {
				t.Fatal(err)
			}
			if err := binary.Write(&sb, binary.LittleEndian, slow.Data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fb.Bytes(), sb.Bytes()) || fast.DType != slow.DType || !slices.Equal(fast.Shape, slow.Shape) {
				t.Fatalf("%s %v %q: one pass %v, encoding/json %v", dtype, shape, data, fast, slow)
			}
		}
	})
}
