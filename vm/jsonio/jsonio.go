// Package jsonio reads and writes the request and response documents of
// `genaic run` (DESIGN §8): tensors inline as JSON or as .npy files.
package jsonio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/jsondata"
	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
)

// The request and response documents of `genaic run` (DESIGN §8):
//
//	{"requests":[{"id","inputs":{NAME: TENSOR}}]}
//	{"responses":[{"id","outputs":{NAME: TENSOR},"error":{"rule","message"}|null}],"stats":{...}}
//
// where a TENSOR is {"dtype","shape","data":[...]}, {"npy": "relative/path.npy"}
// or {"file": "relative/path"} (a uint8 [n] of the file's bytes: an
// encoded image, a WAV clip), and a token_packed input or output may
// instead be {"items": [TENSOR, ...]}
// (two levels: {"items": [{"items": [TENSOR, ...]}, ...]}; items.go).

// requestJSON is one request of a requests document.
type requestJSON struct {
	ID     string                     `json:"id"`
	Inputs map[string]json.RawMessage `json:"inputs"`
}

// TensorJSON is a tensor written inline.
type TensorJSON struct {
	DType string          `json:"dtype"`
	Shape []int64         `json:"shape"`
	Data  json.RawMessage `json:"data"`
	NPY   string          `json:"npy,omitempty"`
	// File names a file whose bytes are the tensor, uint8 [n]: an
	// encoded image or clip for an adapter's media input.
	File string `json:"file,omitempty"`
	// Items, when set, makes this value a list of items rather than a
	// tensor (items.go): each a TENSOR or, one level down, {"items": [...]}.
	Items []json.RawMessage `json:"items,omitempty"`
}

// ReadOptions say how a requests document's .npy paths are read.
type ReadOptions struct {
	// AllowAbs takes absolute .npy paths as given; without it they are
	// refused, as is every relative path that leaves the requests folder
	// (by `..` or by a symbolic link).
	AllowAbs bool
	// MaxNPYBytes bounds the payload of one .npy file; 0 means
	// DefaultMaxNPYBytes.
	MaxNPYBytes int64
}

// DefaultMaxNPYBytes is the largest .npy payload read by default (1 GiB).
const DefaultMaxNPYBytes = 1 << 30

// ReadRequests decodes a requests document; .npy paths are relative to
// baseDir and confined to it (ReadOptions{}).
func ReadRequests(r io.Reader, baseDir string) ([]vm.Request, error) {
	return ReadRequestsWith(r, baseDir, ReadOptions{})
}

