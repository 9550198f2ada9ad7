// Package jsondata reads a tensor's elements from JSON text in one pass:
// arrays of plain numbers, true and false, and nulls, the form nearly all
// tensor data takes. encoding/json decodes such data element by element
// through reflection, at about 11 MB/s (150 ms for one 3×224×224 image);
// Fill reads it with strconv at over ten times that, into the tensor, and
// reports false for anything else, which its callers then decode with
// encoding/json to say what is wrong. What Fill takes, encoding/json
// takes too, with the same values bit for bit: each caller's fuzz target
// decodes every input both ways (serve's FuzzJSONData, jsonio's
// FuzzTensorData).
package jsondata

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/genaic/genaic/backend"
)

// Options say how deep arrays nest and how 16-bit floats are written.
type Options struct {
	// MaxNesting is how many arrays may be open at once: 1 for a flat
	// list.
	MaxNesting int
	// F16 and BF16 convert a number read for a float16 or bfloat16
	// element into its bits; where nil, the element is its bits, written
	// as an integer.
	F16, BF16 func(float32) uint16
}

// Fill writes data's leaves into t's elements in order. It reports true
// when data is arrays nested at most MaxNesting deep, holding exactly
// t.Len() leaves, each a JSON number t's dtype holds, true or false (for
// a bool tensor), or null (which leaves its element as it is, zero in a
// new tensor, as encoding/json does), with JSON white space between them;
// false for any other data (strings, objects, a number its dtype cannot
// hold, an integer written 1.0 or 1e2, another count, text that is not
// JSON), having written some elements, maybe.
func Fill(t *backend.Tensor, data []byte, opts Options) bool {
	store, ok := storer(t, opts)
	if !ok {
		return false
	}
	n := t.Len()
	sc := leafScanner{data: data, most: max(opts.MaxNesting, 1)}
	if !sc.open() {
		return false
	}
	i := int64(0)
	for {
		leaf, kind, more := sc.next()
		if !more {
			break
		}
		if i == n || (kind != leafNull && !store(int(i), leaf, kind)) {
			return false
		}
		i++
	}
	return !sc.bad && i == n
}

// leafKind is what a leaf of the data is.
type leafKind uint8

const (
	leafNumber leafKind = iota
	leafTrue
	leafFalse
	leafNull
)

// leafScanner walks nested JSON arrays leaf by leaf.
type leafScanner struct {
	data  []byte
	pos   int
	most  int  // arrays that may be open at once
	depth int  // arrays open
	bad   bool // the data is not of the form Fill reads
	after bool // a value was just read: a comma or a close comes next
}

// open reads the outer array's opening bracket.
func (s *leafScanner) open() bool {
	s.space()
	if s.pos == len(s.data) || s.data[s.pos] != '[' {
		return false
	}
	s.pos++
	s.depth = 1
	return true
}

func (s *leafScanner) space() { s.pos = SpaceEnd(s.data, s.pos) }

// SpaceEnd returns where the JSON white space (space, tab, newline,
// carriage return) that starts at b[i] ends.
func SpaceEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// next returns the next leaf; more is false at the end of the outer array
// (and then only white space may follow) or where the data is not of the
// form read (bad).
func (s *leafScanner) next() (leaf []byte, kind leafKind, more bool) {
	for {
		s.space()
		if s.pos == len(s.data) {
			s.bad = true
			return nil, 0, false
		}
		c := s.data[s.pos]
		switch {
		case c == ']':
			s.pos++
			s.depth--
			s.after = true
			if s.depth == 0 {
				s.space()
				s.bad = s.pos != len(s.data)
				return nil, 0, false
			}
			continue
		case s.after && c == ',':
			s.pos++
			s.after = false
			s.space()
			if s.pos < len(s.data) && s.data[s.pos] == ']' { // [1,]
				s.bad = true
				return nil, 0, false
			}
			continue
		case s.after:
			s.bad = true
			return nil, 0, false
		case c == '[':
			if s.depth == s.most {
				s.bad = true
				return nil, 0, false
			}
			s.pos++
			s.depth++
			continue
		}
		s.after = true
		switch c {
		case 't':
			return s.literal("true", leafTrue)
		case 'f':
			return s.literal("false", leafFalse)
		case 'n':
			return s.literal("null", leafNull)
		}
		start := s.pos
		if !s.number() {
			s.bad = true
			return nil, 0, false
		}
		return s.data[start:s.pos], leafNumber, true
	}
}

