package main

import (
	"os"
	"testing"
)

// golden compares got with the file at path; GENAIC_UPDATE=1 rewrites it.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("GENAIC_UPDATE") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with GENAIC_UPDATE=1 to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (GENAIC_UPDATE=1 rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// TestMultiErrorRendering pins the whole rendering of a document with one
// mistake of each kind, so a change to any message or to the layout is
// visible in review.
func TestMultiErrorRendering(t *testing.T) {
	out, _, code := runCLI(t, "check", "testdata/multi_error.yaml")
	if code != exitDiags {
		t.Fatalf("exit %d", code)
	}
	golden(t, "testdata/multi_error.golden", out)
}
