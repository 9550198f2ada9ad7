package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
	"github.com/genaic/genaic/vm/jsonio"
)

// copyModels copies the models of a package folder (following links: the
// wakeword model is linked from the cache) into a fresh folder.
func copyModels(t *testing.T, from string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(from, "*.onnx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s holds no model (%v); run scripts/setup.sh for the linked ones", from, err)
	}
	var copied []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%v (run scripts/setup.sh for the linked models)", err)
		}
		p := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		copied = append(copied, p)
	}
	return dir, copied
}

// checkClean asserts that check of the folder reports nothing at all.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	rep, code := checkJSONOf(t, dir)
	if code != exitOK || len(rep.Files) != 1 || !rep.Files[0].Valid || len(rep.Files[0].Diagnostics) != 0 {
		b, _ := os.ReadFile(filepath.Join(dir, metadataName))
		t.Errorf("check %s: exit %d, %+v\n%s", dir, code, rep.Files, b)
	}
}

// TestInitEveryPackageChecks: init on the models of every example package
// writes a document that check of the folder accepts with no diagnostic,
// declaring every graph input and output as a port (model/port would
// report one missing).
func TestInitEveryPackageChecks(t *testing.T) {
	pkgs, err := filepath.Glob("../../testdata/packages/*")
	if err != nil || len(pkgs) < 12 {
		t.Fatalf("found %d packages (%v)", len(pkgs), err)
	}
	var all []string
	allDir := t.TempDir()
	for _, pkg := range pkgs {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			dir, models := copyModels(t, pkg)
			out, errOut, code := runCLI(t, append([]string{"init", "-o", dir}, models...)...)
			if code != exitOK || !strings.Contains(out, "wrote "+filepath.Join(dir, metadataName)) {
				t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
			}
			checkClean(t, dir)
			for _, m := range models {
				b, _ := os.ReadFile(m)
				p := filepath.Join(allDir, filepath.Base(filepath.Dir(pkg))+"_"+filepath.Base(pkg)+"_"+filepath.Base(m))
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				all = append(all, p)
			}
		})
	}
	// Every model in one package: names clash (three encoders take
	// pixel_patches/pixel_values, several emit embeddings) and check still
	// accepts the document.
	if out, errOut, code := runCLI(t, append([]string{"init"}, all...)...); code != exitOK {
		t.Fatalf("init of every model: exit %d\n%s%s", code, out, errOut)
	}
	checkClean(t, allDir)
}

// TestInitGolden pins one whole generated document.
func TestInitGolden(t *testing.T) {
	dir, models := copyModels(t, "../../testdata/packages/text_padded")
	out, errOut, code := runCLI(t, "init", "--print", models[0])
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, metadataName)); !os.IsNotExist(err) {
		t.Errorf("--print wrote a file (%v)", err)
	}
	golden(t, "testdata/init_text_padded.golden", out)
}

// writeModel writes a synthetic model.
func writeModel(t *testing.T, path string, inputs, outputs []*onnxpb.ValueInfoProto, inits ...string) {
	t.Helper()
	g := &onnxpb.GraphProto{Name: "g", Input: inputs, Output: outputs,
		Node: []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{inputs[0].Name}, Output: []string{outputs[0].Name}}}}
	for _, n := range inits {
		g.Initializer = append(g.Initializer, &onnxpb.TensorProto{Name: n, DataType: 1, Dims: []int64{1}, RawData: []byte{0, 0, 128, 63}})
	}
	writeGraph(t, path, g, 17)
}

