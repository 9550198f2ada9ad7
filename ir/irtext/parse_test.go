package irtext

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
)

// TestGrammarGolden pins the grammar as participle prints it, so that a
// change to the text form shows in review. GENAIC_UPDATE=1 rewrites it.
func TestGrammarGolden(t *testing.T) {
	golden := filepath.Join("testdata", "grammar.ebnf")
	got := Grammar() + "\n"
	if os.Getenv("GENAIC_UPDATE") == "1" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the grammar differs from %s:\n%s\nrerun with GENAIC_UPDATE=1 and review the change", golden, lineDiff(got, string(want)))
	}
}

// TestRoundTripCorpus prints, parses and prints again the lowered module of
// every conformance document that decodes. Where the front end reports
// nothing, the parsed module must also pass ir.Verify.
func TestRoundTripCorpus(t *testing.T) {
	dir, cases := testenv.Cases(t)
	clean := 0
	for _, c := range cases {
		m, r := lowerFile(t, filepath.Join(dir, c.File))
		if m == nil {
			continue
		}
		if len(r.Diags) == 0 {
			clean++
		}
		roundTrip(t, c.File, m, len(r.Diags) == 0)
	}
	if clean == 0 {
		t.Fatal("no conformance document loads without diagnostics")
	}
}

// TestRoundTripPackages does the same for the example packages and for this
// package's YAML fixtures (structured steps, which the corpus lacks).
func TestRoundTripPackages(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.Root(t), "testdata", "packages", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	own, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if len(files) == 0 || len(own) == 0 {
		t.Fatal("no package documents found")
	}
	for _, f := range append(files, own...) {
		m, r := lowerFile(t, f)
		if m == nil || len(r.Diags) > 0 {
			t.Errorf("%s: the front end refuses it: %v", f, r.Diags)
			continue
		}
		roundTrip(t, f, m, true)
	}
}

// TestTextFixtures parses every testdata/*.ir file, which must be in
// canonical form already: printing the parsed module gives the file back.
func TestTextFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ir"))
	if len(files) == 0 {
		t.Fatal("no testdata/*.ir files")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(f, src)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got := m.String(); got != string(src) {
			t.Errorf("%s is not in canonical form:\n%s", f, lineDiff(got, string(src)))
		}
		if err := ir.Verify(m); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestNamesRoundTrip gives every string of a module a hard name in turn
// (every keyword of the grammar, and names that need quoting) and checks
// that the module survives the round trip: no word is reserved.
func TestNamesRoundTrip(t *testing.T) {
	names := append(grammarKeywords(t), "", "a.b", "with space", `quo"te`, `back\slash`, "new\nline",
		"é", "\x00", "\xff", "1", "-2", "#3", "%4", "%?", "@x", "->", "//", "{", "\u2028")
	for start := range names {
		m, _ := lowerFile(t, filepath.Join("testdata", "structured.yaml"))
		i := start
		rename(reflect.ValueOf(m), func() string { i++; return names[i%len(names)] })
		roundTrip(t, "renamed from "+names[start], m, false)
	}
}

func grammarKeywords(t *testing.T) []string {
	var kws []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"`).FindAllStringSubmatch(Grammar(), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			kws = append(kws, m[1])
		}
	}
	if len(kws) < 40 {
		t.Fatalf("found only %d keywords in the grammar", len(kws))
	}
	return kws
}

// rename sets every non-empty string reachable from v to next().
func rename(v reflect.Value, next func() string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			rename(v.Elem(), next)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			rename(v.Field(i), next)
		}
	case reflect.Slice:
		for i := range v.Len() {
			rename(v.Index(i), next)
		}
	case reflect.String:
		if v.String() != "" { // an empty string may be a field the step's op does not use
			v.SetString(next())
		}
	}
}

