package adapters

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// videoPixelRoles are the content roles of the frames themselves.
var videoPixelRoles = []string{"pixels", "pixel_values"}

// videoLevels says how a video adapter's encoded frames split into clips
// and rows beyond the byte offsets that encoded reads.
type videoLevels struct {
	levels      int    // levels the encoded port declares: 0 (not packed) to 2
	clipOffsets string // the input port of the frames→clips offsets, or ""
	grouped     bool   // the adapter has a batch_capacity
	timestamps  string // the input port of each frame's time in seconds, or ""
}

// videoPort is an output port filled with frames.
type videoPort struct {
	name, source string
	keep         int           // index into videoSession.keep
	rank         int           // 4 [frames, c, h, w] or 5 [clips, frames, c, h, w] (or [clips, c, frames, h, w])
	layout       ir.LayoutKind // shared, request_aligned or token_packed
	levels       int           // token_packed: its ownership levels
	axes         [3]int        // the port's axis of channels, height and width
	frameAxis    int           // rank 5: the axis of each clip's frames, 1 or 2 (channels first)
	fixed        [3]int64      // fixed extents by planar dimension, -1 when free
	fixedFrames  int64         // rank 5: the fixed extent of the frames axis, else -1
	padsFrames   bool          // rank 5: the frames axis is padded
	static       videoShape
	contract     *ir.Contract
}

// videoSession runs the video program for one adapter component.
type videoSession struct {
	*encoded
	lv         videoLevels
	prog       *videoProgram
	pixels     []*videoPort
	keep       []string
	companions map[string]levelCompanion
	lengths    map[string]int // lengths port → the pixels port it measures
}

func (b *Backend) loadVideo(comp *ir.Component, cp *preprocess.Program) (backend.Session, error) {
	p := compileVideo(cp)
	var err error
	s := &videoSession{encoded: newEncoded(b, comp, kind{"video", "frame"}), prog: p,
		companions: map[string]levelCompanion{}, lengths: map[string]int{}}
	if s.in, s.lv, err = videoPorts(comp, s.k); err != nil {
		return nil, err
	}
	bound := cp.Ports
	roles := map[string]string{}
	for _, port := range comp.Outputs {
		o := bound[port.Name]
		switch {
		case slices.Contains(videoPixelRoles, o.Content):
			vp, err := s.videoPort(port, o)
			if err != nil {
				return nil, err
			}
			vp.keep = len(s.keep)
			s.pixels = append(s.pixels, vp)
			s.keep = append(s.keep, vp.source)
		case o.Content == roleOffsets || o.Content == roleOwner || slices.Contains(lengthRoles, o.Content):
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			roles[port.Name] = o.Content
		default:
			return nil, unsupported("preprocessing.video output `%s` (bound to output port `%s` of adapter `%s`) has content role `%s`; the video adapter fills pixels (or pixel_values), pack_offsets, pack_owner and valid_lengths (or frame_lengths)",
				o.Name, port.Name, comp.Name, o.Content)
		}
	}
	port := companionPorts(b.m, comp)
	for i, vp := range s.pixels {
		if vp.layout == ir.TokenPacked {
			addCompanions(s.companions, i, vp.contract.Layout.Levels, port)
		}
		for _, pad := range vp.contract.Padding {
			name := port(pad.Lengths.Name)
			if !slices.Contains(lengthRoles, roles[name]) {
				return nil, unsupported("output port `%s` of adapter `%s` pads frames with valid_lengths `%s`, which is not an output port of the adapter bound to a valid_lengths output; the adapter fills lengths only on its own ports, so declare `%s` as one",
					vp.name, comp.Name, name, name)
			}
			if _, seen := s.lengths[name]; !seen {
				s.lengths[name] = i
			}
		}
	}
	for _, port := range comp.Outputs {
		role, ok := roles[port.Name]
		if !ok {
			continue
		}
		c, isCompanion := s.companions[port.Name]
		switch {
		case slices.Contains(lengthRoles, role):
			if _, named := s.lengths[port.Name]; named {
				continue
			}
			if len(s.pixels) == 0 {
				return nil, unsupported("output port `%s` of adapter `%s` is bound to a lengths output of preprocessing.video, but the adapter has no pixels port whose clips it could measure", port.Name, comp.Name)
			}
			s.lengths[port.Name] = 0 // the real frames of each clip of the first pixels port
		case !isCompanion || c.owner != (role == roleOwner):
			field := "offsets"
			if role == roleOwner {
				field = "owner"
			}
			return nil, unsupported("output port `%s` of adapter `%s` is bound to a %s output of preprocessing.video, but no packed pixels port of the adapter names it as a level's %s; name it in the level it describes",
				port.Name, comp.Name, role, field)
		}
	}
	p.frames.plan(s.keep)
	return s, nil
}

