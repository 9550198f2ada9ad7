// Package diag holds genaic's diagnostics: a rule id from the public rule
// catalogue, a position in a source file, the YAML path of the offending
// node, and a message written for the package author.
package diag

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a diagnostic makes a document invalid.
type Severity int

const (
	// Error makes the document invalid.
	Error Severity = iota
	// Warning is reported but does not make the document invalid.
	Warning
)

// String returns the word used in rendered and JSON output.
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalText makes a Severity encode as its word in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the word MarshalText writes.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = Error
	case "warning":
		*s = Warning
	default:
		return fmt.Errorf("unknown severity %q (want error or warning)", b)
	}
	return nil
}

// Pos is a position in a source file. Line and Column are 1-based; a zero
// Line means the position is unknown.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Known reports whether p points somewhere in the file.
func (p Pos) Known() bool { return p.Line > 0 }

// Related is a second place that takes part in a diagnostic, such as the
// other declaration of a pair that disagrees.
type Related struct {
	Pos
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// Diagnostic is one problem found in one document.
type Diagnostic struct {
	Rule     Rule     `json:"rule"`
	Severity Severity `json:"severity"`
	File     string   `json:"-"`
	Pos               // where the caret goes
	// End is just past the last character of the token at Pos, on the
	// same line (FillSpans sets it from the source); zero when unknown.
	End     End    `json:"-"`
	Path    string `json:"path"` // the YAML path of the node at fault
	Message string `json:"message"`
	// Help is the fix, printed on a help line of its own: "did you mean
	// `shape`?". A suggestion and a fix are two lines, separated by "\n".
	Help string `json:"help,omitempty"`
	// Name is the name at fault when the caret's node is the key that
	// introduces it (`port: name`); FillSpans moves the caret onto the
	// name when it is written after the caret on the same line.
	Name    string    `json:"-"`
	Related []Related `json:"related,omitempty"`
}

// End is the end of a diagnostic's span. In JSON it is flattened into
// end_line and end_column beside line and column.
type End struct {
	Line   int `json:"end_line,omitempty"`
	Column int `json:"end_column,omitempty"`
}

// MarshalJSON writes a diagnostic with its span's end flattened beside
// its start.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	type plain Diagnostic
	return json.Marshal(struct {
		plain
		End
	}{plain(d), d.End})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Diagnostic) UnmarshalJSON(b []byte) error {
	type plain Diagnostic
	var v struct {
		plain
		End
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Diagnostic(v.plain)
	d.End = v.End
	return nil
}

// Errorf builds an error diagnostic. A format that holds a newline
// writes the message before it and the fix after it: "port `%s` is not an
// input of the graph\ndeclare it under ports.outputs" gives the message
// and a help line, so the message says what is wrong and where, the help
// what to do.
func Errorf(rule Rule, pos Pos, path, format string, args ...any) Diagnostic {
	d := Diagnostic{Rule: rule, Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)}
	if strings.Contains(format, "\n") {
		d.Message, d.Help = SplitHelp(d.Message)
	}
	return d
}

// SplitHelp splits text at its first newline into a message and the fix
// that follows it ("" when there is none).
func SplitHelp(text string) (message, help string) {
	message, help, _ = strings.Cut(text, "\n")
	return message, help
}

// WithHelp returns d with the fix it suggests, printed on a help line.
func (d Diagnostic) WithHelp(format string, args ...any) Diagnostic {
	d.Help = fmt.Sprintf(format, args...)
	return d
}

// JoinHelp joins the help lines that are not empty, in order: a
// diagnostic with a suggestion ("did you mean `x`?") and a fix prints
// both, each on a help line of its own.
func JoinHelp(lines ...string) string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// DidYouMean is the help for a name that resolves to nothing: the
// candidate close enough to be a likely typo, or "" when none is.
func DidYouMean(name string, candidates []string) string {
	if near := Nearest(name, candidates); near != "" {
		return fmt.Sprintf("did you mean `%s`?", near)
	}
	return ""
}

// With returns d with one more related position.
func (d Diagnostic) With(pos Pos, path, format string, args ...any) Diagnostic {
	d.Related = append(slices.Clone(d.Related), Related{Pos: pos, Path: path, Message: fmt.Sprintf(format, args...)})
	return d
}

// List is an ordered collection of diagnostics.
type List []Diagnostic

// Add appends diagnostics.
func (l *List) Add(ds ...Diagnostic) { *l = append(*l, ds...) }

// HasErrors reports whether any diagnostic is an error.
func (l List) HasErrors() bool {
	return slices.ContainsFunc(l, func(d Diagnostic) bool { return d.Severity == Error })
}

// Rules returns the rule ids present, in order of first appearance.
func (l List) Rules() []Rule {
	var out []Rule
	for _, d := range l {
		if !slices.Contains(out, d.Rule) {
			out = append(out, d.Rule)
		}
	}
	return out
}

// Sort orders diagnostics by file, position, rule and message, and drops
// exact duplicates (two checks reaching the same conclusion at one place).
func (l *List) Sort() {
	slices.SortStableFunc(*l, compare)
	*l = slices.CompactFunc(*l, func(a, b Diagnostic) bool {
		return compare(a, b) == 0 && a.Path == b.Path
	})
}

func compare(a, b Diagnostic) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Column, b.Column),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(a.Message, b.Message),
	)
}
