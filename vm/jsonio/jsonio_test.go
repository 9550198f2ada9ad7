package jsonio

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

func TestRequestsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var npy bytes.Buffer
	header := "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	npy.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&npy, binary.LittleEndian, uint16(len(header)))
	npy.WriteString(header)
	binary.Write(&npy, binary.LittleEndian, []int64{1, 2, 3, 4, 5, 6})
	if err := os.WriteFile(filepath.Join(dir, "x.npy"), npy.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `{"requests":[{"id":"a","inputs":{"x":{"npy":"x.npy"},"y":{"dtype":"fp32","shape":[2],"data":[0.5,1]}}}]}`
	reqs, err := ReadRequests(strings.NewReader(doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	x, y := reqs[0].Inputs["x"], reqs[0].Inputs["y"]
	if x.String() != "int64[2, 3]" || x.Int64s()[5] != 6 || y.String() != "float32[2]" || y.Float32s()[0] != 0.5 {
		t.Fatalf("decoded %v %v", x, y)
	}
	var out bytes.Buffer
	if err := WriteResponses(&out, []vm.Response{{ID: "a", Outputs: vm.OutputsOf(map[string]*backend.Tensor{"y": y})}, {ID: "b", Err: backend.Errorf("run/input", "no x")}}, nil); err != nil {
		t.Fatal(err)
	}
	var rf ResponseFile
	if err := json.Unmarshal(out.Bytes(), &rf); err != nil {
		t.Fatal(err)
	}
	back, err := rf.Responses[0].Outputs["y"].Tensor()
	if err != nil || !reflect.DeepEqual(back, y) || rf.Responses[0].Error != nil {
		t.Errorf("y came back as %v (%v), error %v", back, err, rf.Responses[0].Error)
	}
	if e := rf.Responses[1].Error; e == nil || e.Rule != "run/input" || rf.Responses[1].Outputs != nil {
		t.Errorf("the failed response: %+v", rf.Responses[1])
	}
}

// TestRequestsRefuseBadDocuments: a document that is not a requests
// document, or repeats an id, is refused whole.
func TestRequestsRefuseBadDocuments(t *testing.T) {
	for doc, want := range map[string]string{
		`{"requests":[{"id":"a"},{"id":"a"}]}`: `id "a" is used twice`,
		`{"reqs":[]}`:                          "unknown field",
		`[1, 2]`:                               "cannot unmarshal",
	} {
		if _, err := ReadRequests(strings.NewReader(doc), t.TempDir()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", doc, err, want)
		}
	}
}

// TestMalformedTensorFailsOnlyItsRequest: a malformed tensor makes its
// request carry a run/input error naming the input; the document's other
// requests are read as usual.
func TestMalformedTensorFailsOnlyItsRequest(t *testing.T) {
	bad := map[string]string{
		`{"dtype":"float32","shape":[2,3,8],"data":[` + strings.Repeat("1,", 46) + `1]}`: "data holds 47 elements, shape [2 3 8] holds 48",
		`{"dtype":"f33","shape":[1],"data":[1]}`:                                         `unknown dtype "f33" (did you mean "fp32"?)`,
		`{"dtype":"int64","shape":[1],"data":[1.5]}`:                                     "data element 0, 1.5, is not an integer, which int64 holds",
		`{"dtype":"int64","shape":[2],"data":[1,1e30]}`:                                  "data element 1, 1e30, is out of the range of int64",
		`{"dtype":"float32","shape":[2],"data":[1,1e39]}`:                                "data element 1, 1e39, is out of the range of float32",
		`{"dtype":"uint8","shape":[1],"data":[300]}`:                                     "data element 0, 300, is out of the range of uint8",
		`{"dtype":"float32","shape":[2],"data":[1,"2"]}`:                                 "data element 1 is a string, not a float32",
		`{"dtype":"bool","shape":[1],"data":[1]}`:                                        "data element 0 is a number, not a bool",
		`{"dtype":"float32","shape":[2],"data":{"a":1}}`:                                 "data is not a flat list of float32 values",
		`{"npy":"missing.npy"}`:                                                          "no such file",
		`{"dtype":"float32","shape":[3],"data":[1],"extra":1}`:                           "unknown field",
		`5`:                                  "is a number, not a tensor",
		`{"dtype":"float32","shape":"2"}`:    `field "shape" cannot be a string`,
		`{"dtype":"float32","shape":[1e39]}`: `field "shape" cannot be a number 1e39`,
	}
	for tensor, want := range bad {
		doc := `{"requests":[{"id":"good","inputs":{"x":{"dtype":"int64","shape":[1],"data":[7]}}},` +
			`{"id":"bad","inputs":{"ok":{"dtype":"int64","shape":[1],"data":[7]},"x":` + tensor + `}}]}`
		reqs, err := ReadRequests(strings.NewReader(doc), t.TempDir())
		if err != nil {
			t.Errorf("%s: the whole document failed: %v", tensor, err)
			continue
		}
		if len(reqs) != 2 || reqs[0].Err != nil || reqs[0].Inputs["x"].Int64s()[0] != 7 {
			t.Errorf("%s: the good request: %+v", tensor, reqs[0])
		}
		var re *backend.RunError
		if !errors.As(reqs[1].Err, &re) || re.Rule != backend.RunInput || !strings.HasPrefix(re.Message, "input `x`: ") || !strings.Contains(re.Message, want) || strings.Contains(re.Message, "Go value") {
			t.Errorf("%s: the bad request's error %v, want run/input with %q", tensor, reqs[1].Err, want)
		}
	}
}

// TestHostileShapesAreRefused: a shape far larger than its data is
// refused without allocating it.
func TestHostileShapesAreRefused(t *testing.T) {
	for doc, want := range map[string]string{
		`{"requests":[{"inputs":{"x":{"dtype":"float32","shape":[1000000000000],"data":[]}}}]}`:            "holds more than",
		`{"requests":[{"inputs":{"x":{"dtype":"float32","shape":[4294967296,4294967296,2],"data":[1]}}}]}`: "holds more than",
		`{"requests":[{"inputs":{"x":{"dtype":"float32","shape":[3, -1],"data":[1]}}}]}`:                   "negative extent",
		`{"requests":[{"inputs":{"x":{"dtype":"int64","shape":[100000000],"data":[1]}}}]}`:                 "data holds 1 elements, shape [100000000] holds 100000000",
	} {
		reqs, err := ReadRequests(strings.NewReader(doc), t.TempDir())
		if err == nil && len(reqs) == 1 {
			err = reqs[0].Err
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", doc, err, want)
		}
	}
}

// TestResponseErrorRules: errors from outside the catalogue are written
// with the rule they stand for, not run/backend.
func TestResponseErrorRules(t *testing.T) {
	errs := map[string]error{
		"run/cancelled":  context.Canceled,
		"run/deadline":   context.DeadlineExceeded,
		"run/closed":     vm.ErrClosed,
		"run/queue-full": &vm.QueueFullError{Component: "encoder", Limit: 2},
		"run/backend":    errors.New("boom"),
	}
	var rs []vm.Response
	for rule, err := range errs {
		rs = append(rs, vm.Response{ID: rule, Err: err})
	}
	var out bytes.Buffer
	if err := WriteResponses(&out, rs, nil); err != nil {
		t.Fatal(err)
	}
	var rf ResponseFile
	if err := json.Unmarshal(out.Bytes(), &rf); err != nil {
		t.Fatal(err)
	}
	for _, r := range rf.Responses {
		if r.Error == nil || r.Error.Rule != r.ID {
			t.Errorf("%s written as %+v", r.ID, r.Error)
		}
	}
}

// TestInlineDataReadInOnePass: flat lists of plain numbers are read by
// the one-pass reader, and data null for an empty shape is an empty list
// of the dtype's elements.
func TestInlineDataReadInOnePass(t *testing.T) {
	for dtype, data := range map[string]string{
		"float32": `[1.5, -2e-3, null]`, "int64": `[-9223372036854775808, 0, 7]`,
		"bool": `[true, false, true]`, "uint8": ` [ 255 , 0 , 1 ] `, "float16": `[1.5, 0, -65504]`,
	} {
		if _, ok := fastData(dtype, []int64{3}, 3, []byte(data)); !ok {
			t.Errorf("%s %s: the one-pass reader refused it", dtype, data)
		}
	}
	reqs, err := ReadRequests(strings.NewReader(`{"requests":[{"inputs":{"x":{"dtype":"float32","shape":[0],"data":null}}}]}`), t.TempDir())
	if err != nil || reqs[0].Err != nil {
		t.Fatalf("data null of shape [0]: %v %v", err, reqs[0].Err)
	}
	if d, ok := reqs[0].Inputs["x"].Data.([]float32); !ok || len(d) != 0 {
		t.Errorf("data null of shape [0] came back as %T %v, want an empty []float32", reqs[0].Inputs["x"].Data, reqs[0].Inputs["x"].Data)
	}
}

// TestHalfFloatsAsNumbers: float16 and bfloat16 data are numbers, their
// values, read (in one pass or by encoding/json alike) and written as
// genaic serve reads and writes them; NaN and the infinities are null.
func TestHalfFloatsAsNumbers(t *testing.T) {
	for _, dtype := range []string{"float16", "bfloat16"} {
		reqs, err := ReadRequests(strings.NewReader(`{"requests":[
			{"id":"plain","inputs":{"x":{"dtype":"`+dtype+`","shape":[3],"data":[0.5,-2.25,1]}}},
			{"id":"exponent","inputs":{"x":{"dtype":"`+dtype+`","shape":[3],"data":[0.5,-2.25,1.0e0]}}},
			{"id":"text","inputs":{"x":{"dtype":"`+dtype+`","shape":[3],"data":[0.5,"a",1]}}}]}`), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		to := halfFrom(dtype)
		want := []uint16{to(0.5), to(-2.25), to(1)}
		for _, r := range reqs[:2] {
			if r.Err != nil || !slices.Equal(r.Inputs["x"].Data.([]uint16), want) {
				t.Errorf("%s %s: %v %v, want the bits %x", dtype, r.ID, r.Err, r.Inputs["x"], want)
			}
		}
		if err := reqs[2].Err; err == nil || !strings.Contains(err.Error(), "data element 1 is a string, not a "+dtype) {
			t.Errorf("%s text: %v", dtype, err)
		}
		out := &backend.Tensor{DType: dtype, Shape: []int64{4}, Data: append(want, to(float32(math.Inf(1))))}
		tj, err := encodeTensor(out)
		if err != nil || string(tj.Data) != "[0.5,-2.25,1,null]" {
			t.Errorf("%s written as %s, %v", dtype, tj.Data, err)
		}
	}
}

// TestBytesAsBase64: a uint8 tensor's data may be a base64 string (the
// form encoded media take in a requests document), as a tensor and as an
// item; a string of another length than the shape's, or on another
// dtype, fails the request alone.
func TestBytesAsBase64(t *testing.T) {
	reqs, err := ReadRequests(strings.NewReader(`{"requests":[
		{"id":"tensor","inputs":{"x":{"dtype":"uint8","shape":[4],"data":"UklGRg=="}}},
		{"id":"items","inputs":{"x":{"items":[{"dtype":"uint8","shape":[3],"data":"AAH/"}]}}},
		{"id":"short","inputs":{"x":{"dtype":"uint8","shape":[5],"data":"UklGRg=="}}},
		{"id":"float","inputs":{"x":{"dtype":"float32","shape":[1],"data":"AAAAAA=="}}}]}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if r := reqs[0]; r.Err != nil || string(r.Inputs["x"].Data.([]uint8)) != "RIFF" {
		t.Errorf("tensor: %v %v", r.Err, r.Inputs["x"])
	}
	if r := reqs[1]; r.Err != nil || len(r.Items["x"]) != 1 || !slices.Equal(r.Items["x"][0].Tensor.Data.([]uint8), []uint8{0, 1, 255}) {
		t.Errorf("items: %v %v", r.Err, r.Items["x"])
	}
	for _, r := range reqs[2:] {
		if r.Err == nil {
			t.Errorf("%s: read as %v", r.ID, r.Inputs["x"])
		}
	}
}

// TestFileBytes: {"file": path} is the file's bytes, uint8 [n] (an
// encoded image), as a tensor or an item; its path is confined as a .npy
// path is, its size bounded as a .npy payload is, and it stands alone.
func TestFileBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "img", "a.png"), []byte("\x89PNG..."), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `{"requests":[
		{"id":"tensor","inputs":{"x":{"file":"img/a.png"}}},
		{"id":"items","inputs":{"x":{"items":[{"file":"img/a.png"},{"dtype":"uint8","shape":[1],"data":[7]}]}}},
		{"id":"outside","inputs":{"x":{"file":"../a.png"}}},
		{"id":"absolute","inputs":{"x":{"file":"/etc/passwd"}}},
		{"id":"missing","inputs":{"x":{"file":"img/b.png"}}},
		{"id":"both","inputs":{"x":{"file":"img/a.png","dtype":"uint8"}}}]}`
	reqs, err := ReadRequestsWith(strings.NewReader(doc), dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := reqs[0]; r.Err != nil || r.Inputs["x"].DType != "uint8" || !slices.Equal(r.Inputs["x"].Shape, []int64{7}) || string(r.Inputs["x"].Data.([]uint8)) != "\x89PNG..." {
		t.Errorf("tensor: %v %v", r.Err, r.Inputs["x"])
	}
	if r := reqs[1]; r.Err != nil || len(r.Items["x"]) != 2 || string(r.Items["x"][0].Tensor.Data.([]uint8)) != "\x89PNG..." {
		t.Errorf("items: %v %v", r.Err, r.Items["x"])
	}
	for i, want := range []string{"leaves the requests folder", "is absolute", "no such file", "holds both a file and the fields of a tensor"} {
		if r := reqs[2+i]; r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("%s: %v, want %q", r.ID, r.Err, want)
		}
	}
	big, err := ReadRequestsWith(strings.NewReader(doc), dir, ReadOptions{MaxNPYBytes: 6})
	if err != nil || big[0].Err == nil || !strings.Contains(big[0].Err.Error(), "holds more than 6 bytes") {
		t.Errorf("a file past the bound: %v, %v", err, big[0].Err)
	}
}
