package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/onnx/onnxpb"
)

// TestWiden: a model that takes its lengths as int32 (as TensorFlow
// exports do) cannot be padded by them; init says so and names widen,
// which rewrites it to take them as int64; the rewritten model answers
// as the model did, and init on it writes the padding. Its refusals name
// what to do.
func TestWiden(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "enc.onnx")
	writeGraph(t, model, &onnxpb.GraphProto{Name: "enc",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("ids", 6, "batch", "seq"), tensorInfo("lengths", 6, "batch")},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("twice", 6, "batch"), tensorInfo("ids_seen", 6, "batch", "seq")},
		Node: []*onnxpb.NodeProto{
			{OpType: "Add", Input: []string{"lengths", "lengths"}, Output: []string{"twice"}},
			{OpType: "Identity", Input: []string{"ids"}, Output: []string{"ids_seen"}},
		}}, 17)
	initPrints(t, model, "# int64: `genaic widen enc.onnx -o enc_int64.onnx --input lengths` rewrites the\n")
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	widened := filepath.Join(pkg, "enc.onnx")
	if out, errOut, code := runCLI(t, "widen", model, "-o", widened); code != exitOK || !strings.Contains(out, "input lengths is now int64") {
		t.Fatalf("widen: exit %d\n%s%s", code, out, errOut)
	}
	initPrints(t, widened, "# padding: [{ dimension: seq, valid_lengths: lengths }]\n")
	if out, errOut, code := runCLI(t, "init", pkg); code != exitOK {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	reqs := filepath.Join(dir, "requests.json")
	if err := os.WriteFile(reqs, []byte(`{"requests":[{"id":"r","inputs":{"ids":{"dtype":"int32","shape":[1,2],"data":[4,5]},"lengths":{"dtype":"int64","shape":[1],"data":[2]}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "run", pkg, "--requests", reqs)
	if code != exitOK || !strings.Contains(out, `"twice":{"dtype":"int32","shape":[1],"data":[4]}`) {
		t.Errorf("run of the widened model: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"widen", widened, "-o", filepath.Join(dir, "again.onnx")}, "no int32 graph input is named like lengths, offsets or an owner: name one with --input"},
		{[]string{"widen", widened, "-o", filepath.Join(dir, "again.onnx"), "--input", "lengths"}, `input "lengths" is int64, not int32`},
		{[]string{"widen", model, "-o", widened}, "exists; pass --force to replace it"},
		{[]string{"widen", model, "-o", model}, "-o names the model itself"},
	} {
		if _, errOut, code := runCLI(t, c.args...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
		}
	}
}
