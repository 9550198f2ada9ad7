package ir

import (
	"strings"
	"testing"
)

// sampleModule builds a small module that uses every node of the IR, so
// that its printed form (below) shows the whole syntax in review.
func sampleModule() *Module {
	m := NewModule()
	m.Schema, m.Major, m.Minor = "v1.1", 1, 1
	inLoc := m.AddLoc(Location{Line: 12, Col: 7, Path: "pipeline.workflow.inputs.pixel.values"})
	stepLoc := m.AddLoc(Location{Line: 61, Col: 9, Path: "pipeline.workflow.steps[0]"})
	m.Manifest = Manifest{AdapterABIs: []KV{{Key: "genaic.decoder", Value: "1.2"}}, Capabilities: []string{"kv_cache"}}
	sampleSites(m, inLoc)
	sampleValues(m)
	m.Body = &Block{Steps: []*Step{sampleInvoke(stepLoc), sampleBranch(), sampleSequence(), sampleLoop()}}
	return m
}

func sampleSites(m *Module, inLoc Loc) {
	yes, no := true, false
	pixels := &Contract{DType: "float32", Rank: 4, HasShape: true, Shape: dims("batch", "max_tiles", 3, 224),
		Layout: Layout{Kind: RequestAligned}, Padding: []Padding{{Dim: Ref{Name: "max_tiles"}, Lengths: Ref{Name: "lengths"}}}}
	lengths := &Contract{DType: "int64", Rank: 1, HasShape: true, Shape: dims("batch"), Layout: Layout{Kind: RequestAligned}}
	m.Inputs = []*Input{
		{Name: "pixel.values", Value: 0, Contract: pixels, Role: "opaque", Source: "request", Required: &yes, Loc: inLoc},
		{Name: "lengths", Value: 1, Contract: lengths, Role: "runtime", RuntimeRole: "sequence_lengths", RoleVersion: "1",
			Source: "application", SourceArg: "host", Required: &no, HasDefault: true, PresentAs: "lens", ExternallySuppliable: true},
	}
	m.Cells = []*Cell{{Name: "kv", Value: 2, Contract: &Contract{DType: "float16", Rank: 4, Optional: true},
		Scope: "request", Initializer: Use{Name: "lengths", ID: 1}, Recurrence: "carried", Next: "token", Class: "state",
		Management: "runtime", ReleaseBoundary: "request", ServiceGroup: "kv_group"}}
	m.Outputs = []*Output{{Name: "embeddings", Role: "tensor", Stage: "pre_adapter", Contract: &Contract{DType: "float32", Rank: 2,
		HasShape: true, Shape: dims("tokens", 768), Layout: Layout{Kind: TokenPacked, Levels: []Level{
			{Offsets: Ref{Name: "tile_offsets"}, Owner: Ref{Name: "tile_owner"}},
			{Offsets: Ref{Name: "image_offsets"}, Owner: Ref{Name: "image_owner"}, Extent: ExtentProduced}}}}}}
	m.Components = sampleComponents(pixels, lengths)
	axis := int64(2)
	m.Serving = &Serving{Active: Ref{Name: "active"}, Done: Ref{Name: "done"}, AcceptedLen: Ref{Name: "accepted"},
		Groups: []ServiceGroup{{Name: "kv_group", Kind: "paged", Layout: "blocked", Aliasing: "none", SequenceAxis: &axis,
			LogicalLengths: Ref{Name: "lengths"}}}}
	m.Programs = []*Program{{Modality: "image", Transforms: []Transform{
		{Op: "resize", Inputs: []string{"image"}, Outputs: []string{"resized"}, Params: []Param{{Key: "size", Kind: ParamList,
			Items: []Param{{Kind: ParamInt, Text: "224"}, {Kind: ParamInt, Text: "224"}}}, {Key: "interpolation", Text: "bicubic"}}},
		{Op: "normalize", Inputs: []string{"resized"}, Outputs: []string{"pixels"}}},
		Outputs: []ProgramOutput{{Name: "pixel.values", Source: "pixels", Content: "image", DType: "float32",
			Contract: &Contract{DType: "float32", Rank: 3, HasShape: true, Shape: dims(3, 224, 224)}}}}}
}

func dims(ds ...any) []Dim {
	var out []Dim
	for _, d := range ds {
		switch d := d.(type) {
		case string:
			out = append(out, Dim{Sym: d})
		case int:
			out = append(out, Dim{Size: int64(d)})
		}
	}
	return out
}

