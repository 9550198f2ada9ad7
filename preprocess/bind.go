package preprocess

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/genaic/genaic/ir"
)

// Content roles an adapter fills (DESIGN §3.2, §4).
var (
	companionRoles = []string{"pack_offsets", "pack_owner", "valid_lengths", "frame_lengths", "sample_lengths", "grid"}
	// dataRanks gives, per visual modality, the ranks a port filled with
	// program data may have: one item or stacked items. An audio port has
	// the rank of one clip's value (Shape.AudioRank) packed (token_packed),
	// or one more stacked (any other layout), and may add trailing axes
	// fixed at 1 (TrailingOnes).
	dataRoles = map[string][]string{"image": {"pixels", "patches", "tiles"}, "video": {"pixels", "pixel_values"},
		"audio": {"waveform", "samples", "audio", "frames", "features"}}
	dataRanks = map[string][]int{"image": {3, 4}, "video": {4, 5}}
	// seqRanks are the ranks of a port of tiles or patches: packed
	// ([tiles, c, h, w], [patches, features]) or stacked per image.
	seqRanks = map[Seq][]int{SeqTiles: {4, 5}, SeqPatches: {2, 3}}
)

// DataDTypes are the element types an adapter writes program data as. It
// computes in float32; a 16-bit port receives each value rounded to the
// nearest representable one (ties to even), as a model exported in half
// precision takes its inputs.
var DataDTypes = []string{"float32", "float16", "bfloat16"}

// DataDTypesOf are the element types the adapter of a modality writes
// program data as: DataDTypes, and for images and video frames uint8, the
// pixels rounded to the nearest integer and clamped to [0, 255] (as PIL
// rounds a resized 8-bit image), for a model that takes raw pixels, where
// the value keeps the decoded pixels' range (PixelRange).
func DataDTypesOf(modality string) []string {
	if modality == "audio" {
		return DataDTypes
	}
	return append(slices.Clone(DataDTypes), "uint8")
}

// DataDTypesText names DataDTypesOf(modality) for a message, such as
// "float32, float16 or bfloat16".
func DataDTypesText(modality string) string { return orList(DataDTypesOf(modality)) }

// pixelOps are the ops whose value holds pixels in the range decode gives
// them, [0, 255]: they move, choose, mix or pad pixels (resize's filters
// may overshoot by their lobes, which a uint8 port clamps, as PIL does),
// where pad's value and pad_frames' pad_value are within it too.
var pixelOps = map[string]string{"decode": "", "convert_color": "", "resize": "", "center_crop": "", "tile": "", "patchify": "",
	"sample_frames": "", "pad": "value", "pad_frames": "pad_value"}

// PixelRange says why value v of the program may hold other values than
// pixels in [0, 255] (the transform that scales them, or pads them with a
// value outside): "" where every transform that makes v keeps that range.
func (p *Program) PixelRange(v string) string {
	// Walk back from the last transform that makes v, each step to the
	// last transform before it that makes what it reads.
	for i := len(p.Ops) - 1; i >= 0; i-- {
		op := p.Ops[i]
		if op.Out != v {
			continue
		}
		param, keeps := pixelOps[op.Name]
		if !keeps {
			return fmt.Sprintf("transform %d (%s) makes `%s` of values other than pixels in [0, 255]", op.Index, op.Name, op.Out)
		}
		if x, ok := op.Number(param); param != "" && ok && (x < 0 || x > 255) {
			return fmt.Sprintf("transform %d (%s) fills with %s %g, outside [0, 255]", op.Index, op.Name, param, x)
		}
		if v = op.In; v == "" {
			break
		}
	}
	return ""
}