// TestInitChainsMatchingNames: a graph input takes an earlier model's
// output of the same name, dtype and rank; an input of the same name and
// another contract stays a request input (renamed); an unnamed dynamic
// dimension, or one written -1, gets a symbol; an input an initializer
// backs is not a port; the file name becomes an identifier.
func TestInitChainsMatchingNames(t *testing.T) {
	dir := t.TempDir()
	unnamed := tensorInfo("x", 1, "batch", 8)
	unnamed.Type.GetTensorType().Shape.Dim[0].Value = nil // a dynamic dim with no name
	writeModel(t, filepath.Join(dir, "1st-encoder.onnx"),
		[]*onnxpb.ValueInfoProto{unnamed, tensorInfo("scale", 1, 1)},
		[]*onnxpb.ValueInfoProto{tensorInfo("hidden", 1, "n", 8)}, "scale")
	writeModel(t, filepath.Join(dir, "head.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("hidden", 1, "rows", 8), tensorInfo("x", 7, "k")},
		[]*onnxpb.ValueInfoProto{tensorInfo("logits", 1, "rows", 3)})
	// logits of another fixed width: not the head's output.
	writeModel(t, filepath.Join(dir, "tail.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("logits", 1, "rows", 5)},
		[]*onnxpb.ValueInfoProto{tensorInfo("probs", 1, -1, 5)})
	models := []string{filepath.Join(dir, "1st-encoder.onnx"), filepath.Join(dir, "head.onnx"), filepath.Join(dir, "tail.onnx")}
	out, errOut, code := runCLI(t, append([]string{"init", "--print"}, models...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"      m_1st_encoder:\n",
		"      x:\n        contract: { dtype: float32, shape: [x_dim0, 8] }",
		"      head_x:\n        contract: { dtype: int64, shape: [k] }",
		"          hidden: m_1st_encoder.hidden\n          x: head_x\n",
		"- { kind: emit, value: head.logits, output: logits, mode: replace }",
		"        component: tail\n        inputs:\n          logits: logits\n",
		"      logits:\n        contract: { dtype: float32, shape: [rows, 5] }",
		// -1 on the graph's output; the probe finds it follows rows.
		"      probs:\n        contract: { dtype: float32, shape: [rows, 5] }",
		"# override): scale",
		"#   levels: [{ offsets: OFFSETS, owner: OWNER }]", // the graph suggests no companion
		"# padding: [{ dimension: SYMBOL, valid_lengths: LENGTHS }]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "output: hidden") || strings.Contains(out, "            scale:") {
		t.Errorf("a chained output is emitted, or a constant declared:\n%s", out)
	}
	if _, _, code := runCLI(t, append([]string{"init"}, models...)...); code != exitOK {
		t.Fatalf("init: exit %d", code)
	}
	checkClean(t, dir)
}

// TestInitLeavesOutWhatIsNotATensor: a graph output genaic cannot declare
// (here a sequence, as a classifier's sequence of maps) is left out of the
// document with a comment saying so; check accepts the document, since a
// graph output may go undeclared (model/port), and run answers the
// declared output, fetching only it.
func TestInitLeavesOutWhatIsNotATensor(t *testing.T) {
	dir := t.TempDir()
	writeSequenceModel(t, filepath.Join(dir, "classifier.onnx"))
	out, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "classifier.onnx"))
	if code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "fetches only declared outputs): scores (a sequence)\n") || strings.Contains(out, "scores:") {
		t.Errorf("init does not leave the sequence out, saying so:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "init", filepath.Join(dir, "classifier.onnx")); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	checkClean(t, dir)
	reqs := filepath.Join(dir, "requests.json")
	if err := os.WriteFile(reqs, []byte(`{"requests":[{"id":"a","inputs":{"x":{"dtype":"float32","shape":[2,4],"data":[1,2,3,4,5,6,7,8]}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "run", dir, "--requests", reqs)
	if code != exitOK || !strings.Contains(out, `"y":{"dtype":"float32","shape":[2,4],"data":[1,2,3,4,5,6,7,8]}`) {
		t.Errorf("run: exit %d\n%s%s", code, out, errOut)
	}
}

// TestInitFixedBatch: a model exported without a dynamic axis (the first
// axis of every input a number) cannot group; init says so and how to
// export it, instead of suggesting a batch_layout check would refuse.
func TestInitFixedBatch(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "fixed.onnx"), &onnxpb.GraphProto{Name: "g",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, 2, 8)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, 2, 8)},
		Node:   []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"x"}, Output: []string{"y"}}}}, 17)
	out, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "fixed.onnx"))
	if code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "# its graph fixes the first axis of every input (x: [2, 8]),") || !strings.Contains(out, `{"x": {0: "batch"}, ...}`) ||
		strings.Contains(out, "batch_layout") {
		t.Errorf("init on a model of fixed extents:\n%s", out)
	}
}

// TestInitPayloadNotFirst: where a graph lists its lengths before the
// features they count, init writes the layout and padding examples on
// the features (the input of the highest rank), padded by those lengths.
func TestInitPayloadNotFirst(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "m.onnx"), &onnxpb.GraphProto{Name: "g",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("frame_lengths", 7, "batch"), tensorInfo("features", 1, "batch", "frames", 8)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, "batch", "frames", 8)},
		Node:   []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"features"}, Output: []string{"y"}}}}, 17)
	out, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "m.onnx"))
	if code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "# batch_layout (see input port features) and declare") ||
		!strings.Contains(out, `            features:
              dtype: float32
              shape: [batch, frames, 8]
              # batch_layout: { kind: request_aligned, axis: 0 }  # one row per request`) ||
		!strings.Contains(out, "# padding: [{ dimension: frames, valid_lengths: frame_lengths }]") {
		t.Errorf("init on lengths listed first:\n%s", out)
	}
}

// TestInitializerOverride: a graph input an initializer backs (a constant
// a port may override, as init's comment says) runs on the value a
// request gives when a port declares it, and on the initializer when none
// does; check accepts both documents, and so does the runtime.
func TestInitializerOverride(t *testing.T) {
	dir := t.TempDir()
	g := &onnxpb.GraphProto{Name: "g",
		Input:       []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "n", 1), tensorInfo("scale", 1, 1)},
		Output:      []*onnxpb.ValueInfoProto{tensorInfo("y", 1, "n", 1)},
		Node:        []*onnxpb.NodeProto{{OpType: "Mul", Input: []string{"x", "scale"}, Output: []string{"y"}}},
		Initializer: []*onnxpb.TensorProto{{Name: "scale", DataType: 1, Dims: []int64{1}, RawData: []byte{0, 0, 0, 64}}}, // 2.0
	}
	writeGraph(t, filepath.Join(dir, "scaler.onnx"), g, 17)
	const doc = `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      x: { contract: { dtype: float32, shape: [n, 1] }, role: { kind: opaque }, source: { kind: request } }
      s: { contract: { dtype: float32, shape: [1] }, role: { kind: opaque }, source: { kind: request } }
    outputs:
      "y": { contract: { dtype: float32, shape: [n, 1] }, role: tensor, stage: pre_adapter }
    components:
      scaler:
        implementation: { kind: onnx, artifact: scaler.onnx }
        ports:
          inputs:
            x: { dtype: float32, shape: [n, 1] }
            scale: { dtype: float32, shape: [1] }
          outputs:
            "y": { dtype: float32, shape: [n, 1] }
    steps:
      - { kind: invoke, component: scaler, inputs: { x: x, scale: s }, outputs: { "y": scaled } }
      - { kind: emit, value: scaled, output: "y", mode: replace }
`
	const x = `"x":{"dtype":"float32","shape":[2,1],"data":[1,2]}`
	for _, tt := range []struct{ name, doc, inputs, want string }{
		{"overridden", doc, x + `,"s":{"dtype":"float32","shape":[1],"data":[3]}`, `"data":[3,6]`},
		{"constant", strings.NewReplacer("            scale: { dtype: float32, shape: [1] }\n", "", ", scale: s", "",
			"      s: { contract: { dtype: float32, shape: [1] }, role: { kind: opaque }, source: { kind: request } }\n", "").Replace(doc),
			x, `"data":[2,4]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, metadataName), []byte(tt.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			reqs := filepath.Join(dir, "requests.json")
			if err := os.WriteFile(reqs, []byte(`{"requests":[{"id":"a","inputs":{`+tt.inputs+`}}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			checkClean(t, dir)
			out, errOut, code := runCLI(t, "run", dir, "--requests", reqs)
			if code != exitOK || !strings.Contains(out, tt.want) {
				t.Errorf("run: exit %d, want %s\n%s%s", code, tt.want, out, errOut)
			}
		})
	}
}

// TestInitMaskedModel: a transformer encoder takes an attention mask
// beside its token ids and no lengths; init's comments say that a mask is
// not lengths, suggest the sequence uniform, and suggest no padding.
func TestInitMaskedModel(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "encoder.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("input_ids", 7, "batch", "sequence"), tensorInfo("attention_mask", 7, "batch", "sequence"),
			tensorInfo("token_type_ids", 7, "batch", "sequence")},
		[]*onnxpb.ValueInfoProto{tensorInfo("last_hidden_state", 1, "batch", "sequence", 384)})
	out, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "encoder.onnx"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"#   uniform_dimensions: [sequence]",
		"# only where the graph takes their lengths (int64, one per item): attention_mask\n",
		"# is a mask, not lengths,",
		"# `genaic mask-lengths encoder.onnx -o encoder_lengths.onnx` rewrites it to take lengths.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "# padding:") {
		t.Errorf("init suggests padding a model that takes a mask:\n%s", out)
	}
	// The mask first, as some exports order the inputs.
	writeModel(t, filepath.Join(dir, "masked.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("attention_mask", 7, "batch", "sequence"), tensorInfo("input_ids", 7, "batch", "sequence")},
		[]*onnxpb.ValueInfoProto{tensorInfo("pooled", 1, "batch", 384)})
	if out, _, _ := runCLI(t, "init", "--print", filepath.Join(dir, "masked.onnx")); !strings.Contains(out, "lengths (int64, one per item): attention_mask\n") {
		t.Errorf("with the mask as the first input, init does not name it:\n%s", out)
	}
	if _, _, code := runCLI(t, "init", filepath.Join(dir, "encoder.onnx")); code != exitOK {
		t.Fatalf("init: exit %d", code)
	}
	checkClean(t, dir)
}

func TestInitRefusals(t *testing.T) {
	dir, models := copyModels(t, "../../testdata/packages/solo")
	model := models[0]
	notONNX := filepath.Join(dir, "notes.onnx")
	if err := os.WriteFile(notONNX, []byte("this is not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"not ONNX", []string{"init", notONNX}, exitUsage, "notes.onnx: not an ONNX model"},
		{"missing file", []string{"init", filepath.Join(dir, "absent.onnx")}, exitUsage, "absent.onnx: no such file"},
		{"no model", []string{"init"}, exitUsage, "usage: genaic init"},
		{"stdin model", []string{"init", "-"}, exitUsage, "init reads each model from its file"},
		{"stdout folder", []string{"init", model, "-o", "-"}, exitUsage, "use --print"},
		{"twice", []string{"init", model, model}, exitUsage, "is given twice"},
		{"outside the folder", []string{"init", model, "-o", other}, exitUsage, "lies outside the package folder"},
		{"folder is a file", []string{"init", model, "-o", model}, exitUsage, "is not a folder"},
		{"no folder", []string{"init", model, "-o", filepath.Join(other, "new")}, exitUsage, "does not exist; a package names its models by paths inside its folder"},
		{"unknown flag", []string{"init", model, "--frce"}, exitUsage, "flag provided but not defined"},
		{"folder without models", []string{"init", other}, exitUsage, "holds no .onnx model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q?\nstdout: %s\nstderr: %s", code, tt.code, tt.stderr, out, errOut)
			}
			if _, err := os.Lstat(filepath.Join(dir, metadataName)); !os.IsNotExist(err) {
				t.Errorf("a refused init wrote %s (%v)", metadataName, err)
			}
		})
	}

	// An existing document is kept unless --force; with --force a link
	// in its place is replaced, never written through.
	target := filepath.Join(dir, metadataName)
	elsewhere := filepath.Join(other, "kept.yaml")
	if err := os.WriteFile(elsewhere, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, target); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "init", model); code != exitUsage || !strings.Contains(errOut, "already exists") {
		t.Errorf("init over an existing document: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "init", model, "--force"); code != exitOK {
		t.Fatalf("init --force: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "kept\n" {
		t.Errorf("init --force wrote through a link: %q", b)
	}
	if info, err := os.Lstat(target); err != nil || !info.Mode().IsRegular() {
		t.Errorf("init --force left %v (%v)", info, err)
	}
	checkClean(t, dir)
	if err := os.Remove(notONNX); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(target)
	if _, _, code := runCLI(t, "init", model); code != exitUsage {
		t.Errorf("init over the document it wrote: exit %d", code)
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Errorf("a refused init changed the document")
	}
}

// TestInitOddNames: graph names that YAML would read as something else,
// or that are no identifiers, are quoted, and check accepts the document.
func TestInitOddNames(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "2 stage.model.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("input:0", 1, "batch size", "4"), tensorInfo("true", 9, 2), tensorInfo("x-y", 6, "n")},
		[]*onnxpb.ValueInfoProto{tensorInfo("softmax_11.tmp_0", 1, "batch size", 3)})
	out, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "2 stage.model.onnx"))
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{
		"      m_2_stage_model:\n",
		"artifact: \"2 stage.model.onnx\" }",
		"      \"input:0\":\n        contract: { dtype: float32, shape: [\"batch size\", \"4\"] }",
		"      \"true\":\n        contract: { dtype: bool, shape: [2] }",
		"          softmax_11.tmp_0: m_2_stage_model.softmax_11.tmp_0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %q:\n%s", want, out)
		}
	}
	if _, errOut, code := runCLI(t, "init", filepath.Join(dir, "2 stage.model.onnx")); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	checkClean(t, dir)

	// A string tensor has no genaic dtype: refused, naming the input.
	writeModel(t, filepath.Join(dir, "text.onnx"),
		[]*onnxpb.ValueInfoProto{tensorInfo("words", 8, "n")},
		[]*onnxpb.ValueInfoProto{tensorInfo("ids", 7, "n")})
	if _, errOut, code := runCLI(t, "init", "--print", filepath.Join(dir, "text.onnx")); code != exitUsage ||
		!strings.Contains(errOut, `text.onnx: graph input "words" has element type string; genaic declares tensors of float32`) {
		t.Errorf("init of a string input: exit %d: %s", code, errOut)
	}
}