func sampleComponents(pixels, lengths *Contract) []*Component {
	state := &Contract{DType: "float16", Rank: 4}
	return []*Component{
		{Name: "vision", Artifact: "vision.onnx",
			Inputs: []*Port{{Name: "pixels", Contract: pixels}, {Name: "lengths", Contract: lengths}},
			Outputs: []*Port{
				{Name: "feats", Contract: &Contract{DType: "float32", Rank: 3, HasShape: true, Shape: dims("batch", "tiles", 768),
					Layout: Layout{Kind: RequestExpanded, Factor: 4}}},
				{Name: "mask", Contract: &Contract{DType: "bool", HasShape: true, Shape: []Dim{}}}},
			Capacity: &Capacity{Uniform: []Ref{{Name: "c"}}, Budgets: []Budget{{Path: []Ref{{Name: "batch"}, {Name: "tiles"}}, MaxTotal: 64}}},
			RowScope: &RowScope{}},
		{Name: "decoder", Impl: ImplAdapter, Artifact: "decoder.onnx", ABI: "genaic.decoder", Version: "1.2",
			Inputs:   []*Port{{Name: "state", Contract: state}, {Name: "step"}},
			Outputs:  []*Port{{Name: "token", Contract: state}, {Name: "done"}},
			RowScope: &RowScope{Stateful: true}},
		{Name: "post.proc", Impl: ImplBinding},
	}
}

func sampleValues(m *Module) {
	port := func(comp, name string) *Contract { return m.Component(comp).Output(name).Contract }
	m.NewValue("pixel.values", DefInput, m.Inputs[0].Contract, 0)
	m.NewValue("lengths", DefInput, m.Inputs[1].Contract, 0)
	m.NewValue("kv", DefCell, m.Cells[0].Contract, 0)
	m.NewValue("feats", DefInvoke, port("vision", "feats"), 0)
	m.NewValue("mask", DefInvoke, port("vision", "mask"), 0)
	m.NewValue("a", DefInvoke, &Contract{DType: "float32", Rank: -1}, 0)
	m.NewValue("merged", DefPhi, nil, 0)
	m.NewValue("step", DefIteration, nil, 0)
	m.NewValue("tok", DefInvoke, port("decoder", "token"), 0)
	m.NewValue("done", DefInvoke, nil, 0)
}

func sampleInvoke(l Loc) *Step {
	return &Step{Op: OpInvoke, Loc: l, Component: Ref{Name: "vision"},
		Args:    []Arg{{Port: "pixels", Value: Use{Name: "pixel.values", ID: 0}}, {Port: "lengths", Value: Use{Name: "lengths", ID: 1}}},
		Results: []Result{{Port: "feats", Value: 3}, {Port: "mask", Value: 4}}}
}

func sampleBranch() *Step {
	inner := &Step{Op: OpInvoke, Component: Ref{Name: "post.proc"}, Args: []Arg{{Port: "x", Value: Use{Name: "feats", ID: 3}}},
		Results: []Result{{Port: "y", Value: 5}}}
	fallback := &Step{Op: OpEmit, Mode: "event", Value: Use{Name: "nothing", ID: NoValue}, Output: Ref{Name: "embeddings"}}
	return &Step{Op: OpBranch, Predicate: Use{Name: "mask", ID: 4},
		Cases:   []Case{{Key: "image", Body: &Block{Steps: []*Step{inner}}}},
		Default: &Block{Steps: []*Step{fallback}},
		Phis: []Phi{{Value: 6, Inputs: []PhiInput{{Key: "image", Value: Use{Name: "a", ID: 5}}},
			Default: &Use{Name: "feats", ID: 3}}}}
}

func sampleSequence() *Step {
	axis := int64(1)
	emit := &Step{Op: OpEmit, Mode: "append", Value: Use{Name: "merged", ID: 6}, Output: Ref{Name: "embeddings"},
		When: &Use{Name: "mask", ID: 4}, ValidLength: &Use{Name: "lengths", ID: 1}, Axis: &axis}
	return &Step{Op: OpSequence, Body: &Block{Steps: []*Step{emit}}}
}

func sampleLoop() *Step {
	iter := ValueID(7)
	decode := &Step{Op: OpInvoke, Component: Ref{Name: "decoder"},
		Args:    []Arg{{Port: "state", Value: Use{Name: "kv", ID: 2}}, {Port: "step", Value: Use{Name: "step", ID: 7}}},
		Results: []Result{{Port: "token", Value: 8}, {Port: "done", Value: 9}}}
	return &Step{Op: OpLoop, Setup: &Block{}, Iteration: &iter, MaxIterations: 8,
		Body:         &Block{Steps: []*Step{decode}},
		ContinueWhen: Use{Name: "done", ID: 9},
		Carried:      []Carry{{Cell: Ref{Name: "kv"}, Initial: &Use{Name: "kv", ID: 2}, Next: Use{Name: "tok", ID: 8}}}}
}

