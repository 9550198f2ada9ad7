// Package testenv finds the files tests need outside a package's own
// folder: the repository root and the shared conformance corpus.
package testenv

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Root returns the repository root: the nearest folder above the working
// directory whose go.mod declares the genaic module.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/genaic/genaic\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no genaic go.mod above the working directory")
		}
		dir = parent
	}
}

// Conformance returns the folder of the upstream conformance corpus, which
// lives beside the checkout in ../shared. The corpus is part of the test
// suite: a missing corpus fails the test rather than skipping it.
func Conformance(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(t), "..", "shared", "conformance", "upstream")
	if _, err := os.Stat(filepath.Join(dir, "cases.tsv")); err != nil {
		t.Fatalf("the conformance corpus is missing (%v): tests read it from ../shared/conformance/upstream beside the checkout", err)
	}
	return dir
}

// Case is one row of the conformance corpus's cases.tsv.
type Case struct {
	File     string
	Accept   bool
	Rules    []string // rule ids that must be present
	Absent   []string // rule ids that must be absent (written after "!")
	Keywords string   // phrases the upstream message contains (informative)
	Notes    string
}

// Cases reads cases.tsv.
func Cases(t testing.TB) (dir string, cases []Case) {
	t.Helper()
	dir = Conformance(t)
	f, err := os.Open(filepath.Join(dir, "cases.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var header []string
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if header == nil {
			header = cols
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			if i < len(cols) {
				row[h] = cols[i]
			}
		}
		c := Case{File: row["file"], Accept: row["expected"] == "accept", Keywords: row["upstream_message_keywords"], Notes: row["notes"]}
		for _, r := range strings.Split(row["rule"], "+") {
			switch r = strings.TrimSpace(r); {
			case r == "":
			case strings.HasPrefix(r, "!"):
				c.Absent = append(c.Absent, r[1:])
			default:
				c.Rules = append(c.Rules, r)
			}
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("cases.tsv lists no cases")
	}
	return dir, cases
}
