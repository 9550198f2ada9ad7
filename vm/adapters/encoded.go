package adapters

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// kind names a modality and what one of its encodings holds, for messages.
type kind struct{ modality, item string }

// encoded is what every adapter session shares: its component, where its
// encoded items come from, and how they are split and processed.
type encoded struct {
	b        *Backend
	comp     *ir.Component
	k        kind
	in       encodedInput
	outPorts map[string]bool // the adapter's output ports
	// narrow names the data ports declared in another type than float32
	// (a 16-bit float, or uint8 pixels), by their dtype: the session
	// computes them in float32 and rounds them (narrowData) before they
	// leave it.
	narrow map[string]string
}

// newEncoded starts the session of an adapter component; its input is
// found by the modality's load.
func newEncoded(b *Backend, comp *ir.Component, k kind) *encoded {
	s := &encoded{b: b, comp: comp, k: k, outPorts: map[string]bool{}, narrow: map[string]string{}}
	for _, port := range comp.Outputs {
		s.outPorts[port.Name] = true
	}
	return s
}

// checkOutputs refuses an output port the adapter does not have.
func (s *encoded) checkOutputs(outputs []string) error {
	for _, o := range outputs {
		if !s.outPorts[o] {
			return unsupported("adapter `%s` has no output port `%s`", s.comp.Name, o)
		}
	}
	return nil
}

// Ready implements backend.Session: the adapter runs in Go and takes groups.
func (s *encoded) Ready() backend.Readiness {
	return backend.Readiness{Ready: true, Provider: "go", OpClass: "preprocess"}
}

// Close implements backend.Session.
func (s *encoded) Close() error { return nil }

// encodedInput says where an invocation's encoded items come from.
type encodedInput struct {
	port string // the uint8 input port
	// itemOffsets is the input port of the level-0 offsets that split the
	// bytes into items (images, clips); "" when the port carries one item.
	itemOffsets string
	// rowOffsets is the input port of the level-1 offsets (items→rows);
	// "" when none is bound.
	rowOffsets string
	// perItemRows: without a level-1 port, each item is its own row (a
	// grouped adapter with one level) rather than all of them one row.
	perItemRows bool
	// owners holds, per level, the input port of the level's owner map
	// ("" when it is not an input port): checked against the level's
	// offsets like any other companion.
	owners [2]string
}

// encodedPorts finds the uint8 input port and the ports of its level
// offsets.
func encodedPorts(comp *ir.Component, k kind) (encodedInput, error) {
	var in encodedInput
	payload, err := payloadPort(comp, k, "")
	if err != nil {
		return in, err
	}
	in.port = payload.Name
	companions := map[string]bool{}
	grouped := comp.Capacity != nil
	if l := payload.Contract.Layout; l.Kind == ir.TokenPacked {
		if len(l.Levels) == 0 || len(l.Levels) > 2 {
			return in, unsupported("input port `%s` of adapter `%s` declares %d ownership levels; the %s adapter reads one (bytes→%ss) or two (bytes→%ss, %ss→rows)", payload.Name, comp.Name, len(l.Levels), k.modality, k.item, k.item, k.item)
		}
		if in.itemOffsets, err = byteOffsetsPort(comp, payload, ""); err != nil {
			return in, err
		}
		for k, lv := range l.Levels {
			companions[lv.Offsets.Name], companions[lv.Owner.Name] = true, true
			if comp.Input(lv.Owner.Name) != nil {
				in.owners[k] = lv.Owner.Name
			}
		}
		if len(l.Levels) == 2 {
			if name := l.Levels[1].Offsets.Name; comp.Input(name) != nil {
				in.rowOffsets = name
			} else if grouped {
				return in, unsupported("adapter `%s` has a batch_capacity and its input port `%s` declares a %ss→rows level, but that level's offsets `%s` is not an input port, so a group's %ss cannot be told apart by request; declare `%s` as an input port and bind it",
					comp.Name, payload.Name, k.item, name, k.item, name)
			}
		} else {
			in.perItemRows = grouped
		}
	} else if grouped {
		return in, unsupported("adapter `%s` has a batch_capacity, but its input port `%s` is %s; to serve several requests in one invocation, make it token_packed with level-0 byte offsets bound as an input port", comp.Name, payload.Name, l.Kind)
	}
	return in, onlyCompanions(comp, k, payload, companions)
}