// uncomment removes the comment marks of the lines of block (written as
// init writes them, with their indentation) in doc, and fails when init no
// longer writes it.
// initWritten reads the document init wrote into dir, declared v1.1 as
// grouping needs.
func initWritten(t *testing.T, dir string) (path, doc string) {
	t.Helper()
	path = filepath.Join(dir, metadataName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.Replace(string(b), "schema_version: v1.0", "schema_version: v1.1", 1)
}

func uncomment(t *testing.T, doc, block string) string {
	t.Helper()
	if !strings.Contains(doc, block) {
		t.Fatalf("init no longer writes\n%s\nin\n%s", block, doc)
	}
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		lines[i] = strings.Replace(l, "# ", "", 1)
	}
	return strings.Replace(doc, block, strings.Join(lines, "\n"), 1)
}

// TestInitFollowedComments follows init's comments as a new author does:
// uncomment batch_capacity and the packed layout of the first input, and
// leave the output as written. check refuses the output, which grouped
// would hand every request the whole group's rows (capacity/shared-output,
// naming it); once its own commented layout is uncommented too, check
// accepts the document and grouped equals solo.
func TestInitFollowedComments(t *testing.T) {
	dir, models := copyModels(t, "../../testdata/packages/text_packed")
	if out, errOut, code := runCLI(t, "init", "-o", dir, models[0]); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncommentCapacity(t, doc, "", "tokens")
	doc = uncomment(t, doc, `              # batch_layout:
              #   kind: token_packed
              #   axis: 0
              #   levels: [{ offsets: token_offsets, owner: token_owner }]`)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, code := checkJSONOf(t, dir)
	if code != exitDiags || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 1 {
		t.Fatalf("check of the shared output: exit %d, %+v", code, rep.Files)
	}
	if d := rep.Files[0].Diagnostics[0]; d.Rule != "capacity/shared-output" || !strings.Contains(d.Message, "`segment_embeddings`") {
		t.Errorf("check reported %s: %s; want capacity/shared-output naming segment_embeddings", d.Rule, d.Message)
	}

	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
    steps:`)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	reqs := filepath.Join(dir, "requests.json")
	var rs []string
	for i, n := range []int{2, 1, 3} {
		ids, owner := make([]string, n), make([]string, n)
		for j := range ids {
			ids[j], owner[j] = fmt.Sprint(3*i+j+1), "0"
		}
		rs = append(rs, fmt.Sprintf(`{"id":"r%d","inputs":{"token_ids":{"dtype":"int64","shape":[%d],"data":[%s]},"token_offsets":{"dtype":"int64","shape":[2],"data":[0,%d]},"token_owner":{"dtype":"int64","shape":[%d],"data":[%s]}}}`,
			i, n, strings.Join(ids, ","), n, n, strings.Join(owner, ",")))
	}
	if err := os.WriteFile(reqs, []byte(`{"requests":[`+strings.Join(rs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	grouped := runResponses(t, dir, reqs, "--max-delay", "200ms")
	solo := runResponses(t, dir, reqs, "--solo")
	for i := range solo {
		g, s := grouped[i].Outputs["segment_embeddings"], solo[i].Outputs["segment_embeddings"]
		if !reflect.DeepEqual(g, s) || len(s.Shape) != 2 || s.Shape[0] != 1 {
			t.Errorf("request %d: grouped %v, solo %v; want equal, one row each", i, g.Shape, s.Shape)
		}
	}
}

// runResponses runs the requests file through the package folder with
// extra flags and returns its responses, failing on any failed request.
func runResponses(t *testing.T, pkg, requests string, flags ...string) []struct {
	ID      string                       `json:"id"`
	Outputs map[string]jsonio.TensorJSON `json:"outputs"`
} {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"run", pkg, "--requests", requests}, flags...)...)
	if code != exitOK {
		t.Fatalf("run %v: exit %d\n%s", flags, code, errOut)
	}
	var doc struct {
		Responses []struct {
			ID      string                       `json:"id"`
			Outputs map[string]jsonio.TensorJSON `json:"outputs"`
		} `json:"responses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Responses
}

// TestInitTimeMajor: a recurrent network's time-major graph ([steps,
// batch, ...], as torch exports one by default) is commented with its
// request axis where the batch is, its other symbols uniform and no
// padding; the document with the comments followed checks, and groups
// requests of equal steps with answers equal to each alone.
func TestInitTimeMajor(t *testing.T) {
	dir, models := copyModels(t, "../../testdata/packages/time_major")
	if out, errOut, code := runCLI(t, "init", "-o", dir, models[0]); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncommentCapacity(t, doc, "steps", "batch")
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 1 }  # one row per request, along batch`)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 1 }
            pooled:`)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
    steps:`)
	if strings.Contains(doc, "padding:") {
		t.Errorf("init suggests padding an axis outside the request axis:\n%s", doc)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	var rs []string
	for i := range 6 {
		steps := 2 + i%2
		xs := make([]string, steps*4)
		for j := range xs {
			xs[j] = fmt.Sprint(float64((i*7+j*3)%11) / 8)
		}
		rs = append(rs, fmt.Sprintf(`{"id":"r%d","inputs":{"frames":{"dtype":"float32","shape":[%d,1,4],"data":[%s]}}}`, i, steps, strings.Join(xs, ",")))
	}
	verifyAlike(t, dir, rs)
}

// TestInitFollowedCommentsPadded is a newcomer's path with a transformer
// exported with an attention mask and token types: mask-lengths, then
// init, then every comment followed (the token types laid out as the ids,
// as theirs says), then what check's help says for the workflow output;
// the package then checks, groups texts of different lengths, and
// answers each as alone (run --verify).
func TestInitFollowedCommentsPadded(t *testing.T) {
	dir := t.TempDir()
	masked := filepath.Join(t.TempDir(), "masked.onnx")
	writeGraph(t, masked, maskedEncoderWithTypes(16), 17)
	if out, errOut, code := runCLI(t, "mask-lengths", masked, "-o", filepath.Join(dir, "encoder.onnx")); code != exitOK {
		t.Fatalf("mask-lengths: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "init", filepath.Join(dir, "encoder.onnx")); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncommentPadded(t, doc, "sequence")
	along := "              # Shaped as input_ids: give it the same batch_layout (and padding) as input_ids.\n"
	if !strings.Contains(doc, along) {
		t.Fatalf("init no longer writes\n%s\nin\n%s", along, doc)
	}
	doc = strings.Replace(doc, along, "              batch_layout: { kind: request_aligned, axis: 0 }\n              padding: [{ dimension: sequence, valid_lengths: lengths }]\n", 1)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
              # and, where the input is padded on sequence, padded as it is (then`)
	doc = strings.Replace(doc, "              and, where the input is padded on sequence, padded as it is (then\n", "", 1)
	doc = uncomment(t, doc, `              # padding: [{ dimension: sequence, valid_lengths: lengths }]
            pooled:`)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
    steps:`)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// What check says next, followed: the workflow output is padded as
	// the port is, and its lengths published.
	oneDiagnostic(t, dir, "contract/incompatible", "padding: [{ dimension: sequence, valid_lengths: lengths }], and emit `lengths` as a workflow output too", "check of the padded port emitted unpadded")
	doc = strings.Replace(doc, "        contract: { dtype: float32, shape: [batch, sequence, 4] }",
		"        contract: { dtype: float32, shape: [batch, sequence, 4], padding: [{ dimension: sequence, valid_lengths: lengths }] }", 1)
	doc = strings.Replace(doc, "    components:\n", "      lengths:\n        contract: { dtype: int64, shape: [batch], batch_layout: { kind: shared } }\n        role: tensor\n        stage: pre_adapter\n    components:\n", 1)
	doc += "      - { kind: emit, value: lengths, output: lengths, mode: replace }\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	var rs []string
	for i, n := range []int{3, 1, 6, 2, 5, 4} {
		ids, types := make([]string, n), make([]string, n)
		for j := range n {
			ids[j], types[j] = fmt.Sprint((i*5+j*3)%16), fmt.Sprint(j%2)
		}
		tensor := func(v []string) string {
			return fmt.Sprintf(`{"dtype":"int64","shape":[1,%d],"data":[%s]}`, n, strings.Join(v, ","))
		}
		rs = append(rs, fmt.Sprintf(`{"id":"r%d","inputs":{"input_ids":%s,"token_type_ids":%s,"lengths":{"dtype":"int64","shape":[1],"data":[%d]}}}`, i, tensor(ids), tensor(types), n))
	}
	verifyAlike(t, dir, rs)
}

// framer is a speech encoder's front: input_values f32 [batch, samples]
// with their lengths, a convolution of kernel 2 and stride 2 to states
// [batch, frames, 2], and each item's frame count, frame_lengths = lengths
// / 2. frames is named by no input: the graph computes it from samples.
func framer() *onnxpb.GraphProto {
	var raw []byte
	for _, v := range []float32{0.5, -0.25, 1, 0.75} {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return &onnxpb.GraphProto{Name: "framer",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("input_values", 1, "batch", "samples"), tensorInfo("lengths", 7, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("last_hidden_state", 1, "batch", "frames", 2), tensorInfo("frame_lengths", 7, "batch")},
		Initializer: []*onnxpb.TensorProto{
			{Name: "kernel", DataType: 1, Dims: []int64{2, 1, 2}, RawData: raw},
			{Name: "axis1", DataType: 7, Dims: []int64{1}, RawData: binary.LittleEndian.AppendUint64(nil, 1)},
			{Name: "two", DataType: 7, RawData: binary.LittleEndian.AppendUint64(nil, 2)},
		},
		Node: []*onnxpb.NodeProto{
			{OpType: "Unsqueeze", Input: []string{"input_values", "axis1"}, Output: []string{"x"}},
			{OpType: "Conv", Input: []string{"x", "kernel"}, Output: []string{"y"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "strides", Type: onnxpb.AttributeProto_INTS, Ints: []int64{2}}}},
			{OpType: "Transpose", Input: []string{"y"}, Output: []string{"last_hidden_state"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: []int64{0, 2, 1}}}},
			{OpType: "Div", Input: []string{"lengths", "two"}, Output: []string{"frame_lengths"}},
		}}
}

// TestInitFollowedCommentsComputed is a newcomer's path with a model that
// computes its output's padded dimension (frames of samples) and outputs
// its lengths: init's comments say to pad the states on frames with the
// model's frame_lengths; left unpadded, check refuses the states and names
// that output; followed, with what check says of the workflow output, the
// package groups clips of different lengths and answers each as alone.
// init is given the package folder, as a newcomer may, not the model.
func TestInitFollowedCommentsComputed(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "framer.onnx"), framer(), 17)
	if out, errOut, code := runCLI(t, "init", dir); code != exitOK { // the folder, for its models
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncommentPadded(t, doc, "samples")
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
              # and, where the input is padded on samples, padded on frames too, which`)
	doc = strings.Replace(doc, "              and, where the input is padded on samples, padded on frames too, which\n", "", 1)
	companion := `              # Each item's ` + "`frames`" + `, which no input names: once last_hidden_state
              # is padded on it, this is its valid_lengths, a companion left shared`
	if !strings.Contains(doc, companion) {
		t.Fatalf("init no longer writes\n%s\nin\n%s", companion, doc)
	}
	write := func(doc string) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(doc)
	// Unpadded on frames: a warning on the states (the graph's dynamic
	// axis could be a constant), an error on frame_lengths left shared,
	// which names the padding it belongs to.
	rep, code := checkJSONOf(t, dir)
	if code != exitDiags || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 2 {
		t.Fatalf("check of the states unpadded on frames: exit %d, %+v", code, rep.Files)
	}
	for _, d := range rep.Files[0].Diagnostics {
		switch {
		case d.Rule == "capacity/unreconciled" && d.Severity == "warning" &&
			strings.Contains(d.Help, "padding: [{ dimension: frames, valid_lengths: frame_lengths }], `frame_lengths` being the model's output of each item's `frames`"):
		case d.Rule == "capacity/shared-output" && d.Severity == "error" &&
			strings.Contains(d.Help, "name it as the lengths of `frames` on output port `last_hidden_state`, which then splits it per request as a companion: padding: [{ dimension: frames, valid_lengths: frame_lengths }] there"):
		default:
			t.Errorf("check of the states unpadded on frames: %+v", d)
		}
	}
	// Laid out per request instead, the lengths check, and the warning
	// stands alone: the load's comparison is then what catches the states.
	perRequest := strings.Replace(doc, "              # Each item's `frames`", "              batch_layout: { kind: request_aligned, axis: 0 }\n              # Each item's `frames`", 1)
	write(perRequest)
	if rep, code := checkJSONOf(t, dir); code != exitOK || len(rep.Files[0].Diagnostics) != 1 || rep.Files[0].Diagnostics[0].Severity != "warning" {
		t.Fatalf("check of the states unpadded, the lengths per request: exit %d, %+v", code, rep.Files)
	}
	if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitDiags || !strings.Contains(errOut, "output last_hidden_state has shape [1 ") ||
		!strings.Contains(errOut, "requests synthesized from the workflow's inputs are answered otherwise grouped than alone: grouping changes what the package computes; an output's dimension the model computes per item is not padded") {
		t.Errorf("run --verify of the states unpadded: exit %d\n%s", code, errOut)
	}
	write(doc)
	doc = uncomment(t, doc, `              # padding: [{ dimension: frames, valid_lengths: frame_lengths }]
            frame_lengths:`)
	write(doc)
	oneDiagnostic(t, dir, "contract/incompatible", "padding: [{ dimension: frames, valid_lengths: frame_lengths }], and emit `frame_lengths` as a workflow output too", "check of the padded port emitted unpadded")
	doc = strings.Replace(doc, "        contract: { dtype: float32, shape: [batch, frames, 2] }",
		"        contract: { dtype: float32, shape: [batch, frames, 2], padding: [{ dimension: frames, valid_lengths: frame_lengths }] }", 1)
	write(doc)
	checkClean(t, dir)
	var rs []string
	for i, n := range []int{7, 2, 10, 4, 9, 5} {
		xs := make([]string, n)
		for j := range xs {
			xs[j] = fmt.Sprint(float64((i*5+j*3)%9) / 4)
		}
		rs = append(rs, fmt.Sprintf(`{"id":"r%d","inputs":{"input_values":{"dtype":"float32","shape":[1,%d],"data":[%s]},"lengths":{"dtype":"int64","shape":[1],"data":[%d]}}}`, i, n, strings.Join(xs, ","), n))
	}
	verifyAlike(t, dir, rs)
}

// TestInitProbesOutputDimensions: an export that named only its inputs'
// axes leaves its outputs' dimensions dynamic under names of its own;
// init runs the model twice and writes the input's symbol where an output
// dimension followed it (the batch and the sequence), and notes one that
// kept its extent (here 3, as a head count) as a constant to write in.
func TestInitProbesOutputDimensions(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "stack.onnx"), &onnxpb.GraphProto{Name: "stack",
		Input: []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "batch", "sequence"), tensorInfo("lengths", 7, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("stacked", 1, "Concatstacked_dim_0", "Concatstacked_dim_1", "Concatstacked_dim_2"),
			tensorInfo("seen", 7, "Identityseen_dim_0")},
		Initializer: []*onnxpb.TensorProto{{Name: "axis1", DataType: 7, Dims: []int64{1}, RawData: binary.LittleEndian.AppendUint64(nil, 1)}},
		Node: []*onnxpb.NodeProto{
			{OpType: "Unsqueeze", Input: []string{"x", "axis1"}, Output: []string{"row"}},
			{OpType: "Concat", Input: []string{"row", "row", "row"}, Output: []string{"stacked"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "axis", Type: onnxpb.AttributeProto_INT, I: 1}}},
			{OpType: "Identity", Input: []string{"lengths"}, Output: []string{"seen"}},
		}}, 17)
	initPrints(t, filepath.Join(dir, "stack.onnx"),
		"      stacked:\n        contract: { dtype: float32, shape: [batch, Concatstacked_dim_1, sequence] }",
		"      seen:\n        contract: { dtype: int64, shape: [batch] }",
		"# Concatstacked_dim_1 kept 3 on inputs of different extents (init ran the model\n              # twice): a constant the export left dynamic; write 3 in its place.")
}