// companionPorts resolves a companion name on an output port of comp as
// the reference-scope rules do: an output port of that name, or failing
// that, the output port an invoke of comp binds to a value of that name
// (a padding may name the workflow value its lengths port is bound to).
// A name neither resolves is returned as is.
func companionPorts(m *ir.Module, comp *ir.Component) func(string) string {
	byValue := preprocess.InvokedPorts(m, comp)
	return func(name string) string {
		if comp.Output(name) != nil {
			return name
		}
		if p, ok := byValue[name]; ok {
			return p
		}
		return name
	}
}

// videoPorts finds the uint8 input port of the encoded frames and the
// ports of its level offsets: bytes→frames (required when packed) and
// frames→clips (required when declared).
func videoPorts(comp *ir.Component, k kind) (encodedInput, videoLevels, error) {
	var in encodedInput
	lv := videoLevels{grouped: comp.Capacity != nil}
	payload, err := payloadPort(comp, k, ", token_packed with the byte offsets of each frame")
	if err != nil {
		return in, lv, err
	}
	in.port = payload.Name
	companions := map[string]bool{}
	l := payload.Contract.Layout
	switch {
	case l.Kind == ir.TokenPacked:
		lv.levels = len(l.Levels)
		if lv.levels == 0 || lv.levels > 2 {
			return in, lv, unsupported("input port `%s` of adapter `%s` declares %d ownership levels; the video adapter reads one (bytes→frames) or two (bytes→frames, frames→clips)",
				payload.Name, comp.Name, lv.levels)
		}
		if in.itemOffsets, err = byteOffsetsPort(comp, payload, " of each frame"); err != nil {
			return in, lv, err
		}
		for _, level := range l.Levels {
			companions[level.Offsets.Name], companions[level.Owner.Name] = true, true
		}
		if lv.levels >= 2 {
			lv.clipOffsets = l.Levels[1].Offsets.Name
			if comp.Input(lv.clipOffsets) == nil {
				return in, lv, unsupported("input port `%s` of adapter `%s` declares a frames→clips level, but its offsets `%s` is not an input port of the adapter, so the frames cannot be told apart by clip; declare `%s` as an input port (int64, shared) and bind it, or drop the level to make all frames of a request one clip",
					payload.Name, comp.Name, lv.clipOffsets, lv.clipOffsets)
			}
		}
	case lv.grouped:
		return in, lv, unsupported("adapter `%s` has a batch_capacity, but its input port `%s` is %s; to serve several requests in one invocation, make it token_packed with level-0 byte offsets (bytes→frames) bound as an input port", comp.Name, payload.Name, l.Kind)
	}
	if lv.timestamps = preprocess.TimestampsPort(comp); lv.timestamps != "" {
		companions[lv.timestamps] = true
	}
	return in, lv, onlyCompanions(comp, k, payload, companions)
}

// frameTimes reads the times of an invocation's n frames from the
// timestamps input port: a float vector of one finite time per frame.
func (s *videoSession) frameTimes(inputs map[string]*backend.Tensor, n int) ([]float64, error) {
	name := s.lv.timestamps
	t := inputs[name]
	if t == nil {
		return nil, fail("run/input", "preprocessing.video samples frames by fps, which reads each frame's time from input port `%s` of adapter `%s`, but it has no value; bind it to the frames' presentation times in seconds", name, s.comp.Name)
	}
	var times []float64
	switch d := t.Data.(type) {
	case []float64:
		times = d
	case []float32:
		times = make([]float64, len(d))
		for i, v := range d {
			times[i] = float64(v)
		}
	}
	switch {
	case times == nil || t.Rank() != 1:
		return nil, fail("run/input", "input port `%s` of adapter `%s` holds %s; frame times are a float32 or float64 vector, one per frame", name, s.comp.Name, t)
	case len(times) != n:
		return nil, fail("run/input", "input port `%s` of adapter `%s` holds %d frame times, but the invocation brings %d frames; give one time per frame", name, s.comp.Name, len(times), n)
	}
	for i, v := range times {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fail("run/input", "input port `%s` of adapter `%s` gives frame %d the time %v; frame times are finite seconds", name, s.comp.Name, i, v)
		}
	}
	return times, nil
}

