package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Documents returns the text of every workflow document the tests know:
// the conformance corpus's (accepted or not) and the test packages' and
// the VM's test workflows. Tests that probe the compiler and the runtime
// with documents no fixture was written for start from these.
func Documents(t testing.TB) []string {
	t.Helper()
	var docs []string
	dir, cases := Cases(t)
	for _, c := range cases {
		b, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	root := Root(t)
	for _, pattern := range []string{"testdata/packages/*/inference_metadata.yaml", "vm/testdata/*.yaml"} {
		paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no documents match %s (%v)", pattern, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	return docs
}

// integers finds the integers a mutant changes: a layout's axis and
// factor, a rank, a budget's limits, and a fixed extent in a shape list.
var integers = regexp.MustCompile(`\b(?:axis|factor|max_total|min_item|rank)\s*:\s*(-?\d+)|[\[,]\s*(\d+)\s*[\],]`)

// layoutKinds finds a batch layout's kind.
var layoutKinds = regexp.MustCompile(`kind: (shared|request_aligned|request_expanded|token_packed)\b`)

// Mutants returns the documents that differ from doc in one scalar: each
// of its integers (integers above) set to each of values, and, with
// kinds, each layout kind set to every kind (a request_expanded one with
// factor 2).
func Mutants(doc string, values []string, kinds bool) []string {
	var out []string
	for _, m := range integers.FindAllStringSubmatchIndex(doc, -1) {
		s, e := m[2], m[3]
		if s < 0 {
			s, e = m[4], m[5]
		}
		for _, v := range values {
			if doc[s:e] != v {
				out = append(out, doc[:s]+v+doc[e:])
			}
		}
	}
	if kinds {
		for _, m := range layoutKinds.FindAllStringSubmatchIndex(doc, -1) {
			for _, k := range []string{"shared", "request_aligned", "request_expanded, factor: 2", "token_packed"} {
				out = append(out, doc[:m[2]]+k+doc[m[3]:])
			}
		}
	}
	return out
}