// payloadPort finds the one uint8 input port of the encoded items; hint
// ends the message when there is none.
func payloadPort(comp *ir.Component, k kind, hint string) (*ir.Port, error) {
	var payload *ir.Port
	for _, p := range comp.Inputs {
		if p.Contract == nil {
			continue
		}
		if d, ok := ir.LookupDType(p.Contract.DType); ok && d.Name == "uint8" {
			if payload != nil {
				return nil, unsupported("adapter `%s` has two uint8 input ports, `%s` and `%s`; the %s adapter reads its encoded %ss from one", comp.Name, payload.Name, p.Name, k.modality, k.item)
			}
			payload = p
		}
	}
	if payload == nil {
		return nil, unsupported("adapter `%s` has no uint8 input port for its encoded %ss; declare one, such as encoded: { dtype: uint8, shape: [bytes] }%s", comp.Name, k.item, hint)
	}
	return payload, nil
}

// byteOffsetsPort returns the level-0 offsets of a token_packed payload
// port, which must be an input port of the adapter; hint ends the message
// when it is not.
func byteOffsetsPort(comp *ir.Component, payload *ir.Port, hint string) (string, error) {
	name := payload.Contract.Layout.Levels[0].Offsets.Name
	if comp.Input(name) == nil {
		return name, unsupported("input port `%s` of adapter `%s` is token_packed, but its level 0 offsets `%s` is not an input port of the adapter, and a session sees only the ports an invoke binds; declare `%s` as an input port (int64, shared) and bind it to the byte offsets%s",
			payload.Name, comp.Name, name, name, hint)
	}
	return name, nil
}

// onlyCompanions refuses an input port that is neither the payload nor one
// of its level companions.
func onlyCompanions(comp *ir.Component, k kind, payload *ir.Port, companions map[string]bool) error {
	for _, p := range comp.Inputs {
		if p != payload && !companions[p.Name] {
			return unsupported("input port `%s` of adapter `%s` is neither the encoded %ss `%s` nor a level companion of them; the %s adapter reads nothing else", p.Name, comp.Name, k.item, payload.Name, k.modality)
		}
	}
	return nil
}

// intPort checks that a companion port is int64.
func intPort(comp *ir.Component, port *ir.Port, o *ir.ProgramOutput, k kind) error {
	if port.Contract == nil || port.Contract.DType == "" {
		return nil
	}
	if d, ok := ir.LookupDType(port.Contract.DType); !ok || d.Name != "int64" {
		return unsupported("output port `%s` of adapter `%s` carries %s (program output `%s`) as %s; the %s adapter writes it as int64",
			port.Name, comp.Name, o.Content, o.Name, port.Contract.DType, k.modality)
	}
	return nil
}

func ints(data []int64) *backend.Tensor {
	return &backend.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
}

