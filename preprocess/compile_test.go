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
	schema := []string{"decode", "convert_color", "resize", "center_crop", "pad", "rescale", "normalize", "tile", "patchify",
		"sample_frames", "pad_frames", "resample", "frame", "mel_spectrogram", "log", "log10", "affine", "pad_or_trim", "standardize"}
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
	if got := strings.Join(Runs("audio"), ","); got != "decode,resample,frame,mel_spectrogram,log,log10,affine,pad_or_trim,standardize" {
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
		{"tile size", []ir.Transform{decode(), tf("tile", "d", "x")}, nil, RuleOp, 3, "has no `tile_size`"},
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
		{"max_width beside width", []ir.Transform{decode(), tf("resize", "d", "x", integer("width", "5"), integer("max_width", "4"))}, nil, RuleOp, 7, "caps the width that a resize to `height` alone derives"},
		{"multiple, both sides", []ir.Transform{decode(), tf("resize", "d", "x", integer("size", "64"), integer("multiple", "32"))}, nil, RuleOp, 7, "fixes both sides; multiple rounds"},
		{"shortest_edge beside height", []ir.Transform{decode(), tf("resize", "d", "x", integer("shortest_edge", "64"), integer("height", "32"))}, nil, RuleOp, 7, "resize reads shortest_edge alone"},
		{"max_height alone", []ir.Transform{decode(), tf("resize", "d", "x", integer("max_height", "4"))}, nil, RuleOp, 7, "caps the height that a resize to `width` alone derives"},
		{"pad size", []ir.Transform{decode(), tf("pad", "d", "x", scalar("value", ir.ParamFloat, "0.5"))}, nil, RuleOp, 3, "has no target size"},
		{"pad narrower", []ir.Transform{decode(), tf("resize", "d", "r", integer("height", "4"), integer("width", "8")), tf("pad", "r", "x", integer("width", "6"))}, nil, RuleOp, 7, "8 columns wide here, more than `width` 6"},
		{"pad lower", []ir.Transform{decode(), tf("center_crop", "d", "r", integer("size", "8")), tf("pad", "r", "x", integer("height", "6"), integer("width", "9"))}, nil, RuleOp, 7, "8 rows high here, more than `height` 6"},
		{"pad tiles", []ir.Transform{decode(), tf("tile", "d", "t", integer("tile_size", "4"), integer("max_tiles", "4")), tf("pad", "t", "x", integer("size", "2"))}, nil, RuleOp, 7, "takes no parameter `size`"},
		{"port width", []ir.Transform{decode(), tf("resize", "d", "r", integer("height", "10"), integer("width", "30"))}, func(p *ir.Program, c *ir.Component) {
			c.Outputs[0].Contract = &ir.Contract{DType: "float32", Rank: 4, HasShape: true, Shape: []ir.Dim{{Sym: "images"}, {Size: 3}, {Size: 10}, {Size: 20}}}
		}, RuleOp, 9, "fixes width (axis 3) at 20, but preprocessing.image makes `r` 30"},
		{"port channels last", []ir.Transform{decode(), tf("resize", "d", "r", integer("size", "8"))}, func(p *ir.Program, c *ir.Component) {
			c.Outputs[0].Contract = &ir.Contract{DType: "float32", Rank: 4, HasShape: true, Shape: []ir.Dim{{Sym: "images"}, {Size: 8}, {Size: 7}, {Sym: "channels"}}}
		}, RuleOp, 9, "fixes width (axis 2) at 7"},
		{"undefined value", []ir.Transform{decode(), tf("rescale", "nowhere", "x", scalar("factor", ir.ParamInt, "2"))}, nil, RuleOp, 3, "reads `nowhere`"},
		{"wav image", []ir.Transform{tf("decode", "", "d", scalar("format", ir.ParamString, "wav"))}, nil, RuleOp, 7, "is audio"},
		{"unbound port", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) {
			c.Outputs = append(c.Outputs, &ir.Port{Name: "owner", Loc: 11})
		}, RuleUnbound, 11, "bound by no output"},
		{"bound twice", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) {
			p.Outputs = append(p.Outputs, ir.ProgramOutput{Name: "pixels", Source: "d", Content: "pixels", Loc: 6})
		}, RuleUnbound, 6, "bound by two outputs"},
		{"port rank", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.Rank = 2 }, RuleOp, 9, "rank 2"},
		{"port dtype", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.DType = "float64" }, RuleOp, 9, "as float64; the image adapter writes it as float32, float16, bfloat16 or uint8"},
		{"uint8 rescaled", []ir.Transform{decode(), tf("rescale", "d", "x", scalar("factor", ir.ParamFloat, "0.5"))}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.DType = "uint8" }, RuleOp, 9,
			"takes pixels as uint8, pixels in [0, 255], but transform 1 (rescale) makes `x` of values other than pixels in [0, 255]"},
		{"uint8 rescaled in place", []ir.Transform{decode(), tf("rescale", "d", "d", scalar("factor", ir.ParamFloat, "0.5"))}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.DType = "uint8" }, RuleOp, 9,
			"transform 1 (rescale) makes `d`"},
		{"uint8 padded outside", []ir.Transform{decode(), tf("pad", "d", "x", scalar("height", ir.ParamInt, "8"), scalar("value", ir.ParamInt, "300"))}, func(p *ir.Program, c *ir.Component) { c.Outputs[0].Contract.DType = "uint8" }, RuleOp, 9,
			"transform 1 (pad) fills with value 300, outside [0, 255]"},
		{"companion dtype", []ir.Transform{decode()}, func(p *ir.Program, c *ir.Component) {
			c.Outputs = append(c.Outputs, &ir.Port{Name: "offsets", Loc: 11, Contract: &ir.Contract{DType: "float16", Rank: -1}})
			p.Outputs = append(p.Outputs, ir.ProgramOutput{Name: "offsets", Content: "pack_offsets", Loc: 6})
		}, RuleOp, 11, "writes it as int64"},
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
		{"audio", []ir.Transform{decode(), tf("frame", "d", "f", scalar("window", ir.ParamInt, "4")), tf("resample", "f", "r", scalar("sample_rate", ir.ParamInt, "16000"))}, "resample the samples, before frame"},
		{"audio", []ir.Transform{decode(), tf("resize", "d", "r", scalar("size", ir.ParamInt, "4"))}, "op of image and video programs"},
		{"video", []ir.Transform{decode(), tf("patchify", "d", "p", scalar("patch_size", ir.ParamInt, "14"))}, "no built-in adapter runs it yet"},
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

