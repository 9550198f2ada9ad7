package serve

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
)

// A package without requests.json is warmed, planned and compared
// grouped against alone on requests synthesized from its workflow
// inputs' contracts. synth says how they are filled.
type synth struct {
	// fixed are the extents the components' graphs fix for shape symbols
	// (graphExtents).
	fixed map[string]int64
	// scale 0 makes the minimal warm-up request: every free extent 1,
	// one item, zeros. Above 0, request i's padded dimensions and item
	// counts are its own (extent), its other free dimensions scale, and
	// its values vary: requests that group short items with long ones,
	// as the comparison with alone needs.
	scale int64
}

// extent is the j-th padded dimension's extent in request i (item k of a
// request takes that of i+k): scale times 1 to 4, so that a group pads
// short items beside long ones.
func (s synth) extent(i, j int) int64 {
	if s.scale == 0 {
		return 1
	}
	return s.scale * int64(1+(3*i+j)%4)
}

// items is how many items request i gives a packed input.
func (s synth) items(i int) int {
	if s.scale == 0 {
		return 1
	}
	return 1 + i%3
}

// fill gives t request i's values: zeros for warm-up; else numbers in
// [-1, 1) for floats, and 0 and 1 by position for integers (a valid id,
// token type and owner in any vocabulary).
func (s synth) fill(t *backend.Tensor, i int) {
	if s.scale == 0 {
		return
	}
	for k := range t.Len() {
		x := float64((k*7+int64(i)*13)%17) / 17
		switch t.DType {
		case "float16", "bfloat16", "float32", "float64":
			t.SetFloat64At(k, 2*x-1)
		default:
			t.SetFloat64At(k, float64((k+int64(i))%2))
		}
	}
}

// synthRequests builds n requests (synth says how). A request_aligned
// input is one row whose padded dimensions take the request's extents,
// its valid lengths (a request input) filled with them; a token_packed
// input is the packed tensor with its offsets, owners and lengths
// (packPlain), as a client of the tensor protocols sends it, each item's
// padded dimensions its own (the items form costs the runtime a packing
// per request that such clients do not ask of it); an
// input of encoded media for a built-in adapter is one item of valid
// media per item (warmMedia). Optional inputs and inputs requests do not
// bring are left out.
func synthRequests(m *ir.Module, s synth, n int) ([]vm.Request, error) {
	media, err := warmMedia(m)
	if err != nil {
		return nil, err
	}
	derived := map[string]bool{}
	for _, in := range m.Inputs {
		c := in.Contract
		if !fromRequest(in) || c == nil {
			continue
		}
		if c.Layout.Kind == ir.TokenPacked {
			for _, comp := range c.Companions() {
				derived[comp] = true
			}
		}
	}
	contracts := requestContracts(m)
	reqs := make([]vm.Request, n)
	for i := range reqs {
		req := vm.Request{ID: fmt.Sprintf("synthesized-%d", i), Inputs: map[string]*backend.Tensor{}, Items: map[string][]vm.Item{}}
		if s.scale == 0 {
			req.ID = "warm-up"
		}
		given := map[string]*backend.Tensor{} // companions this request's rows fill
		for _, in := range m.Inputs {
			c := contracts[in.Name]
			if !fromRequest(in) || derived[in.Name] || (c != nil && c.Optional) || (in.Required != nil && !*in.Required) {
				continue
			}
			if w := media[in.Name]; w.bytes != nil {
				bs := [][]byte{w.bytes}
				switch {
				case w.frames > 0:
					bs = slices.Repeat(bs, w.frames)
				case len(c.Layout.Levels) == 2 && !w.alone:
					bs = slices.Repeat(bs, s.items(i))
				}
				if err := putBytes(&req, in.Name, c, bs); err != nil {
					return nil, err
				}
				continue
			}
			if c == nil || c.DType == "" || !c.HasShape {
				return nil, fmt.Errorf("input `%s` declares no dtype and shape", in.Name)
			}
			if c.Layout.Kind == ir.TokenPacked && len(c.Layout.Levels) > 0 {
				items, err := s.packedItems(c, i)
				if err != nil {
					return nil, fmt.Errorf("input `%s`: %v", in.Name, err)
				}
				// The packed tensor and its companions, as a client of the
				// tensor protocols sends them (and as a workflow input
				// without a layout of its own, the port's, takes them).
				if req.Inputs[in.Name], err = packPlain(c, items, given); err != nil {
					return nil, fmt.Errorf("input `%s`: %v", in.Name, err)
				}
				continue
			}
			shape := s.shape(c, func(j int) int64 { return s.extent(i, j) })
			t, err := backend.NewTensor(c.DType, shape)
			if err != nil {
				return nil, fmt.Errorf("input `%s`: %v", in.Name, err)
			}
			if c.Layout.Kind == ir.Shared {
				s.fill(t, 0) // one value for every request, or none would group
			} else {
				s.fill(t, i)
			}
			req.Inputs[in.Name] = t
			for j, p := range c.Padding {
				if ax := c.Axis(p.Dim.Name); ax >= 0 && p.Lengths.Name != "" {
					given[p.Lengths.Name] = &backend.Tensor{DType: "int64", Shape: slices.Clone(shape[:ax]), Data: slices.Repeat([]int64{s.extent(i, j)}, int(backend.Elements(shape[:ax])))}
				}
			}
		}
		for _, in := range m.Inputs {
			// The lengths, offsets and owners a request brings beside its
			// rows say how they lie: not values of their own.
			if t := given[in.Name]; t != nil && fromRequest(in) {
				req.Inputs[in.Name] = t
			}
		}
		if len(req.Items) == 0 {
			req.Items = nil
		}
		reqs[i] = req
	}
	return reqs, nil
}

