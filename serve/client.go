package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// The client's side of the protocol: a request of a requests document as
// a client sends it to an Open Inference Protocol server (genaic bench's
// load against a server; any client in Go). Inputs go in name order; an
// input given as items (Request.Items) goes in the items form (its items
// concatenated along their first axis, with the parameter `items`), which
// needs items of plain tensors that agree beyond their first axis.

// clientInput is one input as a client sends it: its tensor, and its
// items' extents where it is given as items.
type clientInput struct {
	name    string
	t       *backend.Tensor
	extents []int64
}

// clientInputs are req's inputs in name order.
func clientInputs(req vm.Request) ([]clientInput, error) {
	var out []clientInput
	for name, t := range req.Inputs {
		out = append(out, clientInput{name: name, t: t})
	}
	for name, items := range req.Items {
		t, extents, err := joinItems("input", name, items)
		if err != nil {
			return nil, fmt.Errorf("request %s: %v", req.ID, err)
		}
		out = append(out, clientInput{name, t, extents})
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
		if ci.extents != nil {
			in.Parameters[itemsParam] = ci.extents
		}
		if binary {
			b := toBytes(ci.t)
			blobs = append(blobs, b)
			in.Parameters["binary_data_size"] = len(b)
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
	if binary {
		doc.Parameters = map[string]any{"binary_data_output": true}
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
		if ci.extents != nil {
			in.Parameters = map[string]*oippb.InferParameter{itemsParam: {ParameterChoice: &oippb.InferParameter_StringParam{StringParam: extentsString(ci.extents)}}}
		}
		out.Inputs = append(out.Inputs, in)
		out.RawInputContents = append(out.RawInputContents, toBytes(ci.t))
	}
	return out, nil
}