// Bind pairs each output port of adapter with the program output that
// binds it: the output whose name an invoke of the adapter gives the port's
// value (invoked maps such names onto ports), or failing that, the output
// of the port's name. A port bound by no output, or by two, is a
// preprocess/unbound problem.
func Bind(prog *ir.Program, adapter *ir.Component, invoked map[string]string) (map[string]*ir.ProgramOutput, []Problem) {
	byValue := invoked
	bound := map[string]*ir.ProgramOutput{}
	var probs []Problem
	for i := range prog.Outputs {
		o := &prog.Outputs[i]
		port, ok := byValue[o.Name]
		if !ok {
			if adapter.Output(o.Name) == nil {
				continue
			}
			port = o.Name
		}
		if prev := bound[port]; prev != nil {
			probs = append(probs, problem(RuleUnbound, o.Loc, "output port `%s` of adapter `%s` is bound by two outputs of preprocessing.%s, `%s` and `%s`\nbind each port once",
				port, adapter.Name, prog.Modality, prev.Name, o.Name))
			continue
		}
		bound[port] = o
	}
	for _, p := range adapter.Outputs {
		if bound[p.Name] == nil {
			probs = append(probs, problem(RuleUnbound, p.Loc, "output port `%s` of adapter `%s` is bound by no output of preprocessing.%s\nname a program output `%s`, or bind the port in the invoke to a value named as a program output",
				p.Name, adapter.Name, prog.Modality, p.Name))
		}
	}
	return bound, probs
}

// InvokedPorts maps the name of each value an invoke of comp binds an
// output port to onto that port.
func InvokedPorts(m *ir.Module, comp *ir.Component) map[string]string {
	byValue := map[string]string{} // value name → port
	if m == nil || m.Body == nil {
		return byValue
	}
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op != ir.OpInvoke || s.Component.Name != comp.Name {
			return true
		}
		for _, r := range s.Results {
			if v := m.Value(r.Value); v != nil && comp.Output(r.Port) != nil {
				byValue[v.Name] = r.Port
			}
		}
		return true
	})
	return byValue
}

