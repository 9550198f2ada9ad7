package serve

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// The client's side of the protocol: a request of a requests document as
// a client sends it to an Open Inference Protocol server (genaic bench's
// load against a server; any client in Go). Inputs go in name order; an
// input given as items (Request.Items) goes in the items form (items.go):
// concatenated along their first axis where they agree beyond it, else
// with every item's shape.

// clientInput is one input as a client sends it: its tensor, and where
// its items lie where it is given as items.
type clientInput struct {
	name  string
	t     *backend.Tensor
	items itemsLayout
}

// clientInputs are req's inputs in name order.
func clientInputs(req vm.Request) ([]clientInput, error) {
	var out []clientInput
	for name, t := range req.Inputs {
		out = append(out, clientInput{name: name, t: t})
	}
	for name, items := range req.Items {
		t, l, err := joinItems("input", name, items)
		if err != nil {
			return nil, fmt.Errorf("request %s: %v", req.ID, err)
		}
		out = append(out, clientInput{name, t, l})
	}
	slices.SortFunc(out, func(a, b clientInput) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// EncodeHTTP returns the body of an HTTP inference request for req. With
// binary, every input travels as binary data after the JSON header (the
// binary tensor extension; hlen is the header's length, sent as the
// HeaderLength header) and every output is asked for as binary data;
// otherwise inputs and outputs are JSON numbers and hlen is 0.
func EncodeHTTP(req vm.Request, binary bool) (body []byte, hlen int, err error) {
	return EncodeHTTPWith(req, binary, nil)
}

// EncodeHTTPWith is EncodeHTTP with the request's parameters, such as
// {"priority": 2} or {"timeout": "250ms"}, beside those the encoding sets.
func EncodeHTTPWith(req vm.Request, binary bool, params map[string]any) (body []byte, hlen int, err error) {
	ins, err := clientInputs(req)
	if err != nil {
		return nil, 0, err
	}
	doc := struct {
		ID         string           `json:"id,omitempty"`
		Inputs     []jsonDataTensor `json:"inputs"`
		Parameters map[string]any   `json:"parameters,omitempty"`
	}{ID: req.ID, Inputs: []jsonDataTensor{}}
	var blobs [][]byte
	for _, ci := range ins {
		in := jsonDataTensor{Name: ci.name, Shape: ci.t.Shape, Datatype: Datatype(ci.t.DType), Parameters: map[string]any{}}
		if ci.items.isSet() {
			in.Parameters[itemsParam] = ci.items.httpValue()
		}
		if binary {
			b := toBytes(ci.t)
			blobs = append(blobs, b)
			in.Parameters[dataSizeParam] = len(b)
		} else {
			if in.Data, err = jsonData(ci.t); err != nil {
				return nil, 0, fmt.Errorf("request %s: input `%s` %v", req.ID, ci.name, err)
			}
			if ci.t.Len() == 0 {
				in.Data = []int{}
			}
		}
		if len(in.Parameters) == 0 {
			in.Parameters = nil
		}
		doc.Inputs = append(doc.Inputs, in)
	}
	if binary || len(params) > 0 {
		doc.Parameters = maps.Clone(params)
		if doc.Parameters == nil {
			doc.Parameters = map[string]any{}
		}
	}
	if binary {
		doc.Parameters["binary_data_output"] = true
	}
	if body, err = json.Marshal(doc); err != nil {
		return nil, 0, fmt.Errorf("request %s: %v", req.ID, err)
	}
	if !binary {
		return body, 0, nil
	}
	hlen = len(body)
	for _, b := range blobs {
		body = append(body, b...)
	}
	return body, hlen, nil
}

// EncodeGRPC returns the gRPC inference request for req to model, its
// inputs in raw_input_contents.
func EncodeGRPC(model string, req vm.Request) (*oippb.ModelInferRequest, error) {
	ins, err := clientInputs(req)
	if err != nil {
		return nil, err
	}
	out := &oippb.ModelInferRequest{ModelName: model, Id: req.ID}
	for _, ci := range ins {
		in := &oippb.ModelInferRequest_InferInputTensor{Name: ci.name, Datatype: Datatype(ci.t.DType), Shape: ci.t.Shape}
		if ci.items.isSet() {
			in.Parameters = itemsParams(ci.items)
		}
		out.Inputs = append(out.Inputs, in)
		out.RawInputContents = append(out.RawInputContents, toBytes(ci.t))
	}
	return out, nil
}

// DecodeHTTP reads a successful answer to an HTTP inference request: its
// body and its HeaderLength header ("" where it has none). Outputs in the
// items form come back as the response's Items, each item a view of the
// body.
func DecodeHTTP(hlen string, body []byte) (vm.Response, error) {
	header, blob := body, []byte(nil)
	if hlen != "" {
		n, err := strconv.Atoi(hlen)
		if err != nil || n < 0 || n > len(body) {
			return vm.Response{}, fmt.Errorf("header %s: %q is not a length within the body's %d bytes", HeaderLength, hlen, len(body))
		}
		header, blob = body[:n], body[n:]
	}
	var jr struct {
		ID      string       `json:"id"`
		Outputs []jsonTensor `json:"outputs"`
	}
	if err := json.Unmarshal(header, &jr); err != nil {
		return vm.Response{}, fmt.Errorf("the answer is no inference response JSON: %v", err)
	}
	a := answer{id: jr.ID}
	for _, o := range jr.Outputs {
		dt, err := dtypeOf(o.Name, o.Datatype)
		if err != nil {
			return vm.Response{}, err
		}
		var t *backend.Tensor
		if v, ok := o.Parameters[dataSizeParam]; ok {
			n, ok := v.(float64)
			if !ok || n < 0 || n != float64(int(n)) || int(n) > len(blob) {
				return vm.Response{}, fmt.Errorf("output `%s`: binary_data_size %v is not a size within the %d binary bytes left", o.Name, v, len(blob))
			}
			t, err = fromBytes(o.Name, dt, o.Shape, blob[:int(n)])
			blob = blob[int(n):]
		} else {
			t, err = fromJSON(o.Name, dt, o.Shape, o.Data)
		}
		if err != nil {
			return vm.Response{}, err
		}
		if err := a.add(o.Name, t, o.Parameters[itemsParam]); err != nil {
			return vm.Response{}, err
		}
	}
	return a.response(), nil
}

// DecodeGRPC reads the answer to a gRPC inference request, as DecodeHTTP
// reads an HTTP one.
func DecodeGRPC(m *oippb.ModelInferResponse) (vm.Response, error) {
	raw := m.RawOutputContents
	if len(raw) > 0 && len(raw) != len(m.Outputs) {
		return vm.Response{}, fmt.Errorf("raw_output_contents holds %d entries for %d outputs", len(raw), len(m.Outputs))
	}
	a := answer{id: m.Id}
	for i, o := range m.Outputs {
		dt, err := dtypeOf(o.Name, o.Datatype)
		if err != nil {
			return vm.Response{}, err
		}
		var t *backend.Tensor
		if len(raw) > 0 {
			t, err = fromBytes(o.Name, dt, o.Shape, raw[i])
		} else {
			t, err = fromContents(o.Name, dt, o.Shape, o.Contents)
		}
		if err != nil {
			return vm.Response{}, err
		}
		var items any
		if p := o.Parameters[itemsParam]; p != nil {
			items = paramValue(p)
		}
		if err := a.add(o.Name, t, items); err != nil {
			return vm.Response{}, err
		}
	}
	return a.response(), nil
}

// answer collects a decoded answer's outputs: tensors, and the items of
// those in the items form.
type answer struct {
	id      string
	outputs map[string]*backend.Tensor
	items   map[string][]vm.Item
}

// add adds an output, cut into its items where items (its parameter) is
// given.
func (a *answer) add(name string, t *backend.Tensor, items any) error {
	if items == nil {
		if a.outputs == nil {
			a.outputs = map[string]*backend.Tensor{}
		}
		a.outputs[name] = t
		return nil
	}
	return addItems(&a.items, name, t, items)
}

func (a *answer) response() vm.Response {
	return vm.Response{ID: a.id, Outputs: vm.OutputsOf(a.outputs), Items: a.items}
}
