package preprocess

import (
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/ir"
)

func scalar(key string, kind ir.ParamKind, text string) ir.Param {
	return ir.Param{Key: key, Kind: kind, Text: text, Loc: 7}
}

func list(key string, items ...string) ir.Param {
	p := ir.Param{Key: key, Kind: ir.ParamList, Loc: 7}
	for _, it := range items {
		p.Items = append(p.Items, ir.Param{Kind: ir.ParamFloat, Text: it})
	}
	return p
}

func tf(op, in, out string, params ...ir.Param) ir.Transform {
	t := ir.Transform{Op: op, Outputs: []string{out}, Params: params, Loc: 3}
	if in != "" {
		t.Inputs = []string{in}
	}
	return t
}

// imageCase is a module with an image program and its adapter, whose one
// output port `pixels` the program output of that name binds.
func imageCase(ts ...ir.Transform) (*ir.Module, *ir.Program, *ir.Component) {
	prog := &ir.Program{Modality: "image", Transforms: ts,
		Outputs: []ir.ProgramOutput{{Name: "pixels", Source: ts[len(ts)-1].Outputs[0], Content: "pixels", Loc: 5}}}
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI("image"), Version: "1",
		Outputs: []*ir.Port{{Name: "pixels", Contract: &ir.Contract{DType: "float32", Rank: 4}, Loc: 9}}}
	return &ir.Module{Components: []*ir.Component{comp}, Programs: []*ir.Program{prog}}, prog, comp
}

func decode() ir.Transform { return tf("decode", "", "d") }

func TestTableRows(t *testing.T) {
	schema := []string{"decode", "convert_color", "resize", "center_crop", "rescale", "normalize", "tile", "patchify",
		"sample_frames", "pad_frames", "resample", "frame", "mel_spectrogram", "log"}
	for _, name := range schema {
		d := Lookup(name)
		if d == nil {
			t.Fatalf("the table has no row for %s", name)
		}
		if (len(d.Runs) > 0) != (d.shape != nil) {
			t.Errorf("%s: an op an adapter runs has a shape function, and only such an op", name)
		}
		for _, m := range d.Runs {
			if !slices.Contains(d.Modalities, m) {
				t.Errorf("%s runs in %s, a modality the schema does not give it", name, m)
			}
		}
	}
	if len(Ops) != len(schema) {
		t.Errorf("the table has %d rows, the schema %d ops", len(Ops), len(schema))
	}
	if got := strings.Join(Runs("audio"), ","); got != "decode,resample,frame" {
		t.Errorf("the audio adapter runs %s", got)
	}
}

func TestCompileImage(t *testing.T) {
	m, prog, comp := imageCase(decode(),
		tf("resize", "d", "r", scalar("height", ir.ParamInt, "10"), scalar("width", ir.ParamInt, "20"), scalar("interpolation", ir.ParamString, "BICUBIC")),
		tf("convert_color", "r", "g", scalar("mode", ir.ParamString, "gray")),
		tf("normalize", "g", "n", list("mean", "0.5"), list("std", "0.25")))
	p, probs := Compile(prog, comp, InvokedPorts(m, comp))
	if len(probs) > 0 {
		t.Fatalf("unexpected problems: %v", probs)
	}
	if got := p.Shapes["n"]; got != (Shape{C: 1, H: 10, W: 20}) {
		t.Errorf("the normalized value is %+v", got)
	}
	if w, _ := p.Ops[1].Word("interpolation"); w != "bicubic" {
		t.Errorf("interpolation reads %q", w)
	}
	if w, _ := p.Ops[2].Word("mode"); w != "L" {
		t.Errorf("mode reads %q", w)
	}
	if h, w := p.Ops[1].Size(1, 1); h != 10 || w != 20 {
		t.Errorf("resize makes %d×%d", h, w)
	}
	if p.Ports["pixels"] != &prog.Outputs[0] || p.Last != "n" {
		t.Errorf("pixels is bound to %v, the last value is %s", p.Ports["pixels"], p.Last)
	}
}

