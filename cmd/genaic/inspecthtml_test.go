package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectHTMLTitle: the HTML page is titled by the package's folder
// name, the name genaic serve gives its model, whether inspect is given
// the folder, its document or a plan compiled into another folder.
func TestInspectHTMLTitle(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "my_model")
	if err := os.Rename(copyPackage(t, inspectPkg), pkg); err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(t.TempDir(), "plans", "plan.json")
	if err := os.MkdirAll(filepath.Dir(planPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "compile", pkg, "-o", planPath); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	for _, path := range []string{pkg, filepath.Join(pkg, "inference_metadata.yaml"), planPath} {
		out, errOut, code := runCLI(t, "inspect", path, "--format", "html")
		if code != exitOK {
			t.Fatalf("inspect %s: exit %d: %s", path, code, errOut)
		}
		for _, want := range []string{"<title>my_model</title>", "<h1>my_model</h1>", "plan of inference_metadata.yaml: schema_version"} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect %s --format html lacks %q", path, want)
			}
		}
	}
}
