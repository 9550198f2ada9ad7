package adapters

import (
	"context"
	"errors"
	"image/color"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// videoFixture is a video adapter in miniature: encoded frames split by
// byte offsets and clip offsets (both input ports), and frames [frames, 3,
// 2, 2] packed with two produced levels (frames→clips, clips→rows), their
// four companions, and the real frames of each clip.
func videoFixture(transforms []ir.Transform) *fixture {
	m := ir.NewModule()
	enc := packed(contract("uint8", dims("bytes")), "byte_offsets", "byte_owner", ir.ExtentNone)
	enc.Layout.Levels = append(enc.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "clips"}, Owner: ir.Ref{Name: "clip_of_frame"}})
	px := packed(contract("float32", dims("frames", 3, 2, 2)), "frame_offsets", "frame_owner", ir.ExtentProduced)
	px.Layout.Levels = append(px.Layout.Levels, ir.Level{Offsets: ir.Ref{Name: "clip_offsets"}, Owner: ir.Ref{Name: "clip_owner"}, Extent: ir.ExtentProduced})
	comp := &ir.Component{Name: "pre", Impl: ir.ImplAdapter, ABI: preprocess.ABI("video"), Version: "1",
		Inputs: []*ir.Port{
			{Name: "encoded", Contract: enc},
			{Name: "byte_offsets", Contract: contract("int64", dims("nb"))},
			{Name: "clips", Contract: contract("int64", dims("nc"))},
		},
		Outputs: []*ir.Port{
			{Name: "pixels", Contract: px},
			{Name: "frame_offsets", Contract: contract("int64", dims("c1"))},
			{Name: "frame_owner", Contract: contract("int64", dims("frames"))},
			{Name: "clip_offsets", Contract: contract("int64", dims("r1"))},
			{Name: "clip_owner", Contract: contract("int64", dims("clips"))},
			{Name: "frame_lengths", Contract: contract("int64", dims("clips"))},
		}}
	prog := &ir.Program{Modality: "video", Transforms: transforms, Outputs: []ir.ProgramOutput{
		{Name: "pixels", Content: "pixel_values"},
		{Name: "frame_offsets", Content: "pack_offsets"},
		{Name: "frame_owner", Content: "pack_owner"},
		{Name: "clip_offsets", Content: "pack_offsets"},
		{Name: "clip_owner", Content: "pack_owner"},
		{Name: "frame_lengths", Content: "frame_lengths"},
	}}
	m.Components = append(m.Components, comp)
	m.Programs = append(m.Programs, prog)
	return &fixture{m: m, comp: comp, prog: prog}
}

// stacked turns the fixture's pixels into clips stacked on a rank-5 port
// [clips, frames, 3, 2, 2] of the layout, padded on frames with
// frame_lengths, and drops the packed companions.
func (f *fixture) stacked(layout ir.LayoutKind, frames any) {
	c := contract("float32", dims("clips", frames, 3, 2, 2))
	c.Layout = ir.Layout{Kind: layout}
	if _, sym := frames.(string); sym {
		c.Padding = []ir.Padding{{Dim: ir.Ref{Name: frames.(string)}, Lengths: ir.Ref{Name: "frame_lengths"}}}
	}
	f.comp.Outputs = []*ir.Port{{Name: "pixels", Contract: c}, f.comp.Outputs[5]}
	f.prog.Outputs = []ir.ProgramOutput{f.prog.Outputs[0], f.prog.Outputs[5]}
}

// frameColour is frame i's colour: its red says which frame it is.
func frameColour(i int) color.NRGBA { return color.NRGBA{R: uint8(10 * i), G: 100, B: 200, A: 255} }

// frameSeq encodes n solid 2×2 PNG frames, numbered from first.
func frameSeq(t testing.TB, first, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = encodePNG(t, solid(2, 2, frameColour(first+i)))
	}
	return out
}