// offsetsOf reads an int64 offsets vector of an input port and checks it:
// it starts at 0, never decreases, and ends at children (counted is a
// format that says what they count, for messages).
func (s *encoded) offsetsOf(inputs map[string]*backend.Tensor, port, what string, children int64, counted string) ([]int64, error) {
	t := inputs[port]
	if t == nil {
		return nil, fail("run/input", "input port `%s` of adapter `%s` has no value; bind it in the invoke to the %s offsets", port, s.comp.Name, what)
	}
	offs, ok := t.Data.([]int64)
	if !ok || t.Rank() != 1 || int64(len(offs)) != t.Len() {
		return nil, fail("run/input", "input port `%s` of adapter `%s` holds %s; %s offsets are an int64 vector", port, s.comp.Name, t, what)
	}
	switch {
	case len(offs) == 0:
		return nil, fail("run/extent", "%s offsets `%s` of adapter `%s` are empty; they hold one entry per unit plus one, starting with 0", what, port, s.comp.Name)
	case offs[0] != 0:
		return nil, fail("run/offsets", "%s offsets `%s` of adapter `%s` start at %d; offsets start at 0", what, port, s.comp.Name, offs[0])
	case offs[len(offs)-1] != children:
		return nil, fail("run/offsets", "%s offsets `%s` of adapter `%s` end at %d, but %s; the last offset is that count", what, port, s.comp.Name, offs[len(offs)-1], fmt.Sprintf(counted, children))
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return nil, fail("run/offsets", "%s offsets `%s` of adapter `%s` decrease at index %d: %d after %d; offsets never decrease", what, port, s.comp.Name, i, offs[i], offs[i-1])
		}
	}
	return offs, nil
}

// split returns the encoded bytes and the offsets that split them into
// items.
func (s *encoded) split(inputs map[string]*backend.Tensor) ([]byte, []int64, error) {
	t := inputs[s.in.port]
	if t == nil {
		return nil, nil, fail("run/input", "input port `%s` of adapter `%s` has no value; bind it to the encoded %ss", s.in.port, s.comp.Name, s.k.item)
	}
	data, ok := t.Data.([]uint8)
	if !ok || int64(len(data)) != t.Len() {
		return nil, nil, fail("run/input", "input port `%s` of adapter `%s` holds %s; encoded %ss are uint8 bytes", s.in.port, s.comp.Name, t, s.k.item)
	}
	if s.in.itemOffsets == "" {
		return data, []int64{0, int64(len(data))}, nil
	}
	if t.Rank() != 1 {
		return nil, nil, fail("run/input", "input port `%s` of adapter `%s` holds %s; packed encoded %ss are one byte vector", s.in.port, s.comp.Name, t, s.k.item)
	}
	offs, err := s.offsetsOf(inputs, s.in.itemOffsets, "byte", int64(len(data)), "input port `"+s.in.port+"` holds %d bytes")
	return data, offs, err
}

// items checks the outputs an invocation asks for and reads its encoded
// items: the bytes, the offsets that split them into items, and the
// offsets of its rows over the items.
func (s *encoded) items(inputs map[string]*backend.Tensor, outputs []string) (data []byte, offs, rows []int64, err error) {
	if err = s.checkOutputs(outputs); err != nil {
		return nil, nil, nil, err
	}
	if data, offs, err = s.split(inputs); err != nil {
		return nil, nil, nil, err
	}
	if rows, err = s.rows(inputs, len(offs)-1); err != nil {
		return nil, nil, nil, err
	}
	if err = s.ownerOf(inputs, s.in.owners[0], "byte", offs); err != nil {
		return nil, nil, nil, err
	}
	if s.in.rowOffsets != "" {
		if err = s.ownerOf(inputs, s.in.owners[1], s.k.item, rows); err != nil {
			return nil, nil, nil, err
		}
	}
	return data, offs, rows, nil
}

// ownerOf checks the owner map bound to port (none when port is "")
// against its level's offsets: one entry per child, each the unit whose
// offsets hold that child (§4 r9), as the runtime checks every other
// companion.
func (s *encoded) ownerOf(inputs map[string]*backend.Tensor, port, what string, offs []int64) error {
	if port == "" {
		return nil
	}
	t := inputs[port]
	if t == nil {
		return fail("run/input", "input port `%s` of adapter `%s` has no value; bind it in the invoke to the owner map of the %s offsets", port, s.comp.Name, what)
	}
	owner, ok := t.Data.([]int64)
	if !ok || t.Rank() != 1 || int64(len(owner)) != t.Len() {
		return fail("run/input", "input port `%s` of adapter `%s` holds %s; an owner map is an int64 vector", port, s.comp.Name, t)
	}
	children, units := offs[len(offs)-1], int64(len(offs)-1)
	if int64(len(owner)) != children {
		return fail("run/extent", "owner `%s` of adapter `%s` has %d entries, but its %s offsets cover %d children; an owner map has one entry per child", port, s.comp.Name, len(owner), what, children)
	}
	u := int64(0)
	for j, w := range owner {
		for u < units && offs[u+1] <= int64(j) {
			u++
		}
		if w < 0 || w >= units {
			return fail("run/owner", "owner `%s` of adapter `%s` holds %d at index %d, outside [0, %d)", port, s.comp.Name, w, j, units)
		}
		if w != u {
			return fail("run/owner", "owner `%s` of adapter `%s` holds %d at index %d, but its %s offsets place index %d in unit %d", port, s.comp.Name, w, j, what, j, u)
		}
	}
	return nil
}