func TestParseErrors(t *testing.T) {
	const tail = "values {\n}\nbody {\n}\nlocs {\n}\n"
	for _, c := range []struct{ src, want string }{
		{"", `^x\.ir:1:1: unexpected token "<EOF>"`},
		{`module "\q" 1.1` + "\n" + tail, `^x\.ir:1:7: .*"\\q" is not a valid Go string literal`},
		{"module \"\" 1.1\n" + tail + "trailing", `^x\.ir:8:1: unexpected token "trailing"`},
		{"module \"\" 1.1\nvalues {\n}\nbody {\n  emit#1\n}\nlocs {\n}\n", `^x\.ir:6:1: unexpected token "}"`},
		{"module \"\" 1.1\nvalues {\n}\nbody {\n}\nlocs {\n  #2 = 1:1 \"\"\n}\n", `^x\.ir:7:3: location #2 is out of order: .*write #1 here`},
		{"module \"\" 1.1\nvalues {\n  %0 input x: @input y\n}\nbody {\n}\nlocs {\n}\n", `^x\.ir:3:16: @input "y" names no input`},
		{"module \"\" 1.1\nvalues {\n  %0 invoke x: @out y\n}\n" + tail[10:], `^x\.ir:4:1: unexpected token "}"`},
		{"module \"\" 1.1\nvalues {\n  %0 invoke x: @out y z\n}\n" + tail[10:], `^x\.ir:3:17: @out "y" "z" names no out`},
		{"module \"\" 1.1\ninput %0 x\nvalues {\n  %0 input x: @input x\n}\n" + tail[10:], `^x\.ir:4:16: @input "x" names a site without a contract`},
		{"module \"\" 1.1\nmanifest#99999999999\n" + tail, `^x\.ir:2:9: .*value out of range`},
	} {
		_, err := Parse("x.ir", []byte(c.src))
		if err == nil || !regexp.MustCompile(c.want).MatchString(err.Error()) {
			t.Errorf("Parse(%q) = %v, want an error matching %s", c.src, err, c.want)
		}
	}
}

func lowerFile(t testing.TB, path string) (*ir.Module, *compiler.Result) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := compiler.Load(path, src)
	if r.Doc == nil {
		return nil, r
	}
	return compiler.Lower(r.Doc, r.Version), r
}

// roundTrip prints m, parses the text and prints the result: the two texts
// must be identical and the two modules deep-equal; ir.Verify must give the
// same answer on both, and pass when verify is set.
func roundTrip(t *testing.T, what string, m *ir.Module, verify bool) {
	t.Helper()
	text := m.String()
	back, err := Parse(what, []byte(text))
	if err != nil {
		t.Errorf("%s: the printed module does not parse: %v\n%s", what, err, text)
		return
	}
	if again := back.String(); again != text {
		t.Errorf("%s: printing the parsed module gives another text:\n%s", what, lineDiff(again, text))
	}
	if d := difference(reflect.ValueOf(m), reflect.ValueOf(back), "module"); d != "" {
		t.Errorf("%s: the parsed module differs from the printed one at %s", what, d)
	}
	errBefore, errAfter := ir.Verify(m), ir.Verify(back)
	if verify && errAfter != nil || errString(errBefore) != errString(errAfter) {
		t.Errorf("%s: ir.Verify says %v on the original and %v on the parsed module", what, errBefore, errAfter)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// difference returns the path of the first exported field where a and b
// differ, or "": reflect.DeepEqual on the exported content (the IR has no
// cycles; its unexported fields are caches such as the module's name index).
func difference(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return when(a.IsNil() != b.IsNil(), path+" (nil on one side)")
		}
		return difference(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := difference(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return path + " (nil, empty or length)"
		}
		for i := range a.Len() {
			if d := difference(a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
	default:
		return when(!reflect.DeepEqual(a.Interface(), b.Interface()), path)
	}
	return ""
}

func when(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

// lineDiff describes the first line where got and want differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		gl, wl := at(g, i), at(w, i)
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + gl + "\nwant: " + wl
		}
	}
	return "(no line differs)"
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end>"
}

// TestUnknownLocationWritten: a module whose location #0 is not the zero
// Location keeps it, written as the table's first entry.
func TestUnknownLocationWritten(t *testing.T) {
	m := ir.NewModule()
	m.Locs[0] = ir.Location{Line: 1, Col: 2, Path: "odd"}
	m.AddLoc(ir.Location{Line: 3, Col: 4, Path: "p"})
	if !strings.Contains(m.String(), "locs {\n  #0 = 1:2 \"odd\"\n  #1 = 3:4 \"p\"\n}\n") {
		t.Fatalf("the location table is not written as expected:\n%s", m)
	}
	roundTrip(t, "unknown location", m, true)
}