func audio(ts ...ir.Transform) (*Program, []Problem) {
	prog := &ir.Program{Modality: "audio", Transforms: ts}
	return Compile(prog, &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI("audio"), Version: "1"}, nil)
}

func integer(key, text string) ir.Param { return scalar(key, ir.ParamInt, text) }

// TestCompileMel pins mel_spectrogram's defaults, the shape it makes, and
// each of its refusals at the parameter at fault.
func TestCompileMel(t *testing.T) {
	p, probs := audio(decode(), tf("mel_spectrogram", "d", "m", integer("sample_rate", "16000"), integer("n_fft", "400")),
		tf("log", "m", "l", scalar("base", ir.ParamInt, "10"), scalar("dynamic_range", ir.ParamFloat, "8.0")))
	if len(probs) > 0 {
		t.Fatalf("unexpected problems: %v", probs)
	}
	want := Mel{SampleRate: 16000, NFFT: 400, Hop: 100, Win: 400, NMels: 128, FMax: 8000, Power: 2, Norm: true, Reflect: true, Center: true}
	if got := p.Ops[1].Mel(); got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	if got := p.Shapes["l"]; got != (Shape{Framed: true, Window: 128}) {
		t.Errorf("log-mel shape %+v", got)
	}
	mel := func(ps ...ir.Param) []ir.Transform {
		return []ir.Transform{decode(), tf("mel_spectrogram", "d", "m", append([]ir.Param{integer("sample_rate", "16000")}, ps...)...)}
	}
	for _, c := range []struct {
		name string
		ts   []ir.Transform
		frag string
	}{
		{"no n_fft", mel(), "has no `n_fft`"},
		{"huge n_fft", mel(integer("n_fft", "1048576")), "2 to 65536 samples"},
		{"long window", mel(integer("n_fft", "400"), integer("win_length", "512")), "longer than n_fft"},
		{"many mels", mel(integer("n_fft", "400"), integer("n_mels", "5000")), "at most 1024 mel bands"},
		{"above nyquist", mel(integer("n_fft", "400"), integer("f_max", "9000")), "above the Nyquist frequency 8000"},
		{"empty band", mel(integer("n_fft", "400"), integer("f_min", "4000"), integer("f_max", "4000")), "not below f_max"},
		{"scale word", mel(integer("n_fft", "400"), scalar("mel_scale", ir.ParamString, "bark")), "write one of htk, slaney"},
		{"framed", []ir.Transform{decode(), tf("frame", "d", "f", integer("window", "4")), tf("mel_spectrogram", "f", "m", integer("sample_rate", "16000"), integer("n_fft", "8"))}, "not after frame"},
		{"mel of mel", append(mel(integer("n_fft", "8")), tf("mel_spectrogram", "m", "m2", integer("sample_rate", "16000"), integer("n_fft", "8"))), "not after frame or mel_spectrogram"},
		{"resample features", append(mel(integer("n_fft", "8")), tf("resample", "m", "r", integer("sample_rate", "8000"))), "resample the samples"},
		{"log base 1", []ir.Transform{decode(), tf("log", "d", "l", integer("base", "1"))}, "has no logarithm"},
	} {
		_, probs := audio(c.ts...)
		if len(probs) != 1 || !strings.Contains(probs[0].Error(), c.frag) {
			t.Errorf("%s: want one problem mentioning %q, got %v", c.name, c.frag, probs)
		} else if strings.HasPrefix(c.name, "huge") && probs[0].Loc != 7 {
			t.Errorf("%s: the problem is at #%d, not at the parameter", c.name, probs[0].Loc)
		}
	}
}