// ReadRequestsWith decodes a requests document. A document that is not a
// requests document, or repeats an id, is an error; a request whose
// tensor is malformed (its data disagrees with its shape, its dtype is
// unknown, a value is not of its dtype, its .npy file is refused) is
// returned with Err set (run/input, naming the input), so that it fails
// alone. The document is read a request at a time: what it holds beyond
// the decoded tensors is one request's text, however long the document.
func ReadRequestsWith(r io.Reader, baseDir string, opts ReadOptions) ([]vm.Request, error) {
	var out []vm.Request
	var seen map[string]bool
	list := func() { // a repeated "requests" field replaces the earlier list
		out, seen = nil, map[string]bool{}
	}
	err := eachRequest(r, list, func(i int, rq *requestJSON) error {
		id := rq.ID
		if id == "" {
			id = fmt.Sprint(i)
		}
		if seen[id] {
			return fmt.Errorf("requests[%d]: id %q is used twice", i, id)
		}
		seen[id] = true
		out = append(out, decodeRequest(id, rq, baseDir, opts))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachRequest walks a document {"requests": [REQUEST, ...]}, decoding one
// request at a time and handing it to f with its index, as encoding/json
// would decode the whole document: field names match regardless of case,
// any other field is refused, a null document or list holds no request,
// and text after the document is not read. list is called where each
// "requests" field starts (a later one replaces an earlier one). An error
// of f stops the walk and is returned as it is.
func eachRequest(r io.Reader, list func(), f func(i int, rq *requestJSON) error) error {
	dec := json.NewDecoder(&squeezed{r: r})
	dec.DisallowUnknownFields()
	bad := func(err error) error {
		return fmt.Errorf("requests: %v (want {\"requests\":[{\"id\",\"inputs\":{NAME: TENSOR}}]})", err)
	}
	if err := openValue(dec, '{', "a requests document"); err == errNull {
		return nil
	} else if err != nil {
		return bad(err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		if name, _ := key.(string); !strings.EqualFold(name, "requests") {
			return bad(fmt.Errorf("json: unknown field %q", name))
		}
		list()
		if err := openValue(dec, '[', `the field "requests" (a list)`); err == errNull {
			continue
		} else if err != nil {
			return bad(err)
		}
		for i := 0; dec.More(); i++ {
			var rq requestJSON
			if err := dec.Decode(&rq); err != nil {
				return bad(fmt.Errorf("requests[%d]: %v", i, err))
			}
			if err := f(i, &rq); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the list's end
			return bad(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the document's end
		return bad(err)
	}
	return nil
}

// squeezed reads r with each run of whitespace outside JSON strings cut
// to one space, which means the same to a JSON decoder. encoding/json's
// Decoder keeps the whitespace it peeks past in its buffer and scans it
// again after every read: from a pipe, whose reads are small, a long run
// of whitespace cost time quadratic in its length.
type squeezed struct {
	r                        io.Reader
	inString, escaped, space bool
}

func (s *squeezed) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		m := 0
		for _, c := range p[:n] {
			switch {
			case s.inString:
				s.inString = s.escaped || c != '"'
				s.escaped = !s.escaped && c == '\\'
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				if s.space {
					continue
				}
				s.space, c = true, ' '
			default:
				s.space, s.inString = false, c == '"'
			}
			p[m] = c
			m++
		}
		if m > 0 || err != nil || n == 0 {
			return m, err
		}
	}
}

// errNull is what openValue reports for a JSON null.
var errNull = errors.New("null")

// openValue reads the token that opens an object or a list (delim),
// naming what was wanted (what) when the value is of another kind; a
// null is errNull.
func openValue(dec *json.Decoder, delim json.Delim, what string) error {
	tok, err := dec.Token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return errNull
	case tok == delim:
		return nil
	}
	kind := "a value"
	switch v := tok.(type) {
	case json.Delim:
		kind = map[json.Delim]string{'{': "an object", '[': "a list"}[v]
	case string:
		kind = "a string"
	case bool:
		kind = "a boolean"
	case float64, json.Number:
		kind = "a number"
	}
	return fmt.Errorf("json: cannot unmarshal %s into %s", kind, what)
}

// decodeRequest decodes one request's inputs; a malformed one makes the
// request carry a run/input error naming it.
func decodeRequest(id string, rq *requestJSON, baseDir string, opts ReadOptions) vm.Request {
	req := vm.Request{ID: id, Inputs: map[string]*backend.Tensor{}}
	for _, name := range slices.Sorted(maps.Keys(rq.Inputs)) {
		t, items, err := decodeInput(rq.Inputs[name], baseDir, opts)
		if err != nil {
			req.Inputs, req.Items, req.Err = nil, nil, backend.Errorf(backend.RunInput, "input `%s`: %v", name, err)
			break
		}
		if items != nil {
			if req.Items == nil {
				req.Items = map[string][]vm.Item{}
			}
			req.Items[name] = items
			continue
		}
		req.Inputs[name] = t
	}
	return req
}

func decodeTensor(raw json.RawMessage, baseDir string, opts ReadOptions) (*backend.Tensor, error) {
	tj, err := parseTensorJSON(raw)
	if err != nil {
		return nil, err
	}
	if tj.Items != nil {
		return nil, fmt.Errorf("holds items where one tensor is expected")
	}
	return tj.tensor(baseDir, opts)
}

// parseTensorJSON reads a TENSOR or an items value.
func parseTensorJSON(raw json.RawMessage) (TensorJSON, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var tj TensorJSON
	if err := dec.Decode(&tj); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "":
			err = fmt.Errorf("is %s, not a tensor", typeErrKind(te.Value))
		case errors.As(err, &te):
			err = fmt.Errorf("field %q cannot be %s", te.Field, typeErrKind(te.Value))
		}
		return tj, fmt.Errorf("%v (want {\"dtype\",\"shape\",\"data\"}, {\"npy\": path}, {\"file\": path} or {\"items\": [...]})", err)
	}
	if tj.Items != nil && (tj.DType != "" || tj.Shape != nil || tj.Data != nil || tj.NPY != "" || tj.File != "") {
		return tj, fmt.Errorf("holds both items and the fields of a tensor; give {\"items\": [...]} alone, or one tensor")
	}
	if tj.File != "" && (tj.DType != "" || tj.Shape != nil || tj.Data != nil || tj.NPY != "") {
		return tj, fmt.Errorf("holds both a file and the fields of a tensor; give {\"file\": path} alone (its bytes are a uint8 tensor)")
	}
	return tj, nil
}

// tensor decodes an inline, .npy or file tensor.
func (tj TensorJSON) tensor(baseDir string, opts ReadOptions) (*backend.Tensor, error) {
	if tj.NPY != "" {
		return openNPY(baseDir, tj.NPY, opts)
	}
	if tj.File != "" {
		return openBytes(baseDir, tj.File, opts)
	}
	d, ok := ir.LookupDType(tj.DType)
	if !ok {
		msg := fmt.Sprintf("unknown dtype %q", tj.DType)
		if near := diag.Nearest(tj.DType, ir.DTypeSpellings()); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return nil, errors.New(msg)
	}
	n, err := checkedElements(tj.Shape)
	if err != nil {
		return nil, err
	}
	if t, ok := fastData(d.Name, tj.Shape, n, tj.Data); ok {
		return t, nil
	}
	return slowData(d.Name, tj.Shape, n, tj.Data)
}

// fastData reads the common form of inline data, a flat list of plain
// numbers (internal/jsondata), in one pass; ok is false for anything
// else, which slowData then reads. FuzzTensorData checks that whatever
// fastData reads, slowData reads the same.
func fastData(dtype string, shape []int64, n int64, data []byte) (*backend.Tensor, bool) {
	if n > int64(len(data)) { // every element takes a byte: refused before allocating
		return nil, false
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil || !jsondata.Fill(t, data, dataOptions) {
		return nil, false
	}
	t.Shape = append([]int64{}, shape...)
	return t, true
}

// dataOptions read inline data as a flat list, 16-bit floats written as
// numbers (their values, as genaic serve reads them, not their bits).
var dataOptions = jsondata.Options{MaxNesting: 1, F16: backend.Float32ToHalf, BF16: backend.Float32ToBFloat16}

// halfFrom converts a float32 to the bits of a 16-bit float dtype; nil for
// any other dtype.
func halfFrom(dtype string) func(float32) uint16 {
	switch dtype {
	case "float16":
		return dataOptions.F16
	case "bfloat16":
		return dataOptions.BF16
	}
	return nil
}

// slowData reads inline data with encoding/json, saying what is wrong.
func slowData(dtype string, shape []int64, n int64, raw []byte) (*backend.Tensor, error) {
	// 16-bit floats are written as numbers: read as float32, whose range
	// and null they share, then rounded.
	to := halfFrom(dtype)
	held := dtype
	if to != nil {
		held = "float32"
	}
	empty, err := backend.NewTensor(held, []int64{0})
	if err != nil {
		return nil, err
	}
	ptr := reflect.New(reflect.TypeOf(empty.Data))
	if err := json.Unmarshal(raw, ptr.Interface()); err != nil {
		return nil, badData(dtype, reflect.TypeOf(empty.Data).Elem(), raw)
	}
	data := ptr.Elem()
	if int64(data.Len()) != n {
		return nil, fmt.Errorf("data holds %d elements, shape %v holds %d", data.Len(), shape, n)
	}
	if data.IsNil() {
		data = reflect.ValueOf(empty.Data)
	}
	out := data.Interface()
	if to != nil {
		f := out.([]float32)
		bits := make([]uint16, len(f))
		for i, v := range f {
			bits[i] = to(v)
		}
		out = bits
	}
	return &backend.Tensor{DType: dtype, Shape: append([]int64{}, shape...), Data: out}, nil
}

// badData says what keeps raw, which encoding/json refused, from being
// data of dtype (held as elements of type elem): not a list, or the first
// element that is not a value of dtype (a number out of a float's range,
// fractional or out of an integer's range, or no number at all). It names
// elements by index, never by Go type.
func badData(dtype string, elem reflect.Type, raw []byte) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return fmt.Errorf("data is not a flat list of %s values", dtype)
	}
	one := reflect.New(elem)
	for i, e := range elems {
		if json.Unmarshal(e, one.Interface()) == nil {
			continue
		}
		var n json.Number
		switch {
		case dtype == "bool" || jsonKind(e) != "a number" || json.Unmarshal(e, &n) != nil:
			return fmt.Errorf("data element %d is %s, not a %s", i, jsonKind(e), dtype)
		case (strings.HasPrefix(dtype, "int") || strings.HasPrefix(dtype, "uint")) && !integral(n):
			return fmt.Errorf("data element %d, %s, is not an integer, which %s holds", i, n, dtype)
		}
		return fmt.Errorf("data element %d, %s, is out of the range of %s", i, n, dtype)
	}
	return fmt.Errorf("data is not a flat list of %s values", dtype)
}

