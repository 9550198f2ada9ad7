package serve

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// The client's side of the protocol: a request of a requests document as
// a client sends it to an Open Inference Protocol server (genaic bench's
// load against a server; any client in Go). Inputs go in name order. A
// request that gives items (Request.Items) is refused: its inputs go
// packed, with their companions, as the package's requests documents
// give them.

// EncodeHTTP returns the body of an HTTP inference request for req. With
// binary, every input travels as binary data after the JSON header (the
// binary tensor extension; hlen is the header's length, sent as the
// HeaderLength header) and every output is asked for as binary data;
// otherwise inputs and outputs are JSON numbers and hlen is 0.
func EncodeHTTP(req vm.Request, binary bool) (body []byte, hlen int, err error) {
	if len(req.Items) > 0 {
		return nil, 0, itemsRefused(req)
	}
	doc := struct {
		ID         string           `json:"id,omitempty"`
		Inputs     []jsonDataTensor `json:"inputs"`
		Parameters map[string]any   `json:"parameters,omitempty"`
	}{ID: req.ID, Inputs: []jsonDataTensor{}}
	var blobs [][]byte
	for _, name := range slices.Sorted(maps.Keys(req.Inputs)) {
		t := req.Inputs[name]
		in := jsonDataTensor{Name: name, Shape: t.Shape, Datatype: Datatype(t.DType)}
		if binary {
			b := toBytes(t)
			blobs = append(blobs, b)
			in.Parameters = map[string]any{"binary_data_size": len(b)}
		} else {
			if in.Data, err = jsonData(t); err != nil {
				return nil, 0, fmt.Errorf("request %s: input `%s` %v", req.ID, name, err)
			}
			if t.Len() == 0 {
				in.Data = []int{}
			}
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
	if len(req.Items) > 0 {
		return nil, itemsRefused(req)
	}
	out := &oippb.ModelInferRequest{ModelName: model, Id: req.ID}
	for _, name := range slices.Sorted(maps.Keys(req.Inputs)) {
		t := req.Inputs[name]
		out.Inputs = append(out.Inputs, &oippb.ModelInferRequest_InferInputTensor{Name: name, Datatype: Datatype(t.DType), Shape: t.Shape})
		out.RawInputContents = append(out.RawInputContents, toBytes(t))
	}
	return out, nil
}

func itemsRefused(req vm.Request) error {
	return fmt.Errorf("request %s gives %s as items: a client sends each input packed, with its companions (offsets, owners, valid lengths), as the package's requests.json does", req.ID, slices.Sorted(maps.Keys(req.Items)))
}