// rows returns the offsets of the invocation's rows over its n items.
func (s *encoded) rows(inputs map[string]*backend.Tensor, n int) ([]int64, error) {
	if s.in.rowOffsets != "" {
		return s.offsetsOf(inputs, s.in.rowOffsets, s.k.item, int64(n), "the byte offsets delimit %d "+s.k.item+"s")
	}
	if !s.in.perItemRows {
		return []int64{0, int64(n)}, nil
	}
	return counting(n), nil
}

// each calls f on every item of the invocation, several at once. Where
// the invocation has one row, or its context ended, it returns the first
// error in item order, run/input naming the item, its row and its bytes;
// where items of several rows fail, backend.RowErrors, each failed row's
// first error worded as that row's invocation alone would word it, so
// that the runtime fails those rows' requests alone and runs the others
// without them.
func (s *encoded) each(ctx context.Context, data []byte, offs, rows []int64, f func(i int, b []byte) error) error {
	errs := s.parallel(ctx, len(offs)-1, func(i int) error { return f(i, data[offs[i]:offs[i+1]]) })
	if errs == nil {
		return nil
	}
	if len(rows) <= 2 || ctx.Err() != nil {
		i := slices.IndexFunc(errs, func(err error) bool { return err != nil })
		if errs[i] == ctx.Err() {
			return errs[i]
		}
		return s.itemError(i, offs, rows, errs[i])
	}
	return rowErrors(errs, rows, func(i, r int) error {
		local := make([]int64, rows[r+1]-rows[r]+1)
		for k := range local {
			local[k] = offs[rows[r]+int64(k)] - offs[rows[r]]
		}
		return s.itemError(i-int(rows[r]), local, []int64{0, int64(len(local) - 1)}, errs[i])
	})
}

// rowErrors gathers the items' errors errs (nil where an item succeeded)
// by the rows whose offsets over the items rows are: the first failed
// item of each row, as wording(item, row) words it.
func rowErrors(errs []error, rows []int64, wording func(i, r int) error) backend.RowErrors {
	var out backend.RowErrors
	for r := 0; r+1 < len(rows); r++ {
		for i := rows[r]; i < rows[r+1]; i++ {
			if errs[i] != nil {
				out = append(out, backend.RowError{Row: r, Err: wording(int(i), r)})
				break
			}
		}
	}
	return out
}

// withinBudget is run/budget where the items offs[from:to] delimit,
// whose says whose they are, would take more memory decoded and
// preprocessed than one request's media may (Backend.MaxMediaBytes);
// footprint reads each item's memory off its header, decoding nothing.
// An item whose header is refused counts nothing here: decoding it fails
// it, saying why.
func (s *encoded) withinBudget(data []byte, offs []int64, from, to int64, whose string, footprint func([]byte) (int64, error)) error {
	var total int64
	for i := from; i < to; i++ {
		if n, err := footprint(data[offs[i]:offs[i+1]]); err == nil {
			total += n
		}
	}
	return s.overBudget(total, to-from, s.k.item, whose)
}

