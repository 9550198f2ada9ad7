package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm/jsonio"
)

// requestsWithIDs writes image_padded's four requests under the given ids
// (cycling through the requests).
func requestsWithIDs(t *testing.T, ids ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests []map[string]json.RawMessage `json:"requests"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for i, id := range ids {
		r := map[string]json.RawMessage{}
		for k, v := range doc.Requests[i%len(doc.Requests)] {
			r[k] = v
		}
		r["id"], _ = json.Marshal(id)
		out = append(out, r)
	}
	b, err = json.Marshal(map[string]any{"requests": out})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// inlineRun runs reqs with the responses inline and returns each
// request's outputs by id.
func inlineRun(t *testing.T, reqs string) map[string]map[string]*backend.Tensor {
	t.Helper()
	out, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs)
	if code != exitOK {
		t.Fatalf("inline run: exit %d: %s", code, errOut)
	}
	got := map[string]map[string]*backend.Tensor{}
	for _, r := range decodeResponses(t, out).Responses {
		got[r.ID] = map[string]*backend.Tensor{}
		for name, tj := range r.Outputs {
			x, err := tj.Tensor()
			if err != nil {
				t.Fatal(err)
			}
			got[r.ID][name] = x
		}
	}
	return got
}

// TestRunOutDir: --out-dir writes every output as a .npy file that reads
// back equal to the inline run's output, under names made from ids that
// cannot leave the folder and never collide; the responses document there
// names the files relative to the folder.
func TestRunOutDir(t *testing.T) {
	ids := []string{"alice", "../../escape", "/abs/path", "a/b", "a_b", "A_B", "..", "responses.json", "ünï cödé", strings.Repeat("x", 300)}
	reqs := requestsWithIDs(t, ids...)
	want := inlineRun(t, reqs)
	parent := t.TempDir()
	dir := filepath.Join(parent, "new", "out") // made by run
	stdout, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--out-dir", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if stdout != "" {
		t.Errorf("--out-dir printed the responses too: %.200s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "responses.json"))
	if err != nil {
		t.Fatal(err)
	}
	rf := decodeResponses(t, string(b))
	if len(rf.Responses) != len(ids) {
		t.Fatalf("%d responses for %d requests", len(rf.Responses), len(ids))
	}
	files := map[string]string{}
	for i, r := range rf.Responses {
		if r.ID != ids[i] || r.Error != nil || len(r.Outputs) != len(want[r.ID]) {
			t.Fatalf("response %d: %s %v with %d outputs", i, r.ID, r.Error, len(r.Outputs))
		}
		for name, tj := range r.Outputs {
			if tj.NPY == "" || tj.Data != nil {
				t.Fatalf("%s %s is not named by a file: %+v", r.ID, name, tj)
			}
			rel := filepath.FromSlash(tj.NPY)
			if !filepath.IsLocal(rel) || filepath.Dir(rel) == "." {
				t.Errorf("%s %s: %q is not a file in a request's folder inside --out-dir", r.ID, name, tj.NPY)
			}
			if other, ok := files[strings.ToLower(tj.NPY)]; ok {
				t.Errorf("%s and %s are both written to %s", other, r.ID+" "+name, tj.NPY)
			}
			files[strings.ToLower(tj.NPY)] = r.ID + " " + name
			got, err := jsonio.ReadNPY(filepath.Join(dir, rel))
			if err != nil {
				t.Fatalf("%s %s: %v", r.ID, name, err)
			}
			w := want[r.ID][name]
			if got.DType != w.DType || got.DType != tj.DType || !reflect.DeepEqual(got.Shape, w.Shape) || !reflect.DeepEqual(got.Shape, tj.Shape) || !reflect.DeepEqual(got.Data, w.Data) {
				t.Errorf("%s %s: the file holds %v %v %v, the inline run %v %v %v", r.ID, name, got.DType, got.Shape, got.Data, w.DType, w.Shape, w.Data)
			}
		}
	}
	// Nothing was written beside the folder.
	for _, d := range []string{parent, filepath.Dir(dir)} {
		if es, err := os.ReadDir(d); err != nil || len(es) != 1 {
			t.Errorf("%s holds %v (%v); want only the folder on the way to --out-dir", d, es, err)
		}
	}
}

// TestRunOutDirRefused: an --out-dir that cannot take files, or beside
// --out, is refused before the run (exit 2), naming the flag.
func TestRunOutDirRefused(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	ro := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(ro, 0o555)
	for name, args := range map[string][]string{
		"a file":      {"--out-dir", file},
		"under file":  {"--out-dir", filepath.Join(file, "sub")},
		"with --out":  {"--out-dir", t.TempDir(), "--out", filepath.Join(t.TempDir(), "x.json")},
		"bad format":  {"--format", "xml"},
		"read-only":   {"--out-dir", ro},
		"dash folder": {"--out-dir", "-"},
	} {
		if name == "read-only" && os.Geteuid() == 0 {
			continue // root writes anywhere
		}
		out, errOut, code := runCLI(t, append([]string{"run", imagePkg, "--requests", reqs}, args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "--") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 naming the flag", name, code, out, errOut)
		}
	}
}

// TestRunJSONL: --format jsonl prints one response per line, each the
// response object of the document, every id once; with --stats a last
// line holds the stats. With --out-dir the lines name .npy files.
func TestRunJSONL(t *testing.T) {
	ids := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}
	reqs := requestsWithIDs(t, ids...)
	want := inlineRun(t, reqs)
	dir := t.TempDir()
	for _, outDir := range []bool{false, true} {
		args := []string{"run", imagePkg, "--requests", reqs, "--format", "jsonl", "--stats"}
		if outDir {
			args = append(args, "--out-dir", dir)
		}
		out, errOut, code := runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if outDir {
			if out != "" {
				t.Errorf("--out-dir printed the responses too")
			}
			b, err := os.ReadFile(filepath.Join(dir, "responses.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			out = string(b)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(ids)+1 {
			t.Fatalf("%d lines for %d requests and the stats:\n%.500s", len(lines), len(ids), out)
		}
		var seen []string
		for _, line := range lines[:len(ids)] {
			var r struct {
				ID      string                       `json:"id"`
				Outputs map[string]jsonio.TensorJSON `json:"outputs"`
				Error   *jsonio.ErrorJSON            `json:"error"`
			}
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil || r.Error != nil {
				t.Fatalf("line %q: %v %v", line, err, r.Error)
			}
			seen = append(seen, r.ID)
			for name, tj := range r.Outputs {
				var got *backend.Tensor
				var err error
				if outDir {
					got, err = jsonio.ReadNPY(filepath.Join(dir, filepath.FromSlash(tj.NPY)))
				} else {
					got, err = tj.Tensor()
				}
				if err != nil {
					t.Fatal(err)
				}
				if w := want[r.ID][name]; !reflect.DeepEqual(got.Data, w.Data) || !reflect.DeepEqual(got.Shape, w.Shape) {
					t.Errorf("%s %s differs from the document's", r.ID, name)
				}
			}
		}
		sort.Strings(seen)
		if !reflect.DeepEqual(seen, ids) {
			t.Errorf("ids streamed: %v, want each of %v once", seen, ids)
		}
		var stats struct {
			Stats *struct {
				Components map[string]json.RawMessage `json:"components"`
			} `json:"stats"`
		}
		if err := json.Unmarshal([]byte(lines[len(ids)]), &stats); err != nil || stats.Stats == nil || stats.Stats.Components["encoder"] == nil {
			t.Errorf("the last line is not the stats: %q (%v)", lines[len(ids)], err)
		}
	}
}

// TestRunAllowAbs: a .npy input named by an absolute path is refused for
// that request, the message naming --allow-abs; with --allow-abs it is
// read as given and the result equals the inline request's.
func TestRunAllowAbs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests []struct {
			ID     string                       `json:"id"`
			Inputs map[string]jsonio.TensorJSON `json:"inputs"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	x, err := doc.Requests[0].Inputs["pixel_patches"].Tensor()
	if err != nil {
		t.Fatal(err)
	}
	var npy bytes.Buffer
	if err := jsonio.WriteNPY(&npy, x); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "elsewhere", "pixels.npy")
	os.MkdirAll(filepath.Dir(abs), 0o755)
	if err := os.WriteFile(abs, npy.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc.Requests[0].Inputs["pixel_patches"] = jsonio.TensorJSON{NPY: abs}
	b, err = json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	reqs := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(reqs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := inlineRun(t, filepath.Join(imagePkg, "requests.json"))

	out, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs)
	rf := decodeResponses(t, out)
	if code != exitDiags || rf.Responses[0].Error == nil || rf.Responses[0].Error.Rule != backend.RunInput ||
		!strings.Contains(rf.Responses[0].Error.Message, "--allow-abs") || rf.Responses[1].Error != nil {
		t.Errorf("without --allow-abs: exit %d, first response %+v; want run/input naming --allow-abs for it alone\n%s", code, rf.Responses[0].Error, errOut)
	}
	out, errOut, code = runCLI(t, "run", imagePkg, "--requests", reqs, "--allow-abs")
	if code != exitOK {
		t.Fatalf("with --allow-abs: exit %d: %s", code, errOut)
	}
	got, err := decodeResponses(t, out).Responses[0].Outputs["embeddings"].Tensor()
	if err != nil {
		t.Fatal(err)
	}
	if w := want[doc.Requests[0].ID]["embeddings"]; !reflect.DeepEqual(got.Data, w.Data) {
		t.Errorf("with --allow-abs: %v, inline %v", got.Data, w.Data)
	}
	// bench takes the flag too.
	if _, errOut, code := runCLI(t, "bench", imagePkg, "--requests", reqs, "--allow-abs", "--rounds", "1", "--warmup", "0", "--concurrency", "2", "--json"); code != exitOK {
		t.Errorf("bench --allow-abs: exit %d: %s", code, errOut)
	}
}

