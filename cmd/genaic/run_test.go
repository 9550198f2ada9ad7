package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/genaic/genaic/vm/jsonio"
)

const imagePkg = "../../testdata/packages/image_padded"

func decodeResponses(t *testing.T, out string) jsonio.ResponseFile {
	t.Helper()
	var rf jsonio.ResponseFile
	if err := json.Unmarshal([]byte(out), &rf); err != nil {
		t.Fatalf("responses are not JSON: %v\n%s", err, out)
	}
	return rf
}

// TestRunGroupedEqualsSolo runs the example requests through the CLI on
// ONNX Runtime, grouped and solo, and compares every output.
func TestRunGroupedEqualsSolo(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	out, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs, "--stats")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	grouped := decodeResponses(t, out)
	out, errOut, code = runCLI(t, "run", imagePkg, "--requests", reqs, "--solo", "--stats")
	if code != exitOK {
		t.Fatalf("solo exit %d: %s", code, errOut)
	}
	solo := decodeResponses(t, out)
	if len(grouped.Responses) != 4 || len(solo.Responses) != 4 {
		t.Fatalf("responses: %d grouped, %d solo", len(grouped.Responses), len(solo.Responses))
	}
	for i, g := range grouped.Responses {
		s := solo.Responses[i]
		if g.ID != s.ID || g.Error != nil || s.Error != nil {
			t.Fatalf("%s/%s: %v %v", g.ID, s.ID, g.Error, s.Error)
		}
		for name, tj := range s.Outputs {
			a, _ := g.Outputs[name].Tensor()
			b, _ := tj.Tensor()
			if !reflect.DeepEqual(a.Shape, b.Shape) || !closeTo(a.Float32s(), b.Float32s()) {
				t.Errorf("%s %s: grouped %v, solo %v", g.ID, name, a, b)
			}
		}
	}
	gs, ss := grouped.Stats.Components["encoder"], solo.Stats.Components["encoder"]
	if gs.MaxGroupRequests < 2 || ss.MaxGroupRequests != 1 || gs.Invocations >= ss.Invocations {
		t.Errorf("stats: grouped %+v, solo %+v", gs, ss)
	}
}

func closeTo(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
			return false
		}
	}
	return true
}

// TestRunRefusesWhatCheckRefuses: run compiles a package as check does,
// its adapters loaded, so a package only an adapter's load refuses (pixels
// stacked on axis 1) is refused with check's diagnostic, not run until the
// adapter fails to load.
func TestRunRefusesWhatCheckRefuses(t *testing.T) {
	dir := "../../serve/testdata/adapter_axis1"
	if out, errOut, code := runCLI(t, "check", dir); code != exitDiags || !strings.Contains(out+errOut, "error[preprocess/op]") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code := runCLI(t, "run", dir, "--verify")
	if code != exitDiags || !strings.Contains(errOut, "error[preprocess/op]") || !strings.Contains(errOut, "stacks images on axis 0") || strings.Contains(errOut, "run/unsupported") {
		t.Errorf("run: exit %d\n%s", code, errOut)
	}
}

// TestRunFromPlanFile compiles a plan, runs it into --out, and refuses it
// once the package's artifact changed.
func TestRunFromPlanFile(t *testing.T) {
	pkg := t.TempDir()
	for _, f := range []string{"inference_metadata.yaml", "encoder.onnx", "requests.json"} {
		b, err := os.ReadFile(filepath.Join(imagePkg, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planPath := filepath.Join(t.TempDir(), "plan.json")
	if _, errOut, code := runCLI(t, "compile", pkg, "-o", planPath); code != exitOK {
		t.Fatalf("compile: %s", errOut)
	}
	outPath := filepath.Join(t.TempDir(), "out.json")
	if _, errOut, code := runCLI(t, "run", planPath, "--requests", filepath.Join(pkg, "requests.json"), "--out", outPath); code != exitOK {
		t.Fatalf("run: %s", errOut)
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if rf := decodeResponses(t, string(b)); len(rf.Responses) != 4 || rf.Stats != nil {
		t.Errorf("--out holds %d responses, stats %v", len(rf.Responses), rf.Stats)
	}
	if err := os.WriteFile(filepath.Join(pkg, "encoder.onnx"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "run", planPath, "--requests", filepath.Join(pkg, "requests.json"))
	if code != exitUsage || !strings.Contains(errOut, "changed since the plan was compiled") {
		t.Errorf("a stale plan: exit %d, %s", code, errOut)
	}
}

// TestRunReportsFailedRequests: a request with corrupted offsets fails with
// its rule, the others succeed, and the exit code says some failed.
func TestRunReportsFailedRequests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(imagePkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	offsets := doc["requests"][0]["inputs"].(map[string]any)["image_offsets"].(map[string]any)
	offsets["data"] = []int{0, 5} // alice has 2 images
	bad, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	reqs := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(reqs, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "run", imagePkg, "--requests", reqs)
	if code != exitDiags || !strings.Contains(errOut, "1 of 4 requests failed") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rf := decodeResponses(t, out)
	if e := rf.Responses[0].Error; e == nil || e.Rule != "run/offsets" {
		t.Errorf("the corrupted request: %+v", rf.Responses[0])
	}
	// The error is located at the port whose companion was refused, in the
	// response and in what run prints.
	if e := rf.Responses[0].Error; e == nil || e.Location == nil || e.Location.Line != 66 || !strings.HasSuffix(e.Location.Path, "ports.inputs.pixel_patches") {
		t.Errorf("the corrupted request's error is located at %+v, want line 66, the port pixel_patches", rf.Responses[0].Error)
	}
	if want := filepath.Join(imagePkg, "inference_metadata.yaml") + ":66:"; !strings.Contains(errOut, want+"13: error[run/offsets]: request alice:") {
		t.Errorf("run printed %q, want a diagnostic at %s", errOut, want)
	}
	for _, r := range rf.Responses[1:] {
		if r.Error != nil {
			t.Errorf("%s failed too: %v", r.ID, r.Error)
		}
	}
}

// TestVerifyAlonePrintsTheVerdict: --verify without --requests checks
// requests it synthesizes; their answers are the check's, not the user's,
// so it prints only the verdict (and where --out writes them), unless
// --out or --stats asks for the answers.
func TestVerifyAlonePrintsTheVerdict(t *testing.T) {
	out, errOut, code := runCLI(t, "run", imagePkg, "--verify")
	if code != exitOK || out != "" || !strings.Contains(errOut, "answered alike grouped and alone") || !strings.Contains(errOut, "--out FILE writes them") {
		t.Errorf("run --verify: exit %d, %d bytes on stdout\n%s", code, len(out), errOut)
	}
	path := filepath.Join(t.TempDir(), "answers.json")
	if _, errOut, code := runCLI(t, "run", imagePkg, "--verify", "--out", path); code != exitOK || strings.Contains(errOut, "not printed") {
		t.Fatalf("run --verify --out: exit %d\n%s", code, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Count(string(b), `"id":"synthesized-`) != 12 {
		t.Errorf("--out holds %d answers (%v), want the 12 synthesized requests'", strings.Count(string(b), `"id":"synthesized-`), err)
	}
	if out, _, code := runCLI(t, "run", imagePkg, "--verify", "--stats"); code != exitOK || !strings.Contains(out, `"stats"`) {
		t.Errorf("run --verify --stats: exit %d, stdout without the stats", code)
	}
}
