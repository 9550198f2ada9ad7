package serve

import (
	"bytes"
	"encoding/json"

	"github.com/genaic/genaic/internal/jsondata"
)

// An inference request's JSON is mostly its inputs' data. encoding/json
// scans every byte of it twice (once to find the end of the request, once
// more to copy each input's data out as raw JSON), which for an image sent
// as JSON costs most of its decoding, though the data itself is read in one
// pass (jsondata). decodeHeader finds the
// data values itself, in one quick pass that only counts brackets and
// skips strings, hands encoding/json the request with each data value
// replaced by null, and the values to the inputs afterwards, unparsed:
// each is read by fromJSON or jsonBytes, which check its text, or, for
// an input whose data is ignored because it comes as binary, checked here.
// A request in any other form than the plain one (its "inputs" given twice,
// an input's "data" twice, an escaped key where these are looked for) is
// decoded whole, as before. Either way the decoded request is the same:
// FuzzDecodeHTTP decodes every body both ways.

// dataSpan is where an input's data value lies in the header.
type dataSpan struct{ start, end int }

// decodeHeader decodes an inference request's JSON header; split says
// whether the data values may be split off first (tests compare with the
// whole decoding).
func decodeHeader(header []byte, split bool) (jsonRequest, error) {
	if split {
		if jr, ok := decodeFixed(header); ok && binaryDataValid(&jr) {
			return jr, nil
		}
		if stripped, spans, ok := splitData(header); ok {
			// One value and nothing after it: json.Unmarshal, which costs
			// less than a Decoder.
			var jr jsonRequest
			if err := json.Unmarshal(stripped, &jr); err != nil || len(jr.Inputs) != len(spans) {
				return decodeJSON(header) // the whole decoding says what is wrong
			} else if join(&jr, header, spans) {
				jr.liftSizes()
				return jr, nil
			}
			return decodeJSON(header)
		}
	}
	return decodeJSON(header)
}

func decodeJSON(header []byte) (jsonRequest, error) {
	var jr jsonRequest
	err := json.NewDecoder(bytes.NewReader(header)).Decode(&jr)
	jr.liftSizes()
	return jr, err
}

// liftSizes lifts every input's binary_data_size (liftSize).
func (jr *jsonRequest) liftSizes() {
	for i := range jr.Inputs {
		jr.Inputs[i].liftSize()
	}
}

// join gives the inputs their data values, reporting false where a value
// that is not otherwise read is not JSON (binaryDataValid).
func join(jr *jsonRequest, header []byte, spans []*dataSpan) bool {
	for i, sp := range spans {
		if sp != nil {
			jr.Inputs[i].Data = json.RawMessage(header[sp.start:sp.end])
		}
	}
	return binaryDataValid(jr)
}

// binaryDataValid reports whether the data value of every input whose
// data comes as binary, which nothing else reads, is JSON, as the whole
// decoding requires.
func binaryDataValid(jr *jsonRequest) bool {
	for i := range jr.Inputs {
		in := &jr.Inputs[i]
		if _, binary := in.binaryDataSize(); binary && in.Data != nil && !json.Valid(in.Data) {
			return false
		}
	}
	return true
}

// splitData returns header with the data value of every input replaced by
// null, and where each value was (nil for an input without one). ok is
// false where header is not of the plain form splitData reads.
func splitData(header []byte) (stripped []byte, spans []*dataSpan, ok bool) {
	w := walker{b: header}
	inputs := false
	ok = w.members(func(key []byte) bool {
		if !bytes.EqualFold(key, []byte("inputs")) {
			return w.skip()
		}
		if inputs {
			return false // given twice: encoding/json merges them
		}
		inputs = true
		spans, ok = w.inputs()
		return ok
	})
	if !ok {
		return nil, nil, false
	}
	// The request ends where its object does: what follows, which the
	// whole decoding does not read either, is left out.
	end, size := w.i, w.i
	for _, sp := range spans {
		if sp != nil {
			size -= sp.end - sp.start - len("null")
		}
	}
	stripped = make([]byte, 0, size)
	at := 0
	for _, sp := range spans {
		if sp != nil {
			stripped = append(append(stripped, header[at:sp.start]...), "null"...)
			at = sp.end
		}
	}
	return append(stripped, header[at:end]...), spans, true
}

// walker finds its way through JSON text without checking it all: what
// it skips, encoding/json or the data's reader checks.
type walker struct {
	b []byte
	i int
}

func (w *walker) space() { w.i = jsondata.SpaceEnd(w.b, w.i) }

// at reports whether the next byte, after white space, is c.
func (w *walker) at(c byte) bool {
	w.space()
	return w.i < len(w.b) && w.b[w.i] == c
}

// members walks an object, calling member with each key, positioned at
// its value, which member must read; an escaped key is refused (it may
// stand for one of the keys looked for).
func (w *walker) members(member func(key []byte) bool) bool {
	if !w.at('{') {
		return false
	}
	w.i++
	if w.at('}') {
		w.i++
		return true
	}
	for {
		if !w.at('"') {
			return false
		}
		key, escaped, ok := w.str()
		if !ok || escaped || !w.at(':') {
			return false
		}
		w.i++
		w.space()
		if !member(key) {
			return false
		}
		switch {
		case w.at(','):
			w.i++
		case w.at('}'):
			w.i++
			return true
		default:
			return false
		}
	}
}

// inputs walks the inputs' list, returning where each input's data is.
func (w *walker) inputs() ([]*dataSpan, bool) {
	if !w.at('[') {
		return nil, w.skip() // not a list: encoding/json says so
	}
	w.i++
	var spans []*dataSpan
	if w.at(']') {
		w.i++
		return spans, true
	}
	for {
		var sp *dataSpan
		if w.at('{') {
			ok := w.members(func(key []byte) bool {
				if !bytes.EqualFold(key, []byte("data")) {
					return w.skip()
				}
				if sp != nil {
					return false // given twice
				}
				sp = &dataSpan{start: w.i}
				ok := w.skip()
				sp.end = w.i
				return ok
			})
			if !ok {
				return nil, false
			}
		} else if !w.skip() {
			return nil, false
		}
		spans = append(spans, sp)
		switch {
		case w.at(','):
			w.i++
		case w.at(']'):
			w.i++
			return spans, true
		default:
			return nil, false
		}
	}
}

// skip passes over one value: a string, an object or list (by counting
// brackets outside strings), or anything else up to the next delimiter.
func (w *walker) skip() bool {
	w.space()
	if w.i == len(w.b) {
		return false
	}
	switch w.b[w.i] {
	case '"':
		_, _, ok := w.str()
		return ok
	case '{', '[':
	default:
		start := w.i
		for w.i < len(w.b) && !delimiter(w.b[w.i]) {
			w.i++
		}
		return w.i > start
	}
	depth := 0
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				w.i++
				return true
			}
		case '"':
			if _, _, ok := w.str(); !ok {
				return false
			}
			continue
		}
		w.i++
	}
	return false
}

func delimiter(c byte) bool {
	switch c {
	case ',', ':', '[', ']', '{', '}', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str reads a string at w.i, returning its text between the quotes and
// whether it holds an escape.
func (w *walker) str() (text []byte, escaped, ok bool) {
	start := w.i + 1
	for i := start; i < len(w.b); i++ {
		switch w.b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			w.i = i + 1
			return w.b[start:i], escaped, true
		}
	}
	return nil, false, false
}
