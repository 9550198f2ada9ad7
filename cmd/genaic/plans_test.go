package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedPlan: a plan cut short anywhere past its first keys is
// told to be a damaged plan, with the help to recompile it, by run and
// inspect alike, rather than read as a metadata document that is not
// valid YAML.
func TestTruncatedPlan(t *testing.T) {
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	abs, err := filepath.Abs(imagePkg)
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "compile", abs, "-o", planPath); code != exitOK {
		t.Fatalf("compile: %s", errOut)
	}
	whole, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.json")
	for _, at := range []int{40, len(whole) / 3, len(whole) / 2, len(whole) - 2} {
		if err := os.WriteFile(cut, whole[:at], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"run", cut, "--requests", filepath.Join(imagePkg, "requests.json")},
			{"inspect", cut},
		} {
			_, errOut, code := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errOut, "damaged or truncated") || !strings.Contains(errOut, "genaic compile") {
				t.Errorf("%s of a plan cut at byte %d of %d: exit %d, %s", args[0], at, len(whole), code, errOut)
			}
		}
	}
}