// verifyAlike writes the requests rs (each a JSON request) as the
// package's requests.json and runs them with --verify: each must be
// answered alike grouped and alone.
func verifyAlike(t *testing.T, dir string, rs []string) {
	t.Helper()
	reqs := filepath.Join(dir, "requests.json")
	if err := os.WriteFile(reqs, []byte(`{"requests":[`+strings.Join(rs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("each of the %d requests is answered alike grouped and alone (groups of up to ", len(rs))
	if _, errOut, code := runCLI(t, "run", dir, "--requests", reqs, "--verify"); code != exitOK || !strings.Contains(errOut, want) {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}

// uncommentPadded follows init's comments on a component whose payload
// input is padded on sym with the graph's lengths input: its capacity,
// the payload's request_aligned layout and its padding.
func uncommentPadded(t *testing.T, doc, sym string) string {
	t.Helper()
	doc = uncommentAligned(t, doc)
	return uncomment(t, doc, "              # padding: [{ dimension: "+sym+", valid_lengths: lengths }]\n            lengths:")
}

// uncommentCapacity follows init's comment of a component's capacity:
// uniform its uniform dimensions (as init lists them), root its budget's
// first symbol, at init's suggested 8.
func uncommentCapacity(t *testing.T, doc, uniform, root string) string {
	t.Helper()
	return uncomment(t, doc, fmt.Sprintf(`        # batch_capacity:
        #   uniform_dimensions: [%s]  # extents co-batched items must share
        #   budgets:  # bounds on the group's materialized footprint, by symbol
        #     - { dimensions: [%s], max_total: 8 }`, uniform, root))
}

// uncommentAligned follows init's comments on a component whose payload
// input's first axis is batch: its capacity and the payload's
// request_aligned layout.
func uncommentAligned(t *testing.T, doc string) string {
	t.Helper()
	doc = uncommentCapacity(t, doc, "", "batch")
	return uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }  # one row per request`)
}

// initAligned runs init on the models in dir and returns the document's
// path and the document, uncommentAligned.
func initAligned(t *testing.T, dir string) (path, doc string) {
	t.Helper()
	if out, errOut, code := runCLI(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc = initWritten(t, dir)
	return path, uncommentAligned(t, doc)
}

// oneDiagnostic checks the package in dir and wants one diagnostic, of
// rule, whose help holds help; what names the document's state.
func oneDiagnostic(t *testing.T, dir, rule, help, what string) {
	t.Helper()
	rep, code := checkJSONOf(t, dir)
	if code != exitDiags || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 1 ||
		rep.Files[0].Diagnostics[0].Rule != rule || !strings.Contains(fmt.Sprint(rep.Files[0].Diagnostics[0].Help), help) {
		t.Fatalf("%s: exit %d, %+v", what, code, rep.Files)
	}
}

// TestInitChannelsFirst is a newcomer's path with a channels-first speech
// encoder ([B, 4, T] with one length per item, as NeMo exports): its
// lengths cannot pad T (they would be [B, 4]), so init keeps T uniform and
// says the lengths take one row per request; left shared, check refuses
// them (a group would take only requests of equal lengths). Followed, the
// package groups clips of one T and different lengths, each alike alone.
func TestInitChannelsFirst(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "enc.onnx"), &onnxpb.GraphProto{Name: "enc",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("audio_signal", 1, "B", 4, "T"), tensorInfo("length", 7, "B")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("outputs", 1, "B", 4, "T"), tensorInfo("encoded_lengths", 7, "B")},
		Node: []*onnxpb.NodeProto{
			{OpType: "Identity", Input: []string{"audio_signal"}, Output: []string{"outputs"}},
			{OpType: "Identity", Input: []string{"length"}, Output: []string{"encoded_lengths"}},
		}}, 17)
	if out, errOut, code := runCLI(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncommentCapacity(t, doc, "T", "B")
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }  # one row per request`)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
            encoded_lengths:`)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
    steps:`)
	if !strings.Contains(doc, "# The graph takes one length per item (length), but T is axis 2,") {
		t.Errorf("init does not say why T is not padded:\n%s", doc)
	}
	write := func(doc string) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(doc)
	oneDiagnostic(t, dir, "capacity/unreconciled", "declare on port `length`: batch_layout: { kind: request_aligned, axis: 0 } (one row per request)", "check of the lengths left shared")
	rows := "              # One length per request, which nothing pads by here: give it one row\n"
	if !strings.Contains(doc, rows) {
		t.Fatalf("init no longer writes\n%s\nin\n%s", rows, doc)
	}
	write(strings.Replace(doc, rows, "              batch_layout: { kind: request_aligned, axis: 0 }\n", 1))
	checkClean(t, dir)
	var rs []string
	for i := range 6 {
		xs := make([]string, 4*5)
		for j := range xs {
			xs[j] = fmt.Sprint(float64((i*5+j*3)%9) / 4)
		}
		rs = append(rs, fmt.Sprintf(`{"id":"r%d","inputs":{"audio_signal":{"dtype":"float32","shape":[1,4,5],"data":[%s]},"length":{"dtype":"int64","shape":[1],"data":[%d]}}}`, i, strings.Join(xs, ","), 1+i%5))
	}
	verifyAlike(t, dir, rs)
}

