package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
)

// implementedFamilies are the rule families genaic check reports so far.
// Reject cases whose rules belong to another family are only required to
// get through the front end without a front-end diagnostic.
var implementedFamilies = []string{"syntax", "version/", "retired/", "schema/",
	"ssa/", "contract/", "preprocess/", "packed/", "padding/", "capacity/", "emit/"}

func implemented(rule string) bool {
	return slices.ContainsFunc(implementedFamilies, func(p string) bool { return strings.HasPrefix(rule, p) })
}

// TestConformance runs every document of the upstream corpus through
// `genaic check --json` and compares the verdict and rule ids with cases.tsv.
func TestConformance(t *testing.T) {
	dir, cases := testenv.Cases(t)
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.File, ".yaml"), func(t *testing.T) {
			rep, code := checkJSONOf(t, filepath.Join(dir, c.File))
			if len(rep.Files) != 1 {
				t.Fatalf("report has %d files, want 1", len(rep.Files))
			}
			f := rep.Files[0]
			var got []string
			for _, d := range f.Diagnostics {
				got = append(got, d.Rule)
			}
			pending := slices.ContainsFunc(c.Rules, func(r string) bool { return !implemented(r) })
			switch {
			case c.Accept:
				if !f.Valid || code != exitOK {
					t.Fatalf("want accept, got exit %d with %v", code, f.Diagnostics)
				}
			case pending:
				for _, r := range got {
					if implemented(r) {
						t.Fatalf("the front end refused a document whose expected rule %v is a later check: %v", c.Rules, f.Diagnostics)
					}
				}
			default:
				if f.Valid || code != exitDiags {
					t.Fatalf("want reject with %v, got exit %d, valid=%v", c.Rules, code, f.Valid)
				}
				for _, r := range c.Rules {
					if !slices.Contains(got, r) {
						t.Errorf("missing rule %s; got %v", r, f.Diagnostics)
					}
				}
			}
			for _, r := range c.Absent {
				if slices.Contains(got, r) {
					t.Errorf("rule %s must be absent; got %v", r, f.Diagnostics)
				}
			}
		})
	}
}