// TestSafeName: names made from ids are plain file names.
func TestSafeName(t *testing.T) {
	used := map[string]bool{}
	seen := map[string]bool{}
	for _, id := range []string{"", ".", "..", "../x", "a/b", "a\\b", "a_b", "A_B", "\x00", ".hidden", strings.Repeat("é", 100), "a-2", "a", "a"} {
		n := uniqueName(safeName(id), used)
		if !filepath.IsLocal(n) || strings.ContainsAny(n, "/\\\x00") || strings.HasPrefix(n, ".") || len(n) > maxNameLen+4 || n != filepath.Base(n) {
			t.Errorf("%q: name %q", id, n)
		}
		if seen[strings.ToLower(n)] {
			t.Errorf("%q: name %q is taken", id, n)
		}
		seen[strings.ToLower(n)] = true
	}
}

// TestRunOutDirLinks: links in --out-dir are never followed. A link named
// like a request's folder fails that request alone, saying why, in the
// responses and the exit code, while the other requests' outputs are
// written; a link named responses.json is replaced by the responses,
// and the file it pointed to, outside the folder, is left as it was; a
// link named like an output file is replaced too.
func TestRunOutDirLinks(t *testing.T) {
	for _, format := range []string{"json", "jsonl"} {
		ids := []string{"alice", "bob", "carol", "dave"}
		reqs := requestsWithIDs(t, ids...)
		dir := t.TempDir()
		outside := t.TempDir()
		victim := filepath.Join(outside, "precious.json")
		if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "bob")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, "responses."+format)); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "carol"), 0o755); err != nil {
			t.Fatal(err)
		}
		want := inlineRun(t, reqs)
		for name := range want["carol"] {
			if err := os.Symlink(victim, filepath.Join(dir, "carol", safeName(name)+".npy")); err != nil {
				t.Fatal(err)
			}
		}
		_, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--out-dir", dir, "--format", format)
		if code != exitDiags || !strings.Contains(errOut, "request bob") || strings.Count(errOut, "error") != 1 {
			t.Errorf("%s: exit %d, %s; want bob alone failed", format, code, errOut)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
			t.Fatalf("%s: the file outside the folder holds %.100q (%v)", format, b, err)
		}
		if es, _ := os.ReadDir(outside); len(es) != 1 {
			t.Errorf("%s: %d entries were written outside the folder, through the link", format, len(es)-1)
		}
		info, err := os.Lstat(filepath.Join(dir, "responses."+format))
		if err != nil || !info.Mode().IsRegular() {
			t.Fatalf("%s: responses.%s is %v (%v); want the responses in a file of its own", format, format, info, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "responses."+format))
		if format == "jsonl" {
			b = []byte(`{"responses": [` + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ",") + `]}`)
		}
		rf := decodeResponses(t, string(b))
		if len(rf.Responses) != len(ids) {
			t.Fatalf("%s: %d responses, want %d", format, len(rf.Responses), len(ids))
		}
		for _, r := range rf.Responses {
			switch {
			case r.ID == "bob" && (r.Error == nil || !strings.Contains(r.Error.Message, "not a folder") || len(r.Outputs) != 0):
				t.Errorf("%s: bob: %+v, outputs %v; want it failed for its folder", format, r.Error, r.Outputs)
			case r.ID != "bob" && (r.Error != nil || len(r.Outputs) != len(want[r.ID])):
				t.Errorf("%s: %s: %+v with %d outputs", format, r.ID, r.Error, len(r.Outputs))
			case r.ID != "bob":
				for name, tj := range r.Outputs {
					info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(tj.NPY)))
					got, rerr := jsonio.ReadNPY(filepath.Join(dir, filepath.FromSlash(tj.NPY)))
					if err != nil || !info.Mode().IsRegular() || rerr != nil || !reflect.DeepEqual(got.Data, want[r.ID][name].Data) {
						t.Errorf("%s: %s %s: %v %v %v", format, r.ID, name, info, err, rerr)
					}
				}
			}
		}
	}
}
