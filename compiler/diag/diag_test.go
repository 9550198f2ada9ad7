package diag

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRulesMatchCatalogue keeps Rules equal to the ids of RULES.md, which is
// the public contract.
func TestRulesMatchCatalogue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "spec", "RULES.md"))
	if err != nil {
		t.Fatalf("the rule catalogue is missing beside the checkout: %v", err)
	}
	var ids []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9./-]+)`").FindAllStringSubmatch(string(b), -1) {
		ids = append(ids, m[1])
	}
	if !slices.Equal(ids, ruleStrings()) {
		t.Errorf("Rules differs from RULES.md\n got: %v\nwant: %v", Rules, ids)
	}
}

func TestRenderCaretAndCap(t *testing.T) {
	src := []byte("a: 1\n\tbad: 2\n")
	l := List{
		Errorf("schema/type", Pos{Line: 2, Column: 2}, "bad", "read the integer 2"),
		Errorf("syntax", Pos{Line: 1, Column: 1}, "", "first"),
	}
	l.Sort()
	var b strings.Builder
	Renderer{Source: func(string) []byte { return src }, Cap: 1}.Render(&b, l)
	want := "<input>:1:1: error[syntax]: first\n  a: 1\n  ^\n1 more diagnostic\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	Renderer{Source: func(string) []byte { return src }}.Render(&b, l[1:])
	if want := "<input>:2:2: error[schema/type]: read the integer 2\n  \tbad: 2\n  \t^\n"; b.String() != want {
		t.Errorf("tab before the caret is kept: got %q want %q", b.String(), want)
	}
}

func TestSortDropsDuplicates(t *testing.T) {
	d := Errorf("syntax", Pos{Line: 3, Column: 1}, "p", "m")
	l := List{d, Errorf("syntax", Pos{Line: 1, Column: 1}, "p", "m"), d}
	l.Sort()
	if len(l) != 2 || l[0].Line != 1 {
		t.Errorf("got %v", l)
	}
}

func ruleStrings() []string {
	out := make([]string, len(Rules))
	for i, r := range Rules {
		out[i] = string(r)
	}
	return out
}

// TestHelpLineAndSpan checks that the fix is printed on a help line of its
// own, that FillSpans underlines the whole token (a quoted one with its
// quotes), and that JSON carries the span's end and the help.
func TestHelpLineAndSpan(t *testing.T) {
	src := []byte("a:\n  shpe: [x]\n  kind: \"token_packd\"  # c\n")
	l := List{
		Errorf("schema/unknown-field", Pos{Line: 2, Column: 3}, "a.shpe", "unknown key `shpe`").WithHelp("did you mean `%s`?", "shape"),
		Errorf("schema/type", Pos{Line: 3, Column: 9}, "a.kind", "bad kind"),
	}
	l.FillSpans(src)
	var b strings.Builder
	Renderer{Source: func(string) []byte { return src }}.Render(&b, l)
	want := "<input>:2:3: error[schema/unknown-field]: unknown key `shpe`\n    shpe: [x]\n    ^^^^\n  help: did you mean `shape`?\n" +
		"<input>:3:9: error[schema/type]: bad kind\n    kind: \"token_packd\"  # c\n          ^^^^^^^^^^^^^\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	js, err := json.Marshal(l[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"line":2`, `"column":3`, `"end_line":2`, `"end_column":7`, `"help":"did you mean ` + "`shape`" + `?"`} {
		if !strings.Contains(string(js), part) {
			t.Errorf("JSON %s lacks %s", js, part)
		}
	}
	var back Diagnostic
	if err := json.Unmarshal(js, &back); err != nil || back.End != l[0].End || back.Help != l[0].Help || back.Pos != l[0].Pos {
		t.Errorf("JSON does not read back: %+v (%v)", back, err)
	}
	if got := DidYouMean("imgae", []string{"image", "lengths"}); got != "did you mean `image`?" {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzzzzz", []string{"image"}); got != "" {
		t.Errorf("a far name is no suggestion: %q", got)
	}
}

// TestFixOnItsOwnLine: a format's text after a newline is the help, an
// argument's newline is not a split, and a suggestion and a fix are two
// help lines.
func TestFixOnItsOwnLine(t *testing.T) {
	d := Errorf("contract/shape", Pos{Line: 1, Column: 1}, "x", "`%s` has rank %d\ndrop `rank` or make it %d", "z", 3, 2)
	if d.Message != "`z` has rank 3" || d.Help != "drop `rank` or make it 2" {
		t.Errorf("split into %q and %q", d.Message, d.Help)
	}
	if d := Errorf("syntax", Pos{}, "", "read %s", "a\nb"); d.Message != "read a\nb" || d.Help != "" {
		t.Errorf("an argument's newline split the message: %q / %q", d.Message, d.Help)
	}
	d.Help = JoinHelp("", "did you mean `y`?", "", d.Help)
	var b strings.Builder
	Renderer{}.Render(&b, List{d})
	want := "<input>:1:1: error[contract/shape]: `z` has rank 3\n  help: did you mean `y`?\n  help: drop `rank` or make it 2\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
