package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
)

// A speech encoder's package as init --audio writes it: each request
// brings WAV clips, any number, the built-in audio adapter computes
// Whisper's log-mel features of each (or wav2vec 2.0's input values, for a
// model that reads the samples) and packs the clips whole, and the model
// runs on the clips of many requests at once, each request getting its
// own clips' rows, one item each.

// Whisper's front end: 30 s at 16 kHz in frames of 10 ms.
const (
	whisperRate   = 16000
	whisperHop    = 160
	whisperFrames = 3000
)

// whisperMels are the mel bands Whisper's encoders read: 80, and 128 from
// large-v3 on.
var whisperMels = []int64{80, 128}

// wav2vec 2.0's front end, which HuBERT, WavLM and data2vec's audio
// encoders share: the samples at 16 kHz, each clip standardized.
const samplesRate = 16000

// sampleNames are words one of which a model's input of samples is named
// by (wav2vec 2.0's exports name it input_values): a float [batch, N]
// input of another name may hold anything.
var sampleNames = []string{"input_values", "audio", "wav", "speech", "pcm"}

// The model inputs init --audio takes: log-mel features, or samples.
var (
	featuresFlag = itemsFlag{"audio", "--audio", "log-mel features", "[batch, mels, frames]", "or frames first; or audio samples [batch, samples]", "features", "clips"}
	samplesFlag  = itemsFlag{"audio", "--audio", "audio samples", "[batch, samples]", "or log-mel features [batch, mels, frames]", "samples", "clips"}
)

// audioInput is the model's input that takes the log-mel features, or
// the samples.
type audioInput struct {
	port  initPort
	batch string // the symbol of its first axis: one clip per row
	// samples: the model reads each clip's samples, [batch, samples], as
	// wav2vec 2.0 does, not log-mel features; length is the samples the
	// graph fixes, 0 where it leaves them open (the symbol of port's axis
	// 1 then).
	samples    bool
	length     int64
	mels       int64 // the bands the graph fixes, or the first of whisperMels it runs on
	openMels   bool  // the graph leaves the bands open
	frames     int64 // the frames the graph fixes, or whisperFrames where it leaves them open
	bandsFirst bool  // [batch, mels, frames], as Whisper's encoder reads them
	// outs are the outputs that give one row per clip (settleRows);
	// skipped says why each other output is left out.
	outs    []initPort
	skipped []string
}

// audioInputOf is the component's one input, if it takes log-mel
// features: a float tensor [batch, mels, frames] (or frames first) whose
// first axis is dynamic and one of whose others holds Whisper's mel bands
// (80 or 128, or a symbol named like them); or, of rank 2, samples
// (samplesInputOf). It says why not otherwise.
func audioInputOf(c *initComponent) (audioInput, error) {
	if len(c.inputs) == 1 && c.inputs[0].hasShape && len(c.inputs[0].dims) == 2 {
		return samplesInputOf(c)
	}
	p, err := soleInput(c, featuresFlag)
	if err != nil {
		return audioInput{}, err
	}
	bad := func(why string) (audioInput, error) { return audioInput{}, inputError(p, why) }
	bands := func(d initDim) bool {
		if d.sym == "" {
			return d.size == whisperMels[0] || d.size == whisperMels[1]
		}
		return namesBands(d.sym)
	}
	au := audioInput{port: p, batch: p.dims[0].sym}
	mels, frames := p.dims[1], p.dims[2]
	switch {
	case bands(p.dims[1]) && !bands(p.dims[2]):
		au.bandsFirst = true
	case bands(p.dims[2]) && !bands(p.dims[1]):
		mels, frames = p.dims[2], p.dims[1]
	default:
		return bad("with neither axis 1 nor axis 2 alone holding Whisper's mel bands (80 or 128, or named like mels or features)")
	}
	au.mels, au.openMels = mels.size, mels.sym != ""
	if au.openMels {
		au.mels = whisperMels[0]
	}
	au.frames = frames.size
	if frames.sym != "" {
		au.frames = whisperFrames
	}
	return au, nil
}

