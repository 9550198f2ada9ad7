package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/genaic/genaic/internal/testmodels"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// TestPackagesCheckAgainstTheirModels: every fixture package checks as a
// folder, its models read, with no diagnostic at all.
func TestPackagesCheckAgainstTheirModels(t *testing.T) {
	pkgs, err := filepath.Glob("../../testdata/packages/*")
	if err != nil || len(pkgs) < 12 {
		t.Fatalf("found %d packages (%v)", len(pkgs), err)
	}
	rep, code := checkJSONOf(t, pkgs...)
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	for _, f := range rep.Files {
		if !f.Valid || len(f.Diagnostics) > 0 {
			t.Errorf("%s: valid %v, %+v", f.Path, f.Valid, f.Diagnostics)
		}
	}
}

func tensorInfo(name string, elem int32, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		switch x := d.(type) {
		case string:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: x}})
		case int:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(x)}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: elem, Shape: shape}}}}
}

// writeSequenceModel writes testmodels.SequenceOutput: x [n, 4] → y and
// scores, a sequence.
func writeSequenceModel(t *testing.T, path string) {
	t.Helper()
	b, err := testmodels.SequenceOutput()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeGraph writes a model of graph g importing the default operator set
// at opset.
func writeGraph(t *testing.T, path string, g *onnxpb.GraphProto, opset int64) {
	t.Helper()
	b, err := onnx.Marshal(&onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: opset}}, Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckRefusesANonTensorPort: a port declared for a graph output that
// is a sequence is model/dtype (every request would fail once the graph
// produced it), saying to leave it out.
func TestCheckRefusesANonTensorPort(t *testing.T) {
	dir := t.TempDir()
	writeSequenceModel(t, filepath.Join(dir, "classifier.onnx"))
	const doc = `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      x: { contract: { dtype: float32, shape: [n, 4] }, role: { kind: opaque }, source: { kind: request } }
    outputs:
      scores: { contract: { dtype: float32, shape: [n, 4] }, role: tensor, stage: pre_adapter }
    components:
      classifier:
        implementation: { kind: onnx, artifact: classifier.onnx }
        ports:
          inputs:
            x: { dtype: float32, shape: [n, 4] }
          outputs:
            scores: { dtype: float32, shape: [n, 4] }
    steps:
      - { kind: invoke, component: classifier, inputs: { x: x }, outputs: { scores: s } }
      - { kind: emit, value: s, output: scores, mode: replace }
`
	if err := os.WriteFile(filepath.Join(dir, metadataName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, code := checkJSONOf(t, dir)
	if code != exitDiags || len(rep.Files) != 1 || len(rep.Files[0].Diagnostics) != 1 {
		t.Fatalf("exit %d, %+v", code, rep.Files)
	}
	d := rep.Files[0].Diagnostics[0]
	if d.Rule != "model/dtype" || !strings.Contains(d.Message, "has `scores` as a sequence") || !strings.Contains(d.Help, "leave the port out") {
		t.Errorf("got %+v", d)
	}
}

// TestPassThroughOutput: a graph that hands an input back as an output
// (as exports do that return their ids beside the embeddings) answers it
// with the request's values, grouped and solo; a buffer planned for it
// would come back as zeros, since ONNX Runtime writes nothing there.
func TestPassThroughOutput(t *testing.T) {
	dir := t.TempDir()
	writeGraph(t, filepath.Join(dir, "relu.onnx"), &onnxpb.GraphProto{Name: "g",
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "n", 4)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("x", 1, "n", 4), tensorInfo("y", 1, "n", 4)},
		Node:   []*onnxpb.NodeProto{{OpType: "Relu", Input: []string{"x"}, Output: []string{"y"}}}}, 17)
	const doc = `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      x: { contract: { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }, role: { kind: opaque }, source: { kind: request } }
    outputs:
      x: { contract: { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }, role: tensor, stage: pre_adapter }
      "y": { contract: { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }, role: tensor, stage: pre_adapter }
    components:
      relu:
        implementation: { kind: onnx, artifact: relu.onnx }
        batch_capacity: { budgets: [{ dimensions: [n], max_total: 8 }] }
        ports:
          inputs:
            x: { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }
          outputs:
            x: { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }
            "y": { dtype: float32, shape: [n, 4], batch_layout: { kind: request_aligned, axis: 0 } }
    steps:
      - { kind: invoke, component: relu, inputs: { x: x }, outputs: { x: passed, "y": relu } }
      - { kind: emit, value: passed, output: x, mode: replace }
      - { kind: emit, value: relu, output: "y", mode: replace }
`
	if err := os.WriteFile(filepath.Join(dir, metadataName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dir)
	reqs := filepath.Join(dir, "requests.json")
	if err := os.WriteFile(reqs, []byte(`{"requests":[
		{"id":"a","inputs":{"x":{"dtype":"float32","shape":[1,4],"data":[1,-2,3,-4]}}},
		{"id":"b","inputs":{"x":{"dtype":"float32","shape":[1,4],"data":[-5,6,-7,8]}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"--stats", "--solo"} {
		out, errOut, code := runCLI(t, "run", dir, "--requests", reqs, mode)
		for _, want := range []string{
			`"x":{"dtype":"float32","shape":[1,4],"data":[1,-2,3,-4]}`, `"y":{"dtype":"float32","shape":[1,4],"data":[1,0,3,0]}`,
			`"x":{"dtype":"float32","shape":[1,4],"data":[-5,6,-7,8]}`, `"y":{"dtype":"float32","shape":[1,4],"data":[0,6,0,8]}`,
		} {
			if code != exitOK || !strings.Contains(out, want) {
				t.Errorf("%s: exit %d, the responses lack %s\n%s%s", mode, code, want, out, errOut)
			}
		}
		if mode == "--stats" && !strings.Contains(out, `"max_group_requests": 2`) {
			t.Errorf("the two requests were not grouped:\n%s", out)
		}
	}
}

// TestCheckRefusesAModelThatCannotMaskPadding is the case of issue 13: the
// image_padded package with an encoder that takes no patch lengths. The
// padded port is refused (model/lengths-unseen) by check of the folder and
// by compile; check of the lone document reports it too, since the model is
// there to read; without the model, the lone document is valid with a
// model/missing warning and the folder is refused.
func TestCheckRefusesAModelThatCannotMaskPadding(t *testing.T) {
	dir := copyPackage(t, inspectPkg)
	doc := filepath.Join(dir, "inference_metadata.yaml")
	b := modelWithoutLengths(t)
	model := filepath.Join(dir, "encoder.onnx")
	if err := os.WriteFile(model, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, doc} {
		rep, code := checkJSONOf(t, path)
		ds := rep.Files[0].Diagnostics
		if code != exitDiags || len(ds) != 1 || ds[0].Rule != "model/lengths-unseen" || ds[0].Severity != "error" {
			t.Errorf("check %s: exit %d, %+v", path, code, ds)
		}
	}
	if out, errOut, code := runCLI(t, "compile", dir, "--emit", "plan"); code != exitDiags || !strings.Contains(out+errOut, "error[model/lengths-unseen]") {
		t.Errorf("compile: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Remove(model); err != nil {
		t.Fatal(err)
	}
	rep, code := checkJSONOf(t, doc)
	if ds := rep.Files[0].Diagnostics; code != exitOK || !rep.Files[0].Valid || len(ds) != 1 || ds[0].Rule != "model/missing" || ds[0].Severity != "warning" {
		t.Errorf("check of the lone document without its model: exit %d, %+v", code, ds)
	}
	rep, code = checkJSONOf(t, dir)
	if ds := rep.Files[0].Diagnostics; code != exitDiags || len(ds) != 1 || ds[0].Rule != "model/missing" || ds[0].Severity != "error" {
		t.Errorf("check of the folder without its model: exit %d, %+v", code, ds)
	}
	out, errOut, code := runCLI(t, "compile", doc, "--emit", "plan")
	if code != exitDiags || !strings.Contains(out+errOut, "error[model/missing]") {
		t.Errorf("compile of the lone document without its model: exit %d\n%s%s", code, out, errOut)
	}
}
