package serve

import "strconv"

// An answer whose outputs all go as binary data has a small JSON part:
// names, shapes, datatypes and sizes. encoding/json would spend most of
// the answer's writing on it (reflection over the response, a map of
// parameters per output, their keys sorted); appendEnvelope writes the
// same bytes directly.

// binaryOutput is what the JSON part says of one output sent as binary
// data.
type binaryOutput struct {
	name, datatype string
	shape          []int64
	items          itemsLayout // where its items lie, for a per-item output
	size           int         // bytes of binary data (-1: it goes as JSON)
}

// appendEnvelope appends the JSON part of an answer whose outputs all go
// as binary data: the bytes json.Marshal writes of the jsonResponse,
// outputs with parameters binary_data_size (and items where an output is
// per item), and no data. It reports false, having appended nothing,
// where a string would need escaping: then json.Marshal writes it.
func appendEnvelope(b []byte, model, version, id string, outs []binaryOutput) ([]byte, bool) {
	if !plainJSON(model) || !plainJSON(version) || !plainJSON(id) {
		return b, false
	}
	for i := range outs {
		if !plainJSON(outs[i].name) || !plainJSON(outs[i].datatype) {
			return b, false
		}
	}
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
		b = append(b, `","parameters":{"binary_data_size":`...)
		b = strconv.AppendInt(b, int64(o.size), 10)
		if o.items.isSet() {
			b = append(b, `,"items":`...)
			b = o.items.appendJSON(b)
		}
		b = append(b, "}}"...)
	}
	return append(b, "]}"...), true
}

// appendInts appends a JSON list of integers, null for a nil slice (as
// encoding/json writes them).
func appendInts(b []byte, xs []int64) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
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