// videoRequest packs clips of encoded frames into the fixture's input
// ports: the bytes, their offsets by frame, and the frame offsets by clip.
func videoRequest(clips ...[][]byte) map[string]*backend.Tensor {
	var all [][]byte
	clipOffs := []int64{0}
	for _, c := range clips {
		all = append(all, c...)
		clipOffs = append(clipOffs, int64(len(all)))
	}
	in := request(all...)
	in["clips"] = ints(clipOffs)
	return in
}

// redOf returns the red of each frame of a [frames, 3, h, w] or
// [clips, frames, 3, h, w] tensor, read at its first pixel.
func redOf(t *backend.Tensor) []float32 {
	plane := t.Shape[len(t.Shape)-1] * t.Shape[len(t.Shape)-2]
	per := 3 * plane
	data := t.Float32s()
	out := make([]float32, int64(len(data))/per)
	for i := range out {
		out[i] = data[int64(i)*per]
	}
	return out
}

func wantFloats(t *testing.T, name string, got []float32, want ...float32) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", name, got, want)
	}
}

// decodeOnly decodes the frames: their values are the colours.
func decodeOnly(extra ...ir.Transform) []ir.Transform {
	return append([]ir.Transform{op("decode", "", "v.decoded")}, extra...)
}

// Two clips of 3 and 1 frames pack on one frame axis with both levels:
// frame offsets [0, 3, 4], owners [0, 0, 0, 1], one row of two clips, and
// every frame in order.
func TestVideoPackedTwoLevels(t *testing.T) {
	s := videoFixture(decodeOnly()).load(t)
	out := run(t, s, videoRequest(frameSeq(t, 0, 3), frameSeq(t, 3, 1)),
		"pixels", "frame_offsets", "frame_owner", "clip_offsets", "clip_owner", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 4, 3, 2, 2)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 3, 4)
	wantInts(t, "frame_owner", out["frame_owner"], 0, 0, 0, 1)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 2)
	wantInts(t, "clip_owner", out["clip_owner"], 0, 0)
	wantInts(t, "frame_lengths", out["frame_lengths"], 3, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 10, 20, 30)
	data := out["pixels"].Float32s()
	for f := range 4 {
		for k, v := range []float32{float32(10 * f), 100, 200} {
			for j := range 4 {
				if got := data[(f*3+k)*4+j]; got != v {
					t.Fatalf("frame %d channel %d position %d = %v, want %v", f, k, j, got, v)
				}
			}
		}
	}
}

// Without a frames→clips port, all frames of the request are one clip.
func TestVideoOneClipWithoutClipLevel(t *testing.T) {
	f := videoFixture(decodeOnly())
	f.comp.Inputs[0].Contract.Layout.Levels = f.comp.Inputs[0].Contract.Layout.Levels[:1]
	f.comp.Inputs = f.comp.Inputs[:2]
	out := run(t, f.load(t), request(frameSeq(t, 0, 3)...), "pixels", "frame_offsets", "clip_offsets", "frame_lengths")
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 3)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 1)
	wantInts(t, "frame_lengths", out["frame_lengths"], 3)
	// A port that is not token_packed carries one frame.
	f.comp.Inputs = []*ir.Port{{Name: "encoded", Contract: contract("uint8", dims("bytes"))}}
	enc := frameSeq(t, 4, 1)[0]
	out = run(t, f.load(t), map[string]*backend.Tensor{"encoded": {DType: "uint8", Shape: []int64{int64(len(enc))}, Data: enc}}, "pixels", "frame_offsets")
	wantShape(t, "pixels", out["pixels"], 1, 3, 2, 2)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 40)
	// A grouped adapter whose one level is bytes→frames admits one frame
	// per request: each frame is its own clip and its own row.
	f = videoFixture(decodeOnly())
	f.comp.Inputs[0].Contract.Layout.Levels = f.comp.Inputs[0].Contract.Layout.Levels[:1]
	f.comp.Inputs = f.comp.Inputs[:2]
	f.comp.Capacity = &ir.Capacity{}
	out = run(t, f.load(t), request(frameSeq(t, 0, 3)...), "frame_offsets", "clip_offsets", "clip_owner", "frame_lengths")
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 1, 2, 3)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 1, 2, 3)
	wantInts(t, "clip_owner", out["clip_owner"], 0, 1, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 1, 1, 1)
}