// TestInitTimeMajorOutput: a model that takes its rows batch first but
// returns its states time-major ([seq, batch, 4], as a transformer run
// without batch_first does), its output axes named by the export alone:
// init names them by the probe and puts the output's request axis where
// its rows are, saying that padded on seq it cannot be split.
func TestInitTimeMajorOutput(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "enc.onnx"), &onnxpb.GraphProto{Name: "enc",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "batch", "seq", 4), tensorInfo("lengths", 7, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("states", 1, "Transposestates_dim_0", "Transposestates_dim_1", 4), tensorInfo("seen", 7, "batch")},
		Node: []*onnxpb.NodeProto{
			{OpType: "Transpose", Input: []string{"x"}, Output: []string{"states"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: []int64{1, 0, 2}}}},
			{OpType: "Identity", Input: []string{"lengths"}, Output: []string{"seen"}},
		}}, 17)
	initPrints(t, dir,
		"              shape: [seq, batch, 4]\n",
		"# rows, and check refuses it): its rows are along batch, axis 1:\n              # batch_layout: { kind: request_aligned, axis: 1 }\n",
		"# but where the input is padded on seq, this output is too, on axis\n              # 0, outside its request axis, where no lengths can split it: return")
}

// initPrints runs init --print on model (a file or a folder) and wants
// each of wants in the document, and nothing on standard error.
func initPrints(t *testing.T, model string, wants ...string) {
	t.Helper()
	out, errOut, code := runCLI(t, "init", "--print", model)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %q:\n%s", want, out)
		}
	}
}

