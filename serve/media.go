package serve

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// Warm-up media: a package without requests.json is warmed with a
// request synthesized from its contracts (warmup.go), and an input that
// brings encoded media to a built-in adapter gets an item the adapter
// decodes and its program takes, so that the adapter and the components
// after it run: a PNG image (or a clip of one PNG frame) of a size every
// patchify of the program divides, or a WAV clip of a tone long enough for
// a mel spectrogram's FFT and a frame's window (a second, where the model
// reads the samples).

// warmItem is an encoded item of a media input, and whether a request
// brings one alone: the adapter lays its items out one per request row
// (request_aligned, as a Whisper package's clips), so that two would be
// refused; or, where frames is above 0, how many a request brings: the
// frames of a clip that a port of stacked clips fixes (a request of
// init --video's package is one clip, its frames the items).
type warmItem struct {
	bytes  []byte
	alone  bool
	frames int
}

// warmMedia returns an encoded item for each workflow input a request
// brings that an invoke binds to a built-in adapter, by input name.
func warmMedia(m *ir.Module) (map[string]warmItem, error) {
	media := map[ir.ValueID]*ir.Input{}
	for _, in := range m.Inputs {
		if fromRequest(in) && takesBytes(in.Contract) {
			media[in.Value] = in
		}
	}
	out := map[string]warmItem{}
	var err error
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op != ir.OpInvoke || err != nil {
			return err == nil
		}
		comp := m.Component(s.Component.Name)
		if comp == nil || comp.Impl != ir.ImplAdapter {
			return true
		}
		modality, ok := preprocess.ModalityOf(comp.ABI)
		if !ok {
			return true
		}
		for _, a := range s.Args {
			in := media[a.Value.ID]
			if in == nil || out[in.Name].bytes != nil {
				continue
			}
			var b []byte
			if b, err = mediaFor(m, comp, modality); err != nil {
				err = fmt.Errorf("input `%s` (encoded %s for adapter %s): %v", in.Name, modality, comp.Name, err)
				return false
			}
			alone := slices.ContainsFunc(comp.Outputs, func(p *ir.Port) bool {
				return p.Contract != nil && p.Contract.Layout.Kind == ir.RequestAligned
			})
			out[in.Name] = warmItem{bytes: b, alone: alone, frames: clipFrames(comp, modality)}
		}
		return true
	})
	return out, err
}

// clipFrames is the frames a video adapter's port of stacked clips
// ([clips, frames, ...], or channels first) fixes, 0 where none does.
func clipFrames(comp *ir.Component, modality string) int {
	if modality != "video" {
		return 0
	}
	for _, p := range comp.Outputs {
		if c := p.Contract; c != nil && c.HasShape && len(c.Shape) == 5 {
			if f, _ := preprocess.ClipAxes(c.Shape, -1); !c.Shape[f].IsSym() {
				return int(c.Shape[f].Size)
			}
		}
	}
	return 0
}

// mediaFor encodes an item the adapter comp, of a modality, decodes and
// runs its program on.
func mediaFor(m *ir.Module, comp *ir.Component, modality string) ([]byte, error) {
	prog := preprocess.ProgramOf(m, modality)
	if prog == nil {
		return nil, fmt.Errorf("the package has no %s program", modality)
	}
	p, probs := preprocess.Compile(prog, comp, preprocess.InvokedPorts(m, comp))
	if len(probs) > 0 {
		return nil, probs[0]
	}
	if modality == "audio" {
		return toneWAV(p.Ops), nil
	}
	side, ok := imageSide(p.Ops)
	if !ok {
		return nil, fmt.Errorf("no square image of up to %d pixels a side has sides every patchify of the program divides", preprocess.MaxTileSize)
	}
	return gradientPNG(side)
}

// imageSide is the side of the smallest square image, of at least 4
// pixels a side, whose sides every patchify of the program divides where
// it runs (after the resizes and crops before it).
func imageSide(ops []*preprocess.Op) (int, bool) {
	fits := func(side int) bool {
		h, w := side, side
		for _, op := range ops {
			if p := op.Ints("patch_size"); op.Name == "patchify" && (p <= 0 || h%p != 0 || w%p != 0) {
				return false
			}
			if op.Size != nil {
				h, w = op.Size(h, w)
			}
		}
		return true
	}
	for side := 4; side <= preprocess.MaxTileSize; side++ {
		if fits(side) {
			return side, true
		}
	}
	return 0, false
}

// gradientPNG encodes a side×side RGB image whose colours vary across it.
func gradientPNG(side int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for y := range side {
		for x := range side {
			img.Set(x, y, color.RGBA{R: uint8(255 * x / side), G: uint8(255 * y / side), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// wavHeader is a RIFF/WAVE header of mono 16-bit PCM, as the audio
// adapter reads it.
type wavHeader struct {
	Riff                    [4]byte
	FileSize                uint32
	Wave, Fmt               [4]byte
	FmtSize                 uint32
	Format, Channels        uint16
	Rate, ByteRate          uint32
	BlockAlign, BitsPerSamp uint16
	Data                    [4]byte
	DataSize                uint32
}

// toneWAV encodes a 440 Hz tone at the rate the audio program works at
// (its resample's, else its mel spectrogram's, else 16 kHz), 10 ms long
// or as long as its longest FFT or frame window; a second long where the
// model reads the samples themselves (no mel spectrogram, no frame): a
// speech encoder of samples refuses fewer than its first convolutions
// read.
func toneWAV(ops []*preprocess.Op) []byte {
	rate, n := 0, 0
	for _, op := range ops {
		switch op.Name {
		case "resample":
			if rate == 0 {
				rate = op.Ints("sample_rate")
			}
		case "mel_spectrogram":
			mel := op.Mel()
			if rate == 0 {
				rate = mel.SampleRate
			}
			n = max(n, mel.NFFT)
		case "frame":
			n = max(n, op.Ints("window"))
		}
	}
	if rate <= 0 {
		rate = 16000
	}
	if n == 0 { // the model reads the samples
		n = rate
	}
	n = max(n, rate/100)
	samples := make([]int16, n)
	for i := range samples {
		samples[i] = int16(8192 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	h := wavHeader{Riff: [4]byte{'R', 'I', 'F', 'F'}, FileSize: uint32(36 + 2*n), Wave: [4]byte{'W', 'A', 'V', 'E'},
		Fmt: [4]byte{'f', 'm', 't', ' '}, FmtSize: 16, Format: 1, Channels: 1, Rate: uint32(rate), ByteRate: uint32(2 * rate),
		BlockAlign: 2, BitsPerSamp: 16, Data: [4]byte{'d', 'a', 't', 'a'}, DataSize: uint32(2 * n)}
	var b bytes.Buffer
	// Fixed-size values into a bytes.Buffer: the writes cannot fail.
	binary.Write(&b, binary.LittleEndian, h)
	binary.Write(&b, binary.LittleEndian, samples)
	return b.Bytes()
}
