package serve

import (
	"math"
	"strconv"
)

// An answer's JSON has a fixed structure: the model, the id, and per
// output its name, shape, datatype, parameters (binary_data_size, items)
// and, for an output that goes as JSON, its data. encoding/json would
// spend most of the answer's writing on it (reflection over the response,
// a map of parameters per output, their keys sorted, every number through
// an interface); appendAnswer writes the same bytes directly.

// answerOutput is what an answer's JSON says of one output.
type answerOutput struct {
	name, datatype string
	shape          []int64
	items          itemsLayout // where its items lie, for a per-item output
	size           int         // bytes of binary data (-1: it goes as JSON)
	data           any         // its values, where it goes as JSON (jsonData's)
}

// appendAnswer appends an answer's JSON: the bytes json.Marshal writes of
// the jsonResponse, outputs with parameters binary_data_size (for those
// sent as binary data) and items (for those per item), and the data of
// the others. It reports false, having appended nothing, where a string
// would need escaping or a value is not of a form it writes: then
// json.Marshal writes the answer.
func appendAnswer(b []byte, model, version, id string, outs []answerOutput) ([]byte, bool) {
	if !plainJSON(model) || !plainJSON(version) || !plainJSON(id) {
		return b, false
	}
	for i := range outs {
		if !plainJSON(outs[i].name) || !plainJSON(outs[i].datatype) {
			return b, false
		}
	}
	start := len(b)
	b = append(b, `{"model_name":"`...)
	b = append(b, model...)
	b = append(b, '"')
	if version != "" {
		b = append(b, `,"model_version":"`...)
		b = append(b, version...)
		b = append(b, '"')
	}
	if id != "" {
		b = append(b, `,"id":"`...)
		b = append(b, id...)
		b = append(b, '"')
	}
	b = append(b, `,"outputs":[`...)
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":"`...)
		b = append(b, o.name...)
		b = append(b, `","shape":`...)
		b = appendInts(b, o.shape)
		b = append(b, `,"datatype":"`...)
		b = append(b, o.datatype...)
		b = append(b, '"')
		// The parameters' keys in encoding/json's order: sorted.
		switch {
		case o.size >= 0:
			b = append(b, `,"parameters":{"binary_data_size":`...)
			b = strconv.AppendInt(b, int64(o.size), 10)
			if o.items.isSet() {
				b = append(b, ',')
			}
		case o.items.isSet():
			b = append(b, `,"parameters":{`...)
		}
		if o.items.isSet() {
			b = append(b, `"items":`...)
			b = o.items.appendJSON(b)
		}
		if o.size >= 0 || o.items.isSet() {
			b = append(b, '}')
		}
		if o.size < 0 && o.data != nil {
			var ok bool
			b = append(b, `,"data":`...)
			if b, ok = appendData(b, o.data); !ok {
				return b[:start], false
			}
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), true
}

// appendData appends an output's values (jsonData's) as encoding/json
// writes them, reporting false for a form it does not write (strings,
// which may need escaping, and non-finite floats, which encoding/json
// refuses).
func appendData(b []byte, data any) ([]byte, bool) {
	switch d := data.(type) {
	case []float32:
		return appendList(b, d, func(b []byte, v float32) ([]byte, bool) { return appendFloat(b, float64(v), 32) })
	case []float64:
		return appendList(b, d, func(b []byte, v float64) ([]byte, bool) { return appendFloat(b, v, 64) })
	case []int64:
		return appendList(b, d, appendInt)
	case []int32:
		return appendList(b, d, appendInt)
	case []int16:
		return appendList(b, d, appendInt)
	case []int8:
		return appendList(b, d, appendInt)
	case []int:
		return appendList(b, d, appendInt)
	case []uint64:
		return appendList(b, d, appendUint)
	case []uint32:
		return appendList(b, d, appendUint)
	case []uint16:
		return appendList(b, d, appendUint)
	case []bool:
		return appendList(b, d, func(b []byte, v bool) ([]byte, bool) { return strconv.AppendBool(b, v), true })
	}
	return b, false
}

// appendList appends a JSON list of d's elements, each written by one;
// null for a nil slice, as encoding/json writes it.
func appendList[E any](b []byte, d []E, one func([]byte, E) ([]byte, bool)) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, v := range d {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = one(b, v); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func appendInt[E int64 | int32 | int16 | int8 | int](b []byte, v E) ([]byte, bool) {
	return strconv.AppendInt(b, int64(v), 10), true
}

func appendUint[E uint64 | uint32 | uint16](b []byte, v E) ([]byte, bool) {
	return strconv.AppendUint(b, uint64(v), 10), true
}

// appendFloat writes a float of the given bits as encoding/json does: the
// shortest text that reads back as the same value, in exponent form only
// for magnitudes below 1e-6 or from 1e21 up (as JavaScript writes
// numbers), with an exponent of one digit not padded to two. NaN and the
// infinities are not JSON: it reports false.
func appendFloat(b []byte, v float64, bits int) ([]byte, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return b, false
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 {
		// A float32 is compared as a float32 (with the bounds rounded to
		// float32), as encoding/json compares it.
		small, large := a < 1e-6, a >= 1e21
		if bits == 32 {
			small, large = float32(a) < 1e-6, float32(a) >= 1e21
		}
		if small || large {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, v, format, -1, bits)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 is written e-7
		b = b[:n-1]
	}
	return b, true
}

// appendInts appends a JSON list of integers, null for a nil slice (as
// encoding/json writes them).
func appendInts(b []byte, xs []int64) []byte {
	b, _ = appendList(b, xs, appendInt)
	return b
}

// plainJSON reports whether encoding/json writes s between quotes as it
// stands: printable ASCII without quotes, backslashes or the characters
// it escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// jsonAnswer is the jsonResponse json.Marshal writes where appendAnswer
// does not.
func jsonAnswer(model, version, id string, outs []answerOutput) jsonResponse {
	out := jsonResponse{ModelName: model, ModelVersion: version, ID: id, Outputs: []jsonDataTensor{}}
	for _, o := range outs {
		ot := jsonDataTensor{Name: o.name, Shape: o.shape, Datatype: o.datatype}
		if o.items.isSet() {
			ot.Parameters = map[string]any{itemsParam: o.items.httpValue()}
		}
		if o.size >= 0 {
			if ot.Parameters == nil {
				ot.Parameters = map[string]any{}
			}
			ot.Parameters[dataSizeParam] = o.size
		} else {
			ot.Data = o.data
		}
		out.Outputs = append(out.Outputs, ot)
	}
	return out
}