// TestResizeRounding pins the derived side of a keep-aspect resize under
// each rounding, on PaddleOCR's case (50×171 to height 48: 164.16 wide).
func TestResizeRounding(t *testing.T) {
	for _, c := range []struct {
		rounding   string
		h, w       int
		params     []ir.Param
		wantH, wnt int
	}{
		{"", 50, 171, []ir.Param{integer("height", "48")}, 48, 164},
		{"round", 50, 171, []ir.Param{integer("height", "48")}, 48, 164},
		{"floor", 50, 171, []ir.Param{integer("height", "48")}, 48, 164},
		{"ceil", 50, 171, []ir.Param{integer("height", "48")}, 48, 165},
		{"round", 3, 5, []ir.Param{integer("height", "2")}, 2, 3}, // 3.33
		{"ceil", 3, 6, []ir.Param{integer("height", "2")}, 2, 4},  // exactly 4: ceil adds nothing
		{"round", 4, 10, []ir.Param{integer("width", "5")}, 2, 5}, // exactly 2
		{"round", 5, 10, []ir.Param{integer("width", "5")}, 3, 5}, // 2.5: halves away from zero
		{"floor", 5, 10, []ir.Param{integer("width", "5")}, 2, 5},
		{"ceil", 30, 70, []ir.Param{integer("max_size", "20")}, 9, 20}, // 8.57
		{"floor", 1, 70, []ir.Param{integer("max_size", "20")}, 1, 20}, // at least 1
		// PaddleOCR's angle classifier: 48 rows, ceil(48·w/h) columns up to 192.
		{"ceil", 50, 171, []ir.Param{integer("height", "48"), integer("max_width", "192")}, 48, 165},
		{"ceil", 10, 100, []ir.Param{integer("height", "48"), integer("max_width", "192")}, 48, 192}, // 480: squeezed
		{"round", 100, 10, []ir.Param{integer("width", "48"), integer("max_height", "100")}, 100, 48},
		{"round", 30, 20, []ir.Param{integer("width", "4"), integer("max_height", "100")}, 6, 4},
		// PaddleOCR's detector: the longer side at most 960 (int(side·ratio)),
		// then each side to the nearest multiple of 32, halves to even.
		{"floor", 1200, 1600, []ir.Param{integer("max_size", "960"), integer("multiple", "32")}, 704, 960}, // 720: 22.5 multiples, to the even 22
		{"floor", 120, 185, []ir.Param{integer("max_size", "960"), integer("multiple", "32")}, 128, 192},   // 3.75 and 5.78 multiples: max_size leaves them
		{"floor", 112, 16, []ir.Param{integer("max_size", "960"), integer("multiple", "32")}, 128, 32},     // 3.5 to the even 4; 0.5 to 0, at least 1
		{"ceil", 48, 100, []ir.Param{integer("height", "48"), integer("multiple", "8")}, 48, 96},
		// torchvision's Resize(256) and HF's shortest_edge: the shorter side
		// to 256, the longer int(256·long/short), so floor.
		{"floor", 480, 640, []ir.Param{integer("shortest_edge", "256")}, 256, 341}, // 341.33
		{"floor", 640, 427, []ir.Param{integer("shortest_edge", "256")}, 383, 256}, // 383.7
		{"round", 640, 427, []ir.Param{integer("shortest_edge", "256")}, 384, 256},
		{"floor", 100, 100, []ir.Param{integer("shortest_edge", "224")}, 224, 224},
	} {
		ps := c.params
		if c.rounding != "" {
			ps = append(ps, scalar("rounding", ir.ParamString, c.rounding))
		}
		m, prog, comp := imageCase(decode(), tf("resize", "d", "r", ps...))
		p, probs := Compile(prog, comp, InvokedPorts(m, comp))
		if len(probs) > 0 {
			t.Fatalf("%s: %v", c.rounding, probs)
		}
		if h, w := p.Ops[1].Size(c.h, c.w); h != c.wantH || w != c.wnt {
			t.Errorf("%s %d×%d %v: got %d×%d, want %d×%d", c.rounding, c.h, c.w, c.params[0].Key, h, w, c.wantH, c.wnt)
		}
	}
	_, prog, comp := imageCase(decode(), tf("resize", "d", "r", integer("size", "8"), scalar("rounding", ir.ParamString, "ceil")))
	if _, probs := Compile(prog, comp, nil); len(probs) == 0 || !strings.Contains(probs[0].Message, "fixes both sides") {
		t.Errorf("rounding on a fixed size: %v", probs)
	}
}

