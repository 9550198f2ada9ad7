package jsonio

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// npyDescrs maps genaic's dtypes to their .npy descriptors and element
// sizes, for reading and writing alike. float16 is carried as its raw
// bits, which are NumPy's <f2; bfloat16 has no NumPy dtype and is left
// out.
var npyDescrs = map[string]struct {
	descr string
	size  int64
}{
	"float16": {"<f2", 2}, "float32": {"<f4", 4}, "float64": {"<f8", 8},
	"int8": {"|i1", 1}, "int16": {"<i2", 2}, "int32": {"<i4", 4}, "int64": {"<i8", 8},
	"uint8": {"|u1", 1}, "uint16": {"<u2", 2}, "uint32": {"<u4", 4}, "uint64": {"<u8", 8},
	"bool": {"|b1", 1},
}

// NPYWritable reports why a tensor of dtype cannot be written as .npy, or
// nil when it can.
func NPYWritable(dtype string) error {
	if _, ok := npyDescrs[dtype]; ok {
		return nil
	}
	if dtype == "bfloat16" {
		return fmt.Errorf("dtype bfloat16 has no .npy form (NumPy has no bfloat16); write the responses inline (leave out --out-dir) or convert the output to float32 in the workflow")
	}
	return fmt.Errorf("dtype %s has no .npy form", dtype)
}

// WriteNPY writes t as a .npy file of format 1.0 (little-endian, C order),
// which NumPy's load and ReadNPY read back.
func WriteNPY(w io.Writer, t *backend.Tensor) error {
	if err := NPYWritable(t.DType); err != nil {
		return err
	}
	d := npyDescrs[t.DType]
	dims := make([]string, len(t.Shape))
	for i, n := range t.Shape {
		dims[i] = fmt.Sprint(n)
	}
	shape := strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", d.descr, shape)
	// The header, its newline included, pads the preamble to a multiple
	// of 64 bytes, so that the payload is aligned.
	const preamble = 10
	pad := 63 - (preamble+len(header))%64
	header += strings.Repeat(" ", pad) + "\n"
	if len(header) > 1<<16-1 {
		return fmt.Errorf("a .npy header of %d bytes is too long for format 1.0", len(header))
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("\x93NUMPY\x01\x00")
	binary.Write(bw, binary.LittleEndian, uint16(len(header)))
	bw.WriteString(header)
	if err := binary.Write(bw, binary.LittleEndian, t.Data); err != nil {
		return err
	}
	return bw.Flush()
}

// Store keeps an output tensor of a response somewhere other than inline
// and returns the path a response names it by ({"npy": path}).
type Store func(id, output string, t *backend.Tensor) (string, error)

// npyRef is an output kept in a .npy file, as a response names it.
type npyRef struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	NPY   string  `json:"npy"`
}

// EncodeResponse encodes one response as the responses document holds it
// (one line of JSON): {"id","outputs":{NAME: TENSOR},"error"}. With a
// store, each output is given to it and written as
// {"dtype","shape","npy": path}; without, inline.
func EncodeResponse(r vm.Response, store Store) ([]byte, error) {
	rj := struct {
		ID      string         `json:"id"`
		Outputs map[string]any `json:"outputs"`
		Error   *ErrorJSON     `json:"error"`
	}{ID: r.ID}
	if r.Err != nil {
		rj.Error = errorJSON(r.Err)
	} else {
		rj.Outputs = make(map[string]any, r.Outputs.Len())
	}
	for name, t := range r.Outputs.All() {
		if r.Err != nil {
			break
		}
		if store == nil {
			tj, err := encodeTensor(t)
			if err != nil {
				return nil, err
			}
			rj.Outputs[name] = tj
			continue
		}
		path, err := store(r.ID, name, t)
		if err != nil {
			return nil, fmt.Errorf("request %q output %q: %w", r.ID, name, err)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		rj.Outputs[name] = npyRef{DType: t.DType, Shape: shape, NPY: path}
	}
	for name, its := range r.Items {
		if r.Err != nil {
			break
		}
		v, err := encodeItemsWith(its, r.ID, name, store)
		if err != nil {
			return nil, err
		}
		rj.Outputs[name] = v
	}
	return json.Marshal(rj)
}

// WriteStatsLine writes stats as the last line of a stream of responses
// (`genaic run --format jsonl --stats`): {"stats": {...}}.
func WriteStatsLine(w io.Writer, stats *vm.Stats) error {
	b, err := json.Marshal(struct {
		Stats *vm.Stats `json:"stats"`
	}{stats})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