// integral reports whether n is a whole number, whatever its size.
func integral(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f)
}

// typeErrKind words the kind of value encoding/json names in a type
// error ("object", "array", "number 1e39", ...).
func typeErrKind(v string) string {
	switch v {
	case "object":
		return "an object"
	case "array":
		return "a list"
	case "bool":
		return "a boolean"
	}
	return "a " + v
}

// jsonKind names the kind of a JSON value, for messages.
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "empty"
	case t[0] == '"':
		return "a string"
	case t[0] == '[':
		return "a list"
	case t[0] == '{':
		return "an object"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == 'n':
		return "null"
	}
	return "a number"
}

// maxElements bounds the tensors a request document or .npy file may
// declare, so that a hostile shape is refused instead of allocated.
const maxElements = 1 << 32

// checkedElements returns the element count of a shape, refusing negative
// extents and counts past maxElements (an overflowing product included).
func checkedElements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative extent", shape)
		}
		if d != 0 && n > maxElements/d {
			return 0, fmt.Errorf("shape %v holds more than %d elements", shape, int64(maxElements))
		}
		n *= d
	}
	return n, nil
}

// ErrorJSON is a failed request's error.
type ErrorJSON struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Location is where the package's metadata document declares the port
	// or invoke the error concerns, when the runtime knows it.
	Location *LocationJSON `json:"location,omitempty"`
}