// TestCompileTilesAndPatches pins the shapes tile and patchify make, what
// may follow them, and the ranks of the ports that receive them.
func TestCompileTilesAndPatches(t *testing.T) {
	resize := tf("resize", "d", "r", integer("height", "28"), integer("width", "42"))
	m, prog, comp := imageCase(decode(), resize, tf("patchify", "r", "p", integer("patch_size", "14")))
	comp.Outputs[0].Contract.Rank = 2
	p, probs := Compile(prog, comp, InvokedPorts(m, comp))
	if len(probs) > 0 {
		t.Fatalf("unexpected problems: %v", probs)
	}
	if got := p.Shapes["p"]; got != (Shape{C: 3, H: 2, W: 3, Seq: SeqPatches, Features: 588}) {
		t.Errorf("patches: %+v", got)
	}
	m, prog, comp = imageCase(decode(), tf("tile", "d", "t", integer("tile_size", "336"), integer("max_tiles", "4")),
		tf("normalize", "t", "n", list("mean", "0.5"), list("std", "0.5")))
	comp.Outputs[0].Contract.Rank = 5
	if p, probs = Compile(prog, comp, InvokedPorts(m, comp)); len(probs) > 0 || p.Shapes["n"] != (Shape{C: 3, H: 336, W: 336, Seq: SeqTiles}) {
		t.Errorf("normalized tiles: %v, %+v", probs, p.Shapes["n"])
	}
	if h, w := p.Ops[1].Size(300, 700); h != 3*336 || w != 336 {
		t.Errorf("a 300×700 image makes %d×%d of stacked tiles, want three tiles (1×3: the least grid that needs no downscaling)", h, w)
	}
	for _, c := range []struct {
		name string
		ts   []ir.Transform
		rank int
		frag string
	}{
		{"not a multiple", []ir.Transform{decode(), resize, tf("patchify", "r", "p", integer("patch_size", "16"))}, 2, "not a multiple of it"},
		{"after patchify", []ir.Transform{decode(), tf("patchify", "d", "p", integer("patch_size", "16")), tf("rescale", "p", "x", integer("factor", "2"))}, 2, "move rescale before patchify"},
		{"resize tiles", []ir.Transform{decode(), tf("tile", "d", "t", integer("tile_size", "4"), integer("max_tiles", "4")), tf("resize", "t", "x", integer("size", "2"))}, 5, "move resize before tile"},
		{"many tiles", []ir.Transform{decode(), tf("tile", "d", "t", integer("tile_size", "4"), integer("max_tiles", "65"))}, 5, "at most 64 tiles"},
		{"patch rank", []ir.Transform{decode(), tf("patchify", "d", "p", integer("patch_size", "16"))}, 4, "at rank 2 or 3"},
		{"tile rank", []ir.Transform{decode(), tf("tile", "d", "t", integer("tile_size", "4"), integer("max_tiles", "4"))}, 3, "at rank 4 or 5"},
	} {
		m, prog, comp := imageCase(c.ts...)
		comp.Outputs[0].Contract.Rank = c.rank
		if _, probs := Compile(prog, comp, InvokedPorts(m, comp)); len(probs) != 1 || !strings.Contains(probs[0].Message, c.frag) {
			t.Errorf("%s: want one problem mentioning %q, got %v", c.name, c.frag, probs)
		}
	}
}

// sample_frames by fps alone needs a video adapter that reads frame
// times: its float vector input port.
func TestCompileFPS(t *testing.T) {
	prog := &ir.Program{Modality: "video", Transforms: []ir.Transform{decode(), tf("sample_frames", "d", "s", scalar("fps", ir.ParamFloat, "2.0"))}}
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI("video"), Version: "1"}
	if _, probs := Compile(prog, comp, nil); len(probs) != 1 || !strings.Contains(probs[0].Message, "has no timestamps input port") || probs[0].Loc != 7 {
		t.Errorf("without frame times: %v", probs)
	}
	comp.Inputs = []*ir.Port{{Name: "encoded", Contract: &ir.Contract{DType: "uint8", Rank: 1}}, {Name: "times", Contract: &ir.Contract{DType: "float64", Rank: 1}}}
	p, probs := Compile(prog, comp, nil)
	if len(probs) > 0 || p.Timestamps != "times" || !p.Ops[1].Timed {
		t.Errorf("with frame times: %v, port %q", probs, p.Timestamps)
	}
}

// A port that fixes the mel bands, the tile sides or the patch values at
// other extents than the program makes is refused at check time.
func TestCompileUnitAxes(t *testing.T) {
	mel := func(bands int64) []Problem {
		prog := &ir.Program{Modality: "audio", Transforms: []ir.Transform{decode(), tf("mel_spectrogram", "d", "m", integer("sample_rate", "16000"), integer("n_fft", "400"), integer("n_mels", "80"))},
			Outputs: []ir.ProgramOutput{{Name: "features", Source: "m", Content: "features", Loc: 5}}}
		comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI("audio"), Version: "1",
			Outputs: []*ir.Port{{Name: "features", Contract: &ir.Contract{DType: "float32", Rank: 2, HasShape: true, Shape: []ir.Dim{{Sym: "frames"}, {Size: bands}},
				Layout: ir.Layout{Kind: ir.TokenPacked}}, Loc: 9}}}
		_, probs := Compile(prog, comp, nil)
		return probs
	}
	if probs := mel(80); len(probs) > 0 {
		t.Errorf("80 bands: %v", probs)
	}
	if probs := mel(64); len(probs) != 1 || !strings.Contains(probs[0].Message, "fixes axis 1 at 64, but preprocessing.audio makes the values of each frame (its window, or n_mels) of `m` 80") {
		t.Errorf("64 bands: %v", probs)
	}
	m, prog, comp := imageCase(decode(), tf("tile", "d", "t", integer("tile_size", "336"), integer("max_tiles", "4")))
	comp.Outputs[0].Contract = &ir.Contract{DType: "float32", Rank: 4, HasShape: true, Shape: []ir.Dim{{Sym: "tiles"}, {Size: 3}, {Size: 224}, {Size: 336}}}
	if _, probs := Compile(prog, comp, InvokedPorts(m, comp)); len(probs) != 1 || !strings.Contains(probs[0].Message, "makes the height of each tile of `t` 336") {
		t.Errorf("tiles of 224: %v", probs)
	}
}