// rowsWithinBudget is withinBudget for each row of an invocation: where
// admission did not key the requests (one invocation per request), Run
// checks the budget so, before any item is decoded.
func (s *encoded) rowsWithinBudget(data []byte, offs, rows []int64, footprint func([]byte) (int64, error)) error {
	for r := 0; r+1 < len(rows); r++ {
		if err := s.withinBudget(data, offs, rows[r], rows[r+1], whoseRow(rows, r), footprint); err != nil {
			return err
		}
	}
	return nil
}

// whoseRow names row r of an invocation of rows for a budget refusal: the
// request itself when the invocation has one row.
func whoseRow(rows []int64, r int) string {
	if len(rows) > 2 {
		return fmt.Sprintf("row %d", r)
	}
	return "this request"
}

// overBudget is run/budget when n items (of the word item) of whose would
// take total bytes decoded and preprocessed, more than one request's media
// may take (Backend.MaxMediaBytes); nil within it.
func (s *encoded) overBudget(total, n int64, item, whose string) error {
	if limit := s.b.maxMediaBytes(); total > limit {
		return fail(backend.RunBudget, "the %d %s(s) of %s (input port `%s` of adapter `%s`) would take %d bytes decoded and preprocessed, more than the %d bytes one request's media may take (--max-media-bytes, max_media_bytes in serve --config); send smaller or fewer %ss",
			n, item, whose, s.in.port, s.comp.Name, total, limit, item)
	}
	return nil
}

// itemError is run/input for item i of an invocation: it names the item,
// its row and its bytes, then says what is wrong with it.
func (s *encoded) itemError(i int, offs, rows []int64, err error) error {
	return fail("run/input", "%s %d%s of input port `%s` of adapter `%s` (bytes %d to %d) %v",
		s.k.item, i, rowOf(s.k.item, rows, i), s.in.port, s.comp.Name, offs[i], offs[i+1], err)
}

// parallel calls f on 0 to n-1, Backend.Workers at once, and returns
// each call's error by k, or nil where every call succeeded; a call after
// ctx is done fails with ctx's error instead.
func (s *encoded) parallel(ctx context.Context, n int, f func(k int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.b.workers(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				if err := ctx.Err(); err != nil {
					errs[k] = err
					continue
				}
				errs[k] = f(k)
			}
		}()
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	if slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		return errs
	}
	return nil
}

// rowOf says which row's item i is, when the invocation has several rows.
func rowOf(item string, rows []int64, i int) string {
	if len(rows) <= 2 {
		return ""
	}
	for r := 0; r+1 < len(rows); r++ {
		if int64(i) >= rows[r] && int64(i) < rows[r+1] {
			return fmt.Sprintf(" (%s %d of row %d)", item, int64(i)-rows[r], r)
		}
	}
	return ""
}

// levelCompanion says which level of which data port (an index into the
// session's data ports) a companion output port serves.
type levelCompanion struct {
	port, level int
	owner       bool
}

// addCompanions records the offsets and owner ports of the levels of data
// port i, as resolve names them, unless an earlier port claims them.
func addCompanions(companions map[string]levelCompanion, i int, levels []ir.Level, resolve func(string) string) {
	for k, l := range levels {
		if _, seen := companions[resolve(l.Offsets.Name)]; !seen {
			companions[resolve(l.Offsets.Name)] = levelCompanion{port: i, level: k}
		}
		if _, seen := companions[resolve(l.Owner.Name)]; !seen {
			companions[resolve(l.Owner.Name)] = levelCompanion{port: i, level: k, owner: true}
		}
	}
}

// fillCompanions fills each companion output port from the level offsets
// of its data port (levels, by data port, innermost first): the offsets,
// or the owner map derived from them.
func (s *encoded) fillCompanions(companions map[string]levelCompanion, levels [][][]int64, out map[string]*backend.Tensor) {
	for name, c := range companions {
		if !s.outPorts[name] || c.level >= len(levels[c.port]) {
			continue
		}
		offsets := levels[c.port][c.level]
		if c.owner {
			out[name] = ints(ownersOf(offsets))
		} else {
			out[name] = ints(slices.Clone(offsets))
		}
	}
}