// videoPort compiles how a pixels output port is laid out.
func (s *videoSession) videoPort(port *ir.Port, o *ir.ProgramOutput) (*videoPort, error) {
	comp := s.comp
	c, source, static, err := dataPort(s.encoded, port, o, "pixels", "{ dtype: float32, shape: [frames, channels, height, width] } with a token_packed layout", s.prog.last, s.prog.shapes)
	if err != nil {
		return nil, err
	}
	vp := &videoPort{name: port.Name, source: source, rank: c.Rank, layout: c.Layout.Kind, static: static,
		fixed: [3]int64{-1, -1, -1}, fixedFrames: -1, contract: c}
	if vp.layout == ir.TokenPacked {
		vp.levels = len(c.Layout.Levels)
	}
	if vp.rank < 0 {
		vp.rank = 4
		if vp.layout != ir.TokenPacked {
			vp.rank = 5
		}
	}
	switch {
	case vp.rank != 4 && vp.rank != 5:
		return nil, unsupported("output port `%s` of adapter `%s` has rank %d; video pixels are packed frames [frames, channels, height, width] (rank 4) or stacked clips [clips, frames, channels, height, width] (rank 5)", port.Name, comp.Name, vp.rank)
	case vp.layout == ir.RequestExpanded || vp.layout != ir.Shared && c.Layout.Axis != 0:
		return nil, unsupported("output port `%s` of adapter `%s` is %s on axis %d; the video adapter packs frames or stacks clips on axis 0 as token_packed, shared or request_aligned", port.Name, comp.Name, vp.layout, c.Layout.Axis)
	case vp.rank == 4 && vp.layout == ir.RequestAligned:
		return nil, unsupported("output port `%s` of adapter `%s` is request_aligned with rank 4; one clip per row is [batch, frames, channels, height, width] (rank 5), and frames of several clips are token_packed", port.Name, comp.Name)
	case vp.rank == 4 && vp.layout == ir.TokenPacked && (vp.levels < 1 || vp.levels > 2):
		return nil, unsupported("output port `%s` of adapter `%s` packs frames with %d ownership levels; the video adapter produces two (frames→clips, clips→rows) or one (frames→rows)", port.Name, comp.Name, vp.levels)
	case vp.rank == 5 && vp.layout == ir.TokenPacked && vp.levels != 1:
		return nil, unsupported("output port `%s` of adapter `%s` packs clips [clips, frames, ...] with %d ownership levels; a port that stacks clips has one (clips→rows), and frames of variable count are packed [frames, channels, height, width] with two", port.Name, comp.Name, vp.levels)
	}
	first := vp.rank - 3 // the port's axis of a frame's first dimension
	vp.axes, vp.frameAxis = [3]int{first, first + 1, first + 2}, 1
	hasShape := c.HasShape && len(c.Shape) == vp.rank
	if hasShape {
		if vp.rank == 5 {
			vp.frameAxis, vp.axes = preprocess.ClipAxes(c.Shape, static.frame.c)
			if dim := c.Shape[vp.frameAxis]; !dim.IsSym() {
				vp.fixedFrames = dim.Size
			}
		} else {
			vp.axes = preprocess.PixelAxes(c.Shape, static.frame.c)
		}
		for d, axis := range vp.axes {
			if dim := c.Shape[axis]; !dim.IsSym() {
				vp.fixed[d] = dim.Size
			}
		}
	}
	for _, pad := range c.Padding {
		if axis := c.Axis(pad.Dim.Name); vp.rank != 5 || axis != vp.frameAxis {
			return nil, unsupported("output port `%s` of adapter `%s` pads `%s` (axis %d); the video adapter pads frames only, the frames axis of stacked clips [clips, frames, channels, height, width] (or [clips, channels, frames, height, width]): resize the frames to one size", port.Name, comp.Name, pad.Dim.Name, axis)
		}
		vp.padsFrames = true
	}
	if vp.fixedFrames >= 0 && !vp.padsFrames && static.padded && int64(static.target) != vp.fixedFrames {
		return nil, unsupported("output port `%s` of adapter `%s` fixes frames (axis %d) at %d, but preprocessing.video pads the clips of `%s` to %d frames; make the two agree",
			port.Name, comp.Name, vp.frameAxis, vp.fixedFrames, source, static.target)
	}
	return vp, nil
}

