package e2e

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

// testdata/packages/wakeword_audio end to end: WAV clips through the
// documented openWakeWord program (wakeword_frontend_test.go compares it
// with openWakeWord's own front end) into openWakeWord's embedding model.

// embeddingTolerance bounds the absolute difference between an embedding
// the package computes from a WAV clip and the embedding model run
// directly on openWakeWord's own windows of the clip. The two inputs differ
// by at most frontEndTolerance (the adapter's float64 STFT against the
// model's float32 one); the CNN carries that difference to its outputs,
// whose magnitudes reach 42 on the clips below. The largest difference seen
// is 2.6e-4; the tolerance leaves four times that. A front end off by 0.01
// (an offset of 2.01) moves embeddings by more than 1e-3 already.
const embeddingTolerance = 1e-3

// wakewordReference embeds a clip as openWakeWord does: its front end's
// windows, then the embedding model run directly on them, on ONNX Runtime.
type wakewordReference struct {
	oww   owwFrontEnd
	embed backend.Session
}

func newWakewordReference(t *testing.T) wakewordReference {
	t.Helper()
	return wakewordReference{newOWWFrontEnd(t), session(t, fixtures.Lookup("wakeword_audio"), "embedding", ortBackend(t))}
}

// embeddings is [windows, 1, 1, 96] for a clip's samples.
func (r wakewordReference) embeddings(t *testing.T, samples []int16) *backend.Tensor {
	t.Helper()
	w := r.oww.windows(t, samples)
	if w.Shape[0] == 0 {
		return fixtures.F32([]int64{0, 1, 1, 96}, []float32{})
	}
	out, err := r.embed.Run(context.Background(), map[string]*backend.Tensor{"input_1": w}, []string{"conv2d_19"})
	if err != nil {
		t.Fatal(err)
	}
	return out["conv2d_19"]
}

// checkClipEmbeddings compares a response's embeddings, clip by clip
// (audio.window_offsets), with each clip's reference, and returns the
// largest difference.
func checkClipEmbeddings(t *testing.T, ref wakewordReference, r vm.Response, clips []frontEndClip) float64 {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("%s: %v", r.ID, r.Err)
	}
	emb, offs := r.Outputs.Get("embeddings"), r.Outputs.Get("audio.window_offsets").Int64s()
	if len(offs) != len(clips)+1 {
		t.Fatalf("%s: window offsets %v for %d clips", r.ID, offs, len(clips))
	}
	worst := 0.0
	for k, c := range clips {
		got, want := emb.View(offs[k], offs[k+1]), ref.embeddings(t, c.samples)
		if d := fixtures.Diff(got, want, embeddingTolerance); d != "" {
			t.Errorf("%s clip %d (%s): %s", r.ID, k, c.name, d)
			continue
		}
		g, w := got.Float32s(), want.Float32s()
		for i := range g {
			worst = max(worst, math.Abs(float64(g[i])-float64(w[i])))
		}
	}
	return worst
}

// TestWakewordAudio: testdata/packages/wakeword_audio, from WAV bytes to
// openWakeWord's embeddings on both engines. Requests of one to three of
// the front end's clips (no frame, no window, one window, several) run
// concurrently; the embedding model groups the windows of several
// requests, and each clip's embeddings equal the embedding model run
// directly on openWakeWord's own windows of the clip (its melspectrogram
// model, on ONNX Runtime) within embeddingTolerance.
func TestWakewordAudio(t *testing.T) {
	ref := newWakewordReference(t)
	f := fixtures.Lookup("wakeword_audio")
	clips := frontEndClips()
	var reqs []vm.Request
	var of [][]frontEndClip
	for i := range 12 {
		var cs []frontEndClip
		var wavs [][]byte
		for k := range 1 + i%3 {
			c := clips[(i+2*k)%len(clips)]
			cs, wavs = append(cs, c), append(wavs, c.wav)
		}
		reqs, of = append(reqs, fixtures.WakewordAudioRequest(fmt.Sprint("r", i), wavs)), append(of, cs)
	}
	forEachEngine(t, func(t *testing.T, e engineKind) {
		r := e.start(t, f, genrt.WithMaxDelay(200*time.Millisecond))
		res := runAll(context.Background(), r, reqs)
		if s := r.Stats().Components["embedding"]; s.MaxGroupRequests < 2 || s.Invocations >= s.Requests {
			t.Errorf("the windows were not grouped: %d invocations for %d requests, largest group %d", s.Invocations, s.Requests, s.MaxGroupRequests)
		}
		worst := 0.0
		for i, resp := range res {
			worst = max(worst, checkClipEmbeddings(t, ref, resp, of[i]))
		}
		t.Logf("largest difference from the embedding model on openWakeWord's windows: %.3g", worst)
	})
}

// requestsFileClips are the requests of testdata/packages/wakeword_audio's
// requests.json, by id, and the clips of each: a tone of one window, and
// speech of two windows beside speech too short for one.
func requestsFileClips() (ids []string, clips [][]frontEndClip) {
	rng := rand.New(rand.NewPCG(76, 32))
	clip := func(name string, samples []int16) frontEndClip {
		return frontEndClip{name, samples, fixtures.WAV16(16000, samples)}
	}
	return []string{"tone", "speech-and-short"}, [][]frontEndClip{
		{clip("440 Hz tone, 12512 samples", fixtures.Tone(12512, 16000, 440, 0.5))},
		{clip("speech, 13792 samples", fixtures.Speech(rng, 13792, 16000)), clip("speech, 1600 samples", fixtures.Speech(rng, 1600, 16000))},
	}
}

// TestWakewordAudioRequestsFile: the package's requests.json (rewritten by
// GENAIC_UPDATE=1) holds the WAV clips of requestsFileClips as base64
// items, as `genaic run` reads it, and its requests run on both engines
// to each clip's openWakeWord embeddings, delivered per clip as items.
func TestWakewordAudioRequestsFile(t *testing.T) {
	ids, clips := requestsFileClips()
	wavs := make([][][]byte, len(clips))
	want := make([][]*backend.Tensor, len(clips))
	ref := newWakewordReference(t)
	for i, cs := range clips {
		for _, c := range cs {
			wavs[i] = append(wavs[i], c.wav)
			want[i] = append(want[i], ref.embeddings(t, c.samples))
		}
	}
	reqs := itemsFile(t, wakewordAudio, "wav", ids, wavs)
	forEachEngine(t, func(t *testing.T, e engineKind) {
		r := e.start(t, fixtures.Lookup("wakeword_audio"), genrt.WithMaxDelay(200*time.Millisecond))
		checkItemOutputs(t, runAll(context.Background(), r, reqs), "embeddings", want, embeddingTolerance)
	})
}