// ownersOf derives an owner map from offsets: each child's unit position.
func ownersOf(offs []int64) []int64 {
	owner := make([]int64, offs[len(offs)-1])
	for u := 0; u+1 < len(offs); u++ {
		for j := offs[u]; j < offs[u+1]; j++ {
			owner[j] = int64(u)
		}
	}
	return owner
}

// counting is [0, 1, ..., n]: every unit its own parent.
func counting(n int) []int64 {
	out := make([]int64, n+1)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// onePerRow checks that every row brings one unit (what names it), as a
// request_aligned output port demands.
func (s *encoded) onePerRow(port, what string, rows []int64) error {
	for r := 0; r+1 < len(rows); r++ {
		if rows[r+1]-rows[r] != 1 {
			return fail("run/input", "output port `%s` of adapter `%s` is request_aligned, one %s per row, but row %d brings %d %ss: send one %s per request (or, authoring the package, make the port token_packed to carry several)",
				port, s.comp.Name, what, r, rows[r+1]-rows[r], what, what)
		}
	}
	return nil
}

// dataPort checks the contract of an output port the adapter fills with
// float32 data (what names it; example is a contract to declare) and
// resolves the source of the program output bound to it among the
// program's values (last when it names none), returning the contract,
// the source and what Load knows of the source's shape.
func dataPort[S any](s *encoded, port *ir.Port, o *ir.ProgramOutput, what, example, last string, shapes map[string]S) (*ir.Contract, string, S, error) {
	var static S
	c := port.Contract
	if c == nil {
		return nil, "", static, unsupported("output port `%s` of adapter `%s` has no contract; declare one, such as %s", port.Name, s.comp.Name, example)
	}
	if err := s.dataDType(port, what); err != nil {
		return nil, "", static, err
	}
	source := o.Source
	if source == "" {
		source = last
	}
	static, ok := shapes[source]
	if !ok {
		return nil, "", static, unsupported("preprocessing.%s output `%s` reads `%s`, which no transform defines; name a transform's output as its source", s.k.modality, o.Name, source)
	}
	return c, source, static, nil
}

// dataDType checks the element type of a port that receives program data
// and notes one other than float32 in s.narrow.
func (s *encoded) dataDType(port *ir.Port, what string) error {
	c := port.Contract
	if c.DType == "" {
		return nil
	}
	d, ok := ir.LookupDType(c.DType)
	if !ok || !slices.Contains(preprocess.DataDTypesOf(s.k.modality), d.Name) {
		return unsupported("output port `%s` of adapter `%s` carries %s as %s; the %s adapter writes %s", port.Name, s.comp.Name, what, c.DType, s.k.modality, preprocess.DataDTypesText(s.k.modality))
	}
	if d.Name != "float32" {
		s.narrow[port.Name] = d.Name
	}
	return nil
}

// narrowData replaces each float32 tensor of out that a port declared in
// another type receives by its values rounded to that type: a 16-bit
// float's nearest (ties to even), or uint8's nearest integer (halves up)
// clamped to [0, 255].
func (s *encoded) narrowData(out map[string]*backend.Tensor) {
	for name, dtype := range s.narrow {
		t := out[name]
		if t == nil {
			continue
		}
		if dtype == "uint8" {
			src := t.Float32s()
			dst := make([]uint8, len(src))
			for i, v := range src {
				dst[i] = uint8(min(max(math.Floor(float64(v)+0.5), 0), 255))
			}
			out[name] = &backend.Tensor{DType: dtype, Shape: t.Shape, Data: dst}
			continue
		}
		round := backend.Float32ToHalf
		if dtype == "bfloat16" {
			round = backend.Float32ToBFloat16
		}
		src := t.Float32s()
		dst := make([]uint16, len(src))
		for i, v := range src {
			dst[i] = round(v)
		}
		out[name] = &backend.Tensor{DType: dtype, Shape: t.Shape, Data: dst}
	}
}
