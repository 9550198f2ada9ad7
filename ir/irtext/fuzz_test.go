package irtext

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
)

// FuzzParse feeds arbitrary text to the parser: it must answer with an
// error or a module, never panic, and a module that parses must print, and
// that text must parse to an equal module that prints the same text.
func FuzzParse(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("fuzz.ir", src)
		if err != nil {
			return
		}
		text := m.String()
		back, err := Parse("printed.ir", []byte(text))
		if err != nil {
			t.Fatalf("the printed module does not parse: %v\n%s", err, text)
		}
		if again := back.String(); again != text {
			t.Fatalf("printing the parsed module gives another text:\n%s", lineDiff(again, text))
		}
		if d := difference(reflect.ValueOf(m), reflect.ValueOf(back), "module"); d != "" {
			t.Fatalf("the parsed module differs from the first one at %s", d)
		}
	})
}

// fuzzSeeds returns the printed modules of the corpus and of the package
// documents, and the text fixtures.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	dir, cases := testenv.Cases(f)
	paths, _ := filepath.Glob(filepath.Join(testenv.Root(f), "testdata", "packages", "*", "*.yaml"))
	own, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, c := range cases {
		paths = append(paths, filepath.Join(dir, c.File))
	}
	for _, p := range append(paths, own...) {
		if m, _ := lowerFile(f, p); m != nil {
			seeds = append(seeds, []byte(m.String()))
		}
	}
	texts, _ := filepath.Glob(filepath.Join("testdata", "*.ir"))
	for _, p := range texts {
		if b, err := os.ReadFile(p); err == nil {
			seeds = append(seeds, b)
		}
	}
	return seeds
}