// LocationJSON is a position in the package's metadata document and the
// YAML path there.
type LocationJSON struct {
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Path   string `json:"path"`
}

// WriteResponses encodes responses (and stats, when given): one response
// per line, so that large tensors stay readable.
func WriteResponses(w io.Writer, rs []vm.Response, stats *vm.Stats) error {
	return WriteResponsesWith(w, rs, stats, nil)
}

// WriteResponsesWith is WriteResponses with each output tensor given to
// store (see EncodeResponse) instead of written inline, when store is set.
func WriteResponsesWith(w io.Writer, rs []vm.Response, stats *vm.Stats, store Store) error {
	var b bytes.Buffer
	b.WriteString("{\"responses\": [")
	for i, r := range rs {
		line, err := EncodeResponse(r, store)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]")
	if stats != nil {
		sj, err := json.MarshalIndent(stats, "", "  ")
		if err != nil {
			return err
		}
		b.WriteString(",\n\"stats\": ")
		b.Write(sj)
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

func errorJSON(err error) *ErrorJSON {
	re := vm.AsRunError(err)
	ej := &ErrorJSON{Rule: re.Rule, Message: re.Message}
	if re.At != nil {
		ej.Location = &LocationJSON{Line: re.At.Line, Column: re.At.Col, Path: re.At.Path}
	}
	return ej
}

func encodeTensor(t *backend.Tensor) (*TensorJSON, error) {
	data := t.Data
	if bits, ok := data.([]uint16); ok && halfFrom(t.DType) != nil {
		// 16-bit floats are written as their values, as read.
		f := make([]float32, len(bits))
		for i := range bits {
			v, _ := t.Float64At(int64(i))
			f[i] = float32(v)
		}
		data = f
	}
	if f, ok := data.([]float32); ok {
		// JSON has no NaN or infinities; write them as null.
		vals := make([]any, len(f))
		for i, v := range f {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				vals[i] = nil
			} else {
				vals[i] = v
			}
		}
		data = vals
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	shape := t.Shape
	if shape == nil {
		shape = []int64{}
	}
	return &TensorJSON{DType: t.DType, Shape: shape, Data: b}, nil
}

// ResponseFile is the decoded form of a responses document, for tests and
// tools that read `genaic run` output.
type ResponseFile struct {
	Responses []struct {
		ID      string                `json:"id"`
		Outputs map[string]TensorJSON `json:"outputs"`
		Error   *ErrorJSON            `json:"error"`
	} `json:"responses"`
	Stats *vm.Stats `json:"stats"`
}

// Tensor decodes an inline tensor of a response.
func (tj TensorJSON) Tensor() (*backend.Tensor, error) {
	raw, err := json.Marshal(tj)
	if err != nil {
		return nil, err
	}
	return decodeTensor(raw, "", ReadOptions{})
}

// npy: format versions 1.0, 2.0 and 3.0, little-endian, C order; the
// dtypes are those of npyDescrs (npy.go).
var npyDTypes = map[string]string{}

var npySizes = map[string]int64{}

func init() {
	for dtype, d := range npyDescrs {
		npyDTypes[d.descr], npySizes[d.descr] = dtype, d.size
	}
}

// maxNPYHeader bounds a .npy header (NumPy itself refuses headers past
// 10,000 bytes by default).
const maxNPYHeader = 1 << 16

// openNPY opens the .npy file a requests document names (openLocal).
func openNPY(baseDir, name string, opts ReadOptions) (*backend.Tensor, error) {
	f, err := openLocal(baseDir, name, ".npy path", opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNPY(f, name, opts.MaxNPYBytes)
}

// openBytes reads the file a requests document names (openLocal) whole,
// as a uint8 tensor [n], up to the .npy payload bound.
func openBytes(baseDir, name string, opts ReadOptions) (*backend.Tensor, error) {
	f, err := openLocal(baseDir, name, "file path", opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := opts.MaxNPYBytes
	if limit <= 0 {
		limit = DefaultMaxNPYBytes
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("file path %q: %v", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("file path %q: the file holds more than %d bytes", name, limit)
	}
	return &backend.Tensor{DType: "uint8", Shape: []int64{int64(len(b))}, Data: b}, nil
}

// openLocal opens the file a requests document names (what says which
// kind, for messages): relative to baseDir and inside it, unless absolute
// paths are allowed, in which case an absolute path is taken as given.
// Only a regular file is opened.
func openLocal(baseDir, name, what string, opts ReadOptions) (*os.File, error) {
	p := filepath.FromSlash(name)
	if filepath.IsAbs(p) || strings.HasPrefix(name, "/") {
		if !opts.AllowAbs {
			return nil, fmt.Errorf("%s %q is absolute; paths are relative to the requests folder (give --allow-abs to take absolute paths as given)", what, name)
		}
		f, _, err := safefile.Open(p)
		return f, err
	}
	if !filepath.IsLocal(p) {
		return nil, fmt.Errorf("%s %q leaves the requests folder; name a file inside it", what, name)
	}
	if baseDir == "" {
		baseDir = "."
	}
	// The path is confined as written: relative, with no `..` that
	// leaves baseDir. A symbolic link inside baseDir is followed wherever
	// it points (a folder of data linked in, say): whoever placed it
	// controls the folder, as they control the document.
	f, _, err := safefile.Open(filepath.Join(baseDir, p))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", what, name, err)
	}
	return f, nil
}

// ReadNPY reads a NumPy .npy file (format 1.0, 2.0 or 3.0, little-endian,
// C order) of at most DefaultMaxNPYBytes of payload. Only a regular file
// is read, and its header is checked against its size before anything is
// allocated.
func ReadNPY(path string) (*backend.Tensor, error) {
	return readNPYFile(path, 0)
}

func readNPYFile(path string, limit int64) (*backend.Tensor, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNPY(f, path, limit)
}

// readNPY reads an opened .npy file: the header first, then, once the
// header's shape agrees with the file's size and the limit, the payload.
func readNPY(f *os.File, path string, limit int64) (*backend.Tensor, error) {
	if limit <= 0 {
		limit = DefaultMaxNPYBytes
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	var pre [12]byte
	if _, err := io.ReadFull(f, pre[:10]); err != nil || string(pre[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("%s is not a .npy file", path)
	}
	var hlen, start int64
	switch pre[6] {
	case 1:
		hlen, start = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		if _, err := io.ReadFull(f, pre[10:12]); err != nil {
			return nil, fmt.Errorf("%s: truncated header", path)
		}
		hlen, start = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, fmt.Errorf("%s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)", path, pre[6], pre[7])
	}
	if hlen > maxNPYHeader || start+hlen > fi.Size() {
		return nil, fmt.Errorf("%s: header of %d bytes is truncated or longer than %d bytes", path, hlen, maxNPYHeader)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, fmt.Errorf("%s: truncated header", path)
	}
	header := string(hb)
	descr := between(header, "'descr': '", "'")
	dtype, ok := npyDTypes[descr]
	if !ok {
		return nil, fmt.Errorf("%s: dtype %q is not supported (use little-endian f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, u8 or b1)", path, descr)
	}
	if strings.Contains(header, "'fortran_order': True") {
		return nil, fmt.Errorf("%s: Fortran order is not supported; save with C order", path)
	}
	var shape []int64
	for _, field := range strings.Split(between(header, "'shape': (", ")"), ",") {
		if field = strings.TrimSpace(field); field != "" {
			var n int64
			if _, err := fmt.Sscan(field, &n); err != nil || n < 0 {
				return nil, fmt.Errorf("%s: bad shape in header %q", path, header)
			}
			shape = append(shape, n)
		}
	}
	n, err := checkedElements(shape)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	size := n * npySizes[descr]
	if size > limit {
		return nil, fmt.Errorf("%s: shape %v of %s holds %d bytes, above the limit of %d", path, shape, dtype, size, limit)
	}
	if payload := fi.Size() - start - hlen; payload != size {
		return nil, fmt.Errorf("%s: %d payload bytes for shape %v of %s", path, payload, shape, dtype)
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, err
	}
	if err := binary.Read(io.LimitReader(f, size), binary.LittleEndian, t.Data); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}

func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}