// ports checks what each bound port receives: a value the program defines,
// as int64 for a companion and as program data of a type the adapter
// writes (DataDTypesOf; uint8 only where the value keeps the pixels'
// range) and a rank it lays out.
func (p *Program) ports(prog *ir.Program, adapter *ir.Component) []Problem {
	var probs []Problem
	for _, port := range adapter.Outputs {
		o := p.Ports[port.Name]
		if o == nil {
			continue
		}
		if slices.Contains(companionRoles, o.Content) {
			probs = append(probs, dtypeProblem(p, port, o, adapter, "int64")...)
			continue
		}
		if !slices.Contains(dataRoles[p.Modality], o.Content) {
			probs = append(probs, problem(RuleOp, o.Loc, "preprocessing.%s output `%s` (bound to output port `%s` of adapter `%s`) has content role `%s`; the %s adapter fills %s",
				p.Modality, o.Name, port.Name, adapter.Name, o.Content, p.Modality, strings.Join(append(slices.Clone(dataRoles[p.Modality]), companionRoles...), ", ")))
			continue
		}
		if _, ok := p.Shapes[p.Source(o)]; !ok {
			probs = append(probs, problem(RuleOp, o.Loc, "preprocessing.%s output `%s` reads `%s`, which no transform defines\nname a transform's output as its source",
				p.Modality, o.Name, p.Source(o)))
			continue
		}
		probs = append(probs, dtypeProblem(p, port, o, adapter, DataDTypesOf(p.Modality)...)...)
		if d, ok := ir.LookupDType(dtypeOf(port)); ok && d.Name == "uint8" {
			if why := p.PixelRange(p.Source(o)); why != "" {
				probs = append(probs, problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` takes %s as uint8, pixels in [0, 255], but %s\nbind the port to a value made before it (the pixels the model takes raw), or declare it float32",
					port.Name, adapter.Name, o.Content, why))
			}
		}
		s, c := p.Shapes[p.Source(o)], port.Contract
		want := dataRanks[p.Modality]
		switch {
		case s.Seq != NoSeq:
			want = seqRanks[s.Seq]
		case p.Modality == "audio":
			want = []int{AudioPortRank(s, c)}
		}
		if c == nil {
			continue
		}
		ones := 0
		if p.Modality == "audio" {
			var err error
			if ones, err = TrailingOnes(c, want[0]); err != nil {
				probs = append(probs, problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` has rank %d, but it receives %s `%s` of preprocessing.audio, which the adapter lays out at rank %d; %v",
					port.Name, adapter.Name, c.Rank, o.Content, p.Source(o), want[0], err))
				continue
			}
			want[0] += ones
		}
		if c.Rank >= 0 && !slices.Contains(want, c.Rank) {
			probs = append(probs, problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` has rank %d, but it receives %s `%s` of preprocessing.%s, which the adapter lays out at rank %s",
				port.Name, adapter.Name, c.Rank, o.Content, p.Source(o), p.Modality, ranks(want)))
			continue
		}
		probs = append(probs, unitProblem(p, port, o, adapter, ones)...)
	}
	return probs
}

// AudioPortRank is the rank at which the audio adapter lays out a value of
// shape s on a port of contract c: one clip's rank where its units are
// packed (token_packed), one more where clips are stacked, or packed whole
// (ClipsPacked).
func AudioPortRank(s Shape, c *ir.Contract) int {
	if c != nil && c.Layout.Kind == ir.TokenPacked && !ClipsPacked(s, c) {
		return s.AudioRank()
	}
	return s.AudioRank() + 1
}

// ClipsPacked reports whether a token_packed audio port of contract c
// packs whole clips: each clip one unit of axis 0, laid out on the axes
// after it as a stacked port lays a clip out ([clips, frames, bands], or
// bands first), with one level (clips→rows), so that a request brings any
// number of clips, as it brings images. Such a port has one axis more than
// a clip's value, and the axes past a clip's rank are not all trailing
// axes fixed at 1 (TrailingOnes), which would lay out the clips' units
// concatenated.
func ClipsPacked(s Shape, c *ir.Contract) bool {
	if c == nil || c.Layout.Kind != ir.TokenPacked || len(c.Layout.Levels) != 1 || c.Rank != s.AudioRank()+1 {
		return false
	}
	_, err := TrailingOnes(c, s.AudioRank())
	return err != nil
}

// TrailingOnes is how many axes the audio port of contract c declares past
// base, the rank the adapter lays its clips out at. Such axes must be
// fixed at 1: the adapter adds them to the tensor's shape, a reshape that
// moves no value, for a model that reads its input with trailing axes of
// extent 1 (openWakeWord's embedding model reads windows as
// [windows, 76, 32, 1]). The error names the first axis past base that is
// not a literal 1.
func TrailingOnes(c *ir.Contract, base int) (int, error) {
	if c.Rank <= base {
		return 0, nil
	}
	if !c.HasShape || len(c.Shape) != c.Rank {
		return 0, fmt.Errorf("the axes past it may only be fixed at 1, so declare the port's shape")
	}
	for axis := base; axis < c.Rank; axis++ {
		if d := c.Shape[axis]; d.IsSym() || d.Size != 1 {
			what := strconv.FormatInt(d.Size, 10)
			if d.IsSym() {
				what = "`" + d.Sym + "`"
			}
			return 0, fmt.Errorf("axes past it may only be trailing axes fixed at 1 (a reshape that moves no value), but axis %d is %s", axis, what)
		}
	}
	return c.Rank - base, nil
}

// unitProblem checks the trailing axes of a port that receives frames,
// features, windows, tiles or patches against what the program makes of
// each: the window or mel bands of a frame, the rows and values of a
// window, the channels and sides of a tile, the values of a patch; and
// the axis of a stacked audio port that holds each clip's frames or
// windows against the count the program fixes.
//
// ones trailing axes of extent 1 (TrailingOnes) are left out: the unit
// axes are those before them.
func unitProblem(p *Program, port *ir.Port, o *ir.ProgramOutput, adapter *ir.Component, ones int) []Problem {
	c, s := port.Contract, p.Shapes[p.Source(o)]
	if !c.HasShape || len(c.Shape) < ones {
		return nil
	}
	shape := c.Shape[:len(c.Shape)-ones]
	if prob := unitsProblem(p, port, o, adapter, shape); prob != nil {
		return prob
	}
	if p.Modality != "audio" && s.Seq == NoSeq {
		return pixelsProblem(p, port, o, adapter, shape)
	}
	if p.Modality == "audio" && BandsFirst(s, c, shape) {
		return nil // its axis 1 names the bands by their count or a symbol
	}
	var unit []int
	var what []string
	switch {
	case s.Row > 0:
		unit, what = s.Unit(), []string{"the rows of each window (its window)", "the values of each row of a window (the frame's window, or n_mels)"}
	case s.Framed:
		unit, what = s.Unit(), []string{"the values of each frame (its window, or n_mels)"}
	case s.Seq == SeqPatches:
		unit, what = []int{s.Features}, []string{"the values of each patch"}
	case s.Seq == SeqTiles:
		unit, what = []int{s.C, s.H, s.W}, []string{"the channels of each tile", "the height of each tile", "the width of each tile"}
	}
	if len(shape) < len(unit) {
		return nil
	}
	for i, u := range unit {
		axis := len(shape) - len(unit) + i
		if d := shape[axis]; !d.IsSym() && u > 0 && d.Size != int64(u) {
			return []Problem{problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` fixes axis %d at %d, but preprocessing.%s makes %s of `%s` %d\nmake the two agree",
				port.Name, adapter.Name, axis, d.Size, p.Modality, what[i], p.Source(o), u)}
		}
	}
	return nil
}

