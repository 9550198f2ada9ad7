package serve

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/genaic/genaic/internal/jsondata"
)

// An inference request's header has a fixed structure: an id, parameters,
// the inputs' names, shapes, datatypes, parameters and data, the outputs
// asked for. encoding/json decodes it through reflection, with a map per
// parameters object, which for a small request with binary data costs
// more than the engine spends on the request. decodeFixed reads
// that structure directly and leaves only what is unusual to encoding/json:
// anything it does not read exactly as encoding/json would (an escaped
// string or key, a key given twice, a number a field cannot hold, a null
// where a value is expected, text that is not JSON) makes it report false,
// and the request is decoded as before. FuzzDecodeFixed compares what it
// reads with encoding/json's decoding field by field, FuzzDecodeHTTP the
// requests decoded either way.

// decodeFixed decodes header into a request whose inputs' data are their
// values' text, unchecked (their readers check them); ok is false where
// header is not of the form read.
func decodeFixed(header []byte) (jr jsonRequest, ok bool) {
	p := fixedParser{walker: walker{b: header}}
	ok = p.fields([]string{"id", "parameters", "inputs", "outputs"}, func(field int) bool {
		switch field {
		case 0:
			jr.ID, ok = p.str()
		case 1:
			jr.Parameters, ok = p.params(nil)
		case 2:
			jr.Inputs, ok = p.inputs()
		default:
			ok = p.outputs(&jr)
		}
		return ok
	})
	return jr, ok
}

// fixedParser reads the request's structure with a walker.
type fixedParser struct{ walker }

// fields walks an object (anything else gives up, a null included: that
// is encoding/json's business) whose keys name the fields of names,
// matched as encoding/json matches them, regardless of case; read reads
// the value of the field at its position. Other keys' values are skipped,
// and must be JSON; a field given twice gives up, and so does a key that
// is not plain text (encoding/json would rewrite or refuse it).
func (p *fixedParser) fields(names []string, read func(field int) bool) bool {
	seen := 0
	return p.members(func(key []byte) bool {
		// The key as given, nearly always (plain, as names are); else as
		// encoding/json matches it.
		field := slices.Index(names, string(key))
		if field < 0 {
			if !plainText(key) {
				return false
			}
			field = slices.IndexFunc(names, func(n string) bool { return bytes.EqualFold(key, []byte(n)) })
		}
		switch {
		case field < 0:
			return p.skipValid()
		case seen&(1<<field) != 0:
			return false
		}
		seen |= 1 << field
		return read(field)
	})
}

// words are the literals a parameter may be.
var words = []struct {
	text  string
	value any
}{{"true", true}, {"false", false}, {"null", nil}}

// word reads true, false or null.
func (p *fixedParser) word() (any, bool) {
	for _, w := range words {
		if bytes.HasPrefix(p.b[p.i:], []byte(w.text)) {
			p.i += len(w.text)
			return w.value, true
		}
	}
	return nil, false
}

