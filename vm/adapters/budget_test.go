package adapters

import (
	"context"
	"fmt"
	"image/color"
	"runtime"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/testmedia"
	"github.com/genaic/genaic/ir"
)

// TestMediaBudget: an image whose header is under the pixel cap but whose
// decoded and preprocessed values would take more than a request's media
// budget is refused with run/budget, at admission (Key) and before its
// invocation decodes it (Run), allocating a small part of what decoding
// it would take; under a larger budget the same image decodes.
func TestMediaBudget(t *testing.T) {
	const side = 5792 // 33.5 M pixels: under DefaultMaxPixels
	img := testmedia.ZeroPNG(side, side)
	f := newFixture(clipLike("2"), dims("images", 3, 2, 2))
	s := f.load(t)
	in := request(img)
	wouldTake := int64(side * side * (4 + 3*4))

	_, err := s.(backend.Keyer).Key(in)
	wantRunError(t, err, backend.RunBudget, "would take", "268435456 bytes")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = s.Run(context.Background(), in, nil)
	runtime.ReadMemStats(&after)
	wantRunError(t, err, backend.RunBudget, "would take")
	if got := int64(after.TotalAlloc - before.TotalAlloc); got > wouldTake/100 {
		t.Errorf("the refusal allocated %d bytes; decoding would take %d", got, wouldTake)
	}

	// A budget that holds it: the same image runs (a smaller one keeps
	// the test cheap: 600×600 under a budget just above its footprint).
	small := testmedia.ZeroPNG(600, 600)
	b := New(f.m)
	b.MaxMediaBytes = 600 * 600 * 40
	big, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := big.Run(context.Background(), request(small), nil); err != nil {
		t.Errorf("600×600 under a budget of %d bytes: %v", b.MaxMediaBytes, err)
	}
	b.MaxMediaBytes = 600 * 600 * 4
	if _, err := big.Run(context.Background(), request(small, encodePNG(t, solid(2, 2, color.NRGBA{A: 255}))), nil); err == nil {
		t.Errorf("600×600 under a budget of %d bytes ran", b.MaxMediaBytes)
	}
}

// allocated is what f allocates, by runtime.MemStats.TotalAlloc.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// TestMediaBudgetVideo: a clip of five 2048×2048 all-zero PNG frames (a
// few kilobytes each, under the pixel cap) whose decoded frames would take
// more than a request's media budget is refused with run/budget, at
// admission (Key) and before its invocation decodes a frame (Run),
// allocating a small part of what decoding would take. Frames that
// sampling drops are not counted, and padding frames are.
func TestMediaBudgetVideo(t *testing.T) {
	const side = 2048
	frame := testmedia.ZeroPNG(side, side)
	clip := [][]byte{frame, frame, frame, frame, frame}
	resize := op("resize", "v.decoded", "v.resized", "height", "2", "width", "2")
	s := videoFixture(decodeOnly(resize)).load(t)
	in := videoRequest(clip)
	wouldTake := int64(len(clip)) * side * side * (4 + 3*4) // the decoder's image and the decoded frame, each

	_, err := s.(backend.Keyer).Key(in)
	wantRunError(t, err, backend.RunBudget, "5 frame(s) of this request", "would take", "268435456 bytes", "--max-media-bytes")
	if got := allocated(func() { _, err = s.Run(context.Background(), in, nil) }); got > wouldTake/100 {
		t.Errorf("the refusal allocated %d bytes; decoding would take %d", got, wouldTake)
	}
	wantRunError(t, err, backend.RunBudget, "would take")

	// Sampling one frame of the five: one frame's footprint, within.
	sampled := videoFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "num_frames", "1"),
		op("resize", "v.sampled", "v.resized", "height", "2", "width", "2"))).load(t)
	if _, err := sampled.(backend.Keyer).Key(in); err != nil {
		t.Errorf("one kept frame of five: %v", err)
	}

	// Padding: one 2×2 frame padded to 100000 frames takes 100000 frames
	// of 3×2×2 float32 (4.8 MB), beyond a 1 MiB budget; to 1000, within.
	for _, c := range []struct {
		target string
		fits   bool
	}{{"100000", false}, {"1000", true}} {
		f := videoFixture(decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", c.target)))
		b := New(f.m)
		b.MaxMediaBytes = 1 << 20
		s, err := b.Load(f.comp, "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Run(context.Background(), videoRequest(frameSeq(t, 0, 1)), nil)
		switch {
		case c.fits && err != nil:
			t.Errorf("padded to %s: %v", c.target, err)
		case !c.fits:
			wantRunError(t, err, backend.RunBudget, "1 frame(s) of this request", "1048576 bytes")
		}
	}
}

// TestMediaBudgetAudio: a clip of 16 samples (76 bytes) that pad_or_trim
// lengthens to 2^25 samples and frame cuts into 2^23 frames would take
// 320 MiB, more than a request's media budget: refused with run/budget at
// admission (Key) and before its invocation decodes it (Run), allocating
// a small part of that. The count is exact: decoded samples, padded
// samples and frames as float32, and each frame's valid count as int64.
func TestMediaBudgetAudio(t *testing.T) {
	prog := func(length string) []ir.Transform {
		return []ir.Transform{
			op("decode", "", "a.decoded"),
			op("pad_or_trim", "a.decoded", "a.long", "length", length),
			op("frame", "a.long", "a.frames", "window", "4", "hop", "4"),
		}
	}
	clip := wav(16000, wavPCM, 16, mono(make([]float64, 16)...))
	s := audioFixture(prog("33554432")).load(t)
	in := request(clip)
	wouldTake := int64(16*4 + 10<<25)

	_, err := s.(backend.Keyer).Key(in)
	wantRunError(t, err, backend.RunBudget, "1 clip(s) of this request", fmt.Sprintf("would take %d bytes", wouldTake), "268435456 bytes", "--max-media-bytes")
	if got := allocated(func() { _, err = s.Run(context.Background(), in, nil) }); got > wouldTake/100 {
		t.Errorf("the refusal allocated %d bytes; decoding would take %d", got, wouldTake)
	}
	wantRunError(t, err, backend.RunBudget, "would take")

	// 4096 samples: 64 + 4096·4 + 1024·(4·4 + 8) = 41024 bytes, which a
	// budget of exactly that holds and one byte less does not; two such
	// clips in one request take twice as much.
	f := audioFixture(prog("4096"))
	b := New(f.m)
	small, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	b.MaxMediaBytes = 41024
	if _, err := small.Run(context.Background(), request(clip), nil); err != nil {
		t.Errorf("under a budget of %d bytes: %v", b.MaxMediaBytes, err)
	}
	_, err = small.Run(context.Background(), request(clip, clip), nil)
	wantRunError(t, err, backend.RunBudget, "2 clip(s) of this request", "would take 82048 bytes")
	b.MaxMediaBytes = 41023
	_, err = small.Run(context.Background(), request(clip), nil)
	wantRunError(t, err, backend.RunBudget, "would take 41024 bytes")
}
