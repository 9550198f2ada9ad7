package jsonio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

func readItemsReq(t *testing.T, doc, dir string) vm.Request {
	t.Helper()
	reqs, err := ReadRequests(strings.NewReader(doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	return reqs[0]
}

func TestItemsOneLevel(t *testing.T) {
	r := readItemsReq(t, `{"requests":[{"id":"a","inputs":{
		"lines":{"items":[{"dtype":"float32","shape":[2,3],"data":[1,2,3,4,5,6]},{"dtype":"float32","shape":[2,1],"data":[7,8]}]},
		"scale":{"dtype":"float32","shape":[1],"data":[2]}}}]}`, "")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	its := r.Items["lines"]
	if len(its) != 2 || its[0].Tensor == nil || its[1].Tensor == nil {
		t.Fatalf("items %+v", its)
	}
	if !reflect.DeepEqual(its[1].Tensor.Shape, []int64{2, 1}) || !reflect.DeepEqual(its[1].Tensor.Data, []float32{7, 8}) {
		t.Errorf("item 1 is %v %v", its[1].Tensor, its[1].Tensor.Data)
	}
	if _, ok := r.Inputs["lines"]; ok {
		t.Error("an items input is also in Inputs")
	}
	if r.Inputs["scale"] == nil {
		t.Error("the tensor input beside the items is missing")
	}
}

func TestItemsTwoLevels(t *testing.T) {
	r := readItemsReq(t, `{"requests":[{"inputs":{"frames":{"items":[
		{"items":[{"dtype":"int64","shape":[1],"data":[1]},{"dtype":"int64","shape":[1],"data":[2]}]},
		{"items":[]},
		{"items":[{"dtype":"int64","shape":[1],"data":[3]}]}]}}}]}`, "")
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	its := r.Items["frames"]
	if len(its) != 3 || len(its[0].Items) != 2 || its[1].Items == nil || len(its[1].Items) != 0 || len(its[2].Items) != 1 {
		t.Fatalf("items %+v", its)
	}
	if got := its[2].Items[0].Tensor.Int64s(); !reflect.DeepEqual(got, []int64{3}) {
		t.Errorf("unit 2 frame 0 holds %v", got)
	}
}

func TestItemsNPY(t *testing.T) {
	dir := t.TempDir()
	var npy bytes.Buffer
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	npy.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&npy, binary.LittleEndian, uint16(len(header)))
	npy.WriteString(header)
	binary.Write(&npy, binary.LittleEndian, []float32{1.5, 2.5})
	if err := os.WriteFile(filepath.Join(dir, "line0.npy"), npy.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := readItemsReq(t, `{"requests":[{"inputs":{"lines":{"items":[{"npy":"line0.npy"},{"dtype":"float32","shape":[1],"data":[9]}]}}}]}`, dir)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := r.Items["lines"][0].Tensor.Float32s(); !reflect.DeepEqual(got, []float32{1.5, 2.5}) {
		t.Errorf(".npy item holds %v", got)
	}
	// A refused .npy item fails its request alone, naming the item.
	reqs, err := ReadRequests(strings.NewReader(`{"requests":[{"id":"bad","inputs":{"lines":{"items":[{"npy":"line0.npy"},{"npy":"../x.npy"}]}}},{"id":"good","inputs":{"lines":{"items":[{"npy":"line0.npy"}]}}}]}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Err == nil || !strings.Contains(reqs[0].Err.Error(), "item 1") || reqs[1].Err != nil {
		t.Errorf("errors %v and %v; want the first request's item 1 refused, the second read", reqs[0].Err, reqs[1].Err)
	}
}

func TestItemsMalformed(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"mixed", `{"items":[],"dtype":"int64"}`, "both items and the fields of a tensor"},
		{"three levels", `{"items":[{"items":[{"items":[]}]}]}`, "at most 2 levels"},
		{"bad item", `{"items":[{"dtype":"int64","shape":[2],"data":[1]}]}`, "item 0: data holds 1 elements"},
		{"nested bad item", `{"items":[{"items":[{"dtype":"int64","shape":[1],"data":[1]},{"dtype":"nope","shape":[],"data":[]}]}]}`, "item 0.1: unknown dtype"},
		{"unknown field", `{"items":[{"dtype":"int64","shape":[1],"data":[1],"extra":1}]}`, "unknown field"},
		{"not a list", `{"items":{"dtype":"int64"}}`, `field "items" cannot be an object`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := readItemsReq(t, `{"requests":[{"id":"r","inputs":{"x":`+c.input+`}}]}`, "")
			if r.Err == nil || !strings.Contains(r.Err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", r.Err, c.want)
			}
			if re := vm.AsRunError(r.Err); re.Rule != backend.RunInput {
				t.Errorf("rule %s, want %s", re.Rule, backend.RunInput)
			}
			if r.Items != nil || r.Inputs != nil {
				t.Errorf("a request that could not be read keeps inputs %v, items %v", r.Inputs, r.Items)
			}
		})
	}
	// An empty list is read; the runtime refuses it against the contract.
	r := readItemsReq(t, `{"requests":[{"inputs":{"x":{"items":[]}}}]}`, "")
	if r.Err != nil || r.Items["x"] == nil || len(r.Items["x"]) != 0 {
		t.Errorf("empty items: err %v, items %#v", r.Err, r.Items)
	}
}

func TestResponseItems(t *testing.T) {
	row := func(v ...float32) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{int64(len(v))}, Data: v}
	}
	resp := vm.Response{ID: "a", Outputs: vm.OutputsOf(map[string]*backend.Tensor{"score": row(1)}),
		Items: map[string][]vm.Item{
			"emb":    vm.TensorItems(row(1, 2), row(3)),
			"nested": {{Items: vm.TensorItems(row(4))}, {Items: []vm.Item{}}},
		}}
	var b bytes.Buffer
	if err := WriteResponses(&b, []vm.Response{resp}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"emb":{"items":[{"dtype":"float32","shape":[2],"data":[1,2]},{"dtype":"float32","shape":[1],"data":[3]}]}`) {
		t.Errorf("items output written as %s", b.String())
	}
	var rf ResponseFile
	if err := json.Unmarshal(b.Bytes(), &rf); err != nil {
		t.Fatal(err)
	}
	out := rf.Responses[0].Outputs
	emb, err := out["emb"].ItemTensors()
	if err != nil {
		t.Fatal(err)
	}
	if len(emb) != 2 || !reflect.DeepEqual(emb[1].Tensor.Data, []float32{3}) {
		t.Errorf("emb read back as %+v", emb)
	}
	nested, err := out["nested"].ItemTensors()
	if err != nil || len(nested) != 2 || len(nested[0].Items) != 1 || nested[1].Items == nil {
		t.Errorf("nested read back as %+v, %v", nested, err)
	}
	if _, err := out["score"].ItemTensors(); err == nil {
		t.Error("a tensor output read as items")
	}
	if s, err := out["score"].Tensor(); err != nil || !reflect.DeepEqual(s.Data, []float32{1}) {
		t.Errorf("tensor output beside items: %v %v", s, err)
	}
}

func TestEncodeResponseItemsStore(t *testing.T) {
	row := func(v ...float32) *backend.Tensor {
		return &backend.Tensor{DType: "float32", Shape: []int64{int64(len(v))}, Data: v}
	}
	var stored []string
	store := func(id, output string, x *backend.Tensor) (string, error) {
		stored = append(stored, id+"/"+output)
		return id + "/" + output + ".npy", nil
	}
	b, err := EncodeResponse(vm.Response{ID: "r", Items: map[string][]vm.Item{
		"emb": {{Tensor: row(1)}, {Items: vm.TensorItems(row(2), row(3))}}}}, store)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"r","outputs":{"emb":{"items":[{"dtype":"float32","shape":[1],"npy":"r/emb.0.npy"},{"items":[{"dtype":"float32","shape":[1],"npy":"r/emb.1.0.npy"},{"dtype":"float32","shape":[1],"npy":"r/emb.1.1.npy"}]}]}},"error":null}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if !reflect.DeepEqual(stored, []string{"r/emb.0", "r/emb.1.0", "r/emb.1.1"}) {
		t.Errorf("stored %v", stored)
	}
	// A failed response writes no items.
	b, err = EncodeResponse(vm.Response{ID: "f", Err: errors.New("x"), Items: map[string][]vm.Item{"emb": {{Tensor: row(1)}}}}, store)
	if err != nil || strings.Contains(string(b), "items") {
		t.Errorf("failed response: %s, %v", b, err)
	}
}
