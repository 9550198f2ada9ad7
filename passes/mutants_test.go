package passes

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
)

// TestMutantsBuildValidPlans: what the runtime would refuse, the compiler
// refuses first. Every accepted document of the conformance suite and of
// the test packages is mutated one scalar at a time (each layout axis,
// factor, rank, budget limit and fixed extent set to -1, 0, 1, 2, 3 and 7;
// each layout kind set to every other kind), and every mutant the checks
// accept must build a plan that the runtime's validation of plan files
// accepts, with no pass failing. (Found this way: a request axis beyond
// the contract's rank, which compile wrote into a plan the runtime
// refused.)
func TestMutantsBuildValidPlans(t *testing.T) {
	var docs []string
	dir, cases := testenv.Cases(t)
	for _, c := range cases {
		if b, err := os.ReadFile(filepath.Join(dir, c.File)); err == nil {
			docs = append(docs, string(b))
		}
	}
	root := testenv.Root(t)
	for _, pattern := range []string{"testdata/packages/*/inference_metadata.yaml", "vm/testdata/*.yaml"} {
		paths, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	ints := regexp.MustCompile(`\b(?:axis|factor|max_total|min_item|rank)\s*:\s*(-?\d+)|[\[,]\s*(\d+)\s*[\],]`)
	kinds := regexp.MustCompile(`kind: (shared|request_aligned|request_expanded|token_packed)\b`)
	accepted, mutants, valid := 0, 0, 0
	for _, doc := range docs {
		if d, err := CheckSource("mutant.yaml", []byte(doc), Options{Check: true}); err != nil || !d.Valid() {
			continue
		}
		accepted++
		var muts []string
		for _, m := range ints.FindAllStringSubmatchIndex(doc, -1) {
			s, e := m[2], m[3]
			if s < 0 {
				s, e = m[4], m[5]
			}
			for _, v := range []string{"-1", "0", "1", "2", "3", "7"} {
				if doc[s:e] != v {
					muts = append(muts, doc[:s]+v+doc[e:])
				}
			}
		}
		for _, m := range kinds.FindAllStringSubmatchIndex(doc, -1) {
			for _, k := range []string{"shared", "request_aligned", "request_expanded, factor: 2", "token_packed"} {
				muts = append(muts, doc[:m[2]]+k+doc[m[3]:])
			}
		}
		for _, mut := range muts {
			mutants++
			d, err := CheckSource("mutant.yaml", []byte(mut), Options{Check: true})
			if err != nil {
				t.Fatalf("the pipeline failed on a mutant: %v\n%s", err, mut)
			}
			if !d.Valid() {
				continue
			}
			valid++
			if _, err := BuildPlan(d, "."); err != nil && strings.Contains(err.Error(), "a genaic bug") {
				t.Fatalf("%v\n%s", err, mut)
			}
		}
	}
	if accepted < 50 || valid == 0 {
		t.Fatalf("only %d accepted documents, %d accepted mutants", accepted, valid)
	}
	t.Logf("%d accepted documents, %d mutants, %d of them accepted, each building a valid plan", accepted, mutants, valid)
}