// requestContracts are the contracts synthRequests fills the workflow
// inputs by: an input's own where it declares how requests lay it out;
// else, where an invoke binds it to a port that groups (a document
// written by init declares layouts on the ports alone), that port's
// layout and padding, its valid lengths, offsets and owners named by the
// workflow value bound to the sibling port they name (or, where they name
// no port, by the workflow value of that name).
func requestContracts(m *ir.Module) map[string]*ir.Contract {
	out := map[string]*ir.Contract{}
	byValue := map[ir.ValueID]*ir.Input{}
	for _, in := range m.Inputs {
		out[in.Name] = in.Contract
		byValue[in.Value] = in
	}
	m.Body.Walk(func(s *ir.Step) bool {
		comp := m.Component(s.Component.Name)
		if s.Op != ir.OpInvoke || comp == nil {
			return true
		}
		bound := map[string]string{} // port → workflow input
		for _, a := range s.Args {
			if in := byValue[a.Value.ID]; in != nil {
				bound[a.Port] = in.Name
			}
		}
		for _, a := range s.Args {
			in, p := byValue[a.Value.ID], comp.Input(a.Port)
			if in == nil || p == nil || p.Contract == nil || in.Contract == nil || in.Contract.Layout.Kind != ir.Shared ||
				p.Contract.Layout.Kind == ir.Shared || !p.Contract.HasShape || len(p.Contract.Shape) != len(in.Contract.Shape) {
				continue
			}
			// A companion the port names is its sibling port, bound to a
			// workflow value, or a workflow value itself.
			workflow := func(name string) string {
				if w, ok := bound[name]; ok {
					return w
				}
				if comp.Input(name) != nil {
					return "" // a sibling port bound to nothing the request brings
				}
				return name
			}
			k := *p.Contract
			k.DType = in.Contract.DType
			k.Padding = slices.Clone(k.Padding)
			for j := range k.Padding {
				k.Padding[j].Lengths.Name = workflow(k.Padding[j].Lengths.Name)
			}
			k.Layout.Levels = slices.Clone(k.Layout.Levels)
			for j := range k.Layout.Levels {
				l := &k.Layout.Levels[j]
				l.Offsets.Name, l.Owner.Name = workflow(l.Offsets.Name), workflow(l.Owner.Name)
			}
			out[in.Name] = &k
		}
		return true
	})
	return out
}