// TestCompileRefuses pins each check: the rule, where it points, and a
// fragment of the message.
func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		ts   []ir.Transform
		edit func(*ir.Program, *ir.Component)
		rule string
		loc  ir.Loc
		frag string
	}{
		{"audio op", []ir.Transform{decode(), tf("mel_spectrogram", "d", "x")}, nil, RuleOp, 3, "not run by the image adapter"},
		{"unknown op", []ir.Transform{decode(), tf("blur", "d", "x")}, nil, RuleOp, 3, "not a preprocessing op"},
		{"not run yet", []ir.Transform{decode(), tf("tile", "d", "x")}, nil, RuleOp, 3, "no built-in adapter runs it yet"},
		{"decode first", []ir.Transform{tf("rescale", "", "x", scalar("factor", ir.ParamFloat, "2"))}, nil, RuleOp, 3, "starts with `rescale`"},
		{"decode twice", []ir.Transform{decode(), tf("decode", "d", "x")}, nil, RuleOp, 3, "decodes again"},
		{"unknown parameter", []ir.Transform{decode(), tf("rescale", "d", "x", scalar("factor", ir.ParamInt, "2"), scalar("scale", ir.ParamInt, "2"))}, nil, RuleOp, 7, "takes no parameter `scale`"},
		{"wrong type", []ir.Transform{decode(), tf("resize", "d", "x", scalar("size", ir.ParamFloat, "2.5"))}, nil, RuleOp, 7, "must be an integer, read the float"},
		{"range", []ir.Transform{decode(), tf("resize", "d", "x", scalar("size", ir.ParamInt, "-1"))}, nil, RuleOp, 7, "positive integer"},
		{"word", []ir.Transform{decode(), tf("convert_color", "d", "x", scalar("mode", ir.ParamString, "HSV"))}, nil, RuleOp, 7, "write one of"},
		{"missing", []ir.Transform{decode(), tf("rescale", "d", "x")}, nil, RuleOp, 3, "has no `factor`"},
		{"list item", []ir.Transform{decode(), tf("normalize", "d", "x", list("mean", "0.5"), ir.Param{Key: "std", Kind: ir.ParamList, Items: []ir.Param{{Kind: ir.ParamString, Text: "a"}}, Loc: 7})}, nil, RuleOp, 7, "at index 0"},
		{"channels", []ir.Transform{decode(), tf("normalize", "d", "x", list("mean", "0.5", "0.5"), list("std", "1"))}, nil, RuleOp, 7, "lists 2 numbers, but the image has 3"},
		{"combined sizes", []ir.Transform{decode(), tf("resize", "d", "x", scalar("size", ir.ParamInt, "2"), scalar("max_size", ir.ParamInt, "4"))}, nil, RuleOp, 7, "max_size"},
		{"undefined value", []ir.Transform{decode(), tf("rescale", "nowhere", "x", scalar("factor", ir.ParamInt, "2"))}, nil, RuleOp, 3, "reads `nowhere`"},
		{"wav image", []ir.Transform{tf("decode", "", "d", scalar("format", ir.ParamString, "wav"))}, nil, RuleOp, 7, "is audio"},
		{"unbound port", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) {
			c.Outputs = append(c.Outputs, &ir.Port{Name: "owner", Loc: 11})
		}, RuleUnbound, 11, "bound by no output"},
		{"bound twice", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) {
			p.Outputs = append(p.Outputs, ir.ProgramOutput{Name: "pixels", Source: "d", Content: "pixels", Loc: 6})
		}, RuleUnbound, 6, "bound by two outputs"},
		{"port rank", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.Rank = 2 }, RuleOp, 9, "rank 2"},
		{"port dtype", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.DType = "float16" }, RuleOp, 9, "writes it as float32"},
		{"content", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { p.Outputs[0].Content = "mask" }, RuleOp, 5, "content role `mask`"},
		{"output source", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { p.Outputs[0].Source = "nowhere" }, RuleOp, 5, "reads `nowhere`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, prog, comp := imageCase(c.ts...)
			if c.edit != nil {
				c.edit(prog, comp)
			}
			_, probs := Compile(prog, comp, InvokedPorts(m, comp))
			if len(probs) != 1 {
				t.Fatalf("want one problem, got %v", probs)
			}
			if p := probs[0]; p.Rule != c.rule || p.Loc != c.loc || !strings.Contains(p.Message+"\n"+p.Help, c.frag) {
				t.Errorf("got %s at #%d: %s (help: %s); want %s at #%d mentioning %q", p.Rule, p.Loc, p.Message, p.Help, c.rule, c.loc, c.frag)
			}
		})
	}
}

func TestCompileTemporal(t *testing.T) {
	for _, c := range []struct {
		modality string
		ts       []ir.Transform
		frag     string
	}{
		{"video", []ir.Transform{decode(), tf("pad_frames", "d", "p", scalar("target_length", ir.ParamInt, "4")), tf("sample_frames", "p", "s", scalar("num_frames", ir.ParamInt, "2"))}, "already padded"},
		{"video", []ir.Transform{decode(), tf("sample_frames", "d", "s", scalar("fps", ir.ParamFloat, "2.0"))}, "by `fps` alone"},
		{"video", []ir.Transform{tf("decode", "", "d", scalar("format", ir.ParamString, "mp4"))}, "demux"},
		{"audio", []ir.Transform{decode(), tf("frame", "d", "f", scalar("window", ir.ParamInt, "4")), tf("resample", "f", "r", scalar("sample_rate", ir.ParamInt, "16000"))}, "resample before frame"},
		{"audio", []ir.Transform{decode(), tf("resize", "d", "r", scalar("size", ir.ParamInt, "4"))}, "op of image and video programs"},
	} {
		prog := &ir.Program{Modality: c.modality, Transforms: c.ts}
		comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI(c.modality), Version: "1"}
		_, probs := Compile(prog, comp, nil)
		if len(probs) != 1 || !strings.Contains(probs[0].Message+"\n"+probs[0].Help, c.frag) {
			t.Errorf("%s: want one problem mentioning %q, got %v", c.modality, c.frag, probs)
		}
	}
	prog := &ir.Program{Modality: "video", Transforms: []ir.Transform{decode(), tf("sample_frames", "d", "s", scalar("fps", ir.ParamFloat, "2.0"), scalar("num_frames", ir.ParamInt, "8")),
		tf("pad_frames", "s", "p", scalar("target_length", ir.ParamInt, "8"))}}
	p, probs := Compile(prog, &ir.Component{Name: "pre"}, nil)
	if len(probs) > 0 || !p.Shapes["p"].Padded || p.Shapes["p"].Target != 8 {
		t.Errorf("a sampled and padded clip: %v, %+v", probs, p.Shapes["p"])
	}
}
