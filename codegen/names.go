package codegen

import (
	"fmt"
	"go/token"
	"strings"
	"unicode"
)

// initialisms are words Go spells in capitals (Effective Go, and golint's
// list), so that `token_ids` becomes TokenIDs rather than TokenIds.
var initialisms = map[string]string{
	"api": "API", "cpu": "CPU", "gpu": "GPU", "http": "HTTP", "id": "ID", "ids": "IDs",
	"json": "JSON", "kv": "KV", "onnx": "ONNX", "rgb": "RGB", "url": "URL", "uuid": "UUID",
}

// predeclared are Go's predeclared identifiers: a local of that name would
// shadow a type or constant the generated code may need.
var predeclared = strings.Fields(`any append bool byte cap clear close comparable complex complex64
	complex128 copy delete error false float32 float64 imag int int8 int16 int32 int64 iota len
	make max min new nil panic print println real recover rune string true uint uint8 uint16
	uint32 uint64 uintptr`)

// words splits a workflow name (`clips.embeddings`, `token_ids`,
// `pixelValues`, `HTTPServer`) into its words: runs of letters and digits,
// with an upper-case letter after a lower-case one starting a new word, as
// does the last capital of a run of them that a lower-case letter follows.
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = nil
		}
	}
	for _, r := range name {
		switch {
		case r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && unicode.IsLower(cur[len(cur)-1]):
			flush()
			cur = append(cur, r)
		case unicode.IsLower(r) && len(cur) > 1 && unicode.IsUpper(cur[len(cur)-1]) && unicode.IsUpper(cur[len(cur)-2]):
			last := cur[len(cur)-1]
			cur = cur[:len(cur)-1]
			flush()
			cur = append(cur, last, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// identifier turns a workflow name into a Go identifier: CamelCase when
// exported, camelCase otherwise. A name with no letter or digit becomes
// Value; one that starts with a digit gets a V (or v) in front.
func identifier(name string, exported bool) string {
	var b strings.Builder
	for i, w := range words(name) {
		lower := strings.ToLower(w)
		switch {
		case i == 0 && !exported:
			b.WriteString(lower)
		case initialisms[lower] != "":
			b.WriteString(initialisms[lower])
		default:
			b.WriteString(strings.ToUpper(lower[:1]) + lower[1:])
		}
	}
	id := b.String()
	switch {
	case id == "":
		id = "value"
	case unicode.IsDigit(rune(id[0])):
		id = "v" + id
	}
	if exported {
		id = strings.ToUpper(id[:1]) + id[1:]
	}
	return id
}

// namer hands out distinct identifiers in one scope, deterministically: the
// first claim of a base name gets it, later ones get base2, base3, ...
type namer struct {
	taken map[string]bool
}

func newNamer(reserved ...string) *namer {
	n := &namer{taken: map[string]bool{}}
	for _, r := range reserved {
		n.taken[r] = true
	}
	for _, p := range predeclared {
		n.taken[p] = true
	}
	return n
}

// claim returns base, or base followed by the smallest number from 2 that
// makes it unused, and marks the result used.
func (n *namer) claim(base string) string {
	name := base
	for i := 2; n.taken[name] || token.IsKeyword(name); i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	n.taken[name] = true
	return name
}