// TestInitSecondSequence: a model of two sequences over one batch (a
// query and a document, each with its lengths, as mask-lengths leaves a
// model of two masks): init tells the second to take the first's layout
// and its own lengths; followed, the package checks and verifies on the
// requests serve would synthesize.
func TestInitSecondSequence(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "pair.onnx"), &onnxpb.GraphProto{Name: "pair",
		Input: []*onnxpb.ValueInfoProto{tensorInfo("query_ids", 1, "batch", "query_len"), tensorInfo("query_lengths", 7, "batch"),
			tensorInfo("doc_ids", 1, "batch", "doc_len"), tensorInfo("doc_lengths", 7, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("query_seen", 7, "batch"), tensorInfo("doc_seen", 7, "batch")},
		Node: []*onnxpb.NodeProto{
			{OpType: "Identity", Input: []string{"query_lengths"}, Output: []string{"query_seen"}},
			{OpType: "Identity", Input: []string{"doc_lengths"}, Output: []string{"doc_seen"}},
		}}, 17)
	second := "              # A sequence of its own (doc_len): give it query_ids's batch_layout, and pad it\n" +
		"              # with its own lengths: padding: [{ dimension: doc_len, valid_lengths: doc_lengths }]\n"
	initPrints(t, dir, second)
	path, doc := initAligned(t, dir)
	doc = uncomment(t, doc, `              # padding: [{ dimension: query_len, valid_lengths: query_lengths }]
            query_lengths:`)
	doc = strings.Replace(doc, second, "              batch_layout: { kind: request_aligned, axis: 0 }\n              padding: [{ dimension: doc_len, valid_lengths: doc_lengths }]\n", 1)
	doc = strings.ReplaceAll(doc, "              # or, with one row per request:\n              # batch_layout: { kind: request_aligned, axis: 0 }\n", "              batch_layout: { kind: request_aligned, axis: 0 }\n")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}

