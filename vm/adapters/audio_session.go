package adapters

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// dataRoles are the content roles of the audio value itself: the samples,
// or the frames `frame` cut of them.
var dataRoles = []string{"waveform", "samples", "audio", "frames", "features"}

// audioPort is an output port filled with clips.
type audioPort struct {
	name, source string
	static       preprocess.Shape
	packed       bool
	// byClip: packed whole clips, each laid out as a stacked port lays it,
	// with one level (clips→rows) (preprocess.ClipsPacked).
	byClip bool
	levels int // packed: 1 (units→rows, or clips→rows byClip) or 2 (units→clips, clips→rows)
	rank   int
	ones   int // trailing axes of extent 1 past the clips' layout
	layout ir.LayoutKind
	// bandsFirst: stacked frames laid out [clips, bands, frames], each
	// clip transposed (preprocess.BandsFirst), unpadded.
	bandsFirst bool
	fixedUnits int64          // stacked: a fixed extent of the units axis, else -1
	lengths    map[int]string // padded axis → its lengths port
	contract   *ir.Contract
}

// audioLength says which padded axis of which data port a lengths port
// measures.
type audioLength struct {
	port, axis int
}

// audioSession runs the audio program for one adapter component.
type audioSession struct {
	*encoded
	prog       *audioProgram
	data       []*audioPort
	keep       []string
	companions map[string]levelCompanion
	lengths    map[string]audioLength
}

func (b *Backend) loadAudio(comp *ir.Component, cp *preprocess.Program) (backend.Session, error) {
	p := compileAudio(cp)
	var err error
	s := &audioSession{encoded: newEncoded(b, comp, kind{"audio", "clip"}), prog: p,
		companions: map[string]levelCompanion{}, lengths: map[string]audioLength{}}
	if s.in, err = encodedPorts(comp, s.k); err != nil {
		return nil, err
	}
	bound := cp.Ports
	roles := map[string]string{}
	for _, port := range comp.Outputs {
		o := bound[port.Name]
		switch {
		case slices.Contains(dataRoles, o.Content):
			ap, err := s.audioPort(port, o)
			if err != nil {
				return nil, err
			}
			s.data = append(s.data, ap)
			s.keep = append(s.keep, ap.source)
		case o.Content == roleOffsets || o.Content == roleOwner || slices.Contains(lengthRoles, o.Content):
			if err := intPort(comp, port, o, s.k); err != nil {
				return nil, err
			}
			roles[port.Name] = o.Content
		default:
			return nil, unsupported("preprocessing.audio output `%s` (bound to output port `%s` of adapter `%s`) has content role `%s`; the audio adapter fills %v, pack_offsets, pack_owner and valid_lengths",
				o.Name, port.Name, comp.Name, o.Content, dataRoles)
		}
	}
	for i, ap := range s.data {
		if ap.packed {
			addCompanions(s.companions, i, ap.contract.Layout.Levels, func(name string) string { return name })
		}
		for axis, name := range ap.lengths {
			if !slices.Contains(lengthRoles, roles[name]) {
				return nil, unsupported("output port `%s` of adapter `%s` pads axis %d with valid_lengths `%s`, which is not an output port of the adapter bound to a valid_lengths output; the adapter fills lengths only on its own ports, so declare `%s` as one",
					ap.name, comp.Name, axis, name, name)
			}
			s.lengths[name] = audioLength{port: i, axis: axis}
		}
	}
	for _, port := range comp.Outputs {
		role, ok := roles[port.Name]
		if !ok {
			continue
		}
		c, isCompanion := s.companions[port.Name]
		_, isLength := s.lengths[port.Name]
		switch {
		case slices.Contains(lengthRoles, role) && !isLength:
			return nil, unsupported("output port `%s` of adapter `%s` is bound to a lengths output of preprocessing.audio, but no data port of the adapter pads a dimension with it as valid_lengths; the audio adapter measures padded dimensions only", port.Name, comp.Name)
		case (role == roleOffsets || role == roleOwner) && (!isCompanion || c.owner != (role == roleOwner)):
			field := "offsets"
			if role == roleOwner {
				field = "owner"
			}
			return nil, unsupported("output port `%s` of adapter `%s` is bound to a %s output of preprocessing.audio, but no packed data port of the adapter names it as a level's %s; name it in the level it describes",
				port.Name, comp.Name, role, field)
		}
	}
	return s, nil
}

