package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/plan"
)

const inspectPkg = "../../testdata/packages/image_padded"

// copyPackage copies the metadata document and models of a package into a temporary
// folder, so a test can compile, edit and break it.
func copyPackage(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(from, "*.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, filepath.Join(from, "inference_metadata.yaml")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInspectText(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", inspectPkg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"component encoder: grouped\n",
		"pixel_patches  packed",
		"level 0: images → rows (offsets `image_offsets`, owner `image_owner`)",
		"items share an invocation when they agree on features (read from pixel_patches axis 2)",
		"images × patches ≤ 4096\n",
		"where images = packed positions of pixel_patches, patches = padded extent of pixel_patches axis 1 (group maximum)",
		"preserved from input `pixel_patches` level 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text view lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectJSON(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", inspectPkg, "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		PlanVersion   int    `json:"plan_version"`
		SchemaVersion string `json:"schema_version"`
		Components    map[string]struct {
			Grouped bool `json:"grouped"`
			Inputs  map[string]struct {
				Role   string   `json:"role"`
				Levels int      `json:"levels"`
				Padded []string `json:"padded"`
			} `json:"inputs"`
			Outputs map[string]struct {
				Split string `json:"split"`
			} `json:"outputs"`
			Uniform []string `json:"uniform"`
			Budgets []struct {
				Dimensions []string `json:"dimensions"`
				MaxTotal   int64    `json:"max_total"`
			} `json:"budgets"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	enc := v.Components["encoder"]
	in := enc.Inputs["pixel_patches"]
	switch {
	case v.PlanVersion != plan.Version || v.SchemaVersion != "v1.1":
		t.Errorf("plan_version %d, schema_version %q", v.PlanVersion, v.SchemaVersion)
	case !enc.Grouped || in.Role != "packed" || in.Levels != 1 || strings.Join(in.Padded, ",") != "patches":
		t.Errorf("encoder: grouped %v, pixel_patches %+v", enc.Grouped, in)
	case enc.Inputs["image_owner"].Role != "companion" || enc.Outputs["embeddings"].Split != "packed":
		t.Errorf("encoder: image_owner %+v, embeddings %+v", enc.Inputs["image_owner"], enc.Outputs["embeddings"])
	case strings.Join(enc.Uniform, ",") != "features" || len(enc.Budgets) != 2 || enc.Budgets[1].MaxTotal != 4096:
		t.Errorf("encoder: uniform %v, budgets %+v", enc.Uniform, enc.Budgets)
	}
}

func TestInspectDOT(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", "--format", "dot", inspectPkg)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"digraph workflow {", `"invoke:0" [shape=box3d, style="bold,filled"`, `images × patches ≤ 4096`, `"in:pixel_patches" -> "invoke:0"`, `-> "out:embeddings"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the DOT view lacks %q:\n%s", want, out)
		}
	}
}

// TestInspectPlanFile: a compiled plan inspects exactly as its document,
// in every format.
func TestInspectPlanFile(t *testing.T) {
	dir := copyPackage(t, inspectPkg)
	planPath := filepath.Join(t.TempDir(), "plan.json")
	if _, errOut, code := runCLI(t, "compile", dir, "-o", planPath); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	for _, format := range []string{"text", "json", "dot"} {
		fromDoc, _, code1 := runCLI(t, "inspect", dir, "--format", format)
		fromPlan, _, code2 := runCLI(t, "inspect", planPath, "--format", format)
		if code1 != exitOK || code2 != exitOK || fromDoc != fromPlan {
			t.Errorf("--format %s: the plan file (exit %d) and its document (exit %d) inspect differently:\n--- plan ---\n%s\n--- document ---\n%s", format, code2, code1, fromPlan, fromDoc)
		}
	}
}

// TestInspectAdapterKey: inspect says what an adapter keys its
// invocations by besides the compatibility key (the recognizer's lines,
// resized to a height, keep each image's width, which its port stacks
// unpadded), from the document and from the plan compile writes alike;
// a package whose adapter pads what it makes says none.
func TestInspectAdapterKey(t *testing.T) {
	dir := copyPackage(t, "../../testdata/packages/ocr_rec")
	planPath := filepath.Join(t.TempDir(), "plan.json")
	if _, errOut, code := runCLI(t, "compile", dir, "-o", planPath); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	want := "items share an invocation when they make the same width of `lines` (read off each item's header when its request is admitted)"
	for _, path := range []string{dir, planPath} {
		out, errOut, code := runCLI(t, "inspect", path)
		if code != exitOK || !strings.Contains(out, "component image_preprocess: grouped\n") || !strings.Contains(out, want) {
			t.Errorf("inspect %s: exit %d, the text view lacks %q:\n%s%s", path, code, want, out, errOut)
		}
	}
	out, _, _ := runCLI(t, "inspect", dir, "--format", "json")
	var doc struct {
		Components map[string]struct {
			KeyedBy []string `json:"keyed_by"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !slices.Equal(doc.Components["image_preprocess"].KeyedBy, []string{"width of `lines`"}) {
		t.Errorf("the json view's keyed_by: %v, %+v", err, doc.Components)
	}
	if out, _, _ := runCLI(t, "inspect", "../../testdata/packages/audio_mel"); strings.Contains(out, "make the same") {
		t.Errorf("a padding adapter is said to key its invocations:\n%s", out)
	}
}

// TestInspectStalePlan: a plan whose document changed is still shown, with
// a warning naming what changed.
func TestInspectStalePlan(t *testing.T) {
	dir := copyPackage(t, inspectPkg)
	planPath := filepath.Join(dir, "plan.json")
	if _, errOut, code := runCLI(t, "compile", dir); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	doc := filepath.Join(dir, "inference_metadata.yaml")
	b, _ := os.ReadFile(doc)
	if err := os.WriteFile(doc, append(b, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "inspect", planPath)
	if code != exitOK || !strings.Contains(out, "component encoder: grouped") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
	if !strings.Contains(errOut, "genaic: warning: stale plan") || !strings.Contains(errOut, "inference_metadata.yaml changed since the plan was compiled") {
		t.Errorf("no stale warning:\n%s", errOut)
	}
}

func TestInspectRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	planPath := filepath.Join(dir, "good.json")
	if _, errOut, code := runCLI(t, "compile", copyPackage(t, inspectPkg), "-o", planPath); code != exitOK {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	good, _ := os.ReadFile(planPath)
	tampered := write("tampered.json", strings.Replace(string(good), `"max_total": 4096`, `"max_total": 9999`, 1))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid document", []string{"testdata/multi_error.yaml"}, exitDiags, "error[capacity/budget-root]"},
		{"unknown format", []string{inspectPkg, "--format", "pdf"}, exitUsage, "--format pdf is not a view genaic inspect writes"},
		{"no path", nil, exitUsage, "usage: genaic inspect"},
		{"two paths", []string{inspectPkg, inspectPkg}, exitUsage, "usage: genaic inspect"},
		{"missing path", []string{filepath.Join(dir, "absent.yaml")}, exitUsage, "no such file"},
		{"tampered plan", []string{tampered}, exitUsage, "signature does not match"},
		{"other plan version", []string{write("v9.json", `{"format": "genaic-plan", "plan_version": 9}`)}, exitUsage, "format version 9"},
		{"foreign JSON", []string{write("other.json", `{"format": "something-else"}`)}, exitUsage, "is not a genaic plan"},
		{"inspect JSON fed back", []string{write("view.json", `{"format": "genaic-inspect", "plan_version": 1}`)}, exitUsage, "is not a genaic plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"inspect"}, tc.args...)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr:\n%s", code, tc.code, out, errOut)
			}
		})
	}
}

// TestInspectRunStats: inspect adds what a running engine measured and
// decided from a responses document written with --stats; other views and
// a file without stats are refused.
func TestInspectRunStats(t *testing.T) {
	out := filepath.Join(t.TempDir(), "responses.json")
	if _, errOut, code := runCLI(t, "run", imagePkg, "--requests", filepath.Join(imagePkg, "requests.json"), "--stats", "--out", out); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	got, errOut, code := runCLI(t, "inspect", imagePkg, "--stats", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"what the running engine measured and decided", "component encoder: 1 invocations for 3 requests, largest group 3", "group sizes: 1×3", "padding: ", "ms of it inside the backend (", "execution: 1 slot × the backend's default threads, as configured"} {
		if !strings.Contains(got, want) {
			t.Errorf("inspect --stats lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "groups run by the batches") {
		t.Errorf("inspect --stats reports batches running their own groups for a run with none:\n%s", got)
	}
	// Where batches ran their own groups, it says so and why.
	var doc map[string]any
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	enc := doc["stats"].(map[string]any)["components"].(map[string]any)["encoder"].(map[string]any)
	if strings.Contains(got, "by input name") {
		t.Errorf("inspect --stats reports calls by name for a run by port position:\n%s", got)
	}
	if strings.Contains(got, "held later groups' outputs") {
		t.Errorf("inspect --stats reports outputs reused for a run that released no response:\n%s", got)
	}
	if strings.Contains(got, "a more urgent request taking their place") {
		t.Errorf("inspect --stats reports displaced requests for a run with none:\n%s", got)
	}
	enc["own_groups"] = 7
	enc["outputs_reused"] = 5
	enc["displaced"] = 3
	enc["call_by_name"] = "the session takes 3 input(s), the plan gives 2"
	own := filepath.Join(t.TempDir(), "own.json")
	if b, err = json.Marshal(doc); err == nil {
		err = os.WriteFile(own, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	got, errOut, code = runCLI(t, "inspect", imagePkg, "--stats", own)
	for _, want := range []string{
		"groups run by the lockstep batches that brought them, not by a runner: 7",
		"groups handed to the session by input name, not by port position (a map per group): the session takes 3 input(s), the plan gives 2",
		"5 groups' output buffers held later groups' outputs once their responses were released",
		"3 requests failed run/queue-full at the full queue, a more urgent request taking their place",
	} {
		if code != exitOK || !strings.Contains(got, want) {
			t.Errorf("exit %d (%s): inspect --stats lacks %q:\n%s", code, errOut, want, got)
		}
	}
	// The HTML view draws each budget's peak, as the run measured it.
	stats, err := readStats(out)
	if err != nil {
		t.Fatal(err)
	}
	page, errOut, code := runCLI(t, "inspect", imagePkg, "--stats", out, "--format", "html")
	if code != exitOK {
		t.Fatalf("--format html: exit %d: %s", code, errOut)
	}
	peaks := stats.Components["encoder"].BudgetPeaks
	if len(peaks) == 0 {
		t.Fatal("the run measured no budget peak for encoder")
	}
	for _, p := range peaks {
		if want := fmt.Sprintf("peak in a run: %d (", p.Peak); p.Peak <= 0 || !strings.Contains(page, want) {
			t.Errorf("the HTML view lacks %q for budget %v", want, p.Dimensions)
		}
	}
	if n := strings.Count(page, `class="bar-peak`); n != len(peaks) {
		t.Errorf("the HTML view draws %d peak bars, want %d", n, len(peaks))
	}
	if _, errOut, code := runCLI(t, "inspect", imagePkg, "--stats", out, "--format", "json"); code != exitUsage || !strings.Contains(errOut, "--stats is shown by the text and html views") {
		t.Errorf("--stats with --format json: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "inspect", imagePkg, "--stats", filepath.Join(imagePkg, "requests.json")); code != exitUsage || !strings.Contains(errOut, "holds no stats") {
		t.Errorf("--stats on a requests document: exit %d, %s", code, errOut)
	}
}