// samplesInputOf is the component's one input, if it takes each clip's
// samples: float [batch, samples], its first axis dynamic, named as a
// speech encoder's samples are (sampleNames).
func samplesInputOf(c *initComponent) (audioInput, error) {
	p, err := soleInput(c, samplesFlag)
	if err != nil {
		return audioInput{}, err
	}
	if !slices.ContainsFunc(sampleNames, func(w string) bool { return namedLike(p.name, w) }) {
		return audioInput{}, inputError(p, fmt.Sprintf("not named as audio samples are (%s): --audio takes a speech encoder's samples, or its log-mel features [batch, mels, frames]", strings.Join(sampleNames, ", ")))
	}
	return audioInput{port: p, batch: p.dims[0].sym, samples: true, length: p.dims[1].size}, nil
}

// namesBands reports whether a symbol names mel bands (as
// preprocess.BandsFirst reads a port's axes).
func namesBands(sym string) bool {
	for _, w := range []string{"mel", "feature", "band", "bin", "freq"} {
		if namedLike(sym, w) {
			return true
		}
	}
	return false
}

// featureShape is the shape of n clips' features.
func (au audioInput) featureShape(n int64) []int64 {
	if au.bandsFirst {
		return []int64{n, au.mels, au.frames}
	}
	return []int64{n, au.frames, au.mels}
}

// featureShapeYAML is the shape of the features, or the samples, the
// adapter makes.
func (au audioInput) featureShapeYAML() string {
	if au.samples {
		return au.port.shapeYAML()
	}
	s := au.featureShape(0)
	return fmt.Sprintf("[%s, %d, %d]", yq(au.batch), s[1], s[2])
}

// audioPackage is the package init --audio writes of the model c at
// path.
func audioPackage(path string, c *initComponent) (string, error) {
	au, err := audioInputOf(c)
	if err == nil {
		err = settleAudioOutputs(path, c, &au)
	}
	if err != nil {
		return "", err
	}
	return audioDocument(c, au), nil
}

// settleAudioOutputs keeps, in au, the outputs that give one row per
// clip (settleRows). Where the graph leaves the bands open, it tries each
// of Whisper's counts in turn and keeps the first the model runs on.
func settleAudioOutputs(path string, c *initComponent, au *audioInput) error {
	if au.samples {
		return settleSampleOutputs(path, c, au)
	}
	tries := []int64{au.mels}
	if au.openMels {
		tries = whisperMels
	}
	var err error
	for _, m := range tries {
		au.mels = m
		if au.outs, au.skipped, err = settleRows(path, c, "clip", au.batch, floatItems(au.port, au.featureShape), nil); err == nil {
			return nil
		}
	}
	return err
}

// settleSampleOutputs keeps, in au, the outputs that give one row per
// clip of samples (settleRows): on clips of the samples the graph fixes,
// or, where it leaves them open, of 1 s then 1.5 s at 16 kHz, an output
// axis that follows them (the frames a speech encoder makes of them)
// under a symbol of its own.
func settleSampleOutputs(path string, c *initComponent, au *audioInput) error {
	lengths := [2]int64{au.length, au.length}
	var extent *itemExtent
	if au.length == 0 {
		lengths = [2]int64{samplesRate, samplesRate * 3 / 2}
		extent = &itemExtent{sym: au.port.dims[1].sym, runs: lengths, follows: "frames"}
	}
	inputs := func(n int64, r int) (map[string]*backend.Tensor, error) {
		return floatItems(au.port, func(n int64) []int64 { return []int64{n, lengths[r]} })(n, r)
	}
	var err error
	au.outs, au.skipped, err = settleRows(path, c, "clip", au.batch, inputs, extent)
	return err
}