// audioPort compiles how a data output port is laid out.
func (s *audioSession) audioPort(port *ir.Port, o *ir.ProgramOutput) (*audioPort, error) {
	comp := s.comp
	c, source, static, err := dataPort(s.encoded, port, o, "audio", "{ dtype: float32, shape: [frames, window] } with a token_packed layout", s.prog.last, s.prog.shapes)
	if err != nil {
		return nil, err
	}
	itemRank := static.AudioRank()
	what := map[int]string{1: "samples [samples]", 2: "frames [frames, window]", 3: "windows [windows, window, row]"}[itemRank]
	ap := &audioPort{name: port.Name, source: source, static: static, layout: c.Layout.Kind, rank: c.Rank,
		fixedUnits: -1, lengths: map[int]string{}, contract: c}
	ap.packed = ap.layout == ir.TokenPacked
	ap.byClip = preprocess.ClipsPacked(static, c)
	want := preprocess.AudioPortRank(static, c)
	if ap.packed {
		ap.levels = len(c.Layout.Levels)
	}
	if ap.ones, err = preprocess.TrailingOnes(c, want); err != nil {
		return nil, unsupported("output port `%s` of adapter `%s` has rank %d, but `%s` holds %s, which the adapter lays out at rank %d; %v", port.Name, comp.Name, ap.rank, source, what, want, err)
	}
	want += ap.ones
	if ap.rank < 0 {
		ap.rank = want
	}
	switch {
	case ap.layout == ir.RequestExpanded || ap.layout != ir.Shared && c.Layout.Axis != 0:
		return nil, unsupported("output port `%s` of adapter `%s` is %s on axis %d; the audio adapter packs or stacks clips on axis 0 as token_packed, shared or request_aligned", port.Name, comp.Name, ap.layout, c.Layout.Axis)
	case ap.rank != want && ap.packed:
		return nil, unsupported("output port `%s` of adapter `%s` packs rank %d, but `%s` holds %s, so the packed port has rank %d", port.Name, comp.Name, ap.rank, source, what, want)
	case ap.rank != want:
		return nil, unsupported("output port `%s` of adapter `%s` stacks rank %d, but `%s` holds %s, so the stacked port has rank %d ([clips, ...])", port.Name, comp.Name, ap.rank, source, what, want)
	case ap.packed && (ap.levels < 1 || ap.levels > 2):
		return nil, unsupported("output port `%s` of adapter `%s` declares %d ownership levels; the audio adapter produces one (units→rows) or two (units→clips, clips→rows)", port.Name, comp.Name, ap.levels)
	}
	// The axis after the units (samples, frames or windows): a frame's
	// samples or bands, or a window's rows; bands first, the units' axis
	// follows it.
	windowAxis, unitsAxis := ap.rank-ap.ones-itemRank+1, min(1, ap.rank-1)
	if c.HasShape && len(c.Shape) == ap.rank {
		ap.bandsFirst = preprocess.BandsFirst(static, c, c.Shape[:ap.rank-ap.ones])
		if ap.bandsFirst {
			windowAxis, unitsAxis = 1, 2
		}
		for i, u := range static.Unit() {
			if d := c.Shape[windowAxis+i]; !d.IsSym() && d.Size != int64(u) {
				return nil, unsupported("output port `%s` of adapter `%s` fixes axis %d at %d, but preprocessing.audio makes it %d in `%s`; make the two agree",
					port.Name, comp.Name, windowAxis+i, d.Size, u, source)
			}
		}
		if d := c.Shape[unitsAxis]; ap.stacks() && !d.IsSym() {
			ap.fixedUnits = d.Size
		}
	}
	for _, pad := range c.Padding {
		axis := c.Axis(pad.Dim.Name)
		switch {
		case ap.bandsFirst:
			// Lengths of the frames on axis 2 would hold one entry per band
			// (padding/companion), which no speech encoder takes.
			return nil, unsupported("output port `%s` of adapter `%s` pads `%s` (axis %d); laid out bands first ([clips, bands, frames]), its clips are stacked unpadded: give them one frame count (pad_or_trim, as Whisper's program does)", port.Name, comp.Name, pad.Dim.Name, axis)
		case !(static.Framed && axis == windowAxis) && (!ap.stacks() || axis != 1):
			return nil, unsupported("output port `%s` of adapter `%s` pads `%s` (axis %d); the audio adapter pads the samples, frames or windows of stacked clips (axis 1) and the window of frames or of rows", port.Name, comp.Name, pad.Dim.Name, axis)
		}
		ap.lengths[axis] = pad.Lengths.Name
	}
	return ap, nil
}