// sample_frames: frame_stride k takes every k-th frame; num_frames m keeps
// floor(i·n/m) of n > m frames, and all of n <= m.
func TestVideoSampleIndices(t *testing.T) {
	all := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	for _, c := range []struct {
		n, stride, num int
		want           []int
	}{
		{10, 1, 4, []int{0, 2, 5, 7}},
		{10, 2, 3, []int{0, 2, 6}},
		{10, 3, 0, []int{0, 3, 6, 9}},
		{3, 1, 16, []int{0, 1, 2}},
		{16, 1, 16, all(16)},
		{32, 2, 16, []int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}},
		{7, 1, 1, []int{0}},
		{1, 5, 2, []int{0}},
	} {
		if got := sampleIndices(all(c.n), c.stride, c.num); !slices.Equal(got, c.want) {
			t.Errorf("%d frames, stride %d, num_frames %d: %v, want %v", c.n, c.stride, c.num, got, c.want)
		}
	}
}

// sample_frames through a session: the kept frames come out in order, and
// a frame sampling drops is never decoded, so a corrupt one does no harm.
func TestVideoSampleFrames(t *testing.T) {
	f := videoFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "num_frames", "4", "fps", "2.0")))
	s := f.load(t)
	clip := frameSeq(t, 0, 10)
	clip[1] = []byte("dropped by sampling, never decoded")
	out := run(t, s, videoRequest(clip, frameSeq(t, 20, 2)), "pixels", "frame_offsets", "frame_lengths")
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 4, 6)
	wantInts(t, "frame_lengths", out["frame_lengths"], 4, 2)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 20, 50, 70, 200, 210)
	f = videoFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "frame_stride", "2", "num_frames", "3")))
	out = run(t, f.load(t), videoRequest(frameSeq(t, 0, 10)), "pixels")
	wantFloats(t, "red", redOf(out["pixels"]), 0, 20, 60)
}

// pad_frames pads each clip to target_length with frames of pad_value and
// records the real frames; transforms after it change real frames only.
func TestVideoPadFramesPacked(t *testing.T) {
	f := videoFixture(decodeOnly(
		op("pad_frames", "v.decoded", "v.padded", "target_length", "4", "pad_value", "-7.5"),
		op("rescale", "v.padded", "v.rescaled", "factor", "0.1"),
	))
	out := run(t, f.load(t), videoRequest(frameSeq(t, 0, 3), frameSeq(t, 3, 1)),
		"pixels", "frame_offsets", "frame_owner", "clip_offsets", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 8, 3, 2, 2)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 4, 8)
	wantInts(t, "frame_owner", out["frame_owner"], 0, 0, 0, 0, 1, 1, 1, 1)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 3, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 1, 2, -7.5, 3, -7.5, -7.5, -7.5)
	for i, v := range out["pixels"].Float32s()[3*12 : 4*12] {
		if v != -7.5 {
			t.Fatalf("padding frame value %d = %v, want -7.5", i, v)
		}
	}
}

