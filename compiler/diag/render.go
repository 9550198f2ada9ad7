package diag

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// DefaultCap is how many diagnostics of one file are rendered before the
// rest are summarised as "N more errors".
const DefaultCap = 50

// Renderer writes diagnostics for people: a header line in the
// `file:line:col: error[rule]: message` shape, the source line and a caret.
type Renderer struct {
	// Source returns the bytes of a file, or nil when they are unavailable
	// (then no excerpt is printed).
	Source func(file string) []byte
	// Cap bounds the diagnostics rendered per call; 0 means DefaultCap and a
	// negative value means no bound.
	Cap int
}

// Render writes l, which should already be sorted.
func (r Renderer) Render(w io.Writer, l List) error {
	limit := r.Cap
	if limit == 0 {
		limit = DefaultCap
	}
	var b strings.Builder
	for i, d := range l {
		if limit > 0 && i == limit {
			fmt.Fprintf(&b, "%d more %s\n", len(l)-i, plural(len(l)-i, "diagnostic"))
			break
		}
		r.one(&b, d)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func (r Renderer) one(b *strings.Builder, d Diagnostic) {
	fmt.Fprintf(b, "%s: %s[%s]: %s\n", location(d.File, d.Pos), d.Severity, d.Rule, d.Message)
	src := r.source(d.File)
	width := 1
	if d.End.Line == d.Line && d.End.Column > d.Column {
		width = d.End.Column - d.Column
	}
	excerpt(b, src, d.Pos, width)
	for _, rel := range d.Related {
		fmt.Fprintf(b, "  %s: note: %s\n", location(d.File, rel.Pos), rel.Message)
	}
	if d.Help != "" {
		for _, h := range strings.Split(d.Help, "\n") {
			fmt.Fprintf(b, "  help: %s\n", h)
		}
	}
}

func (r Renderer) source(file string) []byte {
	if r.Source == nil {
		return nil
	}
	return r.Source(file)
}

func location(file string, p Pos) string {
	if file == "" {
		file = "<input>"
	}
	if !p.Known() {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column)
}

// excerpt prints the source line of p and carets under the width
// characters from its column. Tabs before the column are kept so the
// carets line up in a terminal.
func excerpt(b *strings.Builder, src []byte, p Pos, width int) {
	line, ok := sourceLine(src, p.Line)
	if !ok {
		return
	}
	fmt.Fprintf(b, "  %s\n  ", line)
	col := 1
	for _, r := range line {
		if col >= p.Column {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		col++
	}
	b.WriteString(strings.Repeat("^", max(width, 1)))
	b.WriteByte('\n')
}

func sourceLine(src []byte, n int) (string, bool) {
	if n <= 0 || src == nil {
		return "", false
	}
	// YAML ends lines at \r\n, \n or a lone \r; count them the same way.
	src = bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(src, '\n')
		if j < 0 {
			return "", false
		}
		src = src[j+1:]
	}
	if j := bytes.IndexByte(src, '\n'); j >= 0 {
		src = src[:j]
	}
	line := strings.TrimRight(string(src), "\r")
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "?")
	}
	const maxWidth = 240
	if len(line) > maxWidth {
		line = line[:maxWidth] + "…"
	}
	return line, true
}

// FileReport is the JSON shape of one checked file.
type FileReport struct {
	Path        string       `json:"path"`
	Valid       bool         `json:"valid"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Report is the JSON document `genaic check --json` prints.
type Report struct {
	Files []FileReport `json:"files"`
}

// WriteJSON writes the report, indented, with a trailing newline.
func (r Report) WriteJSON(w io.Writer) error {
	for i := range r.Files {
		if r.Files[i].Diagnostics == nil {
			r.Files[i].Diagnostics = []Diagnostic{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// FillSpans sets the end of every diagnostic of src whose end is unknown:
// the end of the YAML token at its position (a key, a scalar, a quoted
// string or a flow collection's opening bracket).
func (l List) FillSpans(src []byte) {
	for i := range l {
		d := &l[i]
		if !d.Known() || d.End.Line != 0 {
			continue
		}
		line, ok := sourceLine(src, d.Line)
		if !ok {
			continue
		}
		if d.Name != "" {
			d.Column = nameColumn(line, d.Column, d.Name)
		}
		if n := tokenWidth(line, d.Column); n > 0 {
			d.End = End{Line: d.Line, Column: d.Column + n}
		}
	}
}

// tokenWidth is the width in characters of the YAML token that starts at
// column col (1-based, counted in characters) of line, or 0 past its end.
func tokenWidth(line string, col int) int {
	rs := []rune(line)
	if col < 1 || col > len(rs) {
		return 0
	}
	rs = rs[col-1:]
	switch rs[0] {
	case '"', '\'':
		for i := 1; i < len(rs); i++ {
			if rs[0] == '"' && rs[i] == '\\' {
				i++
				continue
			}
			if rs[i] == rs[0] {
				return i + 1
			}
		}
		return len(rs)
	case '[', '{', '-', '*', '&', '!', '|', '>':
		return 1
	}
	n := 0
	for n < len(rs) {
		r := rs[n]
		if r == ',' || r == ']' || r == '}' || r == ':' && (n+1 == len(rs) || rs[n+1] == ' ' || rs[n+1] == '\t') ||
			r == '#' && n > 0 && (rs[n-1] == ' ' || rs[n-1] == '\t') {
			break
		}
		n++
	}
	for n > 0 && (rs[n-1] == ' ' || rs[n-1] == '\t') {
		n--
	}
	return n
}

// nameColumn is the column of name written as a whole token at or after
// col on line, or col when it is not there.
func nameColumn(line string, col int, name string) int {
	rs := []rune(line)
	from := col
	if w := tokenWidth(line, col); w > 0 && col-1+w < len(rs) && rs[col-1+w] == ':' {
		from = col + w + 1 // the caret is on a key: the name is its value
	}
	for c := from; c <= len(rs); c++ {
		if tokenWidth(line, c) == len([]rune(name)) && string(rs[c-1:c-1+len([]rune(name))]) == name &&
			(c == 1 || strings.ContainsRune(" \t[{,:", rs[c-2])) {
			return c
		}
	}
	return col
}
