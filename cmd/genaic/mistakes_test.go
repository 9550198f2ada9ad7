package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// mistake is one realistic author mistake made in a copy of the
// image_padded package: edits to its metadata (each old text must occur
// exactly once), and optionally a model written in place of encoder.onnx.
type mistake struct {
	name  string
	edits [][2]string
	model func(t *testing.T) []byte
	// help is what the suggestion must name, or "" where none exists.
	help string
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
		help: "did you mean `embeddings`?"},
	{name: "padding whose lengths the model does not take", model: modelWithoutLengths},
	{name: "a dtype unlike the graph's",
		edits: [][2]string{
			{"      pixel_patches:\n        contract:\n          dtype: float32\n", "      pixel_patches:\n        contract:\n          dtype: float16\n"},
			{"            pixel_patches:\n              dtype: float32\n", "            pixel_patches:\n              dtype: float16\n"},
		}},
	{name: "a rank unlike the graph's",
		edits: [][2]string{
			{"\n          shape: [images, hidden]\n", "\n          shape: [images, tokens, hidden]\n"},
			{"\n              shape: [images, hidden]\n", "\n              shape: [images, tokens, hidden]\n"},
		}},
	{name: "a key indented one space short",
		edits: [][2]string{{"      patch_lengths:\n        contract:", "     patch_lengths:\n        contract:"}}},
}

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

// TestTenAuthorMistakes makes each mistake in a copy of a package that
// checks clean, checks the folder (models read), and pins the whole human
// output in one golden file: each mistake must report exactly one error,
// and a suggestion where the mistake is a misspelt name.
func TestTenAuthorMistakes(t *testing.T) {
	var all strings.Builder
	for i, m := range mistakes {
		dir := copyPackage(t, inspectPkg)
		doc := filepath.Join(dir, "inference_metadata.yaml")
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, e := range m.edits {
			if n := strings.Count(src, e[0]); n != 1 {
				t.Fatalf("%s: %q occurs %d times in the package, want once", m.name, e[0], n)
			}
			src = strings.Replace(src, e[0], e[1], 1)
		}
		if err := os.WriteFile(doc, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if m.model != nil {
			if err := os.WriteFile(filepath.Join(dir, "encoder.onnx"), m.model(t), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, code := runCLI(t, "check", dir)
		if code != exitDiags || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q", m.name, code, errOut)
		}
		out = strings.ReplaceAll(out, dir, "PKG")
		if n := strings.Count(out, ": error["); n != 1 || strings.Contains(out, ": warning[") {
			t.Errorf("%s: want exactly one diagnostic, an error, got:\n%s", m.name, out)
		}
		if m.help != "" && !strings.Contains(out, "\n  help: "+m.help+"\n") {
			t.Errorf("%s: no help line %q in:\n%s", m.name, m.help, out)
		}
		fmt.Fprintf(&all, "== %d. %s\n%s\n", i+1, m.name, out)
	}
	golden(t, "testdata/mistakes.golden", all.String())
}