// PixelDims are the names of an image's dimensions, in the order of
// PixelAxes.
var PixelDims = [3]string{"channels", "height", "width"}

// PixelAxes are the axes of a port of shape that hold an image's (or a
// video frame's) channels, height and width: its last three, channels
// first, unless the first of them does not name the channels and the last
// does (by a symbol that says "channel", or by the count the program
// makes), which is channels last.
func PixelAxes(shape []ir.Dim, channels int) [3]int {
	first := len(shape) - 3
	if !mentionsChannels(shape[first], channels) && mentionsChannels(shape[first+2], channels) {
		return [3]int{first + 2, first, first + 1}
	}
	return [3]int{first, first + 1, first + 2}
}

// ClipAxes are the axes of a port of stacked video clips (rank 5) that
// hold each clip's frames and each frame's channels, height and width:
// the frames on axis 1 and the frame's axes after them (PixelAxes),
// unless axis 1 names the channels and axis 2 does not, which is channels
// first, [clips, channels, frames, height, width], as 3D convolutions
// read clips. channels is the program's count, or below 0 where it is not
// known (1 or 3 then name the channels).
func ClipAxes(shape []ir.Dim, channels int) (frames int, pixels [3]int) {
	if len(shape) == 5 && mentionsChannels(shape[1], channels) && !mentionsChannels(shape[2], channels) {
		return 2, [3]int{1, 3, 4}
	}
	return 1, PixelAxes(shape, channels)
}

// mentionsChannels reports whether a dimension is the channel axis by its
// name, or by its extent equal to the program's channels (1 or 3 where c
// is below 0: not known).
func mentionsChannels(d ir.Dim, c int) bool {
	switch {
	case d.IsSym():
		return strings.Contains(strings.ToLower(d.Sym), "channel")
	case c < 0:
		return d.Size == 1 || d.Size == 3
	}
	return d.Size == int64(c)
}

