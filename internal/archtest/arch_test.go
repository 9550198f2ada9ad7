// Package archtest keeps the layering DESIGN.md §4 and STYLE.md ask for,
// and the repository's own checks whole.
package archtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testenv"
)

func goList(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = testenv.Root(t)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, out)
	}
	return strings.Fields(string(out))
}

// TestIRImportsOnlyStandardLibrary: the IR is a plain data structure.
func TestIRImportsOnlyStandardLibrary(t *testing.T) {
	deps := goList(t, nil, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./ir")
	for _, d := range deps {
		if d != "github.com/genaic/genaic/ir" {
			t.Errorf("ir depends on %s", d)
		}
	}
}

// TestCompilerBuildsWithoutCgo: only the ONNX Runtime backend uses cgo.
func TestCompilerBuildsWithoutCgo(t *testing.T) {
	pkgs := []string{"./compiler/...", "./ir/...", "./passes/..."}
	if _, err := os.Stat(testenv.Root(t) + "/codegen"); err == nil {
		if files, _ := os.ReadDir(testenv.Root(t) + "/codegen"); len(files) > 0 {
			pkgs = append(pkgs, "./codegen/...")
		}
	}
	build := exec.Command("go", append([]string{"build"}, pkgs...)...)
	build.Dir = testenv.Root(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build %v: %v\n%s", pkgs, err, out)
	}
	for _, p := range pkgs {
		deps := goList(t, []string{"CGO_ENABLED=0"}, "-deps", "-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}", p)
		if len(deps) > 0 {
			t.Errorf("%s depends on cgo packages %v", p, deps)
		}
	}
}

// TestParticipleOnlyInTextTooling: only the IR text parser imports the
// parser generator.
func TestParticipleOnlyInTextTooling(t *testing.T) {
	for _, p := range []string{"./compiler/...", "./passes/...", "./ir"} {
		for _, d := range goList(t, nil, "-deps", "-f", "{{.ImportPath}}", p) {
			if strings.Contains(d, "participle") {
				t.Errorf("%s depends on %s", p, d)
			}
		}
	}
}

// TestRuntimeLinksNoTextTooling: a service that links a generated executor
// (codegen/genrt) or the VM decodes plans with encoding/json alone; the
// participle text form of the IR and the HTML view stay in the tools.
func TestRuntimeLinksNoTextTooling(t *testing.T) {
	deps := goList(t, nil, "-deps", "-f", "{{.ImportPath}}", "./codegen/genrt", "./vm")
	for _, d := range deps {
		if strings.Contains(d, "github.com/alecthomas/participle") || d == "html/template" || d == "github.com/genaic/genaic/ir/irtext" {
			t.Errorf("the runtime (codegen/genrt, vm) depends on %s", d)
		}
	}
}

// TestViewsOnlyInTheCLI: the inspect views are for people; only the
// command line imports them.
func TestViewsOnlyInTheCLI(t *testing.T) {
	const views = "github.com/genaic/genaic/plan/view"
	for _, line := range goList(t, nil, "-f", "{{.ImportPath}}:{{join .Imports \",\"}}", "./...") {
		pkg, imports, _ := strings.Cut(line, ":")
		if pkg == "github.com/genaic/genaic/cmd/genaic" || pkg == views {
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp == views {
				t.Errorf("%s imports %s; only cmd/genaic may", pkg, views)
			}
		}
	}
}

// TestBackendsImportTheSeam: the ONNX Runtime backend and the adapters
// implement the seam (package backend), not the VM: a backend never
// reaches into the interpreter or the groupers.
func TestBackendsImportTheSeam(t *testing.T) {
	for _, p := range []string{"./vm/ort", "./vm/adapters", "./backend"} {
		for _, d := range goList(t, nil, "-deps", "-f", "{{.ImportPath}}", p) {
			if d == "github.com/genaic/genaic/vm" {
				t.Errorf("%s depends on the VM (github.com/genaic/genaic/vm); a backend imports only the seam, github.com/genaic/genaic/backend", p)
			}
		}
	}
}

// TestSchedImportsOnlyStandardLibrary: the scheduling policy knows items
// only by what admission computed of them, so it needs nothing of the
// runtime; the VM imports it, never the other way.
func TestSchedImportsOnlyStandardLibrary(t *testing.T) {
	deps := goList(t, nil, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./sched")
	for _, d := range deps {
		if d != "github.com/genaic/genaic/sched" {
			t.Errorf("sched depends on %s; it imports only the standard library", d)
		}
	}
}

// TestEveryFuzzTargetRuns: "make test" fuzzes the targets scripts/fuzz.sh
// lists, so a fuzz target missing from the list would only ever run its
// seeds.
func TestEveryFuzzTargetRuns(t *testing.T) {
	root := testenv.Root(t)
	listed := fuzzScriptTargets(t, filepath.Join(root, "scripts", "fuzz.sh"))
	fuzzFunc := regexp.MustCompile(`^func (Fuzz\w*)\(`)
	var found []string
	for _, line := range goList(t, nil, "-f", "{{.Dir}}:{{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}", "./...") {
		dir, files, _ := strings.Cut(line, ":")
		pkg, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range strings.Split(files, ",") {
			if name == "" {
				continue
			}
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m := fuzzFunc.FindStringSubmatch(sc.Text()); m != nil {
					found = append(found, filepath.ToSlash(pkg)+" "+m[1])
				}
			}
			f.Close()
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("no fuzz target found in the repository's tests")
	}
	for _, target := range found {
		if !slices.Contains(listed, target) {
			t.Errorf("fuzz target %s is not in scripts/fuzz.sh: add it with a count of inputs", target)
		}
	}
	for _, target := range listed {
		if !slices.Contains(found, target) {
			t.Errorf("scripts/fuzz.sh lists %s, which no test defines", target)
		}
	}
}

// fuzzScriptTargets reads scripts/fuzz.sh's TARGETS list as "package
// Target" entries.
func fuzzScriptTargets(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\nTARGETS=\"")
	list, _, closed := strings.Cut(rest, "\"")
	if !ok || !closed {
		t.Fatalf("%s has no TARGETS=\"...\" list", path)
	}
	var out []string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			out = append(out, f[0]+" "+f[1])
		} else if len(f) != 0 {
			t.Errorf("%s: TARGETS line %q is not \"package target inputs\"", path, line)
		}
	}
	return out
}