// videoClip is a clip as a program value leaves the program: its real
// frames, then pad frames of padValue.
type videoClip struct {
	frames   []*planar
	pad      int
	padValue float32
}

func (c videoClip) total() int { return len(c.frames) + c.pad }

// videoPlan is what Run decides of an invocation before it decodes a
// frame: its bytes split into frames, the frames into clips and the clips
// into rows, the track of each kept value of each clip, and the frames of
// the invocation some kept value reads, in order.
type videoPlan struct {
	data              []byte
	offs, clips, rows []int64
	tracks            [][]track
	need              []int
}

// plan splits an invocation into frames, clips and rows and chooses each
// clip's frames, reading no frame's pixels.
func (s *videoSession) plan(inputs map[string]*backend.Tensor) (*videoPlan, error) {
	data, offs, err := s.split(inputs)
	if err != nil {
		return nil, err
	}
	clips, rows, err := s.clipsAndRows(inputs, len(offs)-1)
	if err != nil {
		return nil, err
	}
	nClips := len(clips) - 1
	var times []float64
	if s.prog.byTime() {
		if times, err = s.frameTimes(inputs, len(offs)-1); err != nil {
			return nil, err
		}
	}
	tracks := make([][]track, nClips)
	var need []int // the invocation's frames some kept value reads, in order
	for c := range nClips {
		n := int(clips[c+1] - clips[c])
		if n == 0 {
			why := "the invocation brings no frame"
			if s.lv.clipOffsets != "" {
				why = fmt.Sprintf("clip offsets `%s` give it frames %d to %d", s.lv.clipOffsets, clips[c], clips[c+1])
			}
			return nil, fail("run/input", "clip %d%s of input port `%s` of adapter `%s` holds no frames (%s); a clip is an ordered sequence of at least one frame",
				c, rowOf("clip", rows, c), s.in.port, s.comp.Name, why)
		}
		var clipTimes []float64
		if times != nil {
			clipTimes = times[clips[c]:clips[c+1]]
			for j := 1; j < n; j++ {
				if clipTimes[j] < clipTimes[j-1] {
					return nil, fail("run/input", "clip %d%s of input port `%s` of adapter `%s` has frame %d at %gs after frame %d at %gs; frames come in time order",
						c, rowOf("clip", rows, c), s.in.port, s.comp.Name, j, clipTimes[j], j-1, clipTimes[j-1])
				}
			}
		}
		if tracks[c], err = s.prog.tracks(n, clipTimes, s.keep); err != nil {
			return nil, fail("run/input", "clip %d%s of input port `%s` of adapter `%s` %v", c, rowOf("clip", rows, c), s.in.port, s.comp.Name, err)
		}
		used := make([]bool, n)
		for _, tr := range tracks[c] {
			for _, j := range tr.src {
				used[j] = true
			}
		}
		for j, u := range used {
			if u {
				need = append(need, int(clips[c])+j)
			}
		}
	}
	return &videoPlan{data: data, offs: offs, clips: clips, rows: rows, tracks: tracks, need: need}, nil
}

// Key implements backend.Keyer: a request whose frames would take more
// memory decoded and preprocessed than one request's media may, or whose
// clips a pixels port cannot hold (a clip sampled to fewer frames than
// the port fixes), is refused at admission, before any group holds it;
// where a port stacks clips neither padding nor fixing their frames, the
// key is the frames each clip makes there, so that only clips of one
// length share an invocation. Anything wrong with a frame's pixels is
// Run's to report.
func (s *videoSession) Key(inputs map[string]*backend.Tensor) (string, error) {
	p, err := s.plan(inputs)
	if err != nil {
		return "", err
	}
	if err := s.withinBudget(p, 0, len(p.clips)-1, "this request"); err != nil {
		return "", err
	}
	return s.clipsKey(p)
}

