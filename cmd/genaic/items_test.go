package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/passes"
	"github.com/genaic/genaic/vm/jsonio"
)

const ocrPkg = "../../testdata/packages/ocr_lines"

// TestRunItems runs a requests document whose text lines are items, with
// no companion, grouped and solo: every line's scores come back as items,
// equal both ways; --out-dir writes one .npy per item.
func TestRunItems(t *testing.T) {
	reqs := filepath.Join(ocrPkg, "requests.json")
	runItems := func(args ...string) jsonio.ResponseFile {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"run", ocrPkg, "--requests", reqs}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return decodeResponses(t, out)
	}
	grouped, solo := runItems(), runItems("--solo")
	lines := map[string]int{"one-line": 1, "three-lines": 3, "with-widths": 2}
	for i, g := range grouped.Responses {
		if g.Error != nil {
			t.Fatalf("%s: %s", g.ID, g.Error.Message)
		}
		if len(g.Outputs) != 1 {
			t.Errorf("%s: outputs %v; the line companions are left out", g.ID, g.Outputs)
		}
		gi, err := g.Outputs["line_scores"].ItemTensors()
		if err != nil {
			t.Fatalf("%s: %v", g.ID, err)
		}
		si, err := solo.Responses[i].Outputs["line_scores"].ItemTensors()
		if err != nil || len(gi) != lines[g.ID] || len(si) != len(gi) {
			t.Fatalf("%s: %d grouped and %d solo items, want %d (%v)", g.ID, len(gi), len(si), lines[g.ID], err)
		}
		for j := range gi {
			if !closeTo(gi[j].Tensor.Float32s(), si[j].Tensor.Float32s()) {
				t.Errorf("%s line %d: grouped %v, solo %v", g.ID, j, gi[j].Tensor.Data, si[j].Tensor.Data)
			}
		}
	}
	dir := t.TempDir()
	if _, errOut, code := runCLI(t, "run", ocrPkg, "--requests", reqs, "--out-dir", dir); code != exitOK {
		t.Fatalf("--out-dir: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"three-lines/line_scores.0.npy", "three-lines/line_scores.2.npy", "one-line/line_scores.0.npy"} {
		x, err := jsonio.ReadNPY(filepath.Join(dir, f))
		if err != nil || x.Len() != 4 {
			t.Errorf("%s: %v, %v", f, x, err)
		}
	}
}

// TestBenchCountsItems: a request that gives its lines as items counts
// one item per line.
func TestBenchCountsItems(t *testing.T) {
	d, err := passes.CheckPath(ocrPkg, passes.Options{Check: true})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	f, err := passes.BuildPlan(d, ocrPkg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(ocrPkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := jsonio.ReadRequests(strings.NewReader(string(doc)), ocrPkg)
	if err != nil {
		t.Fatal(err)
	}
	if got := itemCounts(f, reqs); len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 2 {
		t.Errorf("item counts %v, want [1 3 2]", got)
	}
}