func (s *leafScanner) literal(word string, kind leafKind) ([]byte, leafKind, bool) {
	end := s.pos + len(word)
	if end > len(s.data) || string(s.data[s.pos:end]) != word {
		s.bad = true
		return nil, 0, false
	}
	leaf := s.data[s.pos:end]
	s.pos = end
	return leaf, kind, true
}

// number reads a JSON number.
func (s *leafScanner) number() bool {
	end := NumberEnd(s.data, s.pos)
	if end < 0 {
		return false
	}
	s.pos = end
	return true
}

// NumberEnd returns where the JSON number that starts at b[i] ends, or -1
// where none does: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// (strconv alone would also take "inf", "0x1p3", "+1" or "1_0").
func NumberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// storer returns what writes a leaf into element i of t, reporting false
// where encoding/json would refuse it: as encoding/json, a float is
// strconv.ParseFloat's at the dtype's size (out of range is refused), an
// integer strconv.ParseInt's or ParseUint's within the dtype's range,
// and a 16-bit float is read as a float32 and converted by half, or,
// without it, is its bits written as an integer.
func storer(t *backend.Tensor, opts Options) (store, bool) {
	switch d := t.Data.(type) {
	case []bool:
		return func(i int, _ []byte, kind leafKind) bool {
			d[i] = kind == leafTrue
			return kind != leafNumber
		}, true
	case []float32:
		return floats(d, 32), true
	case []float64:
		return floats(d, 64), true
	case []int8:
		return ints(d, 8), true
	case []int16:
		return ints(d, 16), true
	case []int32:
		return ints(d, 32), true
	case []int64:
		return ints(d, 64), true
	case []uint8:
		return uints(d, 8), true
	case []uint32:
		return uints(d, 32), true
	case []uint64:
		return uints(d, 64), true
	case []uint16:
		to := map[string]func(float32) uint16{"float16": opts.F16, "bfloat16": opts.BF16}[t.DType]
		if to == nil {
			return uints(d, 16), true
		}
		return func(i int, leaf []byte, kind leafKind) bool {
			f, ok := parseFloat(leaf, kind, 32)
			d[i] = to(float32(f))
			return ok
		}, true
	}
	return nil, false
}

// store writes a leaf into element i, reporting false where its tensor's
// dtype cannot hold it.
type store func(i int, leaf []byte, kind leafKind) bool

func floats[T float32 | float64](d []T, bits int) store {
	return func(i int, leaf []byte, kind leafKind) bool {
		f, ok := parseFloat(leaf, kind, bits)
		d[i] = T(f)
		return ok
	}
}

func ints[T int8 | int16 | int32 | int64](d []T, bits int) store {
	return func(i int, leaf []byte, kind leafKind) bool {
		v, ok := parseInt(leaf, kind, bits)
		d[i] = T(v)
		return ok
	}
}

func uints[T uint8 | uint16 | uint32 | uint64](d []T, bits int) store {
	return func(i int, leaf []byte, kind leafKind) bool {
		v, ok := parseUint(leaf, kind, bits)
		d[i] = T(v)
		return ok
	}
}

func parseFloat(leaf []byte, kind leafKind, bits int) (float64, bool) {
	if kind != leafNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(view(leaf), bits)
	return f, err == nil && !math.IsInf(f, 0)
}

func parseInt(leaf []byte, kind leafKind, bits int) (int64, bool) {
	if kind != leafNumber {
		return 0, false
	}
	v, err := strconv.ParseInt(view(leaf), 10, bits)
	return v, err == nil
}

func parseUint(leaf []byte, kind leafKind, bits int) (uint64, bool) {
	if kind != leafNumber {
		return 0, false
	}
	v, err := strconv.ParseUint(view(leaf), 10, bits)
	return v, err == nil
}

// view is a leaf's bytes as a string, without a copy, for strconv to
// parse: strconv keeps no reference to it (its errors copy the text), and
// the bytes are not written while it parses.
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
