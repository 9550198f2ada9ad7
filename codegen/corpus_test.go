package codegen_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/codegen"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/passes"
)

// TestCorpusExecutorsBuild generates the executor of every document of the
// conformance corpus that genaic accepts (serving workflows, adapters and
// every layout among them) into one module, and builds and vets it: the
// generator takes whatever the checker accepts, and what it writes is Go
// that compiles.
func TestCorpusExecutorsBuild(t *testing.T) {
	dir, cases := testenv.Cases(t)
	mod := tempModule(t, "example.com/corpus")
	n := 0
	for _, c := range cases {
		if !c.Accept {
			continue
		}
		d, err := passes.CheckPath(filepath.Join(dir, c.File), passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		if !d.Valid() {
			continue // the check of another family is not done yet; the conformance test reports it
		}
		f, err := passes.BuildPlan(d, dir)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		name := "c" + strings.SplitN(c.File, "_", 2)[0]
		files, err := codegen.Generate(f, codegen.Config{Package: name, Command: "genaic gen " + c.File + " -o " + name + " -p " + name, Source: c.File})
		if err != nil {
			t.Errorf("%s: %v", c.File, err)
			continue
		}
		if err := codegen.Write(filepath.Join(mod, name), files); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d corpus documents were generated; want most of the accepted ones", n)
	}
	goCommand(t, mod, "vet", "./...")
	t.Logf("%d executors of corpus documents build and vet", n)
}
