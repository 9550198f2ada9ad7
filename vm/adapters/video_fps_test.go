package adapters

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

func times(fps float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i) / fps
	}
	return out
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// sampleByTime keeps the frame nearest to every 1/fps seconds, each once.
func TestSampleByTime(t *testing.T) {
	for _, c := range []struct {
		name  string
		times []float64
		src   []int
		fps   float64
		want  []int
	}{
		{"30 fps at 2", times(30, 61), upTo(61), 2, []int{0, 15, 30, 45, 60}},
		{"29.97 fps at 1", times(30000.0/1001, 91), upTo(91), 1, []int{0, 30, 60, 90}},
		{"upsampling keeps every frame once", times(5, 6), upTo(6), 24, upTo(6)},
		{"one frame", []float64{3.5}, []int{0}, 2, []int{0}},
		{"variable rate", []float64{0, 0.1, 0.45, 0.55, 1.2, 1.3}, upTo(6), 2, []int{0, 2, 4}},
		{"a tie goes to the earlier frame", []float64{0, 0.25, 0.75, 1}, upTo(4), 2, []int{0, 1, 3}},
		{"an offset start", []float64{10, 10.5, 11, 11.5}, upTo(4), 1, []int{0, 2}},
		{"already sampled", times(10, 20), []int{0, 5, 10, 15}, 1, []int{0, 10}},
		{"huge fps", times(30, 4), upTo(4), 1e300, upTo(4)},
	} {
		if got := sampleByTime(c.src, c.times, c.fps); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// timedFixture is videoFixture with a float64 input port of frame times.
func timedFixture(transforms []ir.Transform) *fixture {
	f := videoFixture(transforms)
	f.comp.Inputs = append(f.comp.Inputs, &ir.Port{Name: "times", Contract: contract("float64", dims("frames"))})
	return f
}

func timedRequest(ts []float64, clips ...[][]byte) map[string]*backend.Tensor {
	in := videoRequest(clips...)
	in["times"] = &backend.Tensor{DType: "float64", Shape: []int64{int64(len(ts))}, Data: ts}
	return in
}

// With frame times, sample_frames by fps alone keeps the frames nearest to
// every 1/fps seconds of each clip; then num_frames caps them.
func TestVideoSampleByFPS(t *testing.T) {
	f := timedFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "fps", "2.0")))
	a, b := frameSeq(t, 0, 10), frameSeq(t, 20, 5)
	a[1] = []byte("dropped by sampling, never decoded")
	ts := append(times(4, 10), times(10, 5)...) // 4 fps for 2.25 s, then 10 fps for 0.4 s
	out := run(t, f.load(t), timedRequest(ts, a, b), "pixels", "frame_offsets", "frame_lengths")
	wantInts(t, "frame_offsets", out["frame_offsets"], 0, 5, 6)
	wantFloats(t, "red", redOf(out["pixels"]), 0, 20, 40, 60, 80, 200)
	f = timedFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "fps", "2.0", "num_frames", "3")))
	out = run(t, f.load(t), timedRequest(times(4, 10), frameSeq(t, 0, 10)), "pixels")
	wantFloats(t, "red", redOf(out["pixels"]), 0, 20, 60)
}

// Frame times missing, of another count, out of order or not finite fail
// the request with run/input.
func TestVideoFrameTimesRefused(t *testing.T) {
	s := timedFixture(decodeOnly(op("sample_frames", "v.decoded", "v.sampled", "fps", "2.0"))).load(t)
	clip := frameSeq(t, 0, 3)
	for _, c := range []struct {
		in        map[string]*backend.Tensor
		fragments []string
	}{
		{videoRequest(clip), []string{"input port `times`", "has no value", "presentation times"}},
		{timedRequest([]float64{0, 1}, clip), []string{"2 frame times", "3 frames"}},
		{timedRequest([]float64{0, 1, 0.5}, clip), []string{"frame 2 at 0.5s after frame 1 at 1s", "time order"}},
		{timedRequest([]float64{0, math.NaN(), 1}, clip), []string{"frame 1 the time NaN", "finite"}},
	} {
		_, err := s.Run(context.Background(), c.in, nil)
		wantRunError(t, err, "run/input", c.fragments...)
	}
}

// Any non-decreasing finite times and any positive fps keep a subsequence
// of the frames: the first, in order, each once.
func FuzzSampleByTime(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 200}, 2.0)
	f.Add([]byte{5, 5, 5}, 1e-300)
	f.Add([]byte{}, 30.0)
	f.Fuzz(func(t *testing.T, steps []byte, fps float64) {
		if !(fps > 0) || math.IsInf(fps, 0) || len(steps) > 4096 {
			return
		}
		ts := make([]float64, len(steps))
		at := 0.0
		for i, b := range steps {
			at += float64(b) * 0.01
			ts[i] = at
		}
		got := sampleByTime(upTo(len(ts)), ts, fps)
		if len(ts) > 0 && (len(got) == 0 || got[0] != 0) {
			t.Fatalf("times %v at %g fps keep %v, not the first frame", ts, fps, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] || got[i] >= len(ts) {
				t.Fatalf("times %v at %g fps keep %v", ts, fps, got)
			}
		}
	})
}
