package onnx

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/onnx/onnxpb"
)

// valueInfo is a tensor ValueInfoProto: elem and dims, where a string
// dim is a symbol, an int a dim_value (-1 is how some exporters write a
// dynamic extent) and nil an unknown extent. A nil dims slice gives no
// shape at all.
func valueInfo(name string, elem int32, dims ...any) *onnxpb.ValueInfoProto {
	t := &onnxpb.TypeProto_Tensor{ElemType: elem}
	if dims != nil {
		t.Shape = &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			switch x := d.(type) {
			case string:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: x}
			case int:
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(x)}
			}
			t.Shape.Dim = append(t.Shape.Dim, dim)
		}
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: t}}}
}

// sequenceInfo is a ValueInfoProto of a sequence of float tensors: a
// TypeProto with its sequence_type (field 4), which onnxpb does not model,
// written as raw bytes.
func sequenceInfo(name string) *onnxpb.ValueInfoProto {
	vi := &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{}}
	vi.Type.ProtoReflect().SetUnknown([]byte{0x22, 0x06, 0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01})
	return vi
}

// sample is a model using every part the reader looks at: inputs (one
// backed by an initializer, one by a sparse initializer), outputs (one a
// sequence), value
// infos, two opsets, a custom-domain node, an If whose branches hold a Loop
// whose body holds a Constant with a tensor attribute, and external data.
func sample() *onnxpb.ModelProto {
	body := &onnxpb.GraphProto{Name: "body", Node: []*onnxpb.NodeProto{{
		OpType: "Constant", Output: []string{"c"},
		Attribute: []*onnxpb.AttributeProto{{Name: "value", Type: onnxpb.AttributeProto_TENSOR,
			T: &onnxpb.TensorProto{Name: "cv", DataType: 1, Dims: []int64{4}, RawData: make([]byte, 16)}}},
	}}, Input: []*onnxpb.ValueInfoProto{valueInfo("body_in", 1, "n")}}
	branch := &onnxpb.GraphProto{Name: "then", Node: []*onnxpb.NodeProto{{
		OpType: "Loop", Attribute: []*onnxpb.AttributeProto{{Name: "body", Type: onnxpb.AttributeProto_GRAPH, G: body}},
	}}}
	return &onnxpb.ModelProto{
		IrVersion:   9,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}, {Domain: "com.microsoft", Version: 1}},
		Graph: &onnxpb.GraphProto{
			Name: "main",
			Node: []*onnxpb.NodeProto{
				{OpType: "MatMul", Input: []string{"x", "w"}, Output: []string{"y"}},
				{OpType: "Attention", Domain: "com.microsoft", Input: []string{"y"}, Output: []string{"z"}},
				{OpType: "If", Input: []string{"cond"}, Output: []string{"out"}, Attribute: []*onnxpb.AttributeProto{
					{Name: "then_branch", Type: onnxpb.AttributeProto_GRAPH, G: branch},
					{Name: "else_branch", Type: onnxpb.AttributeProto_GRAPHS, Graphs: []*onnxpb.GraphProto{{Node: []*onnxpb.NodeProto{{OpType: "Identity", Domain: "ai.onnx"}}}}},
				}},
				{OpType: "MatMul", Input: []string{"z", "w"}, Output: []string{"u"}},
			},
			Initializer: []*onnxpb.TensorProto{
				{Name: "w", DataType: 1, Dims: []int64{8, 4}, RawData: make([]byte, 128)},
				{Name: "big", DataType: 1, Dims: []int64{1 << 20}, DataLocation: onnxpb.TensorProto_EXTERNAL,
					ExternalData: []*onnxpb.StringStringEntryProto{{Key: "location", Value: "weights.bin"}}},
			},
			SparseInitializer: []*onnxpb.SparseTensorProto{{Values: &onnxpb.TensorProto{Name: "sp", DataType: 1, RawData: make([]byte, 8)}, Dims: []int64{4}}},
			Input: []*onnxpb.ValueInfoProto{
				valueInfo("x", 1, "batch", 8),
				valueInfo("w", 1, 8, 4),
				valueInfo("sp", 1, 4),
				valueInfo("cond", 9),
				valueInfo("any", 7, "n", nil, -1),
			},
			Output:    []*onnxpb.ValueInfoProto{valueInfo("out", 10, "batch", 4), valueInfo("u", 16), sequenceInfo("seq")},
			ValueInfo: []*onnxpb.ValueInfoProto{valueInfo("y", 1, "batch", 4)},
		},
	}
}

