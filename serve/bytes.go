package serve

import (
	"encoding/binary"
	"encoding/json"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"

	"github.com/genaic/genaic/vm"
)

// BYTES inputs (docs/serve.md): a uint8 media input packed as items
// (encoded images, clips) may come as an OIP BYTES tensor of shape [n],
// each element one item's bytes; it becomes the request's items
// (vm.ByteItems), and the runtime derives the offsets and owners.

// checkBytes refuses a BYTES tensor for an input that is not uint8, and
// one with an items parameter: its elements are its items already.
func (md *Model) checkBytes(name string, shape []int64, items bool) error {
	want, ok := md.known[name]
	if !ok {
		return inputErr("model %s has no input `%s` (its inputs: %s)", md.Name, name, md.inputNames())
	}
	if want != "uint8" {
		return inputErr("input `%s` of model %s is %s; the request sends BYTES, which genaic serve takes only for uint8 media inputs (one encoded item per element)", name, md.Name, Datatype(want))
	}
	if len(shape) != 1 || shape[0] < 1 {
		return inputErr("BYTES input `%s` has shape %v; give shape [n], n ≥ 1, one element per encoded item", name, shape)
	}
	if items {
		return inputErr("BYTES input `%s` has parameter `items`: each element of a BYTES tensor is one encoded item already; leave the parameter out", name)
	}
	return nil
}

// splitBytes reads n elements of the binary BYTES form: each a 4-byte
// little-endian length and that many bytes.
func splitBytes(name string, b []byte, n int64) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, inputErr("BYTES input `%s`: %d bytes left, too few for an element's 4-byte length", name, len(b))
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(l) > uint64(len(b)) {
			return nil, inputErr("BYTES input `%s`: element %d says %d bytes, %d are left", name, len(out), l, len(b))
		}
		out = append(out, b[:l])
		b = b[l:]
	}
	if int64(len(out)) != n {
		return nil, inputErr("BYTES input `%s` has shape [%d] but carries %d elements", name, n, len(out))
	}
	return out, nil
}

// jsonBytes reads the JSON BYTES form: an array of strings (their UTF-8
// bytes; binary media must use the binary form).
func jsonBytes(name string, raw json.RawMessage, n int64) ([][]byte, error) {
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, inputErr("BYTES input `%s`: data is no array of strings (%v); send encoded media in the binary form", name, err)
	}
	if int64(len(ss)) != n {
		return nil, inputErr("BYTES input `%s` has shape [%d] but its data holds %d strings", name, n, len(ss))
	}
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out, nil
}

// addBytes puts a BYTES input into the request. A media input of two
// ownership levels (bytes → items → request) takes any number of items,
// which become the request's items (the runtime derives the offsets and
// owners). One of one level (bytes → request) takes one encoded item per
// request: its bytes are the packed tensor, with the level's offsets [0, n]
// and owner zeros, as the items form derives them.
func (md *Model) addBytes(req *vm.Request, name string, bs [][]byte) error {
	var c *ir.Contract
	for _, in := range md.plan.IR.Inputs {
		if in.Name == name {
			c = in.Contract
		}
	}
	if !takesBytes(c) {
		return inputErr("input `%s` of model %s is no packed media input (token_packed uint8, shape [bytes]); send it as UINT8", name, md.Name)
	}
	return putBytes(req, name, c, bs)
}

// takesBytes reports whether an input of contract c may come as BYTES: a
// uint8 vector packed on one or two ownership levels.
func takesBytes(c *ir.Contract) bool {
	return c != nil && c.DType == "uint8" && c.Layout.Kind == ir.TokenPacked && c.Rank == 1 && (len(c.Layout.Levels) == 1 || len(c.Layout.Levels) == 2)
}

// putBytes puts encoded items into a request as the input name of
// contract c (takesBytes) takes them.
func putBytes(req *vm.Request, name string, c *ir.Contract, bs [][]byte) error {
	switch len(c.Layout.Levels) {
	case 2:
		if req.Items == nil {
			req.Items = map[string][]vm.Item{}
		}
		req.Items[name] = vm.ByteItems(bs...)
		return nil
	case 1:
		if len(bs) != 1 {
			return inputErr("input `%s` takes one encoded item per request (its contract has one ownership level, bytes → request); the request sends %d: send shape [1], or one request per item", name, len(bs))
		}
		l := c.Layout.Levels[0]
		for _, comp := range []string{l.Offsets.Name, l.Owner.Name} {
			if req.Inputs[comp] != nil {
				return inputErr("input `%s` is derived from BYTES input `%s`; leave it out of the request", comp, name)
			}
		}
		n := int64(len(bs[0]))
		req.Inputs[name] = &backend.Tensor{DType: "uint8", Shape: []int64{n}, Data: bs[0]}
		if l.Offsets.Name != "" {
			req.Inputs[l.Offsets.Name] = &backend.Tensor{DType: "int64", Shape: []int64{2}, Data: []int64{0, n}}
		}
		if l.Owner.Name != "" {
			req.Inputs[l.Owner.Name] = &backend.Tensor{DType: "int64", Shape: []int64{n}, Data: make([]int64, n)}
		}
		return nil
	}
	return inputErr("input `%s` has %d ownership levels; BYTES takes inputs of one or two", name, len(c.Layout.Levels))
}
