package passes

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
)

// TestMutantsBuildValidPlans: what the runtime would refuse, the compiler
// refuses first. Every accepted document the tests know is mutated one
// scalar at a time (testenv.Mutants: each layout axis, factor, rank,
// budget limit and fixed extent set to -1, 0, 1, 2, 3 and 7; each layout
// kind set to every other kind), and every mutant the checks accept must
// build a plan that the runtime's validation of plan files accepts, with
// no pass failing. (Found this way: a request axis beyond the contract's
// rank, which compile wrote into a plan the runtime refused.)
func TestMutantsBuildValidPlans(t *testing.T) {
	accepted, mutants, valid := 0, 0, 0
	for _, doc := range testenv.Documents(t) {
		if d, err := CheckSource("mutant.yaml", []byte(doc), Options{Check: true}); err != nil || !d.Valid() {
			continue
		}
		accepted++
		for _, mut := range testenv.Mutants(doc, []string{"-1", "0", "1", "2", "3", "7"}, true) {
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