// shape is the extents of a value of contract c in one request: literal
// extents, a graph's fixed ones, extent(j) for its j-th padded dimension,
// a request axis of one row (a request_expanded one its factor), and the
// scale (at least 1) elsewhere.
func (s synth) shape(c *ir.Contract, extent func(j int) int64) []int64 {
	shape := make([]int64, len(c.Shape))
	for i, d := range c.Shape {
		j := slices.IndexFunc(c.Padding, func(p ir.Padding) bool { return p.Dim.Name == d.Sym })
		switch {
		case !d.IsSym():
			shape[i] = d.Size
		case s.fixed[d.Sym] > 0:
			shape[i] = s.fixed[d.Sym]
		case i == c.RequestAxis():
			shape[i] = 1
		case j >= 0:
			shape[i] = extent(j)
		default:
			shape[i] = max(1, s.scale)
		}
	}
	if c.Layout.Kind == ir.RequestExpanded && c.Layout.Factor > 0 && int(c.Layout.Axis) < len(shape) {
		shape[c.Layout.Axis] = c.Layout.Factor
	}
	return shape
}

// packedItems are request i's items of a token_packed input of contract
// c: of one level, rows of the contract's rank less one; of two, flat
// items whose axis 0 holds the unit's rows. Item k's padded dimensions
// are its own.
func (s synth) packedItems(c *ir.Contract, i int) ([]vm.Item, error) {
	items := make([]vm.Item, s.items(i))
	for k := range items {
		shape := s.shape(c, func(j int) int64 { return s.extent(i+k, j) })
		if len(c.Layout.Levels) == 1 {
			shape = shape[1:] // an item is one row
		} else {
			shape[0] = s.extent(i, k) / max(1, s.scale) // the unit's rows: 1 to 4
		}
		t, err := backend.NewTensor(c.DType, shape)
		if err != nil {
			return nil, err
		}
		s.fill(t, i+k)
		items[k] = vm.Item{Tensor: t}
	}
	return items, nil
}

// packPlain packs the items of a token_packed contract c into one tensor,
// its rows right-padded with zeros to the longest on every padded axis,
// and puts the companions c names into given, as vm's items form derives
// them: each level's offsets and owners, each padded axis's lengths.
func packPlain(c *ir.Contract, items []vm.Item, given map[string]*backend.Tensor) (*backend.Tensor, error) {
	levels := len(c.Layout.Levels)
	var rows []*backend.Tensor // each of the contract's rank less one
	var perUnit []int64        // rows of each item (two levels)
	for _, it := range items {
		if levels == 1 {
			rows = append(rows, it.Tensor)
			continue
		}
		t := it.Tensor
		perUnit = append(perUnit, t.Shape[0])
		for r := range t.Shape[0] {
			v := t.View(r, r+1)
			rows = append(rows, &backend.Tensor{DType: v.DType, Shape: t.Shape[1:], Data: v.Data})
		}
	}
	shape := append([]int64{int64(len(rows))}, rows[0].Shape...)
	for _, r := range rows {
		for a, d := range r.Shape {
			shape[a+1] = max(shape[a+1], d)
		}
	}
	out, err := backend.NewTensor(rows[0].DType, shape)
	if err != nil {
		return nil, err
	}
	for r, row := range rows {
		at := make([]int64, len(row.Shape))
		for k := range row.Len() {
			off := int64(r)
			for a, x := range at {
				off = off*shape[a+1] + x
			}
			v, _ := row.Float64At(k)
			out.SetFloat64At(off, v)
			for a := len(at) - 1; a >= 0; a-- {
				if at[a]++; at[a] < row.Shape[a] {
					break
				}
				at[a] = 0
			}
		}
	}
	count := func(cs []int64) (offs, owner []int64) {
		offs = []int64{0}
		for u, n := range cs {
			offs = append(offs, offs[len(offs)-1]+n)
			owner = append(owner, slices.Repeat([]int64{int64(u)}, int(n))...)
		}
		return offs, owner
	}
	counts := [][]int64{{int64(len(rows))}}
	if levels == 2 {
		counts = [][]int64{perUnit, {int64(len(perUnit))}}
	}
	for k, l := range c.Layout.Levels {
		offs, owner := count(counts[k])
		if l.Offsets.Name != "" {
			given[l.Offsets.Name] = &backend.Tensor{DType: "int64", Shape: []int64{int64(len(offs))}, Data: offs}
		}
		if l.Owner.Name != "" {
			given[l.Owner.Name] = &backend.Tensor{DType: "int64", Shape: []int64{int64(len(owner))}, Data: owner}
		}
	}
	for _, p := range c.Padding {
		ax := c.Axis(p.Dim.Name)
		if ax < 1 || p.Lengths.Name == "" {
			continue
		}
		outer := shape[:ax]
		inner := backend.Elements(outer[1:])
		var lengths []int64
		for _, r := range rows {
			lengths = append(lengths, slices.Repeat([]int64{r.Shape[ax-1]}, int(inner))...)
		}
		given[p.Lengths.Name] = &backend.Tensor{DType: "int64", Shape: slices.Clone(outer), Data: lengths}
	}
	return out, nil
}