const sampleText = `module "v1.1" 1.1

manifest
  abi "genaic.decoder" = "1.2"
  capability kv_cache

input %0 "pixel.values"#1: float32[batch, max_tiles, 3, 224] request_aligned(0) pad(max_tiles: lengths)
  role opaque
  source request
  required true

input %1 lengths: int64[batch] request_aligned(0)
  role runtime(sequence_lengths, "1")
  source application("host")
  required false
  default
  present_as lens
  externally_suppliable true

cell %2 kv: float16 rank 4 optional
  scope request
  init %1 lengths
  recurrence carried
  next token
  class state
  management runtime
  release_boundary request
  service_group kv_group

output embeddings: float32[tokens, 768] token_packed(0, levels: [(tile_offsets, tile_owner), (image_offsets, image_owner produced)])
  role tensor
  stage pre_adapter

component vision
  impl onnx artifact "vision.onnx"
  in pixels: float32[batch, max_tiles, 3, 224] request_aligned(0) pad(max_tiles: lengths)
  in lengths: int64[batch] request_aligned(0)
  out feats: float32[batch, tiles, 768] request_expanded(0, factor: 4)
  out mask: bool[]
  capacity uniform [c]
    budget [batch, tiles] max_total 64
  row_scope axis 0

component decoder
  impl adapter artifact "decoder.onnx" abi "genaic.decoder" version "1.2"
  in state: float16 rank 4
  in step
  out token: float16 rank 4
  out done
  row_scope axis 0 stateful

component "post.proc"
  impl binding

serving
  active active
  done done
  accepted_len accepted
  group kv_group kind paged layout blocked aliasing none sequence_axis 2 logical_lengths lengths

program image
  transform resize [image] -> [resized] {size = [int "224", int "224"], interpolation = string "bicubic"}
  transform normalize [resized] -> [pixels]
  out "pixel.values" source pixels content image dtype float32: float32[3, 224, 224]

values {
  %0 input "pixel.values": @input "pixel.values"
  %1 input lengths: @input lengths
  %2 cell kv: @cell kv
  %3 invoke feats: @out vision feats
  %4 invoke mask: @out vision mask
  %5 invoke a: float32
  %6 phi merged
  %7 iteration step
  %8 invoke tok: @in decoder state
  %9 invoke done
}

body {
  (feats: %3, mask: %4) = invoke#2 vision(pixels: %0 "pixel.values", lengths: %1 lengths)
  branch %4 mask {
    case image {
      (y: %5) = invoke "post.proc"(x: %3 feats)
    }
    default {
      emit event %? nothing -> embeddings
    }
    %6 = phi(image: %5 a) default %3 feats
  }
  sequence {
    emit append %6 merged -> embeddings when %4 mask valid_length %1 lengths axis 1
  }
  loop iteration %7 max_iterations 8 {
    setup {
    }
    body {
      (token: %8, done: %9) = invoke decoder(state: %2 kv, step: %7 step)
    }
    while %9 done
    carry kv init %2 kv next %8 tok
  }
}

locs {
  #1 = 12:7 "pipeline.workflow.inputs.pixel.values"
  #2 = 61:9 "pipeline.workflow.steps[0]"
}
`

func TestPrintSample(t *testing.T) {
	m := sampleModule()
	if err := Verify(m); err != nil {
		t.Fatalf("the sample module is broken: %v", err)
	}
	if got := m.String(); got != sampleText {
		t.Errorf("printed sample differs from the expected text:\n%s", lineDiff(got, sampleText))
	}
}

// lineDiff describes the first line where got and want differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + itoa(int64(i+1)) + ":\n got: " + gl + "\nwant: " + wl + "\n\nwhole text:\n" + got
		}
	}
	return "(no line differs)"
}

func TestPrintQuotesNames(t *testing.T) {
	for s, want := range map[string]string{
		"a_b1": "a_b1", "_x": "_x", "a.b": `"a.b"`, "": `""`, "1a": `"1a"`, "a b": `"a b"`,
		`q"`: `"q\""`, "é": `"é"`, "input": "input", "#1": `"#1"`, "%2": `"%2"`,
	} {
		if got := name(s); got != want {
			t.Errorf("name(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestPrintRefusesWhatItCannotRepresent(t *testing.T) {
	for what, m := range map[string]*Module{
		"nil module":   nil,
		"nil input":    {Locs: []Location{{}}, Body: &Block{}, Inputs: []*Input{nil}},
		"unknown op":   {Locs: []Location{{}}, Body: &Block{Steps: []*Step{{Op: Op(99)}}}},
		"unknown def":  {Locs: []Location{{}}, Body: &Block{}, Values: []*Value{{Def: DefKind(9)}}},
		"unknown impl": {Locs: []Location{{}}, Body: &Block{}, Components: []*Component{{Impl: ImplKind(7)}}},
		"unknown layout": {Locs: []Location{{}}, Body: &Block{}, Outputs: []*Output{{Contract: &Contract{
			Layout: Layout{Kind: LayoutKind(8)}}}}},
		"unknown extent": {Locs: []Location{{}}, Body: &Block{}, Outputs: []*Output{{Contract: &Contract{
			Layout: Layout{Kind: TokenPacked, Levels: []Level{{Extent: Extent(5)}}}}}}},
	} {
		var b strings.Builder
		if err := Print(&b, m); err == nil || b.Len() != 0 {
			t.Errorf("%s: Print returned %v after writing %d bytes; want an error and nothing written", what, err, b.Len())
		}
		if s := m.String(); !strings.HasPrefix(s, "<ir.Module: ir.Print: ") {
			t.Errorf("%s: String() = %q", what, s)
		}
	}
}