// clipsKey checks that every pixels port can hold an invocation's clips
// as its plan keeps their frames (holds), before any frame is decoded,
// and returns their key: the frames each clip makes on the ports that
// key by them (keysFrames).
func (s *videoSession) clipsKey(p *videoPlan) (string, error) {
	var parts []string
	for _, vp := range s.pixels {
		frames := make([]int64, len(p.tracks))
		for c, tr := range p.tracks {
			frames[c] = int64(tr[vp.keep].real() + tr[vp.keep].pad)
		}
		if err := s.holds(vp, frames, p.clips, p.rows); err != nil {
			return "", err
		}
		if vp.keysFrames() && len(frames) > 0 {
			parts = append(parts, fmt.Sprintf("%d frames of `%s`", frames[0], vp.name))
		}
	}
	return strings.Join(parts, ", "), nil
}

// KeysWhole implements backend.WholeKeyer: a clip is all the frames a
// request brings, so a request is keyed whole, never a frame at a time.
func (s *videoSession) KeysWhole() bool { return true }

// KeyedBy implements backend.KeyDescriber: what Key keys a clip by.
func (s *videoSession) KeyedBy() []string {
	var parts []string
	for _, vp := range s.pixels {
		if vp.keysFrames() {
			parts = append(parts, fmt.Sprintf("count of frames of `%s`", vp.name))
		}
	}
	return parts
}

// keysFrames reports whether clips are keyed by the frames they make in
// the port: it stacks clips, neither padding nor fixing their frames.
func (vp *videoPort) keysFrames() bool {
	return vp.rank == 5 && !vp.padsFrames && vp.fixedFrames < 0
}

// holds checks that pixels port vp can hold the clips of an invocation
// whose frames clips delimits and whose rows are rows, clip c making
// frames[c] frames there (pad frames included): one clip unless the port
// packs them, one clip a row where it is request_aligned, and on a port
// of clips, the frames it fixes, or, where it does not pad them, as many
// as clip 0 makes.
func (s *videoSession) holds(vp *videoPort, frames, clips, rows []int64) error {
	switch vp.rank {
	case 4:
		if vp.layout != ir.TokenPacked && len(frames) != 1 {
			return fail("run/input", "output port `%s` of adapter `%s` holds the frames of one clip (rank 4, %s), but the invocation brings %d clips; make the port token_packed, or stack clips on a rank-5 port",
				vp.name, s.comp.Name, vp.layout, len(frames))
		}
	case 5:
		if vp.layout == ir.RequestAligned {
			if err := s.onePerRow(vp.name, "clip", rows); err != nil {
				return err
			}
		}
		for c, t := range frames {
			switch {
			case vp.fixedFrames >= 0 && t < vp.fixedFrames && !vp.padsFrames:
				return fail("run/input", "clip %d holds %d frames after preprocessing.video (of the %d it brings), but output port `%s` of adapter `%s` fixes frames (axis %d) at %d: send a clip long enough to keep %d, or, authoring the package, pad short clips with pad_frames target_length %d",
					c, t, clips[c+1]-clips[c], vp.name, s.comp.Name, vp.frameAxis, vp.fixedFrames, vp.fixedFrames, vp.fixedFrames)
			case vp.fixedFrames >= 0 && t > vp.fixedFrames:
				return fail("run/input", "clip %d holds %d frames after preprocessing.video (of the %d it brings), but output port `%s` of adapter `%s` fixes frames (axis %d) at %d; keep at most %d with sample_frames num_frames",
					c, t, clips[c+1]-clips[c], vp.name, s.comp.Name, vp.frameAxis, vp.fixedFrames, vp.fixedFrames)
			case !vp.padsFrames && t != frames[0]:
				return fail("run/input", "clip %d holds %d frames after preprocessing.video, but clip 0 holds %d, and output port `%s` of adapter `%s` does not pad frames; pad frames with valid_lengths, pad the clips with pad_frames, or pack the frames (token_packed [frames, channels, height, width])",
					c, t, frames[0], vp.name, s.comp.Name)
			}
		}
	}
	return nil
}

