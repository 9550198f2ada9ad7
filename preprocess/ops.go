package preprocess

import (
	"slices"
	"strings"
)

// Type is what a parameter accepts.
type Type uint8

// The parameter types.
const (
	Int     Type = iota + 1 // a YAML integer
	Number                  // a finite integer or float
	Word                    // a string, one of the parameter's Words
	Numbers                 // a list of finite numbers
	Bool                    // true or false
)

var typeWords = map[Type]string{Int: "an integer", Number: "a finite number", Word: "a word", Numbers: "a list of finite numbers", Bool: "true or false"}

func (t Type) String() string { return typeWords[t] }

// Param is one parameter an op takes.
type Param struct {
	Name     string
	Type     Type
	Required bool
	Positive bool // Int and Number: the value is > 0
	// Words maps each accepted spelling (lower case) of a Word parameter to
	// the value kernels read.
	Words map[string]string
}

// OpDef is one row of the op table: an op, the modalities the schema gives
// it, those whose built-in adapter runs it, its parameters, and its shape
// function.
type OpDef struct {
	Name       string
	Doc        string   // its semantics, in one line
	Modalities []string // the programs the schema allows it in
	Runs       []string // the modalities whose built-in adapter runs it
	Params     []Param
	// shape checks an op against the value it reads and returns the shape
	// of the value it defines; nil for an op no adapter runs.
	shape func(op *Op, in Shape) (Shape, error)
}

// Param returns the parameter name of the op, or nil.
func (d *OpDef) Param(name string) *Param {
	for i := range d.Params {
		if d.Params[i].Name == name {
			return &d.Params[i]
		}
	}
	return nil
}

