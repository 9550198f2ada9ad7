package adapters_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// testdata/audio_encoder.yaml: the audio adapter frames each request's WAV
// clips; a binding encoder groups the frames of many requests and returns,
// per clip, the sum of the valid samples of its frames.

func clipEncoder(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	frames, offs, valid := in["frames"], in["frame_offsets"].Int64s(), in["frame_valid"].Int64s()
	if frames.Rank() != 2 || frames.Shape[1] != 4 || int64(len(valid)) != frames.Shape[0] {
		return nil, fmt.Errorf("frames %v with %d lengths, want [frames, 4] with one length per frame", frames, len(valid))
	}
	if clips := len(offs) - 1; clips > 6 || frames.Shape[0] > 64 {
		return nil, fmt.Errorf("a group of %d clips and %d frames exceeds its budgets", clips, frames.Shape[0])
	}
	data := frames.Float32s()
	out := make([]float32, len(offs)-1)
	for c := range out {
		for f := offs[c]; f < offs[c+1]; f++ {
			for _, v := range data[f*4 : f*4+valid[f]] {
				out[c] += v
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{int64(len(out)), 1}, Data: out}}, nil
}

// clipSum is the reference: frames of 4 samples every 3, covering every
// sample, each summed over its real samples.
func clipSum(samples []int16) float64 {
	n, sum := len(samples), 0.0
	for lo := 0; lo < n; lo += 3 {
		for _, v := range samples[lo:min(lo+4, n)] {
			sum += float64(v) / (1 << 15)
		}
		if lo+4 >= n {
			break
		}
	}
	return sum
}

func TestAudioEndToEndConcurrent(t *testing.T) {
	const doc = "testdata/audio_encoder.yaml"
	f := compile(t, doc)
	m := f.IR
	b := &backend.Bindings{}
	b.Register("encoder", clipEncoder)
	e, err := vm.Open(f, filepath.Dir(doc), map[ir.ImplKind]backend.Backend{ir.ImplAdapter: adapters.New(m), ir.ImplBinding: b}, vm.Options{
		MaxDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewSource(3))
	var clips [][][]int16
	var reqs []vm.Request
	for i := range 20 {
		var req [][]int16
		data, offs, owner := []byte{}, []int64{0}, []int64{}
		for c := range rng.Intn(4) {
			s := make([]int16, rng.Intn(30))
			for j := range s {
				s[j] = int16(rng.Intn(20000) - 10000)
			}
			req = append(req, s)
			w := fixtures.WAV16(16000, s)
			data = append(data, w...)
			offs = append(offs, int64(len(data)))
			for range w {
				owner = append(owner, int64(c))
			}
		}
		clips = append(clips, req)
		reqs = append(reqs, vm.Request{ID: fmt.Sprint("a", i), Inputs: map[string]*backend.Tensor{
			"wav":         {DType: "uint8", Shape: []int64{int64(len(data))}, Data: data},
			"wav_offsets": {DType: "int64", Shape: []int64{int64(len(offs))}, Data: offs},
			"wav_owner":   {DType: "int64", Shape: []int64{int64(len(owner))}, Data: owner},
		}})
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatalf("request %s: %v", r.ID, r.Err)
		}
		emb := r.Outputs.Get("clip_embeddings")
		if emb == nil || emb.Shape[0] != int64(len(clips[i])) {
			t.Fatalf("request %s: clip_embeddings %v, want %d rows", r.ID, emb, len(clips[i]))
		}
		for c, s := range clips[i] {
			if got, want := float64(emb.Float32s()[c]), clipSum(s); math.Abs(got-want) > 1e-4 {
				t.Errorf("request %s clip %d = %v, want %v", r.ID, c, got, want)
			}
		}
		if offs := r.Outputs.Get("audio.clip_offsets").Int64s(); len(offs) != 2 || offs[1] != int64(len(clips[i])) {
			t.Errorf("request %s: audio.clip_offsets %v, want [0, %d]", r.ID, offs, len(clips[i]))
		}
	}
	st := e.Stats().Components["encoder"]
	t.Logf("encoder: %d invocations for %d requests, largest group %d requests", st.Invocations, st.Requests, st.MaxGroupRequests)
}

// bandsFirstEncoder is the binding of audio_bands_first.yaml: per row,
// the sum of its values, each weighted by its band plus one, read bands
// first ([batch, 4, 8]: band b of frame f at b·8 + f).
func bandsFirstEncoder(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	x := in["features"]
	if x == nil || !slices.Equal(x.Shape[1:], []int64{4, 8}) || x.Shape[0] > 3 {
		return nil, fmt.Errorf("features %v, want at most 3 rows [batch, 4, 8]", x)
	}
	rows, data := x.Shape[0], x.Float32s()
	out := make([]float32, rows)
	for r := range rows {
		for i, v := range data[r*32 : (r+1)*32] {
			out[r] += float32(i/8+1) * v
		}
	}
	return map[string]*backend.Tensor{"sums": {DType: "float32", Shape: []int64{rows, 1}, Data: out}}, nil
}

// bandSum is its reference: frames of 4 samples every 3, the last
// zero-padded, sample j of a frame weighted by j + 1.
func bandSum(samples []int16) float64 {
	n, sum := len(samples), 0.0
	for lo := 0; lo < n; lo += 3 {
		for j, v := range samples[lo:min(lo+4, n)] {
			sum += float64(j+1) * float64(v) / (1 << 15)
		}
		if lo+4 >= n {
			break
		}
	}
	return sum
}

// Requests of one clip each, of 1 to 25 samples (1 to 8 frames), laid out
// bands first and grouped: each answer is its clip's weighted sum, which
// frames laid out first would not give, and equals its answer alone.
func TestAudioBandsFirstGrouped(t *testing.T) {
	e := openFrontEnd(t, "testdata/audio_bands_first.yaml", "encoder", bandsFirstEncoder)
	rng := rand.New(rand.NewSource(5))
	var clips [][]int16
	var reqs []vm.Request
	for i := range 18 {
		s := make([]int16, 1+rng.Intn(25))
		for j := range s {
			s[j] = int16(rng.Intn(20000) - 10000)
		}
		clips = append(clips, s)
		reqs = append(reqs, clipRequest(fmt.Sprint("b", i), fixtures.WAV16(16000, s)))
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		if r.Err != nil {
			t.Fatalf("request %s: %v", r.ID, r.Err)
		}
		got := r.Outputs.Get("sums")
		if got == nil || !slices.Equal(got.Shape, []int64{1, 1}) {
			t.Fatalf("request %s: sums %v, want [1, 1]", r.ID, got)
		}
		if want := bandSum(clips[i]); math.Abs(float64(got.Float32s()[0])-want) > 1e-4 {
			t.Errorf("request %s: sum %v, want %v", r.ID, got.Float32s()[0], want)
		}
		alone := e.RunAll(context.Background(), reqs[i:i+1])[0]
		if alone.Err != nil || !slices.Equal(alone.Outputs.Get("sums").Float32s(), got.Float32s()) {
			t.Errorf("request %s: grouped %v, alone %v (%v)", r.ID, got.Float32s(), alone.Outputs.Get("sums"), alone.Err)
		}
	}
	if st := e.Stats().Components["encoder"]; st.MaxGroupRequests < 2 {
		t.Errorf("the encoder took at most %d request a call: nothing was grouped", st.MaxGroupRequests)
	}
}
