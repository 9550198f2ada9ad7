package adapters_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/adapters"
)

// The video documents. In testdata/video_encoder.yaml each request brings
// 0 to 3 clips; the adapter packs the frames of every clip on one frame
// axis with both levels, and a binding encoder groups the frames of many
// requests and returns one embedding per clip. In testdata/video_padded.yaml
// each request brings one clip; a grouped adapter pads every clip to 4
// frames of -1 on a request_aligned [batch, frames, 3, 4, 4] port, and the
// encoder reads the real frames of each row by its lengths. Both programs
// keep at most 4 frames of a clip, at index floor(i·n/4) of n > 4.

// videoClip is one clip of a request: its frames' colours and encodings.
type videoClip struct {
	colours []color.NRGBA
	encoded [][]byte
}

// randomClip draws a clip of lo to hi solid frames of random sizes, PNG or
// JPEG.
func randomClip(t *testing.T, rng *rand.Rand, lo, hi int) videoClip {
	var c videoClip
	for range lo + rng.Intn(hi-lo+1) {
		col := color.NRGBA{R: uint8(rng.Intn(256)), G: uint8(rng.Intn(256)), B: uint8(rng.Intn(256)), A: 255}
		img := image.NewNRGBA(image.Rect(0, 0, 1+rng.Intn(9), 1+rng.Intn(9)))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = col.R, col.G, col.B, col.A
		}
		var b bytes.Buffer
		var err error
		if rng.Intn(2) == 0 {
			err = png.Encode(&b, img)
		} else {
			err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 100})
		}
		if err != nil {
			t.Fatal(err)
		}
		c.colours = append(c.colours, col)
		c.encoded = append(c.encoded, b.Bytes())
	}
	return c
}

// sampled is the reference of sample_frames num_frames 4: the frames a
// clip keeps.
func (c videoClip) sampled() []color.NRGBA {
	n := len(c.colours)
	if n <= 4 {
		return c.colours
	}
	out := make([]color.NRGBA, 4)
	for i := range out {
		out[i] = c.colours[i*n/4]
	}
	return out
}

// want is the embedding of a clip: per channel, the mean normalized value
// of its sampled frames.
func (c videoClip) want() [3]float64 {
	var out [3]float64
	kept := c.sampled()
	for _, col := range kept {
		for k, v := range []uint8{col.R, col.G, col.B} {
			out[k] += (float64(v)/255 - 0.5) / 0.5 / float64(len(kept))
		}
	}
	return out
}

// videoRequest packs clips into one request: the bytes, the byte offsets
// and owner of each frame, and the frame offsets and owner of each clip.
func videoRequest(id string, clips []videoClip) vm.Request {
	data, byteOffs, byteOwner := []byte{}, []int64{0}, []int64{}
	clipOffs, frameClip := []int64{0}, []int64{}
	frame := int64(0)
	for c, clip := range clips {
		for _, b := range clip.encoded {
			data = append(data, b...)
			byteOffs = append(byteOffs, int64(len(data)))
			for range b {
				byteOwner = append(byteOwner, frame)
			}
			frameClip = append(frameClip, int64(c))
			frame++
		}
		clipOffs = append(clipOffs, frame)
	}
	vec := func(v []int64) *backend.Tensor {
		return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(v))}, Data: v}
	}
	return vm.Request{ID: id, Inputs: map[string]*backend.Tensor{
		"video":              {DType: "uint8", Shape: []int64{int64(len(data))}, Data: data},
		"video_byte_offsets": vec(byteOffs),
		"video_byte_owner":   vec(byteOwner),
		"video_clip_frames":  vec(clipOffs),
		"video_frame_clip":   vec(frameClip),
	}}
}

// packedEncoder is the binding of video_encoder.yaml: per clip, the mean
// of each channel over its frames, within its budgets.
type packedEncoder struct {
	mu      sync.Mutex
	largest int64 // the most clips one group held
}

