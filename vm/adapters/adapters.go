// Package adapters runs genaic's built-in preprocessing adapters (DESIGN §9):
// components whose implementation is `{kind: adapter, abi:
// onnx-genai.<modality>-preprocess, version: "1"}`. A session runs the
// document's preprocessing program of that modality natively in Go and fills
// each output port of the adapter with the content role of the program
// output bound to it.
//
// # Programs and binding
//
// Load compiles the program with package preprocess, which holds the op
// table (each op's parameters, types, ranges and shape function, and which
// adapter runs it), checks the program the way `genaic check` does, and
// binds each output port to the program output that binds it
// (preprocess.Bind). Whatever check refuses, Load refuses with
// run/unsupported. This package keeps the kernels, keyed by the compiled
// op; the notes below say only what the kernels add to the table.
//
// # Input (every modality)
//
// The adapter has one uint8 input port, the encoded bytes. When that port
// is token_packed, its level 0 offsets split the bytes into items (images,
// audio clips, video frames: item i is bytes [offsets[i], offsets[i+1])),
// and the offsets must be an input port of the adapter, bound in the
// invoke like the bytes: a session receives only the ports an invoke
// binds. A second level (items→rows), when declared, gives the rows of the
// invocation (the video adapter reads it as frames→clips, see below); its
// offsets are read from an input port of that name when there is one (and
// must be, when the adapter has a batch_capacity). A port that is not
// token_packed carries exactly one item: all of its bytes. Owner companions
// are never read (owners are derived from offsets). No other input port is
// accepted.
//
// Rows. Without a level 1 port, a component without batch_capacity runs one
// request per invocation, so all of its items are one row: [0, N]. With a
// batch_capacity and one level, the runtime's admission makes each request
// bring one row of its level-0 span, so each item is its own row.
//
// Items are processed concurrently (Backend.Workers), and outputs keep
// their order.
//
// Element types. Program data is computed in float32, as the outputs
// below say; a data port whose contract declares float16 or bfloat16
// (preprocess.DataDTypes) receives each value rounded to that type,
// nearest with ties to even, as a cast would; a port of image or video
// pixels declared uint8 (preprocess.DataDTypesOf), each rounded to the
// nearest integer, halves up, and clamped to [0, 255].
//
// # Image adapter (onnx-genai.image-preprocess, version "1")
//
// Program. Transforms run in order for each image (preprocess.Ops gives
// each op's semantics). decode reads PNG, JPEG, GIF (the first frame) or
// WebP, sniffed from the bytes, to the pixels PIL decodes (JPEG within its
// inverse DCT's rounding); the result is always 3-channel RGB in [0, 255]:
// grey is replicated, alpha is dropped without compositing (as PIL's
// convert("RGB") does). resize's filters are separable with half-pixel
// centres that widen when shrinking (antialiased, as PIL's); 8-bit pixels
// (decoded, then converted, cropped or padded with an 8-bit value) resize
// as PIL resizes an 8-bit image, each pass rounded and clamped to 8 bits.
// EXIF orientation is not applied.
//
// Outputs, by the content role of the bound program output:
//
//   - pixels: float32, the images of the invocation stacked on axis 0 as
//     [items, channels, height, width], or [items, height, width, channels]
//     when the port's axis 1 is neither a fixed extent equal to the channel
//     count nor a symbol mentioning "channel" while its axis 3 is. A rank-3
//     port holds exactly one image without the item axis. A request_aligned
//     port holds one image per row. A dimension the port pads (height or
//     width) is allocated at the invocation's largest extent and zero-filled;
//     any other disagreement between images is run/input, and so is an
//     extent that contradicts a fixed extent of the port.
//   - pack_offsets: int64 [rows+1], the exclusive prefix offsets of the
//     images of each row ([0, N] for one request).
//   - pack_owner: int64 [N], each image's row position.
//   - valid_lengths (or frame_lengths, sample_lengths): the lengths companion
//     of a padded dimension of a pixels port that names this port, shaped
//     as the pixels' axes outer to the padded one (DESIGN §3.2), every entry
//     the image's own extent on that axis.
//
// Errors: a program, port or parameter the adapter cannot run is a
// *backend.RunError with rule run/unsupported at Load; an invocation whose bytes
// do not decode, or whose images contradict the ports, fails with run/input
// (run/offsets for malformed byte offsets), naming the image (and its row
// when the invocation has several) and what was read. A session returns one
// error per invocation, so a corrupt image fails every request of its group
// when the adapter has a batch_capacity.
//
// # Audio adapter (onnx-genai.audio-preprocess, version "1")
//
// Program, run per clip like the image program. decode reads a RIFF/WAVE
// file of PCM samples of 8 (unsigned), 16, 24 or 32 bits, or IEEE float of
// 32 or 64 bits (WAVE_FORMAT_EXTENSIBLE read by its sub-format); channels
// are mixed to mono by their mean. resample converts no rate yet: a clip at
// another rate fails its request with run/input.
//
// Outputs, by content role:
//
//   - waveform, samples, audio, frames or features: float32, the value the
//     output's source names. On a token_packed port (rank 1 for samples,
//     rank 2 [frames, window] for frames) the clips' samples or frames are
//     concatenated on axis 0 with one level (units→rows) or two
//     (units→clips, clips→rows). On a shared or request_aligned port (rank
//     2 [clips, samples] or 3 [clips, frames, window]) the clips are stacked
//     on a new axis 0, and axis 1 (samples or frames) must be padded when
//     clips differ. A token_packed port of that stacked rank with one level
//     packs whole clips (preprocess.ClipsPacked): laid out as stacked, its
//     level clips→rows. Packed or stacked, a port may add trailing axes
//     fixed at 1 (preprocess.TrailingOnes): the tensor's shape gets them,
//     the values stay where they are.
//   - pack_offsets, pack_owner: a port a level of a packed data port names
//     as its offsets or owner gets that level's offsets or owner map.
//   - valid_lengths, frame_lengths, sample_lengths: the lengths of a padded
//     dimension of a data port that names this port: per clip its samples
//     or frames (axis 1 of a stacked port), per frame its valid samples (the
//     window axis).
//
// # Video adapter (onnx-genai.video-preprocess, version "1")
//
// Input. A clip is an ordered sequence of frames, each an encoded image
// (PNG, JPEG, GIF or WebP; a GIF gives its first frame). The level 0 offsets of
// the uint8 port split the bytes into frames (the items above). Its level 1
// (frames→clips), when declared, splits the frames into clips; its offsets
// must be an input port of the adapter, bound like the byte offsets.
// Without it, all frames of a request are one clip. Rows: an adapter
// without batch_capacity runs one request per invocation, so all of its
// clips are one row. With a batch_capacity, the outermost level counts a
// group's rows (a packed value carries at most two levels, and the runtime
// admits one outermost unit per request), so each clip is its own row:
// one clip per request, or with the one level bytes→frames, one frame per
// request. A port that is not token_packed carries one frame. A clip holds
// at least one frame: an empty clip fails the invocation with run/input.
//
// Program. Every value is a clip; the image ops run on each frame alone,
// sample_frames and pad_frames on the clip (preprocess.Ops). A clip of more
// than pad_frames' target_length frames fails with run/input. Padding
// frames take the size the clip's frames have when they leave the program
// and hold pad_value there: transforms after pad_frames change the real
// frames only. Temporal transforms depend on frame counts only, so each
// clip's frames are chosen first, and a frame no output reads is never
// decoded. The frames of an invocation are processed concurrently
// (Backend.Workers).
//
// Outputs, by content role:
//
//   - pixels or pixel_values: float32 frames [channels, height, width], or
//     channels last as for images, all of one size (run/input otherwise: the
//     video adapter pads no dimension of a frame). token_packed rank 4
//     [frames, channels, height, width] concatenates the frames of every
//     clip, padding frames included, on axis 0 with two levels
//     (frames→clips, clips→rows) or one (frames→rows); shared rank 4 holds
//     the frames of exactly one clip. Rank 5 [clips, frames, channels,
//     height, width] stacks clips: shared (every clip of the invocation),
//     request_aligned (one clip per row) or token_packed with one level
//     (clips→rows). Its axis 1 is fixed (every clip holds that many frames),
//     padded (the longest clip's frames; positions past a clip's own frames
//     hold its pad_value, 0 without pad_frames), or neither (every clip
//     holds as many frames as clip 0).
//   - pack_offsets, pack_owner: a port a level of a packed pixels port names
//     as its offsets or owner gets that level's offsets or owner map.
//   - valid_lengths, frame_lengths, sample_lengths: int64 [clips], the real
//     frames of each clip (its frames before pad_frames) of the pixels port
//     that pads frames with this port, or of the first pixels port when no
//     padding names it: a packed port never pads its packed axis, so the
//     real lengths of padded clips packed on the frame axis come this way.
//
// A level or a padding of a pixels port names its companion port directly,
// or as the workflow value an invoke of the adapter binds that port to.
//
// Errors are the image adapter's, naming the frame, its clip (and the
// clip's row when the invocation has several) and what was read, with
// run/offsets for malformed byte or clip offsets.
package adapters

