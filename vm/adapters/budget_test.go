package adapters

import (
	"context"
	"image/color"
	"runtime"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
)

// TestMediaBudget: an image whose header is under the pixel cap but whose
// decoded and preprocessed values would take more than a request's media
// budget is refused with run/budget, at admission (Key) and before its
// invocation decodes it (Run), allocating a small part of what decoding
// it would take; under a larger budget the same image decodes.
func TestMediaBudget(t *testing.T) {
	const side = 5792 // 33.5 M pixels: under DefaultMaxPixels
	img := fixtures.ZeroPNG(side, side)
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
	small := fixtures.ZeroPNG(600, 600)
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
