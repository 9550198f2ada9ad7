package ir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// A module travels inside a plan file as JSON (DESIGN §5): every node with
// its Loc, the location table beside them, as OPA's plan IR carries its
// statements. A runtime decodes it with encoding/json alone, so a service
// that links the runtime links no parser generator; the participle text form
// (ir/irtext) stays for people and tests. The enumerations below are
// written as their words, so the JSON reads like the text form.

// MarshalText writes the op's name.
func (o Op) MarshalText() ([]byte, error) { return wordText("op", o.String(), int(o), len(opTable)) }

// UnmarshalText reads an op's name.
func (o *Op) UnmarshalText(b []byte) error { return parseWord("op", b, o, ParseOp) }

// MarshalText writes the definition kind's name.
func (k DefKind) MarshalText() ([]byte, error) {
	return wordText("definition kind", k.String(), int(k), len(defNames))
}

// UnmarshalText reads a definition kind's name.
func (k *DefKind) UnmarshalText(b []byte) error {
	return parseWord("definition kind", b, k, lookupWord[DefKind](defNames[:]))
}

// MarshalText writes the implementation kind's name.
func (k ImplKind) MarshalText() ([]byte, error) {
	return wordText("implementation kind", k.String(), int(k), len(implNames))
}

// UnmarshalText reads an implementation kind's name.
func (k *ImplKind) UnmarshalText(b []byte) error {
	return parseWord("implementation kind", b, k, lookupWord[ImplKind](implNames[:]))
}

// MarshalText writes the layout kind's name.
func (k LayoutKind) MarshalText() ([]byte, error) {
	return wordText("layout kind", k.String(), int(k), len(layoutNames))
}

// UnmarshalText reads a layout kind's name.
func (k *LayoutKind) UnmarshalText(b []byte) error {
	return parseWord("layout kind", b, k, ParseLayoutKind)
}

// MarshalText writes the extent's name ("" for none).
func (e Extent) MarshalText() ([]byte, error) {
	return wordText("extent", e.String(), int(e), len(extentNames))
}

// UnmarshalText reads an extent's name.
func (e *Extent) UnmarshalText(b []byte) error { return parseWord("extent", b, e, ParseExtent) }

func wordText(what, word string, i, n int) ([]byte, error) {
	if i < 0 || i >= n {
		return nil, fmt.Errorf("ir: %s %d has no name", what, i)
	}
	return []byte(word), nil
}

func parseWord[T any](what string, b []byte, dst *T, parse func(string) (T, bool)) error {
	v, ok := parse(string(b))
	if !ok {
		return fmt.Errorf("ir: unknown %s %q", what, b)
	}
	*dst = v
	return nil
}

func lookupWord[T ~uint8](names []string) func(string) (T, bool) {
	return func(s string) (T, bool) {
		for i, n := range names {
			if n == s {
				return T(i), true
			}
		}
		return 0, false
	}
}

// MarshalText writes the parameter kind's name.
func (k ParamKind) MarshalText() ([]byte, error) {
	return wordText("parameter kind", k.String(), int(k), len(paramKinds))
}

// UnmarshalText reads a parameter kind's name.
func (k *ParamKind) UnmarshalText(b []byte) error {
	return parseWord("parameter kind", b, k, ParseParamKind)
}

// UnmarshalJSON reads a module written by encoding/json, refusing unknown
// fields, and gives each value the contract of the site that declares it:
// JSON writes a shared contract once per holder, while the compiler's
// module (and its text form, which writes @input x) shares one.
func (m *Module) UnmarshalJSON(b []byte) error {
	type plain Module
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plain)(m)); err != nil {
		return err
	}
	m.shareContracts()
	return nil
}

// shareContracts points each value's contract at the site contract it
// equals. A site's contract carries its own source locations, so equality
// names the one site the value was defined from.
func (m *Module) shareContracts() {
	byLoc := map[Loc][]*Contract{}
	for _, s := range m.Sites() {
		byLoc[s.Contract.Loc] = append(byLoc[s.Contract.Loc], s.Contract)
	}
	for _, v := range m.Values {
		if v == nil || v.Contract == nil {
			continue
		}
		for _, c := range byLoc[v.Contract.Loc] {
			if reflect.DeepEqual(c, v.Contract) {
				v.Contract = c
				break
			}
		}
	}
}