import (
	"fmt"
	"runtime"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// ABIVersion is the one version of the preprocessing ABIs this package
// implements.
const ABIVersion = "1"

// DefaultMaxPixels bounds the pixels (width × height) of one encoded image
// when Backend.MaxPixels is 0: 32 Mi pixels, such as 8192 × 4096.
const DefaultMaxPixels = 1 << 25

// DefaultMaxMediaBytes bounds the memory one request's media (images,
// video frames, audio clips) take when Backend.MaxMediaBytes is 0:
// 256 MiB, a 12-megapixel photo decoded and resized.
const DefaultMaxMediaBytes = 256 << 20

// DefaultMaxSamples bounds the values of one audio clip when
// Backend.MaxSamples is 0: 64 Mi values, about 70 minutes at 16 kHz.
const DefaultMaxSamples = 1 << 26

// Backend is the backend.Backend of the built-in preprocessing adapters. It
// reads the programs of the module it was made with.
type Backend struct {
	m *ir.Module
	// MaxPixels bounds the pixels (width × height) of one decoded image or
	// video frame; a larger one fails its request with run/input before it
	// is decoded. It bounds the padding frames pad_frames adds to one video
	// clip too (frames × height × width). 0 means DefaultMaxPixels.
	MaxPixels int64
	// MaxMediaBytes bounds the memory decoding one request's media (its
	// items of one adapter, those of one row of an invocation) and running
	// the program on them takes, read off their headers before anything is
	// decoded. Per image, and per video frame the program keeps, the
	// decoder's own image (width × height × 4 bytes, 8 for 16-bit
	// channels) and every value the program makes as float32 (channels ×
	// height × width × 4 bytes), with the padding frames pad_frames adds;
	// per audio clip, its samples (as the WAV header's data chunk counts
	// them) and every value the program makes as float32, with 8 bytes
	// per frame for its valid count. A request beyond it fails with
	// run/budget: at admission where the component groups, else before its
	// invocation decodes anything. 0 means DefaultMaxMediaBytes.
	MaxMediaBytes int64
	// MaxSamples bounds the values of one audio clip: its samples, and the
	// values each transform makes of them (the frames or windows of
	// `frame`, the features of `mel_spectrogram`, the length of
	// `pad_or_trim`), each checked before it is allocated. A larger clip
	// fails its request with run/input. 0 means DefaultMaxSamples.
	MaxSamples int64
	// Workers bounds how many items (images, frames, clips) of one
	// invocation are processed at once; 0 means GOMAXPROCS.
	Workers int
}

// New returns the backend of the adapter components of m: each session runs
// m's preprocessing program of the adapter's modality.
func New(m *ir.Module) *Backend { return &Backend{m: m} }

// Name implements backend.Backend.
func (b *Backend) Name() string { return "preprocess" }

func fail(rule, format string, args ...any) *backend.RunError {
	return &backend.RunError{Rule: rule, Message: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) *backend.RunError {
	return fail("run/unsupported", format, args...)
}

// Load implements backend.Backend: it compiles the program the adapter runs and
// the layout of each of its ports. Nothing is read from pkgDir.
func (b *Backend) Load(comp *ir.Component, _ string) (backend.Session, error) {
	if comp == nil {
		return nil, unsupported("the preprocessing backend was asked to load no component")
	}
	if comp.Impl != ir.ImplAdapter {
		return nil, unsupported("component `%s` is implemented by %s; the preprocessing backend runs adapter components only", comp.Name, comp.Impl)
	}
	modality, ok := preprocess.ModalityOf(comp.ABI)
	if !ok {
		return nil, unsupported("component `%s` asks for adapter ABI %q, which is not built in; the built-in adapters are %s, %s and %s",
			comp.Name, comp.ABI, preprocess.ABI("image"), preprocess.ABI("video"), preprocess.ABI("audio"))
	}
	if comp.Version != ABIVersion {
		return nil, unsupported("component `%s` asks for adapter ABI %s version %q, but this runtime implements version %q only; pin %s: %q",
			comp.Name, comp.ABI, comp.Version, ABIVersion, comp.ABI, ABIVersion)
	}
	if b.m == nil {
		return nil, unsupported("component `%s` is the %s adapter, but the backend was made without the workflow's module, so it has no program to run; make it with adapters.New(module)", comp.Name, comp.ABI)
	}
	prog := preprocess.ProgramOf(b.m, modality)
	if prog == nil {
		return nil, unsupported("component `%s` is the %s adapter, but the document has no preprocessing.%s program for it to run", comp.Name, comp.ABI, modality)
	}
	compiled, probs := preprocess.Compile(prog, comp, preprocess.InvokedPorts(b.m, comp))
	if len(probs) > 0 {
		return nil, unsupported("%s", probs[0].Error())
	}
	switch modality {
	case "image":
		return b.loadImage(comp, compiled)
	case "video":
		return b.loadVideo(comp, compiled)
	case "audio":
		return b.loadAudio(comp, compiled)
	}
	return nil, unsupported("component `%s` asks for the %s adapter; this runtime runs the image, video and audio adapters and does not execute preprocessing.%s programs",
		comp.Name, comp.ABI, modality)
}

func (b *Backend) maxPixels() int64 {
	if b.MaxPixels > 0 {
		return b.MaxPixels
	}
	return DefaultMaxPixels
}

func (b *Backend) maxMediaBytes() int64 {
	if b.MaxMediaBytes > 0 {
		return b.MaxMediaBytes
	}
	return DefaultMaxMediaBytes
}

func (b *Backend) maxSamples() int64 {
	if b.MaxSamples > 0 {
		return b.MaxSamples
	}
	return DefaultMaxSamples
}

func (b *Backend) workers() int {
	if b.Workers > 0 {
		return b.Workers
	}
	return runtime.GOMAXPROCS(0)
}