// audioPort compiles an audio program whose last value a port of shape
// dims binds (integers fixed, strings symbols), token_packed when packed.
func audioPort(ts []ir.Transform, packed bool, dims ...any) (*Program, []Problem) {
	return packedAudioPort(ts, packed, 0, dims...)
}

// packedAudioPort is audioPort, the port declaring levels ownership levels
// when packed.
func packedAudioPort(ts []ir.Transform, packed bool, levels int, dims ...any) (*Program, []Problem) {
	shape := make([]ir.Dim, len(dims))
	for i, d := range dims {
		if n, ok := d.(int); ok {
			shape[i] = ir.Dim{Size: int64(n)}
		} else {
			shape[i] = ir.Dim{Sym: d.(string)}
		}
	}
	c := &ir.Contract{DType: "float32", Rank: len(shape), HasShape: true, Shape: shape}
	if packed {
		c.Layout = ir.Layout{Kind: ir.TokenPacked}
		for range levels {
			c.Layout.Levels = append(c.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "o"}, Owner: ir.Ref{Name: "w"}})
		}
	}
	prog := &ir.Program{Modality: "audio", Transforms: ts,
		Outputs: []ir.ProgramOutput{{Name: "features", Source: ts[len(ts)-1].Outputs[0], Content: "features", Loc: 5}}}
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: ABI("audio"), Version: "1",
		Outputs: []*ir.Port{{Name: "features", Contract: c, Loc: 9}}}
	return Compile(prog, comp, nil)
}

func float(key, text string) ir.Param { return scalar(key, ir.ParamFloat, text) }

func boolean(key, text string) ir.Param { return scalar(key, ir.ParamBool, text) }

// whisper is Whisper's front end: 30 s of samples, 3000 frames of 80
// log10 bands.
func whisper() []ir.Transform {
	return []ir.Transform{decode(),
		tf("pad_or_trim", "d", "p", integer("length", "480000")),
		tf("mel_spectrogram", "p", "m", integer("sample_rate", "16000"), integer("n_fft", "400"), integer("hop_length", "160"), integer("n_mels", "80")),
		tf("pad_or_trim", "m", "t", integer("length", "3000")),
		tf("log10", "t", "l", float("floor", "1e-10"), float("dynamic_range", "8")),
		tf("affine", "l", "x", float("scale", "0.25"), float("offset", "1")),
	}
}

// wakeword is openWakeWord's: int16-range samples, uncentred frames of 32
// bands in decibels over 10 plus 2, in windows of 76 frames every 8.
func wakeword() []ir.Transform {
	return []ir.Transform{decode(),
		tf("affine", "d", "s", integer("scale", "32768")),
		tf("mel_spectrogram", "s", "m", integer("sample_rate", "16000"), integer("n_fft", "512"), integer("win_length", "400"), integer("hop_length", "160"),
			integer("n_mels", "32"), integer("f_min", "60"), integer("f_max", "3800"), boolean("center", "false")),
		tf("log10", "m", "l", float("floor", "1e-10"), float("dynamic_range", "8")),
		tf("affine", "l", "a", float("offset", "2")),
		tf("frame", "a", "w", integer("window", "76"), integer("hop", "8"), scalar("partial", ir.ParamString, "drop")),
	}
}