// TestInitOutputsNoLayoutSplits: a model with an output whose rows are a
// count it computes from the values (NonZero's positions, as detections
// kept are) and a scalar it computes over the whole call: init, having
// run the model, says that no layout splits either per request. A
// newcomer who gives the count one row per request anyway is warned by
// check, and run --verify, without requests, says what the smallest
// synthesized request failed with.
func TestInitOutputsNoLayoutSplits(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "det.onnx"), &onnxpb.GraphProto{Name: "det",
		Input: []*onnxpb.ValueInfoProto{tensorInfo("boxes", 1, "batch", 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("scores", 1, "batch", 4), tensorInfo("kept", 7, "kept_count", 2),
			tensorInfo("total", 1)},
		Node: []*onnxpb.NodeProto{
			{OpType: "Identity", Input: []string{"boxes"}, Output: []string{"scores"}},
			{OpType: "NonZero", Input: []string{"boxes"}, Output: []string{"positions"}},
			{OpType: "Transpose", Input: []string{"positions"}, Output: []string{"kept"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: []int64{1, 0}}}},
			{OpType: "ReduceSum", Input: []string{"boxes"}, Output: []string{"total"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}},
		}}, 17)
	if out, errOut, code := runCLI(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	for _, want := range []string{
		"              shape: [kept_count, 2]\n              # kept_count followed no input's extent when init ran the model twice: a\n",
		"# positions), not rows of batch, and no layout splits it per request.",
		"              shape: []\n              # Its value changed with the inputs' extents when init ran the model\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	// The comments not followed: the count split one row per request (the
	// scalar, left shared, is no diagnostic of check's).
	doc = uncommentAligned(t, doc)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
            kept:`)
	doc = strings.Replace(doc, "              shape: [kept_count, 2]\n", "              shape: [kept_count, 2]\n              batch_layout: { kind: request_aligned, axis: 0 }\n", 1)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, code := checkJSONOf(t, dir)
	if code != exitOK || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 1 || rep.Files[0].Diagnostics[0].Severity != "warning" ||
		!strings.Contains(rep.Files[0].Diagnostics[0].Help, "leave port `kept` out of the component") {
		t.Fatalf("check of kept split per request: exit %d, %+v", code, rep.Files)
	}
	_, errOut, code := runCLI(t, "run", dir, "--verify")
	if code != exitUsage || !strings.Contains(errOut, "the smallest failed: error[run/extent]: component `det` output `kept` has shape") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}

// TestInitCountThatKeptOneExtent: a detector's count of kept boxes may
// take one extent on init's inputs of ones (here: NonZero of the first
// row, four wide whatever the batch), which init once called a constant
// to write in its place, refusing every other count at run time; the
// graph computes extents from values, so init says to leave it a symbol.
func TestInitCountThatKeptOneExtent(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "det.onnx")
	writeGraph(t, model, &onnxpb.GraphProto{Name: "det",
		Input:       []*onnxpb.ValueInfoProto{tensorInfo("scores", 1, "batch", 4)},
		Output:      []*onnxpb.ValueInfoProto{tensorInfo("kept", 7, "kept_count", 1)},
		Initializer: []*onnxpb.TensorProto{{Name: "first", DataType: 7, Dims: []int64{}, RawData: make([]byte, 8)}},
		Node: []*onnxpb.NodeProto{
			{OpType: "Gather", Input: []string{"scores", "first"}, Output: []string{"row"}},
			{OpType: "NonZero", Input: []string{"row"}, Output: []string{"positions"}},
			{OpType: "Transpose", Input: []string{"positions"}, Output: []string{"kept"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "perm", Type: onnxpb.AttributeProto_INTS, Ints: []int64{1, 0}}}},
		}}, 17)
	initPrints(t, model, "# kept_count kept 4 on inputs of different extents (init ran the model\n"+
		"              # twice), but the graph computes extents from values\n              # (NonZero): a count")
}

// TestVerifyNamesASharedOutputComputedOverTheCall: a grouped package
// that returns a sum over the whole call from a shared port (init's
// comment on it not followed) answers otherwise grouped than alone, and
// run --verify names that port as the cause.
func TestVerifyNamesASharedOutputComputedOverTheCall(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "sum.onnx"), &onnxpb.GraphProto{Name: "sum",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "batch", 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, "batch", 4), tensorInfo("total", 1)},
		Node: []*onnxpb.NodeProto{
			{OpType: "Identity", Input: []string{"x"}, Output: []string{"y"}},
			{OpType: "ReduceSum", Input: []string{"x"}, Output: []string{"total"}, Attribute: []*onnxpb.AttributeProto{
				{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}},
		}}, 17)
	path, doc := initAligned(t, dir)
	doc = uncomment(t, doc, `              # batch_layout: { kind: request_aligned, axis: 0 }
            total:`)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	_, errOut, code := runCLI(t, "run", dir, "--verify")
	if code == exitOK || !strings.Contains(errOut, "output `total` comes from a shared output port of component `sum`, one value for the whole call") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}

// TestInitNarrowLengthsOutput: a model that outputs its computed
// dimension's lengths as int32 (frames of samples, frame_lengths cast so
// by the export): init says they pad the states once exported as int64,
// and check, declared as the graph has them, says the same.
func TestInitNarrowLengthsOutput(t *testing.T) {
	dir := t.TempDir()
	g := framer()
	g.Node[len(g.Node)-1].Output[0] = "frame_lengths64"
	g.Node = append(g.Node, &onnxpb.NodeProto{OpType: "Cast", Input: []string{"frame_lengths64"}, Output: []string{"frame_lengths"},
		Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 6}}})
	g.Output[1] = tensorInfo("frame_lengths", 6, "batch")
	writeGraph(t, filepath.Join(dir, "framer.onnx"), g, 17)
	initPrints(t, dir,
		"# frames is computed per item, and frame_lengths holds each item's, but as int32:\n",
		"# Lengths are int64: export it as int64 first.\n")
	path, doc := initAligned(t, dir)
	doc = uncomment(t, doc, "              # padding: [{ dimension: samples, valid_lengths: lengths }]\n            lengths:")
	doc = strings.Replace(doc, "              shape: [batch, frames, 2]\n", "              shape: [batch, frames, 2]\n              batch_layout: { kind: request_aligned, axis: 0 }\n              padding: [{ dimension: frames, valid_lengths: frame_lengths }]\n", 1)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ := checkJSONOf(t, dir)
	said := false
	for _, d := range rep.Files[0].Diagnostics {
		said = said || d.Rule == "padding/companion" && strings.Contains(d.Help, "once the model outputs it so (an export that casts it: torch's .to(torch.int64))")
	}
	if !said {
		t.Errorf("check of the int32 lengths: %+v", rep.Files)
	}
}

// TestInitRowsOfTwoKinds: a model whose inputs bring rows of two kinds,
// each a request axis of its own (CLIP's texts and images in one graph):
// init names both kinds, tells each output whose rows it follows, and of
// the logits, [images, texts], that no layout splits them. An author who
// splits them by the images anyway is refused by check (and so by run):
// grouped, each request would receive its images against every request's
// texts. Without them, the package groups texts and images of many
// requests and answers as alone.
func TestInitRowsOfTwoKinds(t *testing.T) {
	dir := t.TempDir()
	axes := func(v ...int64) []*onnxpb.AttributeProto {
		return []*onnxpb.AttributeProto{{Name: "axes", Type: onnxpb.AttributeProto_INTS, Ints: v}}
	}
	writeGraph(t, filepath.Join(dir, "dual.onnx"), &onnxpb.GraphProto{Name: "dual",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("ids", 7, "texts", "tokens"), tensorInfo("pixels", 1, "images", 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("logits", 1, "images", "texts"), tensorInfo("text_embeds", 1, "texts", 1), tensorInfo("image_embeds", 1, "images", 1)},
		Node: []*onnxpb.NodeProto{
			{OpType: "Cast", Input: []string{"ids"}, Output: []string{"idsf"}, Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}},
			{OpType: "ReduceMean", Input: []string{"idsf"}, Output: []string{"text_embeds"}, Attribute: axes(1)},
			{OpType: "ReduceMean", Input: []string{"pixels"}, Output: []string{"image_embeds"}, Attribute: axes(1)},
			{OpType: "Transpose", Input: []string{"text_embeds"}, Output: []string{"text_rows"}},
			{OpType: "MatMul", Input: []string{"image_embeds", "text_rows"}, Output: []string{"logits"}},
		}}, 17)
	initPrints(t, filepath.Join(dir, "dual.onnx"),
		"        #   texts: ids\n        #   images: pixels\n",
		"        #     - { dimensions: [texts], max_total: 8 }  # first symbol: a request or packed axis\n        #     - { dimensions: [images], max_total: 8 }\n",
		"              shape: [images, 4]\n              # Rows of their own kind, images, not ids's: give\n",
		"              shape: [images, texts]\n              # Its axes follow rows of 2 kinds (texts, images):\n",
		"              # request sends alike), leave its inputs shared: requests that bring\n",
		"              shape: [images, 1]\n              # Once the component groups, say how this output splits back per\n              # request (left shared, each request would receive the whole group's\n              # rows, and check refuses it): its rows are pixels's,\n              # images, axis 0:\n",
	)
	if out, errOut, code := runCLI(t, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	path, doc := initWritten(t, dir)
	doc = uncomment(t, doc, `        # batch_capacity:
        #   uniform_dimensions: [tokens]  # extents co-batched items must share
        #   budgets:  # bounds on the group's materialized footprint, by symbol
        #     - { dimensions: [texts], max_total: 8 }  # first symbol: a request or packed axis
        #     - { dimensions: [images], max_total: 8 }`)
	aligned := "batch_layout: { kind: request_aligned, axis: 0 }"
	for _, shape := range []string{"[texts, tokens]", "[images, 4]", "[images, texts]", "[texts, 1]", "[images, 1]"} {
		doc = strings.ReplaceAll(doc, "shape: "+shape+"\n", "shape: "+shape+"\n"+strings.Repeat(" ", 14)+aligned+"\n")
		doc = strings.ReplaceAll(doc, "shape: "+shape+" }", "shape: "+shape+", "+aligned+" }")
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	oneDiagnostic(t, dir, "capacity/unreconciled", "leave port `logits` out of the component", "the logits split by the images")
	if _, errOut, code := runCLI(t, "run", dir, "--verify"); code == exitOK || !strings.Contains(errOut, "capacity/unreconciled") {
		t.Fatalf("run --verify of the package check refuses: exit %d\n%s", code, errOut)
	}
	doc = regexp.MustCompile(`(?s)      logits:\n        contract:[^\n]*\n        role: tensor\n        stage: pre_adapter\n`).ReplaceAllString(doc, "")
	doc = regexp.MustCompile(`(?s)            logits:\n.*?(            text_embeds:)`).ReplaceAllString(doc, "$1")
	doc = regexp.MustCompile(`\n *logits: dual\.logits|\n *- \{ kind: emit, value: dual\.logits, [^\n]*`).ReplaceAllString(doc, "")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	if _, errOut, code := runCLI(t, "run", dir, "--verify"); code != exitOK || !strings.Contains(errOut, "each of the 12 requests synthesized from the workflow's inputs is answered alike") {
		t.Errorf("run --verify: exit %d\n%s", code, errOut)
	}
}
