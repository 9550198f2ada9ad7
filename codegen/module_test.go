package codegen_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/codegen"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/vm/ortlib"
)

// generate writes the executor of pkg as `genaic gen pkg -o dir -p name`
// run at the root of the checkout writes it.
func generate(t testing.TB, pkg, dir, name string) []codegen.File {
	t.Helper()
	f, _ := fixtures.Build(t, pkg)
	files, err := codegen.Generate(f, codegen.Config{
		Package: name,
		Command: fmt.Sprintf("genaic gen %s -o %s -p %s", pkg, dir, name),
		Source:  pkg,
	})
	if err != nil {
		t.Fatalf("generate %s: %v", pkg, err)
	}
	return files
}

// tempModule makes a module outside the checkout that requires genaic
// through a replace pointing at it, as a program of an application would,
// with the checkout's go.sum so that nothing is looked up.
func tempModule(t *testing.T, path string) string {
	t.Helper()
	root := testenv.Root(t)
	dir := t.TempDir()
	goLine := "go 1.26"
	if f, err := os.Open(filepath.Join(root, "go.mod")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "go ") {
				goLine = sc.Text()
			}
		}
		f.Close()
	}
	mod := fmt.Sprintf("module %s\n\n%s\n\nrequire github.com/genaic/genaic v0.0.0\n\nreplace github.com/genaic/genaic => %s\n", path, goLine, root)
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(mod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	return dir
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCommand runs the go command in a temporary module: offline (the module
// cache "make setup" filled), with the local toolchain, and with the cache
// of the checkout so that ONNX Runtime is found from outside it.
func goCommand(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cache, err := ortlib.CacheDir()
	if err != nil {
		t.Fatalf("%v: %s", err, fixtures.FixSetup)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOWORK=off", "GOPROXY=off", "GOSUMDB=off",
		ortlib.EnvCache+"="+cache)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out
}