// The Whisper and openWakeWord programs compile to the shapes their
// models read, and ports of other ranks, bands, window rows or a frame
// count other than the one pad_or_trim fixes are refused at check time.
func TestCompileAudioFrontEnds(t *testing.T) {
	p, probs := audioPort(whisper(), false, "clips", 3000, 80)
	if len(probs) > 0 {
		t.Fatalf("whisper: %v", probs)
	}
	for name, want := range map[string]Shape{"p": {Units: 480000}, "m": {Framed: true, Window: 80, Units: 3001}, "x": {Framed: true, Window: 80, Units: 3000}} {
		if got := p.Shapes[name]; got != want {
			t.Errorf("whisper `%s`: %+v, want %+v", name, got, want)
		}
	}
	if m := p.Ops[2].Mel(); !m.Center || !m.Reflect {
		t.Errorf("whisper's frames are centred with reflect padding: %+v", m)
	}
	if s, o := p.Ops[5].Affine(); s != 0.25 || o != 1 {
		t.Errorf("(x + 4)/4 is x·%g + %g", s, o)
	}
	p, probs = audioPort(wakeword(), true, "windows", 76, 32)
	if len(probs) > 0 {
		t.Fatalf("wakeword: %v", probs)
	}
	if got := p.Shapes["w"]; got != (Shape{Framed: true, Window: 76, Row: 32}) {
		t.Errorf("wakeword windows: %+v", got)
	}
	if m := p.Ops[2].Mel(); m.Center || m.Win != 400 || m.NFFT != 512 {
		t.Errorf("wakeword's frames: %+v", m)
	}
	if f := p.Ops[5].Framing(); f != (Framing{Window: 76, Hop: 8, Drop: true}) {
		t.Errorf("wakeword's windows: %+v", f)
	}
	if s, o := p.Ops[4].Affine(); s != 1 || o != 2 {
		t.Errorf("an affine of offset alone is x·%g + %g", s, o)
	}
	// The embedding model reads the windows with a trailing axis of 1.
	for _, dims := range [][]any{{"windows", 76, 32, 1}, {"windows", 76, 32, 1, 1}} {
		if _, probs := audioPort(wakeword(), true, dims...); len(probs) > 0 {
			t.Errorf("wakeword %v: %v", dims, probs)
		}
	}
	// Whisper's encoder reads its features bands first: by their count, or
	// as Hugging Face's export names its axes.
	for _, dims := range [][]any{{"clips", 3000, 80, 1}, {"clips", 80, 3000}, {"clips", 80, 3000, 1}, {"batch_size", "feature_size", "encoder_sequence_length"}} {
		if _, probs := audioPort(whisper(), false, dims...); len(probs) > 0 {
			t.Errorf("whisper %v: %v", dims, probs)
		}
	}
	for _, c := range []struct {
		name   string
		ts     []ir.Transform
		packed bool
		dims   []any
		frag   string
	}{
		{"whisper frames", whisper(), false, []any{"clips", 3001, 80}, "fixes axis 1 at 3001, but preprocessing.audio makes 3000 frames of each clip in `x`"},
		{"whisper bands", whisper(), false, []any{"clips", 3000, 128}, "fixes axis 2 at 128"},
		{"whisper packed rank", whisper(), true, []any{"clips", 3000, 80}, "lays out at rank 2"},
		{"wakeword rank", wakeword(), true, []any{"windows", 76}, "lays out at rank 3"},
		{"wakeword stacked rank", wakeword(), false, []any{"clips", 76, 32}, "lays out at rank 4"},
		{"wakeword rows", wakeword(), true, []any{"windows", 70, 32}, "makes the rows of each window (its window) of `w` 76"},
		{"wakeword bands", wakeword(), false, []any{"clips", "windows", 76, 40}, "makes the values of each row of a window (the frame's window, or n_mels) of `w` 32"},
		{"wakeword trailing 2", wakeword(), true, []any{"windows", 76, 32, 2}, "lays out at rank 3; axes past it may only be trailing axes fixed at 1 (a reshape that moves no value), but axis 3 is 2"},
		{"wakeword trailing symbol", wakeword(), true, []any{"windows", 76, 32, 1, "c"}, "but axis 4 is `c`"},
		{"wakeword rows before a one", wakeword(), true, []any{"windows", 70, 32, 1}, "fixes axis 1 at 70, but preprocessing.audio makes the rows of each window (its window) of `w` 76"},
		{"whisper frames before a one", whisper(), false, []any{"clips", 3001, 80, 1}, "fixes axis 1 at 3001, but preprocessing.audio makes 3000 frames"},
		{"whisper bands before a one", whisper(), false, []any{"clips", 3000, 128, 1}, "fixes axis 2 at 128"},
		{"whisper frames bands first", whisper(), false, []any{"clips", 80, 2999}, "fixes axis 2 at 2999, but preprocessing.audio makes 3000 frames of each clip in `x`"},
		{"whisper frames bands first before a one", whisper(), false, []any{"clips", "n_mels", 3001, 1}, "fixes axis 2 at 3001, but preprocessing.audio makes 3000 frames"},
	} {
		_, probs := audioPort(c.ts, c.packed, c.dims...)
		if len(probs) != 1 || probs[0].Loc != 9 || !strings.Contains(probs[0].Message, c.frag) {
			t.Errorf("%s: want one problem at the port mentioning %q, got %v", c.name, c.frag, probs)
		}
	}
}

// A packed port of one level and one axis more than a clip's value packs
// whole clips, laid out and checked as a stacked port is (frames first or
// bands first, its frames against pad_or_trim's); one whose axes past a
// clip's rank are fixed at 1 concatenates the clips' units with trailing
// ones, as before.
func TestCompileClipsPacked(t *testing.T) {
	whole := func(ts []ir.Transform, levels int, dims ...any) []Problem {
		_, probs := packedAudioPort(ts, true, levels, dims...)
		return probs
	}
	for _, dims := range [][]any{{"clips", 3000, 80}, {"clips", 80, 3000}, {"batch_size", "feature_size", "encoder_sequence_length"}} {
		if probs := whole(whisper(), 1, dims...); len(probs) > 0 {
			t.Errorf("whisper's clips packed whole %v: %v", dims, probs)
		}
	}
	if probs := whole(wakeword(), 1, "windows", 76, 32, 1); len(probs) > 0 {
		t.Errorf("wakeword's windows packed with a trailing one: %v", probs)
	}
	for _, c := range []struct {
		name   string
		ts     []ir.Transform
		levels int
		dims   []any
		frag   string
	}{
		{"frames", whisper(), 1, []any{"clips", 3001, 80}, "fixes axis 1 at 3001, but preprocessing.audio makes 3000 frames of each clip in `x`"},
		{"frames bands first", whisper(), 1, []any{"clips", 80, 2999}, "fixes axis 2 at 2999, but preprocessing.audio makes 3000 frames"},
		{"two levels", whisper(), 2, []any{"clips", 3000, 80}, "lays out at rank 2"},
		{"wakeword trailing 2", wakeword(), 1, []any{"windows", 76, 32, 2}, "fixes axis 2 at 32, but preprocessing.audio makes the rows of each window (its window) of `w` 76"},
	} {
		if probs := whole(c.ts, c.levels, c.dims...); len(probs) != 1 || probs[0].Loc != 9 || !strings.Contains(probs[0].Message, c.frag) {
			t.Errorf("%s: want one problem at the port mentioning %q, got %v", c.name, c.frag, probs)
		}
	}
}