// A rank-5 request_aligned port, padded on frames, holds one clip per row:
// [rows, frames, 3, 2, 2], the lengths the real frames of each. With
// pad_frames every clip has target_length frames.
func TestVideoPaddedRequestAligned(t *testing.T) {
	// A grouped adapter with bytes→frames and frames→clips: each clip is
	// its own row.
	f := videoFixture(decodeOnly())
	f.comp.Capacity = &ir.Capacity{}
	f.stacked(ir.RequestAligned, "frames")
	out := run(t, f.load(t), videoRequest(frameSeq(t, 0, 3), frameSeq(t, 3, 1)), "pixels", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 2, 3, 3, 2, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 3, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 10, 20, 30, 0, 0)
	if tail := out["pixels"].Float32s()[4*12:]; slices.ContainsFunc(tail, func(v float32) bool { return v != 0 }) {
		t.Fatalf("the padding of clip 1 holds %v, want zeros", tail)
	}

	f = videoFixture(decodeOnly(
		op("sample_frames", "v.decoded", "v.sampled", "num_frames", "4", "frame_stride", "1", "fps", "2.0"),
		op("pad_frames", "v.sampled", "v.padded", "target_length", "4", "pad_value", "0.5"),
	))
	f.comp.Capacity = &ir.Capacity{}
	f.stacked(ir.RequestAligned, "frames")
	out = run(t, f.load(t), videoRequest(frameSeq(t, 0, 9), frameSeq(t, 3, 1)), "pixels", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 2, 4, 3, 2, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 4, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 20, 40, 60, 30, 0.5, 0.5, 0.5)

	// Without a batch_capacity, the clips of the one request are one row,
	// which a request_aligned port cannot hold.
	f.comp.Capacity = nil
	_, err := f.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 2), frameSeq(t, 2, 2)), nil)
	wantRunError(t, err, "run/input", "request_aligned", "row 0 brings 2 clips")
	out = run(t, f.load(t), videoRequest(frameSeq(t, 0, 2)), "pixels", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 1, 4, 3, 2, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 2)
}

// Stacked clips on a token_packed rank-5 port with one level (clips→rows)
// and a fixed frame count; a clip of another count is run/input.
func TestVideoStackedFixedFrames(t *testing.T) {
	f := videoFixture(decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "2")))
	f.stacked(ir.TokenPacked, 2)
	px := f.comp.Outputs[0].Contract
	px.Layout.Levels = []ir.Level{{Offsets: ir.Ref{Name: "clip_offsets"}, Owner: ir.Ref{Name: "clip_owner"}, Extent: ir.ExtentProduced}}
	f.comp.Outputs = append(f.comp.Outputs, &ir.Port{Name: "clip_offsets", Contract: contract("int64", dims("r1"))})
	f.prog.Outputs = append(f.prog.Outputs, ir.ProgramOutput{Name: "clip_offsets", Content: "pack_offsets"})
	out := run(t, f.load(t), videoRequest(frameSeq(t, 0, 2), frameSeq(t, 5, 1)), "pixels", "clip_offsets", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 2, 2, 3, 2, 2)
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 2)
	wantInts(t, "frame_lengths", out["frame_lengths"], 2, 1)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 10, 50, 0)

	f.prog.Transforms = decodeOnly()
	_, err := f.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 2), frameSeq(t, 5, 3)), nil)
	wantRunError(t, err, "run/input", "clip 1 holds 3 frames", "fixes frames (axis 1) at 2")
}

// Frames channels last: [frames, height, width, channels].
func TestVideoChannelsLast(t *testing.T) {
	f := videoFixture(decodeOnly(op("convert_color", "v.decoded", "v.bgr", "mode", "BGR")))
	f.comp.Outputs[0].Contract.Shape = dims("frames", 2, 2, 3)
	out := run(t, f.load(t), videoRequest(frameSeq(t, 1, 2)), "pixels")
	wantShape(t, "pixels", out["pixels"], 2, 2, 2, 3)
	got := out["pixels"].Float32s()
	wantFloats(t, "first pixel of frame 1", got[12:15], 200, 100, 20)
}

