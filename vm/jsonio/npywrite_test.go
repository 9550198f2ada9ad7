package jsonio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// TestWriteNPYRoundTrip: every dtype with a .npy form is written as format
// 1.0 with an aligned header NumPy accepts, and read back equal.
func TestWriteNPYRoundTrip(t *testing.T) {
	shapes := [][]int64{{}, {3}, {2, 3}, {0, 4}}
	for dtype, d := range npyDescrs {
		for _, shape := range shapes {
			want, err := backend.NewTensor(dtype, shape)
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.ValueOf(want.Data)
			for i := range v.Len() {
				if dtype == "bool" {
					v.Index(i).SetBool(i%2 == 1)
				} else if v.Index(i).CanFloat() {
					v.Index(i).SetFloat(float64(i) + 0.5)
				} else if v.Index(i).CanInt() {
					v.Index(i).SetInt(int64(i) - 2)
				} else {
					v.Index(i).SetUint(uint64(i) + 1)
				}
			}
			var b bytes.Buffer
			if err := WriteNPY(&b, want); err != nil {
				t.Fatalf("%s %v: %v", dtype, shape, err)
			}
			raw := b.Bytes()
			if string(raw[:8]) != "\x93NUMPY\x01\x00" {
				t.Fatalf("%s %v: preamble %q", dtype, shape, raw[:8])
			}
			hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
			header := string(raw[10 : 10+hlen])
			if (10+hlen)%64 != 0 || !strings.HasSuffix(header, "\n") {
				t.Errorf("%s %v: header of %d bytes leaves the payload unaligned or lacks its newline", dtype, shape, hlen)
			}
			if !strings.Contains(header, "'descr': '"+d.descr+"'") || !strings.Contains(header, "'fortran_order': False") {
				t.Errorf("%s %v: header %q", dtype, shape, header)
			}
			if len(shape) == 1 && !strings.Contains(header, "'shape': (3,)") {
				t.Errorf("a one-axis shape must be written as a tuple (3,): %q", header)
			}
			if got, want := len(raw)-10-hlen, int(d.size)*v.Len(); got != want {
				t.Errorf("%s %v: %d payload bytes, want %d", dtype, shape, got, want)
			}
			path := filepath.Join(t.TempDir(), "x.npy")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadNPY(path)
			if err != nil {
				t.Fatalf("%s %v: reading back: %v", dtype, shape, err)
			}
			if got.DType != want.DType || !reflect.DeepEqual(got.Shape, want.Shape) && len(shape) > 0 || !reflect.DeepEqual(got.Data, want.Data) {
				t.Errorf("%s %v: read back %v %v %v, want %v %v %v", dtype, shape, got.DType, got.Shape, got.Data, want.DType, want.Shape, want.Data)
			}
		}
	}
}

// TestWriteNPYRefusesBFloat16: bfloat16 has no NumPy dtype; it is refused
// with a message that says what to do, not written under another dtype.
func TestWriteNPYRefusesBFloat16(t *testing.T) {
	bf, err := backend.NewTensor("bfloat16", []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = WriteNPY(&b, bf)
	if err == nil || !strings.Contains(err.Error(), "bfloat16") || !strings.Contains(err.Error(), "inline") || b.Len() != 0 {
		t.Errorf("bfloat16: %v (%d bytes written), want a refusal naming it and the way out", err, b.Len())
	}
}

// TestEncodeResponseStore: with a store, outputs are named by path with
// their dtype and shape; a failed response stores nothing.
func TestEncodeResponseStore(t *testing.T) {
	x, _ := backend.NewTensor("int64", []int64{2})
	var stored []string
	store := func(id, output string, t *backend.Tensor) (string, error) {
		stored = append(stored, id+"/"+output)
		return id + "/" + output + ".npy", nil
	}
	line, err := EncodeResponse(vm.Response{ID: "r1", Outputs: vm.OutputsOf(map[string]*backend.Tensor{"y": x})}, store)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Outputs map[string]TensorJSON `json:"outputs"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	if y := got.Outputs["y"]; y.NPY != "r1/y.npy" || y.DType != "int64" || !reflect.DeepEqual(y.Shape, []int64{2}) || y.Data != nil {
		t.Errorf("stored output encoded as %s", line)
	}
	fail := vm.Response{ID: "r2", Err: backend.Errorf(backend.RunInput, "bad")}
	if line, err = EncodeResponse(fail, store); err != nil || !strings.Contains(string(line), `"rule":"run/input"`) || len(stored) != 1 {
		t.Errorf("failed response: %s %v (stored %v)", line, err, stored)
	}
}
