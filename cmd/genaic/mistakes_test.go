package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
	"github.com/genaic/genaic/vm/jsonio"
)

// mistake is one realistic author mistake made in a copy of the
// image_padded package: edits to its metadata (each old text must occur
// exactly once), and optionally a model written in place of encoder.onnx.
type mistake struct {
	name  string
	edits [][2]string
	model func(t *testing.T) []byte
	// help is a help line the diagnostic must carry.
	help string
	// fix is the edits to the mistaken document that follow that help;
	// nil where the help is a "did you mean", which the test applies at
	// the caret itself. fixModel follows a help that asks for a model
	// that fits: the package's own model goes back.
	fix      [][2]string
	fixModel bool
}

var mistakes = []mistake{
	{name: "typo in a port name an invoke binds",
		edits: [][2]string{{"          patch_lengths: patch_lengths\n", "          patch_lenghts: patch_lengths\n"}},
		help:  "did you mean `patch_lengths`?"},
	{name: "typo in a value name a step reads",
		edits: [][2]string{{"          pixel_patches: pixel_patches\n", "          pixel_patches: pixel_patchs\n"}},
		help:  "did you mean `pixel_patches`?"},
	{name: "typo in a padding companion",
		edits: [][2]string{{"              padding: [{ dimension: patches, valid_lengths: patch_lengths }]\n", "              padding: [{ dimension: patches, valid_lengths: patch_lenghts }]\n"}},
		help:  "did you mean `patch_lengths`?"},
	{name: "typo in a shape symbol a budget names",
		edits: [][2]string{{"dimensions: [images, patches], max_total", "dimensions: [images, pacthes], max_total"}},
		help:  "did you mean `patches`?"},
	{name: "typo in the component an invoke names",
		edits: [][2]string{{"        component: encoder\n", "        component: encodr\n"}},
		help:  "did you mean `encoder`?"},
	{name: "a port named unlike its graph value",
		edits: [][2]string{
			{"          outputs:\n            embeddings:\n", "          outputs:\n            embedding:\n"},
			{"outputs: { embeddings: image_embeddings }", "outputs: { embedding: image_embeddings }"},
		},
		help: "rename the port (and its bindings)",
		fix: [][2]string{
			{"          outputs:\n            embedding:\n", "          outputs:\n            embeddings:\n"},
			{"outputs: { embedding: image_embeddings }", "outputs: { embeddings: image_embeddings }"},
		}},
	{name: "padding whose lengths the model does not take", model: modelWithoutLengths,
		help: "drop the padding (items then group only when `patches` agrees: list it in uniform_dimensions) or use a model that takes the lengths", fixModel: true},
	{name: "a dtype unlike the graph's",
		edits: [][2]string{
			{"      pixel_patches:\n        contract:\n          dtype: float32\n", "      pixel_patches:\n        contract:\n          dtype: float16\n"},
			{"            pixel_patches:\n              dtype: float32\n", "            pixel_patches:\n              dtype: float16\n"},
		},
		help: "declare `dtype: float32` (or convert the model)",
		fix: [][2]string{
			{"      pixel_patches:\n        contract:\n          dtype: float16\n", "      pixel_patches:\n        contract:\n          dtype: float32\n"},
			{"            pixel_patches:\n              dtype: float16\n", "            pixel_patches:\n              dtype: float32\n"},
		}},
	{name: "a rank unlike the graph's",
		edits: [][2]string{
			{"\n          shape: [images, hidden]\n", "\n          shape: [images, tokens, hidden]\n"},
			{"\n              shape: [images, hidden]\n", "\n              shape: [images, tokens, hidden]\n"},
		},
		help: "declare the graph's shape",
		fix: [][2]string{
			{"\n          shape: [images, tokens, hidden]\n", "\n          shape: [images, hidden]\n"},
			{"\n              shape: [images, tokens, hidden]\n", "\n              shape: [images, hidden]\n"},
		}},
	{name: "a key indented one space short",
		edits: [][2]string{{"      patch_lengths:\n        contract:", "     patch_lengths:\n        contract:"}},
		help:  "line it up with the keys (or `-` items) it belongs with",
		fix:   [][2]string{{"     patch_lengths:\n        contract:", "      patch_lengths:\n        contract:"}}},
	// A misspelt port declaration whose binding is right is one mistake:
	// the declaration, not also the binding as an unknown port.
	{name: "typo in an output port's declaration",
		edits: [][2]string{{"          outputs:\n            embeddings:\n", "          outputs:\n            embedding:\n"}},
		help:  "did you mean `embeddings`?"},
	{name: "typo in an input port's declaration",
		edits: [][2]string{{"            patch_lengths: { dtype: int64, shape: [images], batch_layout: { kind: shared } }\n", "            patch_lenghts: { dtype: int64, shape: [images], batch_layout: { kind: shared } }\n"}},
		help:  "did you mean `patch_lengths`?"},
	{name: "a workflow input left undeclared",
		edits: [][2]string{{undeclaredInput, ""}},
		help:  "declare it under `workflow.inputs`",
		fix:   [][2]string{{"    outputs:\n      embeddings:\n", undeclaredInput + "    outputs:\n      embeddings:\n"}}},
	{name: "an undeclared input that is also an output's name",
		edits: [][2]string{{undeclaredOutputName, ""}},
		help:  "declare it under `workflow.inputs`",
		fix:   [][2]string{{"    outputs:\n      embeddings:\n", undeclaredOutputName + "    outputs:\n      embeddings:\n"}}},
	{name: "a misspelt dtype",
		edits: [][2]string{{"      pixel_patches:\n        contract:\n          dtype: float32\n", "      pixel_patches:\n        contract:\n          dtype: flaot32\n"}},
		help:  "did you mean `float32`?"},
}

