package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLIStdin is runCLI with stdin as standard input, failing the test
// when the command has not returned within a minute (a hang).
func runCLIStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(&env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args) }()
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("genaic %s did not return within a minute", strings.Join(args, " "))
	}
	return out.String(), errb.String(), code
}

// branchPackage returns a package folder whose workflow is not
// straight-line (testdata/branch_padded), with image_padded's encoder.
func branchPackage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"testdata/branch_padded/inference_metadata.yaml": "inference_metadata.yaml",
		filepath.Join(imagePkg, "encoder.onnx"):          "encoder.onnx",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// branchRequests writes a requests document for branchPackage of n
// requests: image_padded's four in turn, with the branch's mode input.
func branchRequests(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests []struct {
			ID     string                     `json:"id"`
			Inputs map[string]json.RawMessage `json:"inputs"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Requests {
		r.Inputs["mode"] = json.RawMessage(`{"dtype":"int64","shape":[],"data":[0]}`)
	}
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return largeDocument(t, src, n)
}

// TestDashArgument: a bare "-" is standard input where a document or a
// requests file is read, and a usage error elsewhere; it never loops.
func TestDashArgument(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(imagePkg, "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLIStdin(t, string(doc), "check", "-")
	if code != exitOK || !strings.Contains(out, "<stdin>: valid") {
		t.Errorf("check -: exit %d, %q %q", code, out, errOut)
	}
	out, _, code = runCLIStdin(t, "schema_version: v1.1\npipeline: 7\n", "check", "--json", "-")
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitDiags || len(rep.Files) != 1 || rep.Files[0].Valid {
		t.Errorf("check --json - on an invalid document: exit %d, %v, %s", code, err, out)
	}
	if _, errOut, code := runCLIStdin(t, string(doc), "check", "--", "-"); code != exitOK {
		t.Errorf("check -- -: exit %d, %s", code, errOut)
	}
	if out, errOut, code := runCLIStdin(t, string(doc), "compile", "-", "--emit", "ir"); code != exitOK || !strings.Contains(out, "encoder") {
		t.Errorf("compile - --emit ir: exit %d, %s", code, errOut)
	}
	out, errOut, code = runCLIStdin(t, string(reqs), "run", imagePkg, "--requests", "-")
	if code != exitOK || len(decodeResponses(t, out).Responses) != 4 {
		t.Errorf("run --requests -: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{
		{"check", "-", "-"},
		{"compile", "-"},
		{"compile", imagePkg, "-o", "-"},
		{"inspect", "-"},
		{"inspect", imagePkg, "--stats", "-"},
		{"run", "-", "--requests", "x.json"},
		{"run", imagePkg, "--requests", filepath.Join(imagePkg, "requests.json"), "--out", "-"},
		{"bench", "-", "--requests", "x.json"},
		{"gen", "-", "-o", t.TempDir(), "-p", "x"},
		{"gen", imagePkg, "-o", "-", "-p", "x"},
	} {
		out, errOut, code := runCLIStdin(t, string(doc), args...)
		if code != exitUsage || !strings.Contains(errOut, "-") || out != "" {
			t.Errorf("genaic %s: exit %d, stdout %q, stderr %q; want a usage error", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestFlagLimits: flags out of range are usage errors that name the flag,
// and nothing runs.
func TestFlagLimits(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "100000"}, "--threads"},
		{[]string{"--threads", "-1"}, "--threads"},
		{[]string{"--queue", "0"}, "--queue"},
		{[]string{"--workers", "-1"}, "--workers"},
		{[]string{"--max-delay", "-1ms"}, "--max-delay"},
		{[]string{"--concurrency", "-3"}, "--concurrency"},
		{[]string{"--decline", "nosuch=slow"}, "encoder"},
		{[]string{"--decline", "nosuch/onnx-graph=slow"}, `no component "nosuch"`},
	} {
		args := append([]string{"run", imagePkg, "--requests", reqs}, c.args...)
		out, errOut, code := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("run %s: exit %d, stdout %d bytes, stderr %q; want a usage error naming %s", strings.Join(c.args, " "), code, len(out), errOut, c.want)
		}
	}
	for _, args := range [][]string{
		{"--threads", "100000"}, {"--queue", "0"}, {"--rounds", "0"}, {"--rounds", "1000000"},
		{"--warmup", "-1"}, {"--warmup", "1000000"}, {"--decline", "nosuch=slow"},
	} {
		all := append([]string{"bench", imagePkg, "--requests", reqs}, args...)
		out, errOut, code := runCLI(t, all...)
		if code != exitUsage || out != "" {
			t.Errorf("bench %s: exit %d, stderr %q; want a usage error", strings.Join(args, " "), code, errOut)
		}
	}
	for _, d := range []string{"*=slow", "encoder=slow", "*/onnx-graph=slow"} {
		if _, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--decline", d); code != exitOK {
			t.Errorf("--decline %s: exit %d, %s", d, code, errOut)
		}
	}
}

// TestRunOutChecked: --out is never the requests file, and one that
// cannot be written stops run before it runs.
func TestRunOutChecked(t *testing.T) {
	dir := t.TempDir()
	reqs := filepath.Join(dir, "requests.json")
	orig, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reqs, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(reqs, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.json")
	if err := os.Link(reqs, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{reqs, filepath.Join(dir, ".", "requests.json"), link, hard} {
		_, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--out", out)
		if code != exitUsage || !strings.Contains(errOut, "requests file") {
			t.Errorf("--out %s: exit %d, %s", out, code, errOut)
		}
	}
	if b, _ := os.ReadFile(reqs); !bytes.Equal(b, orig) {
		t.Fatal("the requests file was overwritten")
	}
	for _, out := range []string{filepath.Join(dir, "missing", "out.json"), dir} {
		_, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--out", out)
		if code != exitUsage || errOut == "" {
			t.Errorf("--out %s: exit %d, %s", out, code, errOut)
		}
	}
	// A run that stops before writing leaves no empty --out behind.
	out := filepath.Join(dir, "out.json")
	if _, _, code := runCLI(t, "run", imagePkg, "--requests", filepath.Join(dir, "absent.json"), "--out", out); code != exitUsage {
		t.Errorf("a missing requests file: exit %d", code)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--out %s was created by a run that never ran", out)
	}
}

// TestRunDefaultConcurrency: with default flags a run of 5,000 requests
// through a grouped component answers every one (concurrency defaults to
// what the queue holds, so none fails on a full queue). Not timed.
func TestRunDefaultConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 requests")
	}
	pkg := branchPackage(t)
	reqs := branchRequests(t, 5000)
	out, errOut, code := runCLI(t, "run", pkg, "--requests", reqs)
	if code != exitOK {
		t.Fatalf("exit %d: %.2000s", code, errOut)
	}
	rf := decodeResponses(t, out)
	if len(rf.Responses) != 5000 {
		t.Fatalf("%d responses", len(rf.Responses))
	}
	for _, r := range rf.Responses {
		if r.Error != nil || len(r.Outputs) == 0 {
			t.Fatalf("%s: %+v", r.ID, r.Error)
		}
	}
}

// TestCheckEveryPath: check goes on past a path it cannot read, and
// --json prints JSON with an entry holding the I/O error.
func TestCheckEveryPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing.yaml")
	out, errOut, code := runCLI(t, "check", missing, imagePkg)
	if code != exitUsage || !strings.Contains(errOut, "nothing.yaml") || !strings.Contains(out, "inference_metadata.yaml: valid") {
		t.Errorf("check MISSING PKG: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = runCLI(t, "check", "--json", missing, imagePkg)
	var rep struct {
		Files []struct {
			Path  string `json:"path"`
			Valid bool   `json:"valid"`
			Error string `json:"error"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json printed no JSON (exit %d): %v\n%s", code, err, out)
	}
	if code != exitUsage || len(rep.Files) != 2 || rep.Files[0].Path != missing || rep.Files[0].Error == "" || rep.Files[0].Valid || !rep.Files[1].Valid {
		t.Errorf("check --json MISSING PKG: exit %d, %+v", code, rep)
	}
}
