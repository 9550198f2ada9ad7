package main

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/ir/irtext"
	"github.com/genaic/genaic/passes"
)

func TestCompileEmitsIR(t *testing.T) {
	out, errOut, code := runCLI(t, "compile", "../../testdata/packages/image_padded", "--emit", "ir", "--check")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m, err := irtext.Parse("out.ir", []byte(out))
	if err != nil {
		t.Fatalf("the emitted IR does not parse: %v", err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	if m.String() != out {
		t.Errorf("print→parse→print differs")
	}
	if len(m.Components) != 1 || m.Components[0].Capacity == nil {
		t.Errorf("the emitted IR lost the component's capacity")
	}
}

func TestCompileDumps(t *testing.T) {
	_, errOut, code := runCLI(t, "compile", "../../testdata/packages/image_padded", "--emit", "ir", "--dump", "all")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "// IR after pass "); n != len(passes.Pipeline) {
		t.Errorf("--dump all printed %d dumps, want one per pass", n)
	}
	_, errOut, _ = runCLI(t, "compile", "../../testdata/packages/image_padded", "--emit", "ir", "--dump", "packed")
	if !strings.Contains(errOut, "// IR after pass packed\n") || strings.Count(errOut, "// IR after pass") != 1 {
		t.Errorf("--dump packed printed:\n%.200s", errOut)
	}
	_, errOut, code = runCLI(t, "compile", "../../testdata/packages/image_padded", "--dump", "nope")
	if code != exitUsage || !strings.Contains(errOut, "--dump nope names no pass") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestCompileRefusesInvalid(t *testing.T) {
	out, errOut, code := runCLI(t, "compile", "testdata/multi_error.yaml")
	if code != exitDiags || out != "" || !strings.Contains(errOut, "error[capacity/budget-root]") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

func TestPassesCommand(t *testing.T) {
	out, _, code := runCLI(t, "passes")
	if code != exitOK || !strings.Contains(out, " 1. scopes") || !strings.Contains(out, "capacity") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}