// A corrupt frame fails the invocation with run/input naming the frame,
// its clip, its bytes and what was read.
func TestVideoCorruptFrame(t *testing.T) {
	s := videoFixture(decodeOnly()).load(t)
	bad := frameSeq(t, 3, 2)
	bad[1] = []byte("not a frame")
	_, err := s.Run(context.Background(), videoRequest(frameSeq(t, 0, 3), bad), nil)
	wantRunError(t, err, "run/input", "frame 1 of clip 1", "frame 4 of the invocation", "bytes", "6e 6f 74", "`pre`")
	truncated := frameSeq(t, 0, 1)[0]
	_, err = s.Run(context.Background(), videoRequest([][]byte{truncated[:len(truncated)/2]}), nil)
	wantRunError(t, err, "run/input", "frame 0 of clip 0", "png")
	_, err = s.Run(context.Background(), videoRequest(frameSeq(t, 0, 1), [][]byte{nil}), nil)
	wantRunError(t, err, "run/input", "frame 0 of clip 1", "empty")
	// In a grouped invocation, each clip is its own row: the error lays
	// the failure at row 1, worded as that row's invocation alone.
	grouped := videoFixture(decodeOnly())
	grouped.comp.Capacity = &ir.Capacity{}
	_, err = grouped.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 3), bad), nil)
	var rows backend.RowErrors
	if !errors.As(err, &rows) || len(rows) != 1 || rows[0].Row != 1 {
		t.Fatalf("a grouped invocation with row 1's frame corrupt: %v, want the failure laid at row 1", err)
	}
	wantRunError(t, rows[0].Err, "run/input", "frame 1 of clip 0 of", "frame 1 of the invocation, bytes 80 to 91", "6e 6f 74")
	_, err = grouped.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 1), nil), nil)
	wantRunError(t, err, "run/input", "clip 1 (clip 0 of row 1)", "clip offsets `clips` give it frames 1 to 1")
	f := videoFixture([]ir.Transform{op("decode", "", "d", "format", "jpeg")})
	_, err = f.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 1)), nil)
	wantRunError(t, err, "run/input", "png image", "format jpeg")
}

// Clip-level errors: an empty clip, a clip longer than pad_frames pads,
// frames of different sizes, and offsets that do not split the input.
func TestVideoBadClips(t *testing.T) {
	s := videoFixture(decodeOnly()).load(t)
	_, err := s.Run(context.Background(), videoRequest(frameSeq(t, 0, 1), nil, frameSeq(t, 1, 1)), nil)
	wantRunError(t, err, "run/input", "clip 1", "holds no frames", "at least one frame")
	_, err = s.Run(context.Background(), videoRequest(frameSeq(t, 0, 1), [][]byte{encodePNG(t, solid(3, 2, frameColour(1)))}), nil)
	wantRunError(t, err, "run/input", "frame 0 of clip 1", "3×2×3", "fixes width (axis 3) at 2")
	free := videoFixture(decodeOnly())
	free.comp.Outputs[0].Contract.Shape = dims("frames", 3, "h", "w")
	_, err = free.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 2), [][]byte{encodePNG(t, solid(3, 2, frameColour(1)))}), nil)
	wantRunError(t, err, "run/input", "frame 0 of clip 1 is 3×2×3", "frame 0 of clip 0 is 3×2×2", "one size")
	in := videoRequest(frameSeq(t, 0, 2))
	in["clips"] = ints([]int64{0, 3})
	_, err = s.Run(context.Background(), in, nil)
	wantRunError(t, err, "run/offsets", "`clips`", "end at 3", "2 frames")
	in["clips"] = ints([]int64{0, 2, 1, 2})
	_, err = s.Run(context.Background(), in, nil)
	wantRunError(t, err, "run/offsets", "decrease at index 2")
	in = videoRequest(frameSeq(t, 0, 2))
	in["byte_offsets"].Data.([]int64)[2]--
	_, err = s.Run(context.Background(), in, nil)
	wantRunError(t, err, "run/offsets", "byte_offsets", "end at")
	in = videoRequest(frameSeq(t, 0, 2))
	delete(in, "clips")
	_, err = s.Run(context.Background(), in, nil)
	wantRunError(t, err, "run/input", "`clips`", "no value")

	f := videoFixture(decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "2")))
	_, err = f.load(t).Run(context.Background(), videoRequest(frameSeq(t, 0, 2), frameSeq(t, 2, 3)), nil)
	wantRunError(t, err, "run/input", "clip 1", "holds 3 frames", "target_length 2", "num_frames")

	// Padding is bounded like a decoded frame.
	f = videoFixture(decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "100")))
	b := New(f.m)
	b.MaxPixels = 64
	sess, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sess.Run(context.Background(), videoRequest(frameSeq(t, 0, 1)), nil)
	wantRunError(t, err, "run/input", "clip 0", "99 frames", "64 pixels")
}