// Each refusal of the new audio ops' parameters is a preprocess/op
// problem, at the parameter where one is at fault.
func TestCompileAudioOpsRefuse(t *testing.T) {
	mel := func(ps ...ir.Param) ir.Transform {
		return tf("mel_spectrogram", "d", "m", append([]ir.Param{integer("sample_rate", "16000"), integer("n_fft", "512")}, ps...)...)
	}
	for _, c := range []struct {
		name string
		ts   []ir.Transform
		loc  ir.Loc
		frag string
	}{
		{"center word", []ir.Transform{decode(), mel(scalar("center", ir.ParamString, "no"))}, 7, "`center` must be true or false, read the string"},
		{"pad uncentred", []ir.Transform{decode(), mel(boolean("center", "false"), scalar("pad_mode", ir.ParamString, "constant"))}, 7, "nothing is padded"},
		{"uncentred too short", []ir.Transform{decode(), tf("pad_or_trim", "d", "p", integer("length", "400")), tf("mel_spectrogram", "p", "m", integer("sample_rate", "16000"), integer("n_fft", "512"), boolean("center", "false"))}, 7, "each clip has 400 samples here"},
		{"affine of nothing", []ir.Transform{decode(), tf("affine", "d", "a")}, 3, "neither `scale` nor `offset`"},
		{"affine zero", []ir.Transform{decode(), tf("affine", "d", "a", integer("scale", "0"))}, 7, "`scale` is 0"},
		{"affine range", []ir.Transform{decode(), tf("affine", "d", "a", float("offset", "1e39"))}, 7, "outside the float32 range"},
		{"affine word", []ir.Transform{decode(), tf("affine", "d", "a", scalar("scale", ir.ParamString, "x"))}, 7, "`scale` must be a finite number"},
		{"log10 base", []ir.Transform{decode(), tf("log10", "d", "l", integer("base", "2"))}, 7, "takes no parameter `base`; it takes offset, floor, dynamic_range"},
		{"log10 floor", []ir.Transform{decode(), tf("log10", "d", "l", float("floor", "0"))}, 7, "positive number"},
		{"length", []ir.Transform{decode(), tf("pad_or_trim", "d", "p", integer("length", "0"))}, 7, "positive integer"},
		{"no length", []ir.Transform{decode(), tf("pad_or_trim", "d", "p")}, 3, "has no `length`"},
		{"standardize frames", []ir.Transform{decode(), tf("frame", "d", "f", integer("window", "4")), tf("standardize", "f", "s")}, 3, "standardize the samples, before frame"},
		{"standardize epsilon", []ir.Transform{decode(), tf("standardize", "d", "s", float("epsilon", "0"))}, 7, "positive number"},
		{"partial word", []ir.Transform{decode(), tf("frame", "d", "f", integer("window", "4"), scalar("partial", ir.ParamString, "keep"))}, 7, "write one of drop, pad"},
		{"frame windows", []ir.Transform{decode(), tf("frame", "d", "f", integer("window", "4")), tf("frame", "f", "w", integer("window", "2")), tf("frame", "w", "x", integer("window", "2"))}, 3, "reads windows that frame has already made"},
		{"no whole window", []ir.Transform{decode(), tf("pad_or_trim", "d", "p", integer("length", "1000")), tf("mel_spectrogram", "p", "m", integer("sample_rate", "16000"), integer("n_fft", "512")), tf("frame", "m", "w", integer("window", "76"), scalar("partial", ir.ParamString, "drop"))}, 7, "each clip has 8 frames here"},
	} {
		_, probs := audio(c.ts...)
		if len(probs) != 1 || probs[0].Rule != RuleOp || probs[0].Loc != c.loc || !strings.Contains(probs[0].Error(), c.frag) {
			t.Errorf("%s: want one preprocess/op problem at #%d mentioning %q, got %v", c.name, c.loc, c.frag, probs)
		}
	}
}

// Mel.Frames and Framing.Count equal the frames and windows counted one
// by one: every start, hop apart, of a frame whose window lies within the
// (padded) clip, or for a padded framing, that starts within it.
func TestFrameCounts(t *testing.T) {
	for n := range 40 {
		for _, nfft := range []int{2, 3, 8, 9} {
			for hop := 1; hop <= 5; hop++ {
				for _, center := range []bool{true, false} {
					m := Mel{NFFT: nfft, Hop: hop, Center: center}
					padded, want := n, 0
					if center {
						padded = n + 2*(nfft/2)
					}
					for lo := 0; n > 0 && lo+nfft <= padded; lo += hop {
						want++
					}
					if got := m.Frames(n); got != want {
						t.Fatalf("%d samples, n_fft %d, hop %d, center %v: %d frames, counted %d", n, nfft, hop, center, got, want)
					}
				}
				for _, drop := range []bool{true, false} {
					f := Framing{Window: nfft, Hop: hop, Drop: drop}
					want := 0
					for lo := 0; lo < n; lo += hop {
						if lo+nfft > n && (drop || lo > 0 && lo-hop+nfft >= n) {
							break
						}
						want++
					}
					if got := f.Count(n); got != want {
						t.Fatalf("%d units, window %d, hop %d, drop %v: %d windows, counted %d", n, nfft, hop, drop, got, want)
					}
				}
			}
		}
	}
}