// audioDocument writes the package of a speech encoder c whose input au
// takes the features: clips packed whole on the batch axis (a request
// brings any number, as it brings images), each output split back by
// clip.
func audioDocument(c *initComponent, au audioInput) string {
	b, line := docLines()
	taken := takenNames(c)
	in := newMediaInput("audio", taken)
	var (
		features   = freshName(au.port.name, taken) // the adapter's output, the model's input
		adapter    = freshName("audio_preprocess", taken)
		perRow     = freshName("rows_plus_one", taken)
		clipOffset = "audio.clip_offsets"
		clipOwner  = "audio.clip_owner"
		level      = fmt.Sprintf("{ offsets: %s, owner: %s", clipOffset, clipOwner)
		produced   = fmt.Sprintf("batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: produced }] }", level)
		taking     = fmt.Sprintf("batch_layout: { kind: token_packed, axis: 0, levels: [%s }] }", level)
		preserved  = fmt.Sprintf("batch_layout: { kind: token_packed, axis: 0, levels: [%s, extent: preserved }] }", level)
	)
	line(0, "# Written by `genaic init --audio` from %s: a package that takes", c.artifact)
	line(0, "# WAV clips, any number per request, as items, and runs the model on the")
	line(0, "# clips of many requests at once; each request gets its own clips' rows")
	line(0, "# of every output, one item each.")
	line(0, "# A requests document (genaic run, bench) names the clips' files:")
	line(0, "#   {\"id\": \"r1\", \"inputs\": {%q: {\"items\": [{\"file\": \"speech.wav\"}]}}}", in.name)
	line(0, "#")
	program := au.featuresProgram
	if au.samples {
		program = au.samplesProgram
	}
	program(line, func() {
		line(0, "schema_version: v1.1")
		line(0, "model:")
		line(1, "name: %s", yq(c.name))
		line(0, "preprocessing:")
		line(1, "audio:")
		line(2, "transforms:")
	})
	line(2, "outputs:")
	line(3, "- name: %s", yq(features))
	line(4, "source: audio.features")
	line(4, "content: features")
	line(4, "dtype: %s", au.port.dtype)
	line(4, "contract: { dtype: %s, shape: %s, %s }", au.port.dtype, au.featureShapeYAML(), produced)
	line(3, "- { name: %s, source: audio.features, content: pack_offsets, dtype: int64, contract: { dtype: int64, shape: [%s] } }", clipOffset, yq(perRow))
	line(3, "- { name: %s, source: audio.features, content: pack_owner, dtype: int64, contract: { dtype: int64, shape: [%s] } }", clipOwner, yq(au.batch))
	line(0, "pipeline:")
	line(1, "workflow:")
	line(2, "manifest:")
	line(3, "adapter_abis: { onnx-genai.audio-preprocess: \"1\" }")
	in.workflowInputs(line, "clip")
	line(2, "outputs:")
	workflowOutputs(line, au.outs, preserved)
	for _, comp := range []struct{ name, shape string }{{clipOffset, yq(perRow)}, {clipOwner, yq(au.batch)}} {
		line(3, "%s:", comp.name)
		line(4, "contract: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", comp.shape)
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
	in.adapterComponent(line, adapter, "audio", "clips", 8, 64<<20)
	line(6, "%s: { dtype: %s, shape: %s, %s }", yq(features), au.port.dtype, au.featureShapeYAML(), produced)
	line(6, "%s: { dtype: int64, shape: [%s] }", clipOffset, yq(perRow))
	line(6, "%s: { dtype: int64, shape: [%s] }", clipOwner, yq(au.batch))
	model := mediaModel{items: "clips", batch: au.batch, perCall: au.perCall(), port: au.port, shape: au.featureShapeYAML(), in: taking, out: preserved,
		outs: au.outs, skipped: au.skipped}
	if au.samples && au.length == 0 {
		model.uniform = au.port.dims[1].sym
	}
	model.modelComponent(line, c)
	line(2, "steps:")
	line(3, "- kind: invoke")
	line(4, "component: %s", yq(adapter))
	in.invokeAdapter(line)
	line(4, "outputs: { %s: %s, %s: %s, %s: %s }", yq(features), yq(features), clipOffset, clipOffset, clipOwner, clipOwner)
	invokeModel(line, c, [][2]string{{au.port.name, features}}, au.outs)
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", clipOffset, clipOffset)
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", clipOwner, clipOwner)
	return b.String()
}

// perCall is the most clips a call of the model takes as init writes it:
// Whisper's 30 s windows cost a call a lot more than wav2vec 2.0's clips
// of seconds.
func (au audioInput) perCall() int {
	if au.samples {
		return 8
	}
	return 4
}

// featuresProgram writes the first comment's account of Whisper's
// log-mel front end, then the document's head up to the adapter's
// transforms (head), then the transforms.
func (au audioInput) featuresProgram(line func(int, string, ...any), head func()) {
	seconds := au.frames * whisperHop / whisperRate
	line(0, "# The features are Whisper's log-mel spectrogram (docs/preprocessing.md,")
	line(0, "# \"A Whisper log-mel program\"): the clip at 16 kHz, padded with silence")
	line(0, "# or trimmed to %d frames of 10 ms (%d s), %d mel bands, log10 within 8", au.frames, seconds, au.mels)
	line(0, "# decades of the clip's peak, then (x + 4)/4; laid out %s,", map[bool]string{true: "bands first", false: "frames first"}[au.bandsFirst])
	line(0, "# as the model's input %s.", au.featureShapeYAML())
	line(0, "# Verify it against your model's feature extractor: Whisper's")
	line(0, "# encoders and their fine-tunes take it; other speech encoders compute")
	line(0, "# other features (docs/preprocessing.md lists the ops).")
	head()
	line(3, "- { op: decode, format: wav, outputs: [audio.decoded] }")
	line(3, "- { op: resample, sample_rate: %d, inputs: [audio.decoded], outputs: [audio.resampled] }", whisperRate)
	line(3, "- { op: pad_or_trim, length: %d, inputs: [audio.resampled], outputs: [audio.samples] }", au.frames*whisperHop)
	line(3, "- { op: mel_spectrogram, sample_rate: %d, n_fft: 400, hop_length: %d, n_mels: %d, inputs: [audio.samples], outputs: [audio.mel] }", whisperRate, whisperHop, au.mels)
	line(3, "- { op: pad_or_trim, length: %d, inputs: [audio.mel], outputs: [audio.frames] }", au.frames)
	line(3, "- { op: log10, floor: 1.0e-10, dynamic_range: 8.0, inputs: [audio.frames], outputs: [audio.log_mel] }")
	line(3, "- { op: affine, scale: 0.25, offset: 1.0, inputs: [audio.log_mel], outputs: [audio.features] }")
}

// samplesProgram writes the first comment's account of wav2vec 2.0's
// front end, then head, then the adapter's transforms.
func (au audioInput) samplesProgram(line func(int, string, ...any), head func()) {
	line(0, "# The model reads each clip's samples as wav2vec 2.0's feature extractor")
	line(0, "# gives them (docs/preprocessing.md, \"A wav2vec 2.0 program\"): mono at")
	line(0, "# 16 kHz, standardized to zero mean and unit variance (do_normalize);")
	line(0, "# where your model's preprocessor_config.json says \"do_normalize\":")
	line(0, "# false, remove the standardize transform.")
	if au.length == 0 {
		line(0, "# The model reads no lengths, so padding a clip would change what it")
		line(0, "# answers: clips of one length (in samples at 16 kHz) share a call,")
		line(0, "# others run apart, a request's too. Where your clips are cut to one")
		line(0, "# length anyway, pad_or_trim after standardize makes every clip that")
		line(0, "# long, and any clips share a call (the model then hears the padding")
		line(0, "# as silence).")
	} else {
		line(0, "# The graph fixes %d samples (%.4g s): each clip is padded with silence", au.length, float64(au.length)/samplesRate)
		line(0, "# or trimmed to them after it is standardized.")
	}
	head()
	line(3, "- { op: decode, format: wav, outputs: [audio.decoded] }")
	line(3, "- { op: resample, sample_rate: %d, inputs: [audio.decoded], outputs: [audio.resampled] }", samplesRate)
	if au.length == 0 {
		line(3, "- { op: standardize, inputs: [audio.resampled], outputs: [audio.features] }")
		return
	}
	line(3, "- { op: standardize, inputs: [audio.resampled], outputs: [audio.standardized] }")
	line(3, "- { op: pad_or_trim, length: %d, inputs: [audio.standardized], outputs: [audio.features] }", au.length)
}