// Ops, parameters and layouts the video adapter does not run are refused
// at Load with run/unsupported.
func TestVideoUnsupportedAtLoad(t *testing.T) {
	sample := func(params ...string) func(f *fixture) {
		return func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("sample_frames", "v.decoded", "v.sampled", params...))
		}
	}
	for _, c := range []struct {
		name      string
		edit      func(f *fixture)
		fragments []string
	}{
		{"fps alone", sample("fps", "2.0"), []string{"fps", "timestamps", "num_frames or frame_stride"}},
		{"no selection", sample(), []string{"no `num_frames` or `frame_stride`"}},
		{"bad num_frames", sample("num_frames", "0"), []string{"num_frames", "positive integer"}},
		{"bad fps", sample("fps", "fast", "num_frames", "2"), []string{"fps", "fast"}},
		{"sample after pad", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "4"),
				op("sample_frames", "v.padded", "v.sampled", "num_frames", "2"))
		}, []string{"transform 2 (sample_frames)", "already padded"}},
		{"pad twice", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "4"),
				op("pad_frames", "v.padded", "v.again", "target_length", "5"))
		}, []string{"transform 2 (pad_frames)", "pad once"}},
		{"no target", func(f *fixture) { f.prog.Transforms = decodeOnly(op("pad_frames", "v.decoded", "v.padded")) }, []string{"target_length"}},
		{"pad value", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "4", "pad_value", "nan"))
		}, []string{"pad_value", "finite"}},
		{"op", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("patchify", "v.decoded", "v.p", "patch_size", "14"))
		}, []string{"patchify", "transform 1"}},
		{"no decode", func(f *fixture) { f.prog.Transforms = []ir.Transform{op("rescale", "", "x", "factor", "2")} }, []string{"`rescale`", "decode"}},
		{"container", func(f *fixture) { f.prog.Transforms = []ir.Transform{op("decode", "", "d", "format", "mp4")} }, []string{"mp4", "demux"}},
		{"clip offsets not a port", func(f *fixture) { f.comp.Inputs = f.comp.Inputs[:2] }, []string{"`clips`", "not an input port", "by clip"}},
		{"three levels", func(f *fixture) {
			enc := f.comp.Inputs[0].Contract
			enc.Layout.Levels = append(enc.Layout.Levels, enc.Layout.Levels[1])
		}, []string{"3 ownership levels", "frames→clips"}},
		{"grouped not packed", func(f *fixture) {
			f.comp.Capacity = &ir.Capacity{}
			f.comp.Inputs = []*ir.Port{{Name: "encoded", Contract: contract("uint8", dims("bytes"))}}
		}, []string{"batch_capacity", "token_packed"}},
		{"request_aligned rank 4", func(f *fixture) { f.comp.Outputs[0].Contract.Layout = ir.Layout{Kind: ir.RequestAligned} }, []string{"request_aligned with rank 4", "rank 5"}},
		{"rank 3", func(f *fixture) { f.comp.Outputs[0].Contract = contract("float32", dims(3, 2, 2)) }, []string{"rank 3"}},
		{"three levels out", func(f *fixture) {
			px := f.comp.Outputs[0].Contract
			px.Layout.Levels = append(px.Layout.Levels, px.Layout.Levels[1])
		}, []string{"3 ownership levels"}},
		{"pads height", func(f *fixture) {
			f.stacked(ir.Shared, 4)
			f.comp.Outputs[0].Contract.Shape[3] = ir.Dim{Sym: "height"}
			f.comp.Outputs[0].Contract.Padding = []ir.Padding{{Dim: ir.Ref{Name: "height"}, Lengths: ir.Ref{Name: "frame_lengths"}}}
		}, []string{"pads `height`", "frames only"}},
		{"fixed frames", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("pad_frames", "v.decoded", "v.padded", "target_length", "4"))
			f.stacked(ir.Shared, 8)
		}, []string{"fixes frames (axis 1) at 8", "to 4 frames"}},
		{"fixed width", func(f *fixture) {
			f.prog.Transforms = decodeOnly(op("resize", "v.decoded", "v.r", "size", "3"))
		}, []string{"fixes height (axis 2) at 2", "`v.r` 3"}},
		{"companion role", func(f *fixture) { f.prog.Outputs[1].Content = "pack_owner" }, []string{"frame_offsets", "owner"}},
		{"content", func(f *fixture) { f.prog.Outputs[0].Content = "validity_mask" }, []string{"validity_mask", "pixel_values"}},
		{"dtype", func(f *fixture) { f.comp.Outputs[0].Contract.DType = "int32" }, []string{"int32", "float32, float16, bfloat16 or uint8"}},
		{"lengths dtype", func(f *fixture) { f.comp.Outputs[5].Contract.DType = "int32" }, []string{"frame_lengths", "int32", "int64"}},
		{"no program", func(f *fixture) { f.m.Programs = nil }, []string{"preprocessing.video"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := videoFixture(decodeOnly())
			c.edit(f)
			_, err := New(f.m).Load(f.comp, "")
			wantRunError(t, err, "run/unsupported", c.fragments...)
		})
	}
}

