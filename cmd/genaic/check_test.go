package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeDoc(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckExitCodes(t *testing.T) {
	valid := writeDoc(t, "schema_version: v1.1\nmodel: {}\n")
	invalid := writeDoc(t, "schema_version: v1.1\nmodle: {}\n")
	emptyDir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"valid", []string{"check", valid}, exitOK, "doc.yaml: valid", ""},
		{"package folder", []string{"check", "../../testdata/packages/image_padded"}, exitOK, "inference_metadata.yaml: valid", ""},
		{"invalid", []string{"check", invalid}, exitDiags, "error[schema/unknown-field]", ""},
		{"flags after paths", []string{"check", invalid, "--json"}, exitDiags, `"rule": "schema/unknown-field"`, ""},
		{"one invalid of two", []string{"check", valid, invalid}, exitDiags, "invalid (1 diagnostic)", ""},
		{"missing file", []string{"check", "/no/such/file.yaml"}, exitUsage, "", "no such file"},
		{"folder without metadata", []string{"check", emptyDir}, exitUsage, "", "a folder without inference_metadata.yaml"},
		{"no path", []string{"check"}, exitUsage, "", "usage: genaic check"},
		{"unknown flag", []string{"check", "--bogus", valid}, exitUsage, "", "flag provided but not defined"},
		{"unknown command", []string{"chekc"}, exitUsage, "", `unknown command "chekc"`},
		{"no command", nil, exitUsage, "", "Usage:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errOut)
			}
		})
	}
}

// TestCheckRendering pins the whole text rendering of one document.
func TestCheckRendering(t *testing.T) {
	p := writeDoc(t, "schema_version: v1.1\npipeline:\n  workflow:\n    inputs:\n      x: { contract: { dtype: float32, shpe: [a] }, role: { kind: opaque }, source: { kind: requets } }\n")
	out, _, code := runCLI(t, "check", p)
	if code != exitDiags {
		t.Fatalf("exit %d", code)
	}
	want := p + ":5:40: error[schema/unknown-field]: unknown key `shpe` in the tensor contract at `pipeline.workflow.inputs.x.contract`; accepted keys: dtype, shape, rank, optional, batch_layout, padding\n" +
		"        x: { contract: { dtype: float32, shpe: [a] }, role: { kind: opaque }, source: { kind: requets } }\n" +
		"                                         ^^^^\n" +
		"  help: did you mean `shape`?\n" +
		p + ":5:93: error[schema/type]: `kind` must be one of request, application, literal, artifact, read \"requets\"\n" +
		"        x: { contract: { dtype: float32, shpe: [a] }, role: { kind: opaque }, source: { kind: requets } }\n" +
		"                                                                                              ^^^^^^^\n" +
		"  help: did you mean `request`?\n" +
		p + ": invalid (2 diagnostics)\n"
	if out != want {
		t.Errorf("rendering changed\n got:\n%s\nwant:\n%s", out, want)
	}
}

func TestCheckJSONShape(t *testing.T) {
	p := writeDoc(t, "schema_version: latest\n")
	rep, code := checkJSONOf(t, p)
	if code != exitDiags || len(rep.Files) != 1 {
		t.Fatalf("exit %d, %d files", code, len(rep.Files))
	}
	f := rep.Files[0]
	if f.Path != p || f.Valid || len(f.Diagnostics) != 1 {
		t.Fatalf("file report %+v", f)
	}
	d := f.Diagnostics[0]
	if d.Rule != "version/malformed" || d.Severity != "error" || d.Line != 1 || d.Column != 17 || d.EndLine != 1 || d.EndCol != 23 || d.Path != "schema_version" || d.Message == "" {
		t.Errorf("diagnostic %+v", d)
	}
	typo := writeDoc(t, "schema_version: v1.1\nmodle: {}\n")
	rep, _ = checkJSONOf(t, typo)
	if d := rep.Files[0].Diagnostics; len(d) != 1 || d[0].Help != "did you mean `model`?" || d[0].Line != 2 || d[0].Column != 1 || d[0].EndLine != 2 || d[0].EndCol != 6 || strings.Contains(d[0].Message, "did you mean") {
		t.Errorf("a typo's JSON carries its span and its help apart from the message: %+v", d)
	}
	valid := writeDoc(t, "{}")
	rep, _ = checkJSONOf(t, valid)
	if !rep.Files[0].Valid || rep.Files[0].Diagnostics == nil {
		t.Errorf("a valid file reports valid with an empty diagnostics list: %+v", rep.Files[0])
	}
}
