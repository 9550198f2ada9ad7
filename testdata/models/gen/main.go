// Command gen writes the tiny ONNX models of the end-to-end fixtures under
// testdata/packages. Run it from anywhere inside the checkout:
//
//	go run ./testdata/models/gen          write every model
//	go run ./testdata/models/gen -check   fail when a committed model is stale
//
// The models are built by internal/testmodels, which encodes the ONNX
// ModelProto itself (protowire; no onnx library, no Python): IR version 8,
// the default operator set at version 17, producer "genaic-testmodels" 1,
// fields in ascending number, weights from a seeded generator. The bytes are
// a pure function of the source, and the tests of internal/testmodels fail
// when a committed file differs from what this command writes.
//
// # The models
//
// Every model uses only standard operators ONNX Runtime runs on the CPU. A
// "patch embedding" is x·W + b over the last axis, with W and b small fixed
// initializers (multiples of 1/32 in [-1, 1)); Model.Weights in
// internal/testmodels returns them, and Model.Reference computes each
// function below in plain Go. Pools divide by max(count, 1), so an item
// with nothing to pool yields zeros. Each port name equals the component's
// port name in the package's inference_metadata.yaml; dimensions the model
// fixes are noted as name=N, the others are dynamic (dim_param = the
// metadata's symbol).
//
// image_padded/encoder.onnx (component encoder; images packed one level,
// patches right-padded):
//
//	in   pixel_patches [images, patches, features=8] f32
//	     patch_lengths [images] i64, image_offsets [image_offsets_len] i64,
//	     image_owner [images] i64 (the companions are read by nothing)
//	out  embeddings [images, hidden=4] f32
//	     embeddings[i] = Σ_{p<L} (pixel_patches[i,p]·W + b) / max(L, 1),
//	     L = clamp(patch_lengths[i], 0, patches)
//
// Padded positions are dropped with Where before the sum, so their values,
// NaN and infinities included, never reach a result.
//
// image_pinned/encoder.onnx (component encoder; one resolution per group:
// patches is uniform; the companions are workflow values, not ports):
//
//	in   pixel_patches [images, patches, features=8] f32
//	out  embeddings [images, hidden=4] f32
//	     embeddings[i] = mean over all p of pixel_patches[i,p]·W + b
//
// video_frames/clip_encoder.onnx (component clip_encoder; frames packed,
// levels frames→clips and clips→rows, patches right-padded per frame):
//
//	in   pixel_values [frames, patches, features=8] f32
//	     patch_lengths [frames] i64
//	     frame_offsets [frame_offsets_len] i64, frame_owner [frames] i64
//	     clip_offsets [clip_offsets_len] i64, clip_owner [clips] i64 (read by nothing)
//	out  clip_embeddings [clips, hidden=4] f32
//	     frame[f] = the image_padded embedding of pixel_values[f] with patch_lengths[f]
//	     clip_embeddings[c] = Σ_{f: frame_owner[f]=c} frame[f] / max(#{f: frame_owner[f]=c}, 1)
//	     for c < len(frame_offsets) − 1
//
// video_fixed/clip_encoder.onnx (component clip_encoder; whole clips packed
// one level; frames and patches uniform; no companion ports):
//
//	in   pixel_values [clips, frames, patches, features=8] f32
//	out  clip_embeddings [clips, hidden=4] f32
//	     clip_embeddings[c] = mean over all t, p of pixel_values[c,t,p]·W + b
//
// audio/window_encoder.onnx (component window_encoder; spectrogram frames
// packed, levels frames→windows and windows→rows; the level-1 pair is not
// a port):
//
//	in   spectrogram [frames, bins=6] f32
//	     frame_offsets [frame_offsets_len] i64, frame_owner [frames] i64
//	out  window_embeddings [windows, hidden=4] f32
//	     window_embeddings[w] = element-wise max over {f: frame_owner[f]=w} of
//	     spectrogram[f]·W + b, zeros when the set is empty, w < len(frame_offsets) − 1
//
// audio_mel/mel_encoder.onnx (component mel_encoder; the same function
// over the log-mel frames the built-in audio adapter computes of each clip,
// levels frames→clips and clips→rows):
//
//	in   spectrogram [frames, mels=6] f32
//	     frame_offsets [clips_plus_one] i64, frame_owner [frames] i64
//	out  window_embeddings [clips, hidden=4] f32, one per clip
//
// image_patches/patch_encoder.onnx (component patch_encoder; the same
// function over the 2×2 RGB patches the built-in image adapter's patchify
// makes of each image, levels patches→images and images→rows):
//
//	in   patches [patches, features=12] f32
//	     patch_offsets [images_plus_one] i64, patch_owner [patches] i64
//	out  image_embeddings [images, hidden=4] f32, one per image
//
// image_tiles/tile_encoder.onnx (component tile_encoder; the same function
// over the 4×4 RGB tiles the built-in image adapter's tile makes of each
// image, each flattened to its 48 values, levels tiles→images and
// images→rows):
//
//	in   tiles [tiles, 3, 4, 4] f32
//	     tile_offsets [images_plus_one] i64, tile_owner [tiles] i64
//	out  image_embeddings [images, hidden=4] f32, one per image
//
// video_fps/frame_encoder.onnx (component frame_encoder; the same function
// over the 4×4 RGB frames the built-in video adapter samples by time from
// each clip, each flattened, levels frames→clips and clips→rows):
//
//	in   pixels [frames, 3, 4, 4] f32
//	     frame_offsets [clips_plus_one] i64, frame_owner [frames] i64
//	out  clip_embeddings [clips, hidden=4] f32, one per clip
//
// text/segment_encoder.onnx (component segment_encoder; token ids packed,
// levels tokens→segments and segments→rows; no uniform dimension):
//
//	in   token_ids [tokens] i64 (in [0, 32))
//	     token_offsets [token_offsets_len] i64, token_owner [tokens] i64
//	out  segment_embeddings [segments, hidden=4] f32
//	     h[t] = E[token_ids[t]]·W + b with E a 32×8 table
//	     segment_embeddings[s] = Σ_{t: token_owner[t]=s} h[t] / max(#, 1), s < len(token_offsets) − 1
//
// token_merge/merger.onnx (component merger; tokens packed, levels
// tokens→segments and segments→rows; the output's inner level is produced
// by the graph, its outer level preserved):
//
//	in   tokens [tokens, hidden=4] f32, token_offsets [token_offsets_len] i64
//	     segment_offsets [segment_offsets_len] i64, segment_owner [segments] i64
//	     (read by nothing: ports so that the budget on segments names a port symbol)
//	out  merged [merged, hidden=4] f32
//	     merged_offsets [merged_offsets_len] i64, merged_owner [merged] i64
//	     h[t] = tokens[t]·W + b; segment s spans [o_s, o_{s+1}) of token_offsets,
//	     n_s = o_{s+1} − o_s, and yields m_s = ceil(n_s / 2) merged tokens;
//	     merged_offsets = [0, m_0, m_0+m_1, ...] (one entry per segment, plus one);
//	     merged token j of segment s (position merged_offsets[s] + j) is
//	     (h[o_s+2j] + h[min(o_s+2j+1, o_{s+1}−1)]) / 2, and merged_owner is s
//
// request_expanded/denoiser.onnx (component denoiser; classifier-free
// guidance: two rows per request, request_expanded factor 2):
//
//	in   latents [expanded_rows, channels=4] f32 (row 2r conditional, 2r+1 unconditional)
//	     guidance_scale [1] f32 (shared)
//	out  noise [expanded_rows, channels=4] f32, noise[i] = tanh(latents[i]·W + b)
//	     guided [batch, channels=4] f32 (request_aligned),
//	     guided[r] = noise[2r+1] + guidance_scale[0]·(noise[2r] − noise[2r+1])
//
// time_major/encoder.onnx (component encoder; time-major: a request's row
// is on axis 1, request_aligned with axis 1; steps uniform in a group):
//
//	in   frames [steps, batch, width=4] f32
//	out  states [steps, batch, hidden=4] f32 (request axis 1),
//	     states[t,r] = tanh(frames[t,r]·W + b)
//	     pooled [batch, hidden=4] f32 (request axis 0),
//	     pooled[r] = Σ_t states[t,r] / steps
//
// solo/scorer.onnx (component scorer; no batch_capacity, never grouped):
//
//	in   features [batch, width=4] f32
//	out  scores [batch, width=4] f32
//	     scores[r] = features[r]·W + b + (mean over all rows of features)·V
//
// ocr_lines/recognizer.onnx (component recognizer; text lines packed one
// level, each a sequence of width pixel columns of height pixels, right-padded
// on width; height is uniform):
//
//	in   line_images [lines, width, height] f32
//	     line_widths [lines] i64, line_offsets [line_offsets_len] i64,
//	     line_owner [lines] i64 (the companions are read by nothing)
//	out  line_scores [lines, classes=4] f32
//	     c[i,w] = mean over h of line_images[i,w,h]
//	     line_scores[i] = Σ_{w<L} tanh(c[i,w]·W + b) / max(L, 1),
//	     L = clamp(line_widths[i], 0, width)
//
// sample_rate/vad.onnx (component vad; shaped as Silero VAD is: rows of
// audio request_aligned, and the sample rate a rank-0 int64, shared):
//
//	in   audio [batch, samples=4] f32, sr [] i64 (rank 0, shared)
//	out  speech [batch, hidden=4] f32, speech[r] = audio[r]·W + b + (sr / 8192)·V
//	     hop [] i64 (rank 0, shared), hop = sr / 100 (integer division)
//
// The solo scorer's rows are deliberately dependent: grouping two requests
// into one call would change both results.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/genaic/genaic/internal/testmodels"
)