// pixelsProblem checks the axes of a port of images or video frames that
// the port fixes against the channels, height and width the program
// makes, where it fixes them: the adapter refuses to load otherwise, and
// check says so first.
func pixelsProblem(p *Program, port *ir.Port, o *ir.ProgramOutput, adapter *ir.Component, shape []ir.Dim) []Problem {
	s := p.Shapes[p.Source(o)]
	if len(shape) < 3 {
		return nil
	}
	known := [3]int{s.C, s.H, s.W}
	axes := PixelAxes(shape, s.C)
	if p.Modality == "video" && len(shape) == 5 {
		_, axes = ClipAxes(shape, s.C)
	}
	for d, axis := range axes {
		if dim := shape[axis]; !dim.IsSym() && known[d] >= 0 && dim.Size != int64(known[d]) {
			return []Problem{problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` fixes %s (axis %d) at %d, but preprocessing.%s makes `%s` %d there\nmake the two agree: change the port, or the program's resize, pad or convert_color",
				port.Name, adapter.Name, PixelDims[d], axis, dim.Size, p.Modality, p.Source(o), known[d])}
		}
	}
	return nil
}

// unitsProblem checks axis 1 of a stacked (or ClipsPacked) audio port,
// each clip's samples, frames or windows, against the count the program
// fixes (pad_or_trim), where both are fixed. shape is the port's shape less its
// trailing axes of extent 1.
func unitsProblem(p *Program, port *ir.Port, o *ir.ProgramOutput, adapter *ir.Component, shape []ir.Dim) []Problem {
	s := p.Shapes[p.Source(o)]
	if p.Modality != "audio" || s.Units == 0 || len(shape) != s.AudioRank()+1 {
		return nil
	}
	axis := 1
	if BandsFirst(s, port.Contract, shape) {
		axis = 2
	}
	if d := shape[axis]; !d.IsSym() && d.Size != int64(s.Units) {
		return []Problem{problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` fixes axis %d at %d, but preprocessing.audio makes %d %s of each clip in `%s`\nmake the two agree",
			port.Name, adapter.Name, axis, d.Size, s.Units, s.UnitWord(), p.Source(o))}
	}
	return nil
}

// BandsFirst reports whether a stacked (or ClipsPacked) audio port of
// frames lays each clip out bands first, [clips, bands, frames], as
// Whisper's encoder reads its log-mel features and NeMo's encoders their
// spectrograms, rather than frames first, [clips, frames, bands]: shape,
// the port's shape less its trailing axes of extent 1, is of rank 3, and
// its axis 1 names the values of a frame (by a symbol that says mel,
// feature, band, bin or freq, or by their count, the program's n_mels or
// window) where its axis 2 does not. A port of no such evidence is frames
// first.
func BandsFirst(s Shape, c *ir.Contract, shape []ir.Dim) bool {
	if !s.Framed || s.Row > 0 || c == nil || c.Layout.Kind == ir.TokenPacked && !ClipsPacked(s, c) || len(shape) != 3 {
		return false
	}
	return namesBands(shape[1], s.Window) && !namesBands(shape[2], s.Window)
}

// namesBands reports whether a dimension holds the values of a frame, by
// its name or by its extent equal to the program's window.
func namesBands(d ir.Dim, window int) bool {
	if !d.IsSym() {
		return d.Size == int64(window)
	}
	name := strings.ToLower(d.Sym)
	return slices.ContainsFunc([]string{"mel", "feature", "band", "bin", "freq"}, func(w string) bool { return strings.Contains(name, w) })
}

func dtypeProblem(p *Program, port *ir.Port, o *ir.ProgramOutput, adapter *ir.Component, want ...string) []Problem {
	c := port.Contract
	if c == nil || c.DType == "" {
		return nil
	}
	if d, ok := ir.LookupDType(c.DType); ok && slices.Contains(want, d.Name) {
		return nil
	}
	return []Problem{problem(RuleOp, port.Loc, "output port `%s` of adapter `%s` carries %s (preprocessing.%s output `%s`) as %s; the %s adapter writes it as %s",
		port.Name, adapter.Name, o.Content, p.Modality, o.Name, c.DType, p.Modality, orList(want))}
}

// dtypeOf is the element type a port declares, "" where it declares none.
func dtypeOf(port *ir.Port) string {
	if port.Contract == nil {
		return ""
	}
	return port.Contract.DType
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func ranks(rs []int) string {
	words := make([]string, len(rs))
	for i, r := range rs {
		words[i] = strconv.Itoa(r)
	}
	return orList(words)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