// TestCompilePad: a resize to a height with a width cap leaves the width
// to each image, and pad fixes it; a side pad does not name stays as it
// was.
func TestCompilePad(t *testing.T) {
	m, prog, comp := imageCase(decode(),
		tf("resize", "d", "r", integer("height", "48"), integer("max_width", "192"), scalar("rounding", ir.ParamString, "ceil")),
		tf("pad", "r", "p", integer("width", "192"), scalar("value", ir.ParamFloat, "-1")))
	p, probs := Compile(prog, comp, InvokedPorts(m, comp))
	if len(probs) > 0 {
		t.Fatalf("unexpected problems: %v", probs)
	}
	if got := p.Shapes["r"]; got != (Shape{C: 3, H: 48, W: -1}) {
		t.Errorf("the resized value is %+v", got)
	}
	if got := p.Shapes["p"]; got != (Shape{C: 3, H: 48, W: 192}) {
		t.Errorf("the padded value is %+v", got)
	}
	if h, w := p.Ops[2].Size(48, 100); h != 48 || w != 192 {
		t.Errorf("pad makes %d×%d of 48×100", h, w)
	}
	if v, _ := p.Ops[2].Number("value"); v != -1 {
		t.Errorf("value reads %v", v)
	}
}

// A uint8 pixels port takes a value every transform of which keeps the
// decoded pixels' range: moved, resized, cropped, padded with a pixel,
// tiled; an audio port takes no uint8.
func TestUint8PixelPorts(t *testing.T) {
	ts := []ir.Transform{decode(), tf("convert_color", "d", "c", scalar("mode", ir.ParamString, "RGB")),
		tf("resize", "c", "r", scalar("size", ir.ParamInt, "8"), scalar("interpolation", ir.ParamString, "bicubic")),
		tf("center_crop", "r", "x", scalar("size", ir.ParamInt, "6")), tf("pad", "x", "p", scalar("height", ir.ParamInt, "8"), scalar("value", ir.ParamInt, "255"))}
	m, prog, comp := imageCase(ts...)
	comp.Outputs[0].Contract.DType = "uint8"
	if _, probs := Compile(prog, comp, InvokedPorts(m, comp)); len(probs) > 0 {
		t.Errorf("pixels moved, resized, cropped and padded as uint8: %v", probs)
	}
	// A program that makes a value again from one made of it: the walk
	// back ends.
	ts = []ir.Transform{decode(), tf("resize", "d", "r", scalar("size", ir.ParamInt, "8")), tf("center_crop", "r", "d", scalar("size", ir.ParamInt, "6"))}
	m, prog, comp = imageCase(ts...)
	comp.Outputs[0].Contract.DType = "uint8"
	p, _ := Compile(prog, comp, InvokedPorts(m, comp))
	if why := p.PixelRange("d"); why != "" {
		t.Errorf("d made again of pixels: %s", why)
	}
	if got := DataDTypesOf("audio"); slices.Contains(got, "uint8") {
		t.Errorf("the audio adapter writes %v", got)
	}
}

// ClipAxes reads a port of stacked clips frames first unless its axis 1
// names the channels and its axis 2 does not: by a symbol, by the
// program's count, or, where the count is not known, by 1 or 3.
func TestClipAxes(t *testing.T) {
	sym := func(s string) ir.Dim { return ir.Dim{Sym: s} }
	size := func(n int64) ir.Dim { return ir.Dim{Size: n} }
	for _, c := range []struct {
		name     string
		shape    []ir.Dim
		channels int
		frames   int
		pixels   [3]int
	}{
		{"VideoMAE", []ir.Dim{sym("batch"), size(16), size(3), size(224), size(224)}, 3, 1, [3]int{2, 3, 4}},
		{"frames channels last", []ir.Dim{sym("batch"), size(16), size(224), size(224), size(3)}, 3, 1, [3]int{4, 2, 3}},
		{"axes named", []ir.Dim{sym("batch_size"), sym("num_frames"), sym("num_channels"), sym("height"), sym("width")}, 3, 1, [3]int{2, 3, 4}},
		{"r3d", []ir.Dim{sym("batch"), size(3), size(16), size(112), size(112)}, 3, 2, [3]int{1, 3, 4}},
		{"frames named", []ir.Dim{sym("batch"), size(3), sym("time"), size(112), size(112)}, 3, 2, [3]int{1, 3, 4}},
		{"gray", []ir.Dim{sym("batch"), size(1), size(8), size(64), size(64)}, 1, 2, [3]int{1, 3, 4}},
		{"count not known", []ir.Dim{sym("batch"), size(3), size(8), size(64), size(64)}, -1, 2, [3]int{1, 3, 4}},
		// Three frames of three channels: frames first, as most exports.
		{"ambiguous", []ir.Dim{sym("batch"), size(3), size(3), size(64), size(64)}, 3, 1, [3]int{2, 3, 4}},
	} {
		frames, pixels := ClipAxes(c.shape, c.channels)
		if frames != c.frames || pixels != c.pixels {
			t.Errorf("%s: frames on axis %d, pixels %v; want %d, %v", c.name, frames, pixels, c.frames, c.pixels)
		}
	}
}
