package adapters

import (
	"context"
	"slices"
	"testing"
)

// TestPad: a resize to 4 rows with the width capped at 6, then a pad to
// 4×6 of -1: each image's pixels are its resized pixels alone at the top
// left, -1 below and to the right of them; a wider image is squeezed to
// the cap, as a resize to 4×6 makes it.
func TestPad(t *testing.T) {
	resize := op("resize", "i.decoded", "i.resized", "height", "4", "max_width", "6", "rounding", "ceil")
	padded := newFixture(append(decodeAs(3), resize, op("pad", "i.resized", "i.padded", "height", "4", "width", "6", "value", "-1")),
		dims("images", 3, 4, 6)).load(t)
	alone := newFixture(append(decodeAs(3), resize), dims("images", 3, 4, "w")).load(t)
	imgs := [][]byte{noisy(2, 4), noisy(9, 3), noisy(5, 4)} // 2, 12 (capped to 6) and 5 columns once resized
	out := run(t, padded, request(imgs...), "pixels")
	wantShape(t, "pixels", out["pixels"], 3, 3, 4, 6)
	got := out["pixels"].Float32s()
	for i, img := range imgs {
		own := run(t, alone, request(img), "pixels")["pixels"]
		w := int(own.Shape[3])
		if want := []int{2, 6, 5}[i]; w != want {
			t.Fatalf("image %d is %d columns wide once resized, want %d", i, w, want)
		}
		px := own.Float32s()
		for k := range 3 {
			for y := range 4 {
				row := got[((i*3+k)*4+y)*6:][:6]
				if !slices.Equal(row[:w], px[(k*4+y)*w:][:w]) {
					t.Fatalf("image %d channel %d row %d: %v, resized alone %v", i, k, y, row[:w], px[(k*4+y)*w:][:w])
				}
				if slices.ContainsFunc(row[w:], func(v float32) bool { return v != -1 }) {
					t.Fatalf("image %d channel %d row %d: the padding is %v, want -1", i, k, y, row[w:])
				}
			}
		}
	}
	squeezed := newFixture(append(decodeAs(3), op("resize", "i.decoded", "i.resized", "height", "4", "width", "6")), dims("images", 3, 4, 6)).load(t)
	if want := run(t, squeezed, request(imgs[1]), "pixels")["pixels"].Float32s(); !slices.Equal(got[72:144], want) {
		t.Errorf("the capped image is not the image resized to 4×6")
	}
}

// A pad smaller than an image, on a side the program does not fix, fails
// that request with run/input, naming the transform and the sizes.
func TestPadRefusesLarger(t *testing.T) {
	s := newFixture(append(decodeAs(3), op("pad", "i.decoded", "i.padded", "height", "4", "width", "4")), dims("images", 3, 4, 4)).load(t)
	run(t, s, request(noisy(4, 4), noisy(1, 3)), "pixels")
	_, err := s.Run(context.Background(), request(noisy(3, 3), noisy(5, 2)), nil)
	wantRunError(t, err, "run/input", "image 1", "2×5 pixels", "transform 2 (pad)", "larger than the 4×4")
}

// In a video program pad runs on every frame: frames of two sizes padded
// to one make a clip, and a frame larger than the pad fails its request
// with run/input, naming the frame.
func TestVideoPad(t *testing.T) {
	s := videoFixture(decodeOnly(op("pad", "v.decoded", "v.padded", "height", "2", "width", "2", "value", "7"))).load(t)
	small := encodePNG(t, solid(1, 1, frameColour(5)))
	out := run(t, s, videoRequest(append(frameSeq(t, 0, 1), small)), "pixels")
	wantShape(t, "pixels", out["pixels"], 2, 3, 2, 2)
	if got := out["pixels"].Float32s()[12:16]; !slices.Equal(got, []float32{50, 7, 7, 7}) {
		t.Errorf("the small frame's red plane is %v, want its pixel then the padding", got)
	}
	_, err := s.Run(context.Background(), videoRequest(frameSeq(t, 0, 1), [][]byte{encodePNG(t, solid(3, 2, frameColour(1)))}), nil)
	wantRunError(t, err, "run/input", "frame 0 of clip 1", "2×3 pixels", "(pad)", "larger than the 2×2")
}