// Many frames of one request are decoded at once and stay in order, and a
// request without clips gets empty outputs.
func TestVideoManyFramesAndNoClips(t *testing.T) {
	f := videoFixture(decodeOnly())
	b := New(f.m)
	b.Workers = 3
	s, err := b.Load(f.comp, "")
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, s, videoRequest(frameSeq(t, 0, 7), frameSeq(t, 7, 5), frameSeq(t, 12, 8)), "pixels", "frame_offsets", "frame_owner")
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 7, 12, 20)
	red := redOf(out["pixels"])
	for i, v := range red {
		if v != float32(10*i) {
			t.Fatalf("frame %d has red %v, want %v (all %v)", i, v, 10*i, red)
		}
	}
	out = run(t, s, videoRequest(), "pixels", "frame_offsets", "frame_owner", "clip_offsets", "clip_owner", "frame_lengths")
	wantShape(t, "pixels", out["pixels"], 0, 3, 2, 2)
	wantInts(t, "frame_offsets", out["frame_offsets"], 0)
	wantInts(t, "frame_owner", out["frame_owner"])
	wantInts(t, "clip_offsets", out["clip_offsets"], 0, 0)
	wantInts(t, "clip_owner", out["clip_owner"])
	wantInts(t, "frame_lengths", out["frame_lengths"])
}