// withinBudget is run/budget where clips [from, to) of an invocation,
// whose says whose they are, would take more memory than one request's
// media may (Backend.MaxMediaBytes), read off the headers of the frames
// they keep: each kept frame decoded and run through the frame program
// (imageProgram.footprint), and the padding frames pad_frames adds to each
// kept value, as float32. A frame whose header is refused counts nothing
// here: decoding it fails it, saying why.
func (s *videoSession) withinBudget(p *videoPlan, from, to int, whose string) error {
	var total, frames int64
	envs := map[int]map[string]extent{}
	for _, f := range p.need {
		if f < int(p.clips[from]) || f >= int(p.clips[to]) {
			continue
		}
		env, n, err := s.prog.frames.measure(p.data[p.offs[f]:p.offs[f+1]], s.b.maxPixels())
		if err == nil {
			envs[f], total = env, total+n
		}
		frames++
	}
	for c := from; c < to; c++ {
		for i, tr := range p.tracks[c] {
			if tr.pad == 0 || tr.real() == 0 {
				continue
			}
			if env, ok := envs[int(p.clips[c])+tr.src[0]]; ok {
				e := env[s.keep[i]]
				total += int64(tr.pad) * int64(e.c) * int64(e.h) * int64(e.w) * 4
			}
		}
	}
	return s.overBudget(total, frames, s.k.item, whose)
}

// Run implements backend.Session: it splits the encoded bytes into frames and
// the frames into clips, chooses each clip's frames, decodes and
// transforms those, and fills every output port.
func (s *videoSession) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	if err := s.checkOutputs(outputs); err != nil {
		return nil, err
	}
	p, err := s.plan(inputs)
	if err != nil {
		return nil, err
	}
	// Where admission did not key the requests (one invocation per
	// request), the budget and the clips' frames are checked here, before
	// any frame is decoded.
	for r := 0; r+1 < len(p.rows); r++ {
		if err := s.withinBudget(p, int(p.rows[r]), int(p.rows[r+1]), whoseRow(p.rows, r)); err != nil {
			return nil, err
		}
	}
	if _, err := s.clipsKey(p); err != nil {
		return nil, err
	}
	data, offs, clips, rows, tracks, nClips := p.data, p.offs, p.clips, p.rows, p.tracks, len(p.clips)-1
	frames, err := s.decodeFrames(ctx, data, offs, clips, rows, p.need)
	if err != nil {
		return nil, err
	}
	out := map[string]*backend.Tensor{}
	levels := make([][][]int64, len(s.pixels))
	values := make([][]videoClip, len(s.pixels))
	for i, vp := range s.pixels {
		vals := make([]videoClip, nClips)
		for c := range nClips {
			tr := tracks[c][vp.keep]
			v := videoClip{frames: make([]*planar, len(tr.src)), pad: tr.pad, padValue: tr.padValue}
			for j, src := range tr.src {
				v.frames[j] = frames[int(clips[c])+src][vp.keep]
			}
			vals[c] = v
		}
		values[i] = vals
		t, lv, err := s.fill(vp, vals, rows)
		if err != nil {
			return nil, err
		}
		out[vp.name], levels[i] = t, lv
	}
	s.fillCompanions(s.companions, levels, out)
	for name, i := range s.lengths {
		l := make([]int64, nClips)
		for c, v := range values[i] {
			l[c] = int64(len(v.frames))
		}
		out[name] = ints(l)
	}
	s.narrowData(out)
	return out, nil
}

// clipsAndRows returns the offsets of the invocation's clips over its n
// frames and of its rows over its clips. The frames→clips port gives the
// clips. Without it, a grouped adapter, whose one level bytes→frames is
// its outermost, admits one frame per request, so each frame is its own
// clip; an adapter without batch_capacity runs one request, all of whose
// frames are one clip. Rows: the outermost level a group composes counts
// its rows, so in a grouped invocation each clip is its own row (the
// runtime admits one clip per request); otherwise all clips are one row.
func (s *videoSession) clipsAndRows(inputs map[string]*backend.Tensor, n int) (clips, rows []int64, err error) {
	switch {
	case s.lv.clipOffsets != "":
		clips, err = s.offsetsOf(inputs, s.lv.clipOffsets, "frame", int64(n), "the byte offsets delimit %d frames")
		if err != nil {
			return nil, nil, err
		}
	case s.lv.grouped:
		clips = counting(n)
	default:
		clips = []int64{0, int64(n)}
	}
	if nClips := len(clips) - 1; s.lv.grouped {
		rows = counting(nClips)
	} else {
		rows = []int64{0, int64(nClips)}
	}
	return clips, rows, nil
}

