package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// HeaderLength is the binary tensor extension's header: the length of the
// JSON part of a body whose binary tensor data follows it.
const HeaderLength = "Inference-Header-Content-Length"

type jsonTensor struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters map[string]any  `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	// size is a decoded request's input's binary_data_size where it is a
	// number (a float64; else nil), kept here, not in Parameters
	// (liftSize): nearly every input of a binary request carries that one
	// parameter, and a map for it cost more than the rest of its header.
	size any
}

// binaryDataSize is the input's binary_data_size parameter, if it has
// one, wherever it is kept.
func (t *jsonTensor) binaryDataSize() (any, bool) {
	if t.size != nil {
		return t.size, true
	}
	v, ok := t.Parameters[dataSizeParam]
	return v, ok
}

// liftSize moves a numeric binary_data_size out of the parameters, which
// become nil where nothing else is left in them: a request decoded by
// encoding/json as decodeFixed reads it.
func (t *jsonTensor) liftSize() {
	v, ok := t.Parameters[dataSizeParam].(float64)
	if !ok {
		return
	}
	t.size = v
	delete(t.Parameters, dataSizeParam)
	if len(t.Parameters) == 0 {
		t.Parameters = nil
	}
}

// dataSizeParam is the binary tensor extension's parameter giving an
// input's or output's bytes of binary data.
const dataSizeParam = "binary_data_size"

// jsonDataTensor is a tensor whose data is Go values, written as JSON: an
// answer's outputs, a client's inputs (client.go).
type jsonDataTensor struct {
	Name       string         `json:"name"`
	Shape      []int64        `json:"shape"`
	Datatype   string         `json:"datatype"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Data       any            `json:"data,omitempty"`
}

type jsonRequest struct {
	ID         string                `json:"id,omitempty"`
	Parameters map[string]any        `json:"parameters,omitempty"`
	Inputs     []jsonTensor          `json:"inputs"`
	Outputs    []jsonRequestedOutput `json:"outputs,omitempty"`
}

// jsonRequestedOutput is an output a request asks for.
type jsonRequestedOutput struct {
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

type jsonResponse struct {
	ModelName    string           `json:"model_name"`
	ModelVersion string           `json:"model_version,omitempty"`
	ID           string           `json:"id,omitempty"`
	Parameters   map[string]any   `json:"parameters,omitempty"`
	Outputs      []jsonDataTensor `json:"outputs"`
}

// Handler returns the HTTP/REST front: health, metadata, inference and
// /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/live", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	})
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if !s.Ready() {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, map[string]bool{"ready": status == http.StatusOK})
	})
	mux.HandleFunc("GET /v2", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"name": "genaic", "version": Version, "extensions": append([]string{"binary_tensor_data"}, tritonExtensions...)})
	})
	s.repositoryRoutes(mux)
	// Triton's statistics and model configuration extensions (triton.go).
	mux.HandleFunc("GET /v2/models/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"model_stats": s.statsOf(nil)})
	})
	for _, prefix := range []string{"/v2/models/{model}", "/v2/models/{model}/versions/{version}"} {
		mux.HandleFunc("GET "+prefix, s.withModel(s.httpMetadata))
		mux.HandleFunc("GET "+prefix+"/ready", s.withModel(func(w http.ResponseWriter, r *http.Request, md *Model) {
			status := http.StatusOK
			if !md.ready.Load() || s.draining.Load() {
				status = http.StatusServiceUnavailable
			}
			writeJSON(w, status, map[string]any{"name": md.Name, "ready": status == http.StatusOK})
		}))
		mux.HandleFunc("POST "+prefix+"/infer", s.withModel(s.httpInfer))
		mux.HandleFunc("GET "+prefix+"/stats", s.withModel(func(w http.ResponseWriter, r *http.Request, md *Model) {
			writeJSON(w, http.StatusOK, map[string]any{"model_stats": s.statsOf(md)})
		}))
		mux.HandleFunc("GET "+prefix+"/config", s.withModel(func(w http.ResponseWriter, r *http.Request, md *Model) {
			writeJSON(w, http.StatusOK, md.config())
		}))
		// The engine's own stats, as `genaic run --stats` writes them:
		// what `genaic inspect --stats URL` shows of a running server.
		mux.HandleFunc("GET "+prefix+"/genaic/stats", s.withModel(func(w http.ResponseWriter, r *http.Request, md *Model) {
			writeJSON(w, http.StatusOK, md.eng.Stats())
		}))
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	return s.bounded(mux)
}

func (s *Server) withModel(h func(http.ResponseWriter, *http.Request, *Model)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("model")
		md := s.model(name)
		if md == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no model %q: this server serves %s", name, s.served())})
			return
		}
		if v := r.PathValue("version"); v != "" && v != Version {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model %s has no version %q: its only version is %s", name, v, Version)})
			return
		}
		h(w, r, md)
	}
}

