package adapters

import (
	"context"
	"errors"
	"image/color"
	"os"
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/backend"
)

// Arbitrary bytes never panic the WAV reader.
func FuzzDecodeWAV(f *testing.F) {
	f.Add(wav(16000, wavPCM, 16, mono(0.1, -0.2, 0.3)))
	f.Add(wav(8000, wavFloat, 32, [][]float64{{0.5, -0.5}}))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVE"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := decodeWAV(data)
		if err == nil && x == nil {
			t.Fatal("no signal and no error")
		}
	})
}

// Arbitrary bytes fail an image request with run/input, never a panic:
// through a resize and normalize, through a capped resize and a pad, and
// through a pad that images larger than it fail.
func FuzzImageRequest(f *testing.F) {
	f.Add(encodePNG(f, solid(3, 2, color.NRGBA{R: 9, A: 255})))
	f.Add(encodeJPEG(f, solid(2, 2, color.NRGBA{G: 9, A: 255})))
	f.Add([]byte("GIF89a"))
	for _, name := range []string{"webp_11x17_noise_lossy_alpha.webp", "webp_33x9_pattern_lossless.webp"} {
		b, err := os.ReadFile(filepath.Join(imageOracleDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	capped := append(decodeAs(3), op("resize", "i.decoded", "i.resized", "height", "2", "max_width", "3"), op("pad", "i.resized", "i.padded", "height", "2", "width", "3", "value", "-1"))
	// A larger image than pad's is refused.
	padded := append(decodeAs(3), op("pad", "i.decoded", "i.padded", "height", "6", "width", "5"))
	// Only the crop's window is resized.
	cropped := append(decodeAs(3), op("resize", "i.decoded", "i.resized", "shortest_edge", "4"), op("center_crop", "i.resized", "i.cropped", "height", "3", "width", "3"))
	fuzzImages(f, 1<<16, newFixture(clipLike("2"), dims("images", 3, 2, 2)), newFixture(capped, dims("images", 3, 2, 3)), newFixture(padded, dims("images", 3, 6, 5)), newFixture(cropped, dims("images", 3, 3, 3)))
}

// fuzzImages fuzzes the image adapters of fixtures, each bounded to
// maxPixels (to keep each input cheap), with arbitrary bytes as one image:
// each answers or fails with run/input.
func fuzzImages(f *testing.F, maxPixels int64, fixtures ...*fixture) {
	var sessions []backend.Session
	for _, fx := range fixtures {
		b := New(fx.m)
		b.MaxPixels = maxPixels
		s, err := b.Load(fx.comp, "")
		if err != nil {
			f.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range sessions {
			_, err := s.Run(context.Background(), request(data), nil)
			var re *backend.RunError
			if err != nil && (!errors.As(err, &re) || re.Rule != "run/input") {
				t.Fatalf("got %v, want nil or run/input", err)
			}
		}
	})
}