// decodeFrames runs the frame program on every frame need lists, several
// at once, and returns the kept values of each, by frame of the
// invocation. A failed frame is run/input naming the frame, its clip and
// its bytes: the first in frame order where the invocation has one row or
// its context ended, else backend.RowErrors, each failed row's first
// frame worded as that row's invocation alone would word it.
func (s *videoSession) decodeFrames(ctx context.Context, data []byte, offs, clips, rows []int64, need []int) ([][]*planar, error) {
	out := make([][]*planar, len(offs)-1)
	errs := s.parallel(ctx, len(need), func(k int) error {
		vals, err := s.prog.frames.run(data[offs[need[k]]:offs[need[k]+1]], s.b.maxPixels(), s.keep)
		out[need[k]] = vals
		return err
	})
	if errs == nil {
		return out, nil
	}
	// frameError words frame f's err as an invocation whose frames start
	// at frame from, its clips at clip first, its bytes at at.
	frameError := func(f, from, first int, at int64, clips, rows []int64, err error) error {
		c := clipOf(clips, f)
		return fail("run/input", "frame %d of clip %d%s of input port `%s` of adapter `%s` (frame %d of the invocation, bytes %d to %d) %v",
			int64(f)-clips[c], c-first, rowOf("clip", rows, c-first), s.in.port, s.comp.Name, f-from, offs[f]-at, offs[f+1]-at, err)
	}
	if len(rows) <= 2 || ctx.Err() != nil {
		k := slices.IndexFunc(errs, func(err error) bool { return err != nil })
		if errs[k] == ctx.Err() {
			return nil, errs[k]
		}
		return nil, frameError(need[k], 0, 0, 0, clips, rows, errs[k])
	}
	// The frames' errors by frame of the invocation, and the rows' offsets
	// over its frames.
	byFrame := make([]error, len(offs)-1)
	for k, f := range need {
		byFrame[f] = errs[k]
	}
	rowFrames := make([]int64, len(rows))
	for r, c := range rows {
		rowFrames[r] = clips[c]
	}
	return nil, rowErrors(byFrame, rowFrames, func(f, r int) error {
		from, first := int(rowFrames[r]), int(rows[r])
		return frameError(f, from, first, offs[from], clips, []int64{0, rows[r+1] - rows[r]}, byFrame[f])
	})
}

// clipOf is the clip frame f belongs to.
func clipOf(clips []int64, f int) int {
	// Clips are never empty here, so clips increase strictly: the first
	// offset past f ends f's clip.
	i, _ := slices.BinarySearch(clips, int64(f)+1)
	return max(i-1, 0)
}

// frameSize is the channels, height and width every frame of a port
// shares: the first real frame's, checked against every other and against
// the port's fixed extents; with no frame, the port's or the program's.
func (s *videoSession) frameSize(vp *videoPort, vals []videoClip) ([3]int64, error) {
	ext := [3]int64{int64(vp.static.frame.c), int64(vp.static.frame.h), int64(vp.static.frame.w)}
	for d := range 3 {
		if vp.fixed[d] >= 0 {
			ext[d] = vp.fixed[d]
		}
		ext[d] = max(ext[d], 0)
	}
	var ref *planar
	refClip, refFrame := 0, 0
	for c, v := range vals {
		for j, p := range v.frames {
			got := [3]int64{int64(p.c), int64(p.h), int64(p.w)}
			for d := range 3 {
				if vp.fixed[d] >= 0 && got[d] != vp.fixed[d] {
					return ext, fail("run/input", "frame %d of clip %d is %s after preprocessing.video, but output port `%s` of adapter `%s` fixes %s (axis %d) at %d",
						j, c, p.dims(), vp.name, s.comp.Name, dimNames[d], vp.axes[d], vp.fixed[d])
				}
			}
			if ref == nil {
				ref, refClip, refFrame, ext = p, c, j, got
				continue
			}
			if got != ext {
				return ext, fail("run/input", "frame %d of clip %d is %s after preprocessing.video, but frame %d of clip %d is %s, and output port `%s` of adapter `%s` holds frames of one size; resize (or center_crop, or pad) the frames to one size",
					j, c, p.dims(), refFrame, refClip, ref.dims(), vp.name, s.comp.Name)
			}
		}
	}
	return ext, nil
}