func (s *Server) httpMetadata(w http.ResponseWriter, r *http.Request, md *Model) {
	writeJSON(w, http.StatusOK, map[string]any{"name": md.Name, "versions": []string{Version}, "platform": "genaic",
		"inputs": md.inputs, "outputs": md.outputs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError answers a failed request: {"error": MESSAGE, "rule": RULE}
// with the rule's status (429 with Retry-After for a full queue).
func writeError(w http.ResponseWriter, err error) {
	re := asRun(err)
	status := httpStatus(re.Rule)
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, map[string]string{"error": re.Error(), "rule": re.Rule})
}

func (s *Server) httpInfer(w http.ResponseWriter, r *http.Request, md *Model) {
	hlen := r.Header.Get(HeaderLength)
	body, err := readBody(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes), r.ContentLength, s.cfg.MaxRequestBytes, hlen)
	if err != nil {
		s.bodyFailed(w, err)
		return
	}
	req, asked, binaryOut, cp, err := s.decodeHTTP(md, hlen, body)
	if err != nil {
		s.refused(md, "http", err)
		writeError(w, err)
		return
	}
	resp := s.infer(r.Context(), md, "http", req, cp)
	if resp.Err != nil {
		writeError(w, resp.Err)
		return
	}
	s.writeHTTP(w, md, resp, asked, binaryOut)
	resp.Release() // written: the writer copied it (release.go)
}

// readBody reads a request's body of size bytes (-1: not known) into a
// buffer of its own, placed so that the binary data that follows a JSON
// header of hlen bytes (the HeaderLength header) starts on an 8-byte
// boundary: the inputs' tensors then view the body instead of copying it
// (fromBytes). The buffer is the request's alone, never pooled, and is
// not written once read: it lives as long as a tensor viewing it.
func readBody(r io.Reader, size, limit int64, hlen string) ([]byte, error) {
	if size < 0 || size > limit {
		return io.ReadAll(r) // the limit's reader says where it is passed
	}
	pad := int64(0)
	if n, err := strconv.ParseInt(hlen, 10, 64); err == nil && n >= 0 {
		pad = (8 - n%8) % 8
	}
	// Words, not bytes: their memory is 8-byte aligned whatever its size.
	buf := memoryOf(make([]uint64, (pad+size+7)/8))
	body := buf[pad : pad+size : pad+size]
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// decodeHTTP reads an inference request: its JSON, and the binary data of
// the inputs whose binary_data_size says so.
func (s *Server) decodeHTTP(md *Model, hlen string, body []byte) (vm.Request, []string, map[string]bool, callParams, error) {
	var req vm.Request
	header, blob := body, []byte(nil)
	if hlen != "" {
		n, err := strconv.Atoi(hlen)
		if err != nil || n < 0 || n > len(body) {
			return req, nil, nil, callParams{}, inputErr("header %s: %q is not a length within the body's %d bytes", HeaderLength, hlen, len(body))
		}
		header, blob = body[:n], body[n:]
	}
	jr, err := decodeHeader(header, !s.wholeJSON)
	if err != nil {
		return req, nil, nil, callParams{}, inputErr("the request is no inference request JSON ({\"inputs\":[{\"name\",\"shape\",\"datatype\",\"data\"}]}): %v", err)
	}
	req.ID = jr.ID
	req.Inputs = make(map[string]*backend.Tensor, len(jr.Inputs))
	for _, in := range jr.Inputs {
		if in.Datatype == "BYTES" {
			_, items := in.Parameters[itemsParam]
			if err := md.checkBytes(in.Name, in.Shape, items); err != nil {
				return req, nil, nil, callParams{}, err
			}
			if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
				return req, nil, nil, callParams{}, inputErr("input `%s` is given twice", in.Name)
			}
			var bs [][]byte
			var err error
			if v, ok := in.binaryDataSize(); ok {
				n, ok := v.(float64)
				if !ok || n < 0 || n != float64(int64(n)) || int(n) > len(blob) {
					return req, nil, nil, callParams{}, inputErr("input `%s`: binary_data_size %v is not a size within the %d binary bytes left", in.Name, v, len(blob))
				}
				bs, err = splitBytes(in.Name, blob[:int(n)], in.Shape[0])
				blob = blob[int(n):]
			} else {
				bs, err = jsonBytes(in.Name, in.Data, in.Shape[0])
			}
			if err != nil {
				return req, nil, nil, callParams{}, err
			}
			if err := md.addBytes(&req, in.Name, bs); err != nil {
				return req, nil, nil, callParams{}, err
			}
			continue
		}
		dt, err := md.checkInput(in.Name, in.Datatype)
		if err != nil {
			return req, nil, nil, callParams{}, err
		}
		if req.Inputs[in.Name] != nil || req.Items[in.Name] != nil {
			return req, nil, nil, callParams{}, inputErr("input `%s` is given twice", in.Name)
		}
		var t *backend.Tensor
		if v, ok := in.binaryDataSize(); ok {
			n, ok := v.(float64)
			if !ok || n < 0 || n != float64(int64(n)) || int(n) > len(blob) {
				return req, nil, nil, callParams{}, inputErr("input `%s`: binary_data_size %v is not a size within the %d binary bytes left", in.Name, v, len(blob))
			}
			t, err = fromBytes(in.Name, dt, in.Shape, blob[:int(n)])
			blob = blob[int(n):]
		} else {
			t, err = fromJSON(in.Name, dt, in.Shape, in.Data)
		}
		if err != nil {
			return req, nil, nil, callParams{}, err
		}
		if v, ok := in.Parameters[itemsParam]; ok {
			if err := addItems(&req.Items, in.Name, t, v); err != nil {
				return req, nil, nil, callParams{}, err
			}
			continue
		}
		req.Inputs[in.Name] = t
	}
	if len(blob) > 0 {
		return req, nil, nil, callParams{}, inputErr("%d bytes of binary data follow the inputs that binary_data_size accounts for", len(blob))
	}
	cp, err := readCallParams(jr.Parameters["timeout"], jr.Parameters["priority"])
	if err != nil {
		return req, nil, nil, cp, err
	}
	binaryAll, _ := jr.Parameters["binary_data_output"].(bool)
	binaryOut := map[string]bool{"": binaryAll}
	asked := make([]string, len(jr.Outputs))
	for i, o := range jr.Outputs {
		asked[i] = o.Name
	}
	if err := md.checkAsked(asked); err != nil {
		return req, nil, nil, callParams{}, err
	}
	for _, o := range jr.Outputs {
		b, ok := o.Parameters["binary_data"].(bool)
		binaryOut[o.Name] = binaryAll || (ok && b)
	}
	return req, asked, binaryOut, cp, nil
}

func (s *Server) writeHTTP(w http.ResponseWriter, md *Model, resp vm.Response, asked []string, binaryOut map[string]bool) {
	names, err := md.outputOrder(resp, asked)
	if err != nil {
		writeError(w, err)
		return
	}
	// Every output is read once: its tensor, and its bytes where it goes
	// as binary data or its values where it goes as JSON.
	outs := make([]answerOutput, len(names))
	var blobs [][]byte
	for i, n := range names {
		t, items, err := output(resp, n)
		if err != nil {
			writeError(w, err)
			return
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{} // a scalar's: the protocol's shape is a list, never null
		}
		outs[i] = answerOutput{name: n, datatype: Datatype(t.DType), shape: shape, items: items, size: -1}
		bin, ok := binaryOut[n]
		if !ok {
			bin = binaryOut[""]
		}
		if bin {
			b := toBytes(t)
			outs[i].size = len(b)
			blobs = append(blobs, b)
		} else if outs[i].data, err = jsonData(t); err != nil {
			writeError(w, backend.Errorf(backend.RunBackend, "output `%s` %v", n, err))
			return
		}
	}
	// The answer is encoded once, into a buffer reused from answer to
	// answer, and written with one Write, which keeps none of it.
	// appendAnswer writes the JSON; where a string needs escaping (or a
	// value is of a form it does not write), encoding/json does.
	buf := answerBuffers.Get().(*[]byte)
	defer putAnswerBuffer(buf)
	b, ok := appendAnswer((*buf)[:0], md.Name, Version, resp.ID, outs)
	if !ok {
		j, err := json.Marshal(jsonAnswer(md.Name, Version, resp.ID, outs))
		if err != nil {
			writeError(w, backend.Errorf(backend.RunBackend, "encoding the response: %v", err))
			return
		}
		b = append(b, j...)
	}
	h := w.Header()
	if len(blobs) == 0 {
		h["Content-Type"] = contentJSON
	} else {
		h["Content-Type"] = contentBinary
		h[HeaderLength] = []string{strconv.Itoa(len(b))}
	}
	for _, blob := range blobs {
		b = append(b, blob...)
	}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.Write(b)
	*buf = b
}

// The Content-Type values of answers, set as the header's values as they
// stand (net/http only reads them).
var (
	contentJSON   = []string{"application/json"}
	contentBinary = []string{"application/octet-stream"}
)

// answerBuffers hold the buffers answers are encoded into.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer bounds the buffers kept for reuse: a rare large answer's
// is left to the collector rather than held for small ones.
const maxPooledAnswer = 1 << 20

func putAnswerBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledAnswer {
		answerBuffers.Put(buf)
	}
}