// synthesizedRequests is how many requests a synthesized set holds:
// every mix of its 1-to-4 extents and 1-to-3 items several times over.
const synthesizedRequests = 12

// synthScales are the scales of the synthesized sets, smallest first: a
// model that refuses items of 1 to 4 samples (a speech encoder's
// convolutions) takes them longer.
var synthScales = []int64{1, 16, 128, 512}

// maxSynthElements bounds the elements of one synthesized request: a
// scale that would make more (an image padded on both sides at 512 times
// 4) is not tried, and no set is made before it is tried.
var maxSynthElements int64 = 1 << 20

// synthSet is one way of synthesizing requests: n of them, filled as
// synth says.
type synthSet struct {
	synth
	n int
}

// synthSets are the sets serve tries where a package has no
// requests.json, in order: the minimal warm-up request alone, then
// synthesizedRequests at each of synthScales whose requests stay within
// maxSynthElements. make makes one when it is tried.
func synthSets(m *ir.Module, dir string) []synthSet {
	fixed := graphExtents(m, dir)
	sets := []synthSet{{synth{fixed: fixed}, 1}}
	for _, scale := range synthScales {
		s := synth{fixed: fixed, scale: scale}
		if s.elements(m, synthesizedRequests) > maxSynthElements {
			break
		}
		sets = append(sets, synthSet{s, synthesizedRequests})
	}
	return sets
}

// make synthesizes the set's requests.
func (ss synthSet) make(m *ir.Module) ([]vm.Request, error) { return synthRequests(m, ss.synth, ss.n) }

// elements is the most elements any of the first n requests s makes
// holds, counted from the shapes before anything is made.
func (s synth) elements(m *ir.Module, n int) int64 {
	contracts := requestContracts(m)
	most := int64(0)
	for i := range n {
		total := int64(0)
		for _, in := range m.Inputs {
			c := contracts[in.Name]
			if !fromRequest(in) || c == nil || !c.HasShape {
				continue
			}
			if c.Layout.Kind == ir.TokenPacked && len(c.Layout.Levels) > 0 {
				for k := range s.items(i) {
					// At most 4 rows an item, each of the contract's
					// shape less the packed axis.
					total += 4 * backend.Elements(s.shape(c, func(j int) int64 { return s.extent(i+k, j) })[1:])
				}
				continue
			}
			total += backend.Elements(s.shape(c, func(j int) int64 { return s.extent(i, j) }))
		}
		most = max(most, total)
	}
	return most
}

// Synthesized are requests to compare grouped against alone where a
// package brings none (serve at load, genaic run --verify without
// --requests): the first synthesized set (synthSets) whose first request
// eng answers alone. Where none is, it returns the error the first set's
// first request failed with, the smallest such request: what the package
// refuses of any request, a newcomer's first lead (an output whose rows
// no layout splits per request, say).
func Synthesized(ctx context.Context, m *ir.Module, dir string, eng *vm.Engine) ([]vm.Request, error) {
	var first error
	for _, ss := range synthSets(m, dir)[1:] {
		set, err := ss.make(m)
		if err != nil {
			return nil, cmp.Or(first, err)
		}
		resp := eng.Run(ctx, set[0])
		err = resp.Err
		resp.Release()
		if err == nil {
			return set, nil
		}
		first = cmp.Or(first, err)
	}
	if first == nil {
		first = fmt.Errorf("a request at the contracts' smallest synthesized extents would hold more than %d elements", maxSynthElements)
	}
	return nil, first
}