// fill lays the clips out on a pixels port and returns the offsets of each
// of its levels, innermost first (none unless it is token_packed).
func (s *videoSession) fill(vp *videoPort, vals []videoClip, rows []int64) (*backend.Tensor, [][]int64, error) {
	ext, err := s.frameSize(vp, vals)
	if err != nil {
		return nil, nil, err
	}
	for c, v := range vals {
		if v.pad > 0 && int64(v.pad)*ext[dimH]*ext[dimW] > s.b.maxPixels() {
			return nil, nil, fail("run/input", "clip %d is padded with %d frames of %d×%d pixels, more than the %d pixels this adapter holds for one clip's padding",
				c, v.pad, ext[dimH], ext[dimW], s.b.maxPixels())
		}
	}
	// Run checked that the port holds the clips as they keep their frames
	// (holds).
	nClips := int64(len(vals))
	frameOffs := make([]int64, nClips+1) // prefix offsets of each clip's frames
	longest := int64(0)
	for c, v := range vals {
		frameOffs[c+1] = frameOffs[c] + int64(v.total())
		longest = max(longest, int64(v.total()))
	}
	var shape []int64
	var levels [][]int64
	switch vp.rank {
	case 4:
		shape = []int64{frameOffs[nClips], 0, 0, 0}
		switch vp.levels {
		case 2:
			levels = [][]int64{frameOffs, rows}
		case 1:
			perRow := make([]int64, len(rows))
			for r, c := range rows {
				perRow[r] = frameOffs[c]
			}
			levels = [][]int64{perRow}
		}
	case 5:
		frames := longest
		if vp.fixedFrames >= 0 {
			frames = max(frames, vp.fixedFrames)
		} else if nClips == 0 && vp.static.padded {
			frames = int64(vp.static.target)
		}
		shape = make([]int64, 5)
		shape[0], shape[vp.frameAxis] = nClips, frames
		if vp.levels == 1 {
			levels = [][]int64{rows}
		}
	}
	for d, axis := range vp.axes {
		shape[axis] = ext[d]
	}
	t, err := backend.NewTensor("float32", shape)
	if err != nil {
		return nil, nil, err
	}
	dst := t.Float32s()
	strides := stridesOf(shape)
	// base is where frame j of clip c starts: packed frames follow each
	// other on axis 0; a stacked clip's frames lie on its frames axis,
	// channels first or not.
	base := func(c, j int) int64 { return (frameOffs[c] + int64(j)) * strides[0] }
	end := func(c int) int64 { return int64(vals[c].total()) }
	if vp.rank == 5 {
		base = func(c, j int) int64 { return int64(c)*strides[0] + int64(j)*strides[vp.frameAxis] }
		end = func(int) int64 { return shape[vp.frameAxis] }
	}
	var pad *planar // a frame of padValue, the last pad value placed
	var padValue float32
	for c, v := range vals {
		for j, p := range v.frames {
			place(dst, p, base(c, j), strides, vp.axes)
		}
		// Padding frames, and for a padded port the positions past the
		// clip's own frames, hold the clip's pad value.
		if v.padValue == 0 || end(c) <= int64(len(v.frames)) {
			continue
		}
		if pad == nil || padValue != v.padValue {
			pad, padValue = newPlanar(int(ext[dimC]), int(ext[dimH]), int(ext[dimW])), v.padValue
			for i := range pad.pix {
				pad.pix[i] = v.padValue
			}
		}
		for j := len(v.frames); int64(j) < end(c); j++ {
			place(dst, pad, base(c, j), strides, vp.axes)
		}
	}
	return t, levels, nil
}