// plainText reports whether a string's text (no escape in it) reads as
// itself: valid UTF-8 without control characters.
func plainText(text []byte) bool {
	ascii := true
	for _, c := range text {
		if c < 0x20 {
			return false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	return ascii || utf8.Valid(text)
}

// null reads a null, reporting whether there was one.
func (p *fixedParser) null() bool {
	p.space()
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += len("null")
		return true
	}
	return false
}

// skipValid passes over a value the request does not use, which must
// still be JSON, as encoding/json requires of the whole.
func (p *fixedParser) skipValid() bool {
	p.space()
	start := p.i
	return p.skip() && json.Valid(p.b[start:p.i])
}

// str reads a string with no escape, no control character and valid
// UTF-8 (encoding/json would rewrite or refuse the others), or a null
// (the empty string).
func (p *fixedParser) str() (string, bool) {
	text, ok := p.plain()
	return string(text), ok
}

// plain reads what str reads, returning its text (nil for a null).
func (p *fixedParser) plain() ([]byte, bool) {
	if p.null() {
		return nil, true
	}
	if !p.at('"') {
		return nil, false
	}
	text, escaped, ok := p.walker.str()
	if !ok || escaped || !plainText(text) {
		return nil, false
	}
	return text, true
}

// datatype reads a string as str does: one of the protocol's datatypes,
// which every input names, without a string made for it.
func (p *fixedParser) datatype() (string, bool) {
	text, ok := p.plain()
	if dt, known := datatypes[string(text)]; known {
		return dt, ok
	}
	return string(text), ok
}

// datatypes are the protocol's datatypes, each its own value.
var datatypes = func() map[string]string {
	m := map[string]string{"BYTES": "BYTES"}
	for dt := range oipTypes {
		m[dt] = dt
	}
	return m
}()

// number reads a JSON number's text.
func (p *fixedParser) number() ([]byte, bool) {
	p.space()
	end := jsondata.NumberEnd(p.b, p.i)
	if end < 0 {
		return nil, false
	}
	text := p.b[p.i:end]
	p.i = end
	return text, true
}

// list reads a list, calling each for every element, or a null (nil
// list: reported by null).
func (p *fixedParser) list(each func() bool) (null, ok bool) {
	if p.null() {
		return true, true
	}
	if !p.at('[') {
		return false, false
	}
	p.i++
	if p.at(']') {
		p.i++
		return false, true
	}
	for {
		if !each() {
			return false, false
		}
		switch {
		case p.at(','):
			p.i++
		case p.at(']'):
			p.i++
			return false, true
		default:
			return false, false
		}
	}
}

// shape reads a list of integers as encoding/json reads them into int64s.
func (p *fixedParser) shape() ([]int64, bool) {
	dims := make([]int64, 0, 4) // one allocation for the usual ranks
	null, ok := p.list(func() bool {
		text, ok := p.number()
		if !ok {
			return false
		}
		d, err := strconv.ParseInt(string(text), 10, 64)
		dims = append(dims, d)
		return err == nil
	})
	if null {
		return nil, ok
	}
	return dims, ok
}

// params reads a parameters object: strings, numbers (float64s), true,
// false and null directly, lists and objects with encoding/json. Those of
// an input (in) keep a numeric binary_data_size in it, as liftSize does.
func (p *fixedParser) params(in *jsonTensor) (map[string]any, bool) {
	if p.null() {
		return nil, true
	}
	var m map[string]any
	ok := p.members(func(key []byte) bool {
		name, known := protocolKey(key)
		if !known {
			if !plainText(key) {
				return false // encoding/json would rewrite or refuse it
			}
			name = string(key)
		}
		p.space()
		if p.i == len(p.b) {
			return false
		}
		var v any
		switch c := p.b[p.i]; {
		case c == '"':
			s, ok := p.str()
			if !ok {
				return false
			}
			v = s
		case c == 't' || c == 'f' || c == 'n':
			w, ok := p.word()
			if !ok {
				return false
			}
			v = w
		case c == '[' || c == '{':
			// A variable of its own: the one Unmarshal takes the address
			// of lives on the heap.
			var list any
			start := p.i
			if !p.skip() || json.Unmarshal(p.b[start:p.i], &list) != nil {
				return false
			}
			v = list
		default:
			text, ok := p.number()
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(string(text), 64)
			if err != nil {
				return false
			}
			v = f
		}
		if in != nil && name == dataSizeParam {
			if _, number := v.(float64); number {
				in.size = v
				delete(m, name)
				return true
			}
			in.size = nil
		}
		if m == nil {
			m = map[string]any{}
		}
		m[name] = v
		return true
	})
	switch {
	case in != nil && in.size != nil && len(m) == 0:
		m = nil
	case m == nil:
		m = map[string]any{} // {}, which encoding/json makes a map
	}
	return m, ok
}

// protocolKey is a parameter's key as a string where it is one of the
// protocol's keys, which nearly every request carries: without a string
// made for each.
func protocolKey(key []byte) (string, bool) {
	switch string(key) {
	case dataSizeParam:
		return dataSizeParam, true
	case "binary_data":
		return "binary_data", true
	case "binary_data_output":
		return "binary_data_output", true
	case itemsParam:
		return itemsParam, true
	case "timeout":
		return "timeout", true
	case "priority":
		return "priority", true
	}
	return "", false
}

// inputs reads the inputs' list.
func (p *fixedParser) inputs() ([]jsonTensor, bool) {
	ins := make([]jsonTensor, 0, 8) // one allocation for the usual requests
	null, ok := p.list(func() bool {
		var in jsonTensor
		ok := p.fields([]string{"name", "shape", "datatype", "parameters", "data"}, func(field int) bool {
			var ok bool
			switch field {
			case 0:
				in.Name, ok = p.str()
			case 1:
				in.Shape, ok = p.shape()
			case 2:
				in.Datatype, ok = p.datatype()
			case 3:
				in.Parameters, ok = p.params(&in)
			default:
				p.space()
				start := p.i
				ok = p.skip()
				in.Data = json.RawMessage(p.b[start:p.i])
			}
			return ok
		})
		ins = append(ins, in)
		return ok
	})
	if null {
		return nil, ok
	}
	return ins, ok
}

// outputs reads the outputs asked for.
func (p *fixedParser) outputs(jr *jsonRequest) bool {
	outs := []jsonRequestedOutput{}
	null, ok := p.list(func() bool {
		var out jsonRequestedOutput
		ok := p.fields([]string{"name", "parameters"}, func(field int) bool {
			var ok bool
			if field == 0 {
				out.Name, ok = p.str()
			} else {
				out.Parameters, ok = p.params(nil)
			}
			return ok
		})
		outs = append(outs, out)
		return ok
	})
	if !null {
		jr.Outputs = outs
	}
	return ok
}