func (e *packedEncoder) run(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	px, offsTensor := in["pixels"], in["frame_offsets"]
	if px == nil || offsTensor == nil || px.Rank() != 4 || px.Shape[1] != 3 || px.Shape[2] != 4 || px.Shape[3] != 4 {
		return nil, fmt.Errorf("pixels %v with frame offsets %v, want [frames, 3, 4, 4] and offsets", px, offsTensor)
	}
	offs := offsTensor.Int64s()
	clips := int64(len(offs) - 1)
	if clips > 6 || px.Shape[0] > 24 || offs[clips] != px.Shape[0] {
		return nil, fmt.Errorf("a group of %d clips and %d frames (offsets %v) breaks its budgets or its offsets", clips, px.Shape[0], offs)
	}
	e.mu.Lock()
	e.largest = max(e.largest, clips)
	e.mu.Unlock()
	data := px.Float32s()
	out := make([]float32, clips*3)
	for c := range clips {
		n := offs[c+1] - offs[c]
		for f := offs[c]; f < offs[c+1]; f++ {
			for k := range int64(3) {
				sum := 0.0
				for _, v := range data[(f*3+k)*16 : (f*3+k+1)*16] {
					sum += float64(v)
				}
				out[c*3+k] += float32(sum / 16 / float64(n))
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{clips, 3}, Data: out}}, nil
}

// paddedEncoder is the binding of video_padded.yaml: per row, the mean of
// each channel over its real frames; every padding frame must hold -1.
func paddedEncoder(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	px, lt := in["frames"], in["lengths"]
	if px == nil || lt == nil || px.Rank() != 5 || px.Shape[2] != 3 || lt.Len() != px.Shape[0] {
		return nil, fmt.Errorf("frames %v with lengths %v, want [batch, frames, 3, 4, 4] and one length per row", px, lt)
	}
	rows, frames := px.Shape[0], px.Shape[1]
	if rows > 4 || rows*frames > 16 {
		return nil, fmt.Errorf("a group of %d rows of %d frames breaks its budgets", rows, frames)
	}
	data, lengths := px.Float32s(), lt.Int64s()
	out := make([]float32, rows*3)
	for r := range rows {
		for f := range frames {
			frame := data[(r*frames+f)*48 : (r*frames+f+1)*48]
			if f >= lengths[r] {
				for _, v := range frame {
					if v != -1 {
						return nil, fmt.Errorf("row %d padding frame %d holds %v, want -1", r, f, v)
					}
				}
				continue
			}
			for k := range int64(3) {
				sum := 0.0
				for _, v := range frame[k*16 : (k+1)*16] {
					sum += float64(v)
				}
				out[r*3+k] += float32(sum / 16 / float64(lengths[r]))
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{rows, 3}, Data: out}}, nil
}

func openVideo(t *testing.T, doc string, encoder backend.Func) *vm.Engine {
	t.Helper()
	f := compile(t, doc)
	m := f.IR
	b := &backend.Bindings{}
	b.Register("encoder", encoder)
	e, err := vm.Open(f, filepath.Dir(doc), map[ir.ImplKind]backend.Backend{ir.ImplAdapter: adapters.New(m), ir.ImplBinding: b}, vm.Options{
		MaxDelay: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// checkClips compares a response's embeddings with its clips (JPEG within
// its rounding).
func checkClips(t *testing.T, clips []videoClip, r vm.Response, output string) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("request %s: %v", r.ID, r.Err)
	}
	emb := r.Outputs.Get(output)
	if emb == nil || emb.Rank() != 2 || emb.Shape[0] != int64(len(clips)) || emb.Shape[1] != 3 {
		t.Fatalf("request %s: %s %v, want [%d, 3]", r.ID, output, emb, len(clips))
	}
	for c, clip := range clips {
		for k, want := range clip.want() {
			if got := float64(emb.Float32s()[c*3+k]); math.Abs(got-want) > 6.0/255 {
				t.Errorf("request %s clip %d channel %d = %v, want %v", r.ID, c, k, got, want)
			}
		}
	}
}

// Concurrent requests of 0 to 3 clips of 1 to 7 frames: the adapter packs
// each request's frames with both levels, the encoder groups the frames of
// several requests, and every request gets one embedding per clip and its
// clip offsets [0, clips].
func TestVideoEndToEndPacked(t *testing.T) {
	enc := &packedEncoder{}
	e := openVideo(t, "testdata/video_encoder.yaml", enc.run)
	rng := rand.New(rand.NewSource(5))
	var all [][]videoClip
	var reqs []vm.Request
	for i := range 24 {
		var clips []videoClip
		for range rng.Intn(4) {
			clips = append(clips, randomClip(t, rng, 1, 7))
		}
		all = append(all, clips)
		reqs = append(reqs, videoRequest(fmt.Sprint("v", i), clips))
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		checkClips(t, all[i], r, "clip_embeddings")
		n := int64(len(all[i]))
		if offs := r.Outputs.Get("video.clip_offsets"); offs == nil || len(offs.Int64s()) != 2 || offs.Int64s()[1] != n {
			t.Errorf("request %s: video.clip_offsets %v, want [0, %d]", r.ID, offs, n)
		}
		if owner := r.Outputs.Get("video.clip_owner"); owner == nil || owner.Len() != n {
			t.Errorf("request %s: video.clip_owner %v, want %d zeros", r.ID, owner, n)
		}
	}
	st := e.Stats().Components
	t.Logf("largest encoder group: %d clips; encoder: %d invocations for %d requests", enc.largest, st["encoder"].Invocations, st["encoder"].Requests)
}

// Concurrent requests of one clip of 1 to 7 frames: the grouped adapter
// pads every clip to 4 frames of -1, and the encoder reads the real ones.
func TestVideoEndToEndPadded(t *testing.T) {
	e := openVideo(t, "testdata/video_padded.yaml", paddedEncoder)
	rng := rand.New(rand.NewSource(9))
	var all [][]videoClip
	var reqs []vm.Request
	for i := range 24 {
		clips := []videoClip{randomClip(t, rng, 1, 7)}
		all = append(all, clips)
		reqs = append(reqs, videoRequest(fmt.Sprint("p", i), clips))
	}
	for i, r := range e.RunAll(context.Background(), reqs) {
		checkClips(t, all[i], r, "clip_embeddings")
	}
	st := e.Stats().Components
	t.Logf("adapter: %d invocations for %d requests; encoder: %d invocations, largest group %d requests",
		st["video_preprocess"].Invocations, st["video_preprocess"].Requests, st["encoder"].Invocations, st["encoder"].MaxGroupRequests)
}

// A corrupt frame fails its own request, naming the frame and its clip;
// the requests beside it succeed (the adapter of video_encoder.yaml runs
// one request per invocation).
func TestVideoEndToEndCorruptFrame(t *testing.T) {
	enc := &packedEncoder{}
	e := openVideo(t, "testdata/video_encoder.yaml", enc.run)
	rng := rand.New(rand.NewSource(13))
	good := []videoClip{randomClip(t, rng, 2, 4), randomClip(t, rng, 1, 3)}
	bad := []videoClip{randomClip(t, rng, 1, 1), randomClip(t, rng, 3, 3)}
	bad[1].encoded[1] = []byte("no frame here")
	resps := e.RunAll(context.Background(), []vm.Request{videoRequest("good", good), videoRequest("bad", bad), videoRequest("good too", good)})
	checkClips(t, good, resps[0], "clip_embeddings")
	checkClips(t, good, resps[2], "clip_embeddings")
	if resps[1].Err == nil {
		t.Fatal("the request with a corrupt frame succeeded")
	}
	for _, frag := range []string{"run/input", "video_preprocess", "frame 1 of clip 1", "6e 6f 20"} {
		if !strings.Contains(resps[1].Err.Error(), frag) {
			t.Errorf("error %q does not mention %q", resps[1].Err, frag)
		}
	}
}

// A frame whose header reads but whose data does not decode (cut short)
// reaches a group of the grouped adapter (video_padded.yaml): its clip's
// request fails with the error it meets alone, and the group's other
// clips run again as one group, not one invocation each.
func TestVideoEndToEndCutFrameFailsItsRequestOnce(t *testing.T) {
	e := openVideo(t, "testdata/video_padded.yaml", paddedEncoder)
	rng := rand.New(rand.NewSource(14))
	var clips [][]videoClip
	var reqs []vm.Request
	for i := range 4 {
		clips = append(clips, []videoClip{randomClip(t, rng, 1, 3)})
		reqs = append(reqs, videoRequest(fmt.Sprint("p", i), clips[i]))
	}
	cut := randomClip(t, rng, 3, 3)
	img := image.NewNRGBA(image.Rect(0, 0, 5, 6))
	var whole bytes.Buffer
	if err := png.Encode(&whole, img); err != nil {
		t.Fatal(err)
	}
	cut.encoded[2] = whole.Bytes()[:whole.Len()-20]
	reqs = slices.Insert(reqs, 1, videoRequest("cut", []videoClip{cut}))
	before := e.Stats().Components["video_preprocess"]
	resps := e.RunAll(context.Background(), reqs)
	after := e.Stats().Components["video_preprocess"]
	for i, k := range []int{0, 2, 3, 4} {
		checkClips(t, clips[i], resps[k], "clip_embeddings")
	}
	wantFailedAloneOnce(t, resps[1], e.Run(context.Background(), reqs[1]), "frame 2 of clip 0 of input port", before, after, 4)
}

// stackedEncoder is the binding of video_fixed.yaml and of its variant
// whose clips make their own number of frames: per row, the mean of each
// channel over its frames.
func stackedEncoder(_ context.Context, in map[string]*backend.Tensor) (map[string]*backend.Tensor, error) {
	px := in["frames"]
	if px == nil || px.Rank() != 5 || px.Shape[2] != 3 || px.Shape[3] != 4 || px.Shape[4] != 4 {
		return nil, fmt.Errorf("frames %v, want [batch, frames, 3, 4, 4]", px)
	}
	rows, frames := px.Shape[0], px.Shape[1]
	data := px.Float32s()
	out := make([]float32, rows*3)
	for r := range rows {
		for f := range frames {
			frame := data[(r*frames+f)*48 : (r*frames+f+1)*48]
			for k := range int64(3) {
				sum := 0.0
				for _, v := range frame[k*16 : (k+1)*16] {
					sum += float64(v)
				}
				out[r*3+k] += float32(sum / 16 / float64(frames))
			}
		}
	}
	return map[string]*backend.Tensor{"embeddings": {DType: "float32", Shape: []int64{rows, 3}, Data: out}}, nil
}

// shortAndLong are requests of one clip of 1 to 7 frames each, half of
// them given as tensors and half as items (a frame an item, as genaic
// run and serve read a clip), and their clips.
func shortAndLong(t *testing.T, seed int64) ([]vm.Request, [][]videoClip) {
	rng := rand.New(rand.NewSource(seed))
	var reqs []vm.Request
	var all [][]videoClip
	for i := range 24 {
		clips := []videoClip{randomClip(t, rng, 1, 7)}
		r := videoRequest(fmt.Sprint("c", i), clips)
		if i%2 == 1 {
			r = vm.Request{ID: r.ID, Items: map[string][]vm.Item{"video": vm.ByteItems(clips[0].encoded...)}}
		}
		reqs, all = append(reqs, r), append(all, clips)
	}
	return reqs, all
}

// A port that fixes a clip's frames at 4: a request whose clip keeps fewer
// is refused at admission, alone, saying why; the clips beside it are
// grouped and answered, and no invocation of the adapter fails (a group
// failed by one clip would be run again one request at a time).
func TestVideoShortClipRefusedAtAdmission(t *testing.T) {
	e := openVideo(t, "testdata/video_fixed.yaml", stackedEncoder)
	reqs, all := shortAndLong(t, 17)
	short := 0
	for i, r := range e.RunAll(context.Background(), reqs) {
		if n := len(all[i][0].encoded); n < 4 {
			short++
			if r.Err == nil {
				t.Errorf("request %s of a clip of %d frames succeeded", r.ID, n)
				continue
			}
			for _, frag := range []string{"run/input", fmt.Sprintf("clip 0 holds %d frames", n), "fixes frames (axis 1) at 4"} {
				if !strings.Contains(r.Err.Error(), frag) {
					t.Errorf("request %s: error %q does not say %q", r.ID, r.Err, frag)
				}
			}
			continue
		}
		checkClips(t, all[i], r, "clip_embeddings")
	}
	st := e.Stats().Components["video_preprocess"]
	if short == 0 || short == len(reqs) || st.Failed != 0 || st.Regrouped != 0 || st.MaxGroupRequests < 2 {
		t.Errorf("%d of %d clips short; the adapter: %d calls failed, %d groups run again, largest group %d requests: want some short, none failed, groups",
			short, len(reqs), st.Failed, st.Regrouped, st.MaxGroupRequests)
	}
}

// A port of clips that neither pads nor fixes their frames: clips that
// keep different numbers of frames never share an invocation (the adapter
// keys them by it), so every request is answered and no call fails.
func TestVideoClipsKeyedByFrames(t *testing.T) {
	doc, err := os.ReadFile("testdata/video_fixed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(doc), "[batch, 4, 3, 4, 4]", "[batch, length, 3, 4, 4]")
	s = strings.Replace(s, "implementation: { kind: binding }\n        batch_capacity:\n", "implementation: { kind: binding }\n        batch_capacity:\n          uniform_dimensions: [length]\n", 1)
	path := filepath.Join(t.TempDir(), "video_keyed.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	e := openVideo(t, path, stackedEncoder)
	reqs, all := shortAndLong(t, 23)
	for i, r := range e.RunAll(context.Background(), reqs) {
		checkClips(t, all[i], r, "clip_embeddings")
	}
	st := e.Stats().Components["video_preprocess"]
	if st.Failed != 0 || st.Regrouped != 0 || st.MaxGroupRequests < 2 {
		t.Errorf("the adapter: %d calls failed, %d groups run again, largest group %d requests: want none failed, groups", st.Failed, st.Regrouped, st.MaxGroupRequests)
	}
}