func main() {
	check := flag.Bool("check", false, "write nothing; fail when a committed model differs from what would be written")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./testdata/models/gen [-check]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	root, err := checkoutRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
	stale := 0
	for _, m := range testmodels.Models() {
		stale += generate(root, m.Path(), m.Bytes(), *check)
	}
	for _, d := range testmodels.Documents() {
		stale += generate(root, d.Path(), d.Bytes(), *check)
	}
	if stale > 0 {
		os.Exit(1)
	}
}

// generate writes one generated file, or with check compares it with the
// committed one; it returns 1 when the committed file is stale.
func generate(root, rel string, want []byte, check bool) int {
	path := filepath.Join(root, filepath.FromSlash(rel))
	if check {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			fmt.Fprintf(os.Stderr, "gen: %s is stale or missing; run: go run ./testdata/models/gen\n", rel)
			return 1
		}
		return 0
	}
	if err := write(path, want); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("%s (%d bytes)\n", rel, len(want))
	return 0
}

// write replaces path with data unless it already holds exactly data, so
// an unchanged model keeps its modification time.
func write(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// checkoutRoot returns the nearest folder at or above the working directory
// whose go.mod declares the genaic module.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/genaic/genaic\n") {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no genaic checkout (a go.mod declaring github.com/genaic/genaic) at or above the working directory")
		}
		dir = parent
	}
}