func mustMarshal(t testing.TB, m *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeReadsGraphFacts(t *testing.T) {
	g, err := DecodeBytes(mustMarshal(t, sample()))
	if err != nil {
		t.Fatal(err)
	}
	if g.IRVersion != 9 || g.Name != "main" {
		t.Errorf("ir version %d, name %q", g.IRVersion, g.Name)
	}
	if want := []Opset{{"", 17}, {"com.microsoft", 1}}; !slices.Equal(g.Opsets, want) {
		t.Errorf("opsets %v, want %v", g.Opsets, want)
	}
	if want := []string{"Constant", "Identity", "If", "Loop", "MatMul", "com.microsoft:Attention"}; !slices.Equal(g.Ops, want) {
		t.Errorf("ops %v, want %v", g.Ops, want)
	}
	var ins []string
	for _, v := range g.Inputs {
		ins = append(ins, v.Name+" "+v.DType()+" "+v.ShapeText()+map[bool]string{true: " init", false: ""}[v.Initialized])
	}
	want := []string{"x float32 [batch, 8]", "w float32 [8, 4] init", "sp float32 [4] init", "cond bool (any shape)", "any int64 [n, ?, ?]"}
	if !slices.Equal(ins, want) {
		t.Errorf("inputs\n%q\nwant\n%q", ins, want)
	}
	if o := g.Output("out"); o == nil || o.DType() != "float16" || o.ShapeText() != "[batch, 4]" {
		t.Errorf("output out: %+v", o)
	}
	if o := g.Output("u"); o == nil || o.DType() != "bfloat16" || o.HasShape {
		t.Errorf("output u: %+v", o)
	}
	if o := g.Output("seq"); o == nil || o.NotTensor != "sequence" || o.DType() != "" {
		t.Errorf("output seq: %+v, want a sequence", o)
	}
	if o := g.Output("out"); o.NotTensor != "" {
		t.Errorf("output out is a tensor, read as a %s", o.NotTensor)
	}
	if len(g.ValueInfo) != 1 || g.ValueInfo[0].Name != "y" {
		t.Errorf("value infos %+v", g.ValueInfo)
	}
	if g.Input("body_in") != nil {
		t.Errorf("a subgraph's input is not the main graph's")
	}
}

// TestReadCommittedModels: every model the fixtures commit, and the real
// wakeword CNN and PP-OCRv4 recognizer (make setup links them), read with the inputs and outputs
// ONNX Runtime sees.
func TestReadCommittedModels(t *testing.T) {
	root := testenv.Root(t)
	models, err := filepath.Glob(filepath.Join(root, "testdata", "packages", "*", "*.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(models) < 12 {
		t.Fatalf("found %d models under testdata/packages, want 12 (the real wakeword model is linked by make setup)", len(models))
	}
	for _, path := range models {
		g, err := Read(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(g.Inputs) == 0 || len(g.Outputs) == 0 || len(g.Ops) == 0 || g.IRVersion == 0 {
			t.Errorf("%s: %+v", path, g)
		}
	}
	g, err := Read(filepath.Join(root, "testdata", "packages", "wakeword", "embedding_model.onnx"))
	if err != nil {
		t.Fatalf("the wakeword model (run make setup): %v", err)
	}
	if in := g.Input("input_1"); in == nil || in.DType() != "float32" || len(in.Dims) != 4 || !slices.Contains(g.Ops, "Conv") {
		t.Errorf("wakeword: inputs %+v, ops %v", g.Inputs, g.Ops)
	}
	g, err = Read(filepath.Join(root, "testdata", "packages", "ocr_rec", "ch_PP-OCRv4_rec_infer.onnx"))
	if err != nil {
		t.Fatalf("the PP-OCRv4 recognizer (run make setup): %v", err)
	}
	if in, out := g.Input("x"), g.Output("softmax_11.tmp_0"); in == nil || in.DType() != "float32" || len(in.Dims) != 4 ||
		out == nil || len(out.Dims) != 3 || !slices.Contains(g.Ops, "Conv") {
		t.Errorf("ocr_rec: inputs %+v, outputs %+v, ops %v", g.Inputs, g.Outputs, g.Ops)
	}
}

func TestReadRefusesWhatIsNotONNX(t *testing.T) {
	good := mustMarshal(t, sample())
	noGraph := mustMarshal(t, &onnxpb.ModelProto{IrVersion: 8})
	noVersion := mustMarshal(t, &onnxpb.ModelProto{Graph: &onnxpb.GraphProto{Name: "g"}})
	nested := &onnxpb.GraphProto{}
	for range maxDepth + 2 {
		nested = &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{{OpType: "If", Attribute: []*onnxpb.AttributeProto{{Name: "g", G: nested}}}}}
	}
	deep := mustMarshal(t, &onnxpb.ModelProto{IrVersion: 8, Graph: nested})
	noOp := mustMarshal(t, &onnxpb.ModelProto{IrVersion: 8, Graph: &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{{Name: "n"}}}})
	for name, b := range map[string][]byte{
		"empty":           nil,
		"text":            []byte("# inference_metadata.yaml\nschema_version: v1.1\n"),
		"truncated":       good[:len(good)-7],
		"no graph":        noGraph,
		"no IR version":   noVersion,
		"nested too far":  deep,
		"node without op": noOp,
		"overlong varint": {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"huge length":     protowire.AppendVarint([]byte{0x3a}, 1<<40),
	} {
		if _, err := DecodeBytes(b); !errors.Is(err, ErrNotONNX) {
			t.Errorf("%s: got %v, want ErrNotONNX", name, err)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "absent.onnx")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
	if _, err := Read(t.TempDir()); err == nil || errors.Is(err, ErrNotONNX) {
		t.Errorf("a folder: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "pipe.onnx")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a named pipe: %v", err)
	}
}

// TestReadLeavesExternalDataAlone: a model whose weights live in another
// file reads the same whether that file is there, absent or unreadable.
func TestReadLeavesExternalDataAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, mustMarshal(t, sample()), 0o644); err != nil {
		t.Fatal(err)
	}
	absent, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), []byte("not the weights"), 0o000); err != nil {
		t.Fatal(err)
	}
	present, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(absent.Ops, present.Ops) || present.Input("big") != nil || len(present.Inputs) != 5 {
		t.Errorf("external data changed what was read: %+v vs %+v", absent, present)
	}
}