func (d *OpDef) paramNames() string {
	names := make([]string, len(d.Params))
	for i, p := range d.Params {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// RunBy reports whether the built-in adapter of modality runs the op.
func (d *OpDef) RunBy(modality string) bool { return slices.Contains(d.Runs, modality) }

var (
	visual       = []string{"image", "video"}
	all          = []string{"image", "video", "audio"}
	imageFormats = map[string]string{"png": "png", "jpeg": "jpeg", "jpg": "jpeg", "gif": "gif", "webp": "webp", "auto": ""}
	colorModes   = map[string]string{"rgb": "RGB", "bgr": "BGR", "l": "L", "gray": "L", "grey": "L", "grayscale": "L"}
	filters      = map[string]string{"bilinear": "bilinear", "bicubic": "bicubic", "nearest": "nearest"}
	roundings    = map[string]string{"round": "round", "floor": "floor", "ceil": "ceil"}
	melScales    = map[string]string{"slaney": "slaney", "htk": "htk"}
	melNorms     = map[string]string{"slaney": "slaney", "none": "none"}
	padModes     = map[string]string{"reflect": "reflect", "constant": "constant"}
	thumbnails   = map[string]string{"none": "none", "first": "first", "last": "last"}
	partials     = map[string]string{"pad": "pad", "drop": "drop"}
)

// containers are video file formats, named so that decode can say why it
// refuses them.
var containers = []string{"mp4", "mov", "mkv", "webm", "avi"}

func formats() map[string]string {
	f := map[string]string{"wav": "wav"}
	for k, v := range imageFormats {
		f[k] = v
	}
	for _, c := range containers {
		f[c] = c
	}
	return f
}

func positive(name string) Param { return Param{Name: name, Type: Int, Positive: true} }

func required(p Param) Param { p.Required = true; return p }

// logParams are the parameters of log; log10 takes them but base.
func logParams(base bool) []Param {
	ps := []Param{{Name: "offset", Type: Number}, {Name: "floor", Type: Number, Positive: true}}
	if base {
		ps = append(ps, Param{Name: "base", Type: Number, Positive: true})
	}
	return append(ps, Param{Name: "dynamic_range", Type: Number, Positive: true})
}

// Ops is the op table: every op of the schema, in the order the schema
// lists them.
var Ops = []*OpDef{
	{Name: "decode", Doc: "encoded bytes → image (RGB, [0, 255]), clip of frames, or mono samples in [-1, 1]", Modalities: all, Runs: all,
		Params: []Param{{Name: "format", Type: Word, Words: formats()}}, shape: decodeShape},
	{Name: "convert_color", Doc: "channels → RGB, BGR (reversed) or L (0.299 R + 0.587 G + 0.114 B)", Modalities: visual, Runs: visual,
		Params: []Param{{Name: "mode", Type: Word, Required: true, Words: colorModes}}, shape: colorShape},
	{Name: "resize", Doc: "h×w → size×size, height×width, one side with the aspect kept (the other at most max_width or max_height), the shorter side to shortest_edge with the aspect kept, or the longer side shrunk to max_size; a derived side then to the nearest multiple of multiple", Modalities: visual, Runs: visual,
		Params: []Param{positive("size"), positive("height"), positive("width"), {Name: "interpolation", Type: Word, Words: filters}, positive("max_size"),
			{Name: "rounding", Type: Word, Words: roundings}, positive("max_width"), positive("max_height"), positive("multiple"), positive("shortest_edge")}, shape: resizeShape},
	{Name: "center_crop", Doc: "h×w → the centred window, zero-padded when larger", Modalities: visual, Runs: visual,
		Params: []Param{positive("size"), positive("height"), positive("width")}, shape: cropShape},
	{Name: "pad", Doc: "h×w → height×width, the image at the top left and value (0 by default) below and to the right of it", Modalities: visual, Runs: visual,
		Params: []Param{positive("height"), positive("width"), {Name: "value", Type: Number}}, shape: padToShape},
	{Name: "rescale", Doc: "x → x·factor", Modalities: visual, Runs: visual,
		Params: []Param{{Name: "factor", Type: Number, Required: true}}, shape: same},
	{Name: "normalize", Doc: "x → (x - mean[c]) / std[c]", Modalities: visual, Runs: visual,
		Params: []Param{{Name: "mean", Type: Numbers, Required: true}, {Name: "std", Type: Numbers, Required: true}}, shape: normalizeShape},
	{Name: "tile", Doc: "image → the tiles of tile_size of the grid (at most max_tiles) that best fits its aspect ratio, as anyres does, and an optional thumbnail", Modalities: []string{"image"}, Runs: []string{"image"},
		Params: []Param{required(positive("tile_size")), required(positive("max_tiles")), {Name: "thumbnail", Type: Word, Words: thumbnails}, {Name: "interpolation", Type: Word, Words: filters}},
		shape:  tileShape},
	{Name: "patchify", Doc: "image → its patch_size×patch_size patches in row-major order, each flattened channel-major (c, y, x)", Modalities: visual, Runs: []string{"image"},
		Params: []Param{required(positive("patch_size"))}, shape: patchifyShape},
	{Name: "sample_frames", Doc: "clip → with frame times, the frames nearest to every 1/fps seconds; then every frame_stride-th frame, then at most num_frames evenly spaced", Modalities: []string{"video"}, Runs: []string{"video"},
		Params: []Param{{Name: "fps", Type: Number, Positive: true}, positive("num_frames"), positive("frame_stride")}, shape: sampleShape},
	{Name: "pad_frames", Doc: "clip → target_length frames, the added ones of pad_value", Modalities: []string{"video"}, Runs: []string{"video"},
		Params: []Param{required(positive("target_length")), {Name: "pad_value", Type: Number}}, shape: padShape},
	{Name: "resample", Doc: "samples → samples at sample_rate, by scipy's resample_poly filter (Kaiser β=5, 20·max(up, down)+1 taps)", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{required(positive("sample_rate"))}, shape: resampleShape},
	{Name: "frame", Doc: "samples → windows of window samples every hop (default window); frames or features → windows of window rows every hop rows; the last window zero-padded, or with partial: drop, only whole windows", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{required(positive("window")), positive("hop"), {Name: "partial", Type: Word, Words: partials}}, shape: frameShape},
	{Name: "mel_spectrogram", Doc: "samples → [frames, n_mels]: STFT frames of a periodic Hann window (centred, or with center: false from the first sample), |X|^power, mel filter bank", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{required(positive("sample_rate")), required(positive("n_fft")), positive("hop_length"), positive("win_length"), positive("n_mels"),
			{Name: "f_min", Type: Number}, {Name: "f_max", Type: Number, Positive: true}, {Name: "power", Type: Number, Positive: true},
			{Name: "mel_scale", Type: Word, Words: melScales}, {Name: "norm", Type: Word, Words: melNorms}, {Name: "pad_mode", Type: Word, Words: padModes},
			{Name: "center", Type: Bool}},
		shape: melShape},
	{Name: "log", Doc: "x → log_base(max(x + offset, floor)), then at least its clip's maximum - dynamic_range", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: logParams(true), shape: logShape},
	{Name: "log10", Doc: "log with base 10", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: logParams(false), shape: logShape},
	{Name: "affine", Doc: "x → x·scale + offset (scale 1, offset 0 by default), on samples, frames, features or windows", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{{Name: "scale", Type: Number}, {Name: "offset", Type: Number}}, shape: affineShape},
	{Name: "pad_or_trim", Doc: "samples, frames or windows → exactly length of them: the end cut off, or zeros appended (padded frames and windows hold no valid values)", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{required(positive("length"))}, shape: padOrTrimShape},
	{Name: "standardize", Doc: "samples → (x - mean) / √(variance + epsilon), the mean and variance of the clip's samples (epsilon 1e-7 by default), as Wav2Vec2's feature extractor normalizes them", Modalities: []string{"audio"}, Runs: []string{"audio"},
		Params: []Param{{Name: "epsilon", Type: Number, Positive: true}}, shape: standardizeShape},
}

// Lookup returns the table's row of an op, or nil.
func Lookup(name string) *OpDef {
	for _, d := range Ops {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Runs lists the ops the built-in adapter of modality runs, for messages.
func Runs(modality string) []string {
	var out []string
	for _, d := range Ops {
		if d.RunBy(modality) {
			out = append(out, d.Name)
		}
	}
	return out
}