// Key implements backend.Keyer: a request whose clips would take more
// memory decoded and preprocessed than one request's media may, or that
// brings more than one clip a row to a port of one clip per request, is
// refused at admission, before any group holds it; and where a port
// stacks clips unpadded, the key is the units (samples, frames or
// windows) each clip makes there (unitsKey), so that only clips of one
// length share an invocation. Anything else wrong with the clips is Run's
// to report.
func (s *audioSession) Key(inputs map[string]*backend.Tensor) (string, error) {
	data, offs, rows, err := s.items(inputs, nil)
	if err != nil {
		return "", nil
	}
	if err := s.withinBudget(data, offs, 0, int64(len(offs)-1), "this request", s.footprint); err != nil {
		return "", err
	}
	if err := s.oneARow(rows); err != nil {
		return "", err // as Run refuses it, before a group holds it
	}
	return s.unitsKey(data, offs, rows)
}

// oneARow checks that every row of an invocation brings one clip where
// a port is request_aligned, one clip a row.
func (s *audioSession) oneARow(rows []int64) error {
	for _, ap := range s.data {
		if ap.layout == ir.RequestAligned {
			if err := s.onePerRow(ap.name, "clip", rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// unitsKey is the key of a request's clips (offs into data): the units
// each makes in every port that stacks clips unpadded where the program
// leaves their count to the clip, read off its WAV header. Every clip of
// the request must make the same; one that does not, or that a port's
// fixed extent refuses, fails the request at admission (run/input), as
// its invocation would fail.
func (s *audioSession) unitsKey(data []byte, offs, rows []int64) (string, error) {
	stacked := s.stacked()
	if len(stacked) == 0 {
		return "", nil
	}
	key := ""
	for c := 0; c+1 < len(offs); c++ {
		ext, err := s.prog.extents(data[offs[c]:offs[c+1]], s.b.maxSamples(), s.keep)
		if err != nil {
			return "", s.itemError(c, offs, rows, err)
		}
		parts := make([]string, len(stacked))
		for k, i := range stacked {
			ap, u := s.data[i], int64(ext[i].units)
			if ap.fixedUnits >= 0 && u != ap.fixedUnits {
				return "", s.itemError(c, offs, rows, fmt.Errorf("holds %d %s after preprocessing.audio, but output port `%s` of adapter `%s` fixes their count at %d; give the clips that length (pad_or_trim)",
					u, ap.static.UnitWord(), ap.name, s.comp.Name, ap.fixedUnits))
			}
			parts[k] = fmt.Sprintf("%d %s of `%s`", u, ap.static.UnitWord(), ap.name)
		}
		switch k := strings.Join(parts, ", "); {
		case c == 0:
			key = k
		case k != key:
			return "", s.itemError(c, offs, rows, fmt.Errorf("makes %s after preprocessing.audio, but clip 0 makes %s, and the port stacks them unpadded, so the two cannot share an invocation; send them in requests of their own, give them one length (pad_or_trim), or pad the port with valid_lengths where the model reads them",
				k, key))
		}
	}
	return key, nil
}

// stacked are the data ports that stack the units each clip makes
// unpadded where the program leaves their count to the clip: the ports
// unitsKey keys by.
func (s *audioSession) stacked() []int {
	var out []int
	for i, ap := range s.data {
		if _, padded := ap.lengths[1]; ap.stacks() && !padded && ap.static.Units == 0 {
			out = append(out, i)
		}
	}
	return out
}

// KeyedBy implements backend.KeyDescriber: what unitsKey keys a clip by.
func (s *audioSession) KeyedBy() []string {
	var parts []string
	for _, i := range s.stacked() {
		parts = append(parts, fmt.Sprintf("count of %s of `%s`", s.data[i].static.UnitWord(), s.data[i].name))
	}
	return parts
}

// footprint is the memory decoding one clip and running the program on
// it takes, read off its WAV header.
func (s *audioSession) footprint(b []byte) (int64, error) {
	return s.prog.footprint(b, s.b.maxSamples())
}

// Run implements backend.Session: it splits the encoded bytes into clips, runs
// the program on each, and fills every output port.
func (s *audioSession) Run(ctx context.Context, inputs map[string]*backend.Tensor, outputs []string) (map[string]*backend.Tensor, error) {
	data, offs, rows, err := s.items(inputs, outputs)
	if err != nil {
		return nil, err
	}
	if err := s.rowsWithinBudget(data, offs, rows, s.footprint); err != nil {
		return nil, err
	}
	if err := s.oneARow(rows); err != nil {
		return nil, err // before any clip is decoded
	}
	n := len(offs) - 1
	clips := make([][]*signal, n)
	err = s.each(ctx, data, offs, rows, func(i int, b []byte) error {
		var err error
		clips[i], err = s.prog.run(b, s.b.maxSamples(), s.keep)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]*backend.Tensor{}
	levels := make([][][]int64, len(s.data))
	for i, ap := range s.data {
		items := make([]*signal, n)
		for j := range n {
			items[j] = clips[j][i]
		}
		var err error
		switch {
		case !ap.stacks():
			levels[i], err = s.pack(ap, items, rows, out)
		case ap.byClip:
			levels[i], err = [][]int64{rows}, s.stack(ap, items, rows, out)
		default:
			err = s.stack(ap, items, rows, out)
		}
		if err != nil {
			return nil, err
		}
	}
	s.fillCompanions(s.companions, levels, out)
	s.narrowData(out)
	return out, nil
}

// pack concatenates the clips' samples or frames on axis 0 and returns the
// offsets of each level, innermost first.
func (s *audioSession) pack(ap *audioPort, items []*signal, rows []int64, out map[string]*backend.Tensor) ([][]int64, error) {
	units := []int64{0} // prefix offsets of each clip's units
	var payload []float32
	var valid []int64
	for _, x := range items {
		units = append(units, units[len(units)-1]+int64(x.units()))
		payload = append(payload, x.values()...)
		valid = append(valid, x.valid...)
	}
	shape := append([]int64{units[len(units)-1]}, unitShape(ap)...)
	if payload == nil {
		payload = []float32{}
	}
	out[ap.name] = &backend.Tensor{DType: "float32", Shape: shape, Data: payload}
	if name, ok := ap.lengths[1]; ok {
		if valid == nil {
			valid = []int64{}
		}
		out[name] = ints(valid)
	}
	if ap.levels == 2 {
		return [][]int64{units, rows}, nil
	}
	perRow := make([]int64, len(rows))
	for r, c := range rows {
		perRow[r] = units[c]
	}
	return [][]int64{perRow}, nil
}

// stack stacks the clips on a new axis 0, padding their samples or frames
// to the longest where the port pads them. A port that packs whole clips
// is laid out so; its level is the invocation's rows.
func (s *audioSession) stack(ap *audioPort, items []*signal, rows []int64, out map[string]*backend.Tensor) error {
	// Run checked one clip a row where the port is request_aligned
	// (oneARow).
	_, padded := ap.lengths[1]
	longest := max(ap.fixedUnits, 0)
	for i, x := range items {
		u := int64(x.units())
		switch {
		case ap.fixedUnits >= 0 && u != ap.fixedUnits:
			return fail("run/input", "clip %d holds %d %s after preprocessing.audio, but output port `%s` of adapter `%s` fixes axis 1 at %d",
				i, u, ap.static.UnitWord(), ap.name, s.comp.Name, ap.fixedUnits)
		case !padded && i > 0 && u != int64(items[0].units()):
			return fail("run/input", "clip %d holds %d %s after preprocessing.audio, but clip 0 holds %d, and output port `%s` of adapter `%s` does not pad axis 1; pad it with valid_lengths, or pack the clips (token_packed)",
				i, u, ap.static.UnitWord(), items[0].units(), ap.name, s.comp.Name)
		}
		longest = max(longest, u)
	}
	n := int64(len(items))
	unit := unitShape(ap)
	width := int64(1)
	for _, u := range unit {
		width *= u
	}
	shape := append([]int64{n, longest}, unit...)
	if ap.bandsFirst {
		shape[1], shape[2] = shape[2], shape[1]
	}
	t, err := backend.NewTensor("float32", shape)
	if err != nil {
		return err
	}
	dst := t.Float32s()
	for i, x := range items {
		clip := dst[int64(i)*longest*width : int64(i+1)*longest*width]
		if !ap.bandsFirst {
			copy(clip, x.values())
			continue
		}
		// Frame f's band b goes to row b, column f.
		for f := range int64(x.units()) {
			for b, v := range x.values()[f*width : (f+1)*width] {
				clip[int64(b)*longest+f] = v
			}
		}
	}
	out[ap.name] = t
	if name, ok := ap.lengths[1]; ok {
		l := make([]int64, n)
		for i, x := range items {
			l[i] = int64(x.units())
		}
		out[name] = ints(l)
	}
	if name, ok := ap.lengths[2]; ok {
		l := make([]int64, n*longest)
		for i, x := range items {
			copy(l[int64(i)*longest:], x.valid)
		}
		out[name] = &backend.Tensor{DType: "int64", Shape: []int64{n, longest}, Data: l}
	}
	return nil
}

// stacks reports whether the port lays each clip out on axes of its own
// after axis 0: stacked, or packed whole.
func (ap *audioPort) stacks() bool { return !ap.packed || ap.byClip }

// unitShape is the extents of each sample, frame or window of a port's
// clips past its units axis, then the port's trailing axes of extent 1,
// which lay out the same values.
func unitShape(ap *audioPort) []int64 {
	var out []int64
	for _, u := range ap.static.Unit() {
		out = append(out, int64(u))
	}
	for range ap.ones {
		out = append(out, 1)
	}
	return out
}