// Arbitrary bytes as a frame, and arbitrary clip offsets, fail a video
// request with run/input or run/offsets, never a panic; so does keying it
// at admission, which reads the same offsets and headers.
func FuzzVideoRequest(f *testing.F) {
	good := encodePNG(f, solid(3, 2, frameColour(1)))
	f.Add(good, uint8(1))
	f.Add(encodeJPEG(f, solid(2, 2, frameColour(2))), uint8(2))
	f.Add([]byte("GIF89a"), uint8(0))
	fx := videoFixture(decodeOnly(
		op("sample_frames", "v.decoded", "v.sampled", "num_frames", "2", "frame_stride", "1"),
		op("resize", "v.sampled", "v.resized", "size", "2"),
		op("pad_frames", "v.resized", "v.padded", "target_length", "2", "pad_value", "-1"),
	))
	b := New(fx.m)
	b.MaxPixels = 1 << 16 // keep each input cheap
	s, err := b.Load(fx.comp, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		in := videoRequest([][]byte{good, data, good})
		in["clips"] = ints([]int64{0, int64(cut % 4), 3})
		_, keyErr := s.(backend.Keyer).Key(in)
		_, err := s.Run(context.Background(), in, nil)
		for _, err := range []error{keyErr, err} {
			var re *backend.RunError
			if err != nil && (!errors.As(err, &re) || re.Rule != "run/input" && re.Rule != "run/offsets") {
				t.Fatalf("got %v, want nil, run/input or run/offsets", err)
			}
		}
		if keyErr == nil && err != nil && strings.Contains(err.Error(), "frames after preprocessing.video") {
			t.Fatalf("admission took the request, but its invocation failed on the frames a clip keeps: %v", err)
		}
	})
}

// A port of clips channels first, [clips, channels, frames, height, width]
// as 3D convolutions read them, holds what a port of frames first holds,
// its axes 1 and 2 swapped: real frames, pad frames and a padded port's
// tail alike; fixed or padded frames, stacked or request_aligned.
func TestVideoChannelsFirstClips(t *testing.T) {
	prog := func() []ir.Transform {
		return decodeOnly(
			op("sample_frames", "v.decoded", "v.sampled", "num_frames", "4"),
			op("pad_frames", "v.sampled", "v.padded", "target_length", "4", "pad_value", "0.5"),
		)
	}
	for _, c := range []struct {
		name   string
		layout ir.LayoutKind
		frames any // the frames axis: fixed, or padded by this name
	}{
		{"request_aligned padded", ir.RequestAligned, "frames"},
		{"request_aligned fixed", ir.RequestAligned, 4},
		{"token_packed fixed", ir.TokenPacked, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			fixture := func() *fixture {
				f := videoFixture(prog())
				f.comp.Capacity = &ir.Capacity{}
				f.stacked(c.layout, c.frames)
				if c.layout == ir.TokenPacked {
					px := f.comp.Outputs[0].Contract
					px.Layout.Levels = []ir.Level{{Offsets: ir.Ref{Name: "clip_offsets"}, Owner: ir.Ref{Name: "clip_owner"}, Extent: ir.ExtentProduced}}
					f.comp.Outputs = append(f.comp.Outputs, &ir.Port{Name: "clip_offsets", Contract: contract("int64", dims("r1"))})
					f.prog.Outputs = append(f.prog.Outputs, ir.ProgramOutput{Name: "clip_offsets", Content: "pack_offsets"})
				}
				return f
			}
			first, chans := fixture(), fixture()
			chans.comp.Outputs[0].Contract.Shape = dims("clips", 3, c.frames, 2, 2)
			in := videoRequest(frameSeq(t, 0, 6), frameSeq(t, 6, 2))
			want := run(t, first.load(t), in, "pixels")["pixels"]
			got := run(t, chans.load(t), in, "pixels")["pixels"]
			n, f := want.Shape[0], want.Shape[1]
			wantShape(t, "pixels", got, n, 3, f, 2, 2)
			w, g := want.Float32s(), got.Float32s()
			for b := range n {
				for ch := range int64(3) {
					for j := range f {
						for k := range int64(4) {
							if x, y := w[((b*f+j)*3+ch)*4+k], g[((b*3+ch)*f+j)*4+k]; x != y {
								t.Fatalf("clip %d channel %d frame %d pixel %d: %v channels first, %v frames first", b, ch, j, k, y, x)
							}
						}
					}
				}
			}
			if g[len(g)-1] != 0.5 {
				t.Errorf("the last clip's pad frames hold %v, want 0.5", g[len(g)-1])
			}
		})
	}
}