// TestReadLargeModelInBoundedMemory builds a model of more than 100 MB
// (weights in an initializer and in a Constant node's tensor attribute)
// and reads it allocating a small fraction of that.
func TestReadLargeModelInBoundedMemory(t *testing.T) {
	const weights = 104 << 20 // bytes of raw_data in the initializer
	const constant = 8 << 20  // bytes of the Constant's tensor
	path := filepath.Join(t.TempDir(), "large.onnx")
	writeLargeModel(t, path, weights, constant)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() < 100<<20 {
		t.Fatalf("the model is %d bytes, want over 100 MB", info.Size())
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g, err := Read(path)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Ops, []string{"Constant", "MatMul"}) || g.Input("x") == nil || !g.Input("w").Initialized {
		t.Errorf("read %+v", g)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(info.Size() / 50); allocated > limit {
		t.Errorf("reading a %d-byte model allocated %d bytes, more than %d: the reader must skip weights, not load them", info.Size(), allocated, limit)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > info.Size()/50 {
		t.Errorf("the heap grew by %d bytes reading a %d-byte model", grown, info.Size())
	}
}

// writeLargeModel writes a model whose initializer `w` holds weights bytes
// and whose Constant node holds a tensor of constant bytes, streaming the
// payloads so that the test itself never holds them.
func writeLargeModel(t *testing.T, path string, weights, constant int) {
	t.Helper()
	small := &onnxpb.GraphProto{
		Name:   "large",
		Node:   []*onnxpb.NodeProto{{OpType: "MatMul", Input: []string{"x", "w"}, Output: []string{"y"}}},
		Input:  []*onnxpb.ValueInfoProto{valueInfo("x", 1, "batch", 1024), valueInfo("w", 1, 1024, weights/4096)},
		Output: []*onnxpb.ValueInfoProto{valueInfo("y", 1, "batch", weights/4096)},
	}
	graphHead, err := proto.Marshal(small)
	if err != nil {
		t.Fatal(err)
	}
	// A TensorProto field whose raw_data (field 9) is n bytes still to be
	// written: its head, up to and including raw_data's length.
	tensorHead := func(name string, n int) []byte {
		h, err := proto.Marshal(&onnxpb.TensorProto{Name: name, DataType: 1, Dims: []int64{int64(n / 4)}})
		if err != nil {
			t.Fatal(err)
		}
		h = protowire.AppendTag(h, 9, protowire.BytesType)
		return protowire.AppendVarint(h, uint64(n))
	}
	init := tensorHead("w", weights)
	cnst := tensorHead("c", constant)
	// NodeProto{op_type, output, attribute{name, t}}.
	attr := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "value")
	attr = protowire.AppendTag(attr, 5, protowire.BytesType)
	attr = protowire.AppendVarint(attr, uint64(len(cnst)+constant))
	attrLen := len(attr) + len(cnst) + constant
	node := protowire.AppendString(protowire.AppendTag(nil, 4, protowire.BytesType), "Constant")
	node = protowire.AppendString(protowire.AppendTag(node, 2, protowire.BytesType), "c")
	node = protowire.AppendTag(node, 5, protowire.BytesType)
	node = protowire.AppendVarint(node, uint64(attrLen))
	nodeLen := len(node) + attrLen

	graphRest := protowire.AppendTag(nil, 5, protowire.BytesType)
	graphRest = protowire.AppendVarint(graphRest, uint64(len(init)+weights))
	nodeField := protowire.AppendTag(nil, 1, protowire.BytesType)
	nodeField = protowire.AppendVarint(nodeField, uint64(nodeLen))
	graphLen := len(graphHead) + len(graphRest) + len(init) + weights + len(nodeField) + nodeLen

	model, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}})
	if err != nil {
		t.Fatal(err)
	}
	model = protowire.AppendTag(model, 7, protowire.BytesType)
	model = protowire.AppendVarint(model, uint64(graphLen))

	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	zeros := make([]byte, 1<<20)
	fill := func(n int) {
		for n > 0 {
			k := min(n, len(zeros))
			w.Write(zeros[:k])
			n -= k
		}
	}
	w.Write(model)
	w.Write(graphHead)
	w.Write(graphRest)
	w.Write(init)
	fill(weights)
	w.Write(nodeField)
	w.Write(node)
	w.Write(attr)
	w.Write(cnst)
	fill(constant)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(mustMarshal(f, sample()))
	f.Add([]byte("not a model"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeBytes(b)
		if err == nil && (g == nil || g.IRVersion <= 0) {
			t.Fatalf("accepted without an IR version: %+v", g)
		}
		if err != nil && !errors.Is(err, ErrNotONNX) {
			t.Fatalf("an in-memory model failed with %v, not ErrNotONNX", err)
		}
		if err == nil && !slices.IsSorted(g.Ops) {
			t.Fatalf("ops not sorted: %v", g.Ops)
		}
	})
}