// undeclaredInput and undeclaredOutputName are workflow inputs of the
// package, the second also the name of one of its outputs.
const (
	undeclaredInput = `      patch_lengths:
        contract: { dtype: int64, shape: [images], batch_layout: { kind: shared } }
        role: { kind: opaque }
        source: { kind: request }
`
	undeclaredOutputName = `      image_owner:
        contract: { dtype: int64, shape: [images], batch_layout: { kind: shared } }
        role: { kind: opaque }
        source: { kind: request }
`
)

// modelWithoutLengths is the encoder of issue 13's second report: it
// takes no patch lengths, so it cannot mask the padding.
func modelWithoutLengths(t *testing.T) []byte {
	b, err := onnx.Marshal(&onnxpb.ModelProto{
		IrVersion:   8,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}},
		Graph: &onnxpb.GraphProto{
			Name: "no_lengths",
			Node: []*onnxpb.NodeProto{{OpType: "ReduceMean", Input: []string{"pixel_patches"}, Output: []string{"embeddings"}}},
			Input: []*onnxpb.ValueInfoProto{
				tensorInfo("pixel_patches", 1, "images", "patches", 8),
				tensorInfo("image_offsets", 7, "image_offsets_len"),
				tensorInfo("image_owner", 7, "images"),
			},
			Output: []*onnxpb.ValueInfoProto{tensorInfo("embeddings", 1, "images", 4)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAuthorMistakes makes each mistake in a copy of a package that
// checks clean, checks the folder (models read), and pins the whole human
// output in one golden file: each mistake must report exactly one error,
// with a help line, and doing what the help says (its "did you mean"
// applied at the caret, or the case's fix) must make the package check
// clean again. The mistakes made on the command line follow
// (commandMistakes).
func TestAuthorMistakes(t *testing.T) {
	var all strings.Builder
	for i, m := range mistakes {
		dir := copyPackage(t, inspectPkg)
		doc := filepath.Join(dir, "inference_metadata.yaml")
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		src := edit(t, m.name, string(b), m.edits)
		writeFile(t, doc, src)
		if m.model != nil {
			writeFile(t, filepath.Join(dir, "encoder.onnx"), string(m.model(t)))
		}
		out, errOut, code := runCLI(t, "check", dir)
		if code != exitDiags || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q", m.name, code, errOut)
		}
		out = strings.ReplaceAll(out, dir, "PKG")
		if n := strings.Count(out, ": error["); n != 1 || strings.Contains(out, ": warning[") {
			t.Errorf("%s: want exactly one diagnostic, an error, got:\n%s", m.name, out)
		}
		if !strings.Contains(out, "\n  help: "+m.help+"\n") {
			t.Errorf("%s: no help line %q in:\n%s", m.name, m.help, out)
		}
		fmt.Fprintf(&all, "== %d. %s\n%s\n", i+1, m.name, out)

		fixed := applyDidYouMean(t, m.name, src, out)
		if m.fix != nil {
			fixed = edit(t, m.name+" (fix)", src, m.fix)
		}
		writeFile(t, doc, fixed)
		if m.fixModel {
			model, err := os.ReadFile(filepath.Join(inspectPkg, "encoder.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "encoder.onnx"), string(model))
		}
		if out, _, code := runCLI(t, "check", dir); code != exitOK {
			t.Errorf("%s: following the help leaves the package invalid:\n%s", m.name, out)
		}
	}
	all.WriteString(commandMistakes(t))
	golden(t, "testdata/mistakes.golden", all.String())
}

// edit applies edits to src, each old text occurring exactly once.
func edit(t *testing.T, name, src string, edits [][2]string) string {
	t.Helper()
	for _, e := range edits {
		if n := strings.Count(src, e[0]); n != 1 {
			t.Fatalf("%s: %q occurs %d times in the package, want once", name, e[0], n)
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	return src
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// caretLine finds the position of a rendered diagnostic and its caret.
var caretLine = regexp.MustCompile(`(?m)^PKG/inference_metadata.yaml:(\d+):(\d+): error\[.*\n.*\n( *)(\^+)\n(?:.*\n)*?  help: did you mean ` + "`([^`]+)`" + `\?`)

// applyDidYouMean replaces, in src, the text under the caret of the
// rendered diagnostic out by the name its help suggests; src unchanged
// when the help suggests none.
func applyDidYouMean(t *testing.T, name, src, out string) string {
	m := caretLine.FindStringSubmatch(out)
	if m == nil {
		return src
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	lines := strings.Split(src, "\n")
	l := lines[line-1]
	if end := col - 1 + len(m[4]); end <= len(l) {
		lines[line-1] = l[:col-1] + m[5] + l[end:]
		return strings.Join(lines, "\n")
	}
	t.Errorf("%s: the caret runs past line %d", name, line)
	return src
}

// commandMistakes makes the mistakes of issue 46 that are made on the
// command line rather than in a document, and returns what genaic says
// about each (exit code, then its output) for the golden file.
func commandMistakes(t *testing.T) string {
	var all strings.Builder
	say := func(name string, code int, out string, dirs ...string) {
		for i, d := range dirs {
			out = strings.ReplaceAll(out, d, fmt.Sprintf("DIR%d", i+1))
		}
		fmt.Fprintf(&all, "== %s\nexit %d\n%s\n", name, code, out)
	}
	b, err := os.ReadFile(filepath.Join(inspectPkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Requests []map[string]any `json:"requests"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// request returns a copy of the package's first request, named id,
	// with change made to its inputs.
	request := func(id string, change func(in map[string]any)) map[string]any {
		var r map[string]any
		b, _ := json.Marshal(doc.Requests[0])
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		r["id"] = id
		change(r["inputs"].(map[string]any))
		return r
	}
	tmp := t.TempDir()
	reqs := filepath.Join(tmp, "requests.json")
	bad, err := json.Marshal(map[string]any{"requests": []any{
		request("misnamed", func(in map[string]any) { in["pixel_patchs"] = in["pixel_patches"]; delete(in, "pixel_patches") }),
		request("wrongshape", func(in map[string]any) { in["pixel_patches"].(map[string]any)["shape"] = []int{2, 3, 9} }),
		request("huge", func(in map[string]any) { in["pixel_patches"].(map[string]any)["data"].([]any)[0] = json.Number("1e39") }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, reqs, string(bad))
	_, errOut, code := runCLI(t, "run", inspectPkg, "--requests", reqs)
	say("run: a misnamed input, a shape its data does not fill, a number out of float32's range", code, errOut)

	// A .npy reached through a linked folder is read: the request runs.
	npyDir := t.TempDir()
	reqDir := filepath.Join(tmp, "linked")
	if err := os.MkdirAll(reqDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(npyDir, filepath.Join(reqDir, "npy")); err != nil {
		t.Fatal(err)
	}
	pixels := doc.Requests[0]["inputs"].(map[string]any)["pixel_patches"].(map[string]any)
	var data []float32
	for _, v := range pixels["data"].([]any) {
		data = append(data, float32(v.(float64)))
	}
	var npy bytes.Buffer
	if err := jsonio.WriteNPY(&npy, &backend.Tensor{DType: "float32", Shape: []int64{2, 3, 8}, Data: data}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(npyDir, "pixels.npy"), npy.String())
	linked, err := json.Marshal(map[string]any{"requests": []any{
		request("linked", func(in map[string]any) { in["pixel_patches"] = map[string]string{"npy": "npy/pixels.npy"} }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(reqDir, "requests.json"), string(linked))
	out, errOut, code := runCLI(t, "run", inspectPkg, "--requests", filepath.Join(reqDir, "requests.json"))
	if code == exitOK && !strings.Contains(out, `"id":"linked","outputs":{"embeddings"`) {
		t.Errorf("the request whose input is read through a link has no embeddings: %s", out)
	}
	say("run: an input's .npy through a linked folder", code, errOut)

	// A repository folder is checked package by package.
	repo := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if err := os.Rename(copyPackage(t, inspectPkg), filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code = runCLI(t, "check", "-v", repo)
	say("check -v of a repository folder", code, out+errOut, repo)
	return all.String()
}
