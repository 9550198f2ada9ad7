package vm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// Items are how a caller holds a packed input: one tensor per item, rather
// than one tensor with offsets, owners and valid lengths beside it.
//
// A token_packed workflow input of one level (images → request) takes
// items that are its rows: each item one image, a tensor of the contract's
// rank less one. An input of two levels (frames → clips → request) takes
// either nested items, each a clip whose items are its frames (rows), or
// flat items, each a tensor of the contract's rank whose axis 0 holds the
// unit's rows (a segment's tokens). The runtime packs the items on axis 0,
// right-pads them on every padded dimension to the longest, and derives
// the companions the contract declares (offsets, owners, valid lengths)
// that are workflow inputs. A request that also sends such a companion is
// refused (run/input) unless it equals the derived one.
//
// Items whose other (unpadded) extents differ cannot share one tensor: the
// request is split into one request per extent, each grouped on its own,
// and their results are reassembled in item order. The same holds for
// items a component that reads them makes into different extents, which
// its session's key says (backend.Keyer, Engine.PackItems); the parts wait
// for each other at their admissions (parts.go). Every workflow output
// must then be per item. A request may give several inputs as items; they
// split only alike (item i of each in the same part), else the request is
// refused (run/input).
//
// A response to a request that used items holds its per-item outputs in
// Response.Items, mirroring the items of the input they follow: a
// token_packed output whose levels are the outermost of an items input's
// follows that input; one on levels the workflow produces and emits (a
// token merger's, an adapter's) follows the first items input (by name),
// when they count one unit per item. Those outputs and the companions of
// their levels are left out of Response.Outputs.

// Item is one item of a ragged value: a tensor, or (for the outer level of
// a two-level input given nested) the items of the level below.
type Item struct {
	Tensor *backend.Tensor
	Items  []Item
}

// TensorItems wraps tensors as items.
func TensorItems(ts ...*backend.Tensor) []Item {
	out := make([]Item, len(ts))
	for i, t := range ts {
		out[i] = Item{Tensor: t}
	}
	return out
}

// ByteItems wraps encoded media (an image's, a clip's bytes) as items of
// a uint8 input packed bytes → items → request: each a uint8 vector.
func ByteItems(bs ...[]byte) []Item {
	out := make([]Item, len(bs))
	for i, b := range bs {
		if b == nil {
			b = []byte{}
		}
		out[i] = Item{Tensor: &backend.Tensor{DType: "uint8", Shape: []int64{int64(len(b))}, Data: b}}
	}
	return out
}

// Tensors returns the tensors of one-level items (nil for an item that
// holds items).
func Tensors(items []Item) []*backend.Tensor {
	if items == nil {
		return nil
	}
	out := make([]*backend.Tensor, len(items))
	for i, it := range items {
		out[i] = it.Tensor
	}
	return out
}

// itemsInput is what the contract of a token_packed workflow input says
// about packing its items.
type itemsInput struct {
	name    string
	c       *ir.Contract
	levels  int
	offsets []string // per level, innermost first
	owners  []string
	pads    []itemsPad
	// nested says the items' leaves are rows (depth == levels); otherwise
	// they are units of rows (depth == levels-1, two levels only).
	nested bool
}

type itemsPad struct {
	axis    int
	lengths string
}

// packedRequest is one of the plain requests a request with items runs
// as, and which of its items (top-level indices, the same of every items
// input) it holds: nil when it holds them all.
type packedRequest struct {
	req   Request
	items []int
}

// Ragged is how a request's items were packed into plain requests; Join
// reassembles their responses.
type Ragged struct {
	id           string
	ins          []*itemsInput // the items inputs, by name
	counts       []int         // their top-level items, by input
	countsInline [2]int
	parts        []packedRequest
	partsInline  [1]packedRequest // parts, where there is one
	// outputs are the workflow outputs that come back per item (order:
	// their names, in order); drop are the companions of their levels.
	outputs map[string]itemsOutput
	order   []string
	drop    map[string]bool
}

// Requests returns the plain requests to run, in order.
func (rg *Ragged) Requests() []Request {
	out := make([]Request, len(rg.parts))
	for i, p := range rg.parts {
		out[i] = p.req
	}
	return out
}

// PackItems turns a request that carries items into the plain requests it
// runs as (one, unless its items differ in an unpadded extent) and the
// Ragged that joins their responses. A request without items is returned
// as it is, with a nil Ragged.
func PackItems(m *ir.Module, req Request) ([]Request, *Ragged, error) {
	if len(req.Items) == 0 {
		return []Request{req}, nil, nil
	}
	rg, err := packItems(m, nil, req, nil)
	if err != nil {
		return nil, nil, err
	}
	return rg.Requests(), rg, nil
}

// keyedStep is an invoke step of a component whose session keys its
// invocations (backend.Keyer).
type keyedStep struct {
	step  *ir.Step
	keyer backend.Keyer
}

// keyedSteps are the invoke steps whose sessions key a request's items
// one by one: all but those that key requests whole (backend.WholeKeyer),
// which admission keys as every grouped component's requests.
func keyedSteps(m *ir.Module, specs map[string]*componentSpec) []keyedStep {
	var out []keyedStep
	m.Body.Walk(func(s *ir.Step) bool {
		if sp := specs[s.Component.Name]; s.Op == ir.OpInvoke && sp != nil && sp.keyer != nil && !keysWhole(sp.keyer) {
			out = append(out, keyedStep{s, sp.keyer})
		}
		return true
	})
	return out
}

func keysWhole(k backend.Keyer) bool {
	w, ok := k.(backend.WholeKeyer)
	return ok && w.KeysWhole()
}

// itemKeyer keys top-level item i of items input in by what the
// components that read the input make of it (backend.Keyer: the width an
// image resizes to). "" when nothing keys it.
type itemKeyer func(req Request, in *itemsInput, i int) (string, error)

// producedKey is the engine's itemKeyer: the item is packed alone, and
// each keyed invoke step that binds the input is given its arguments from
// that item, its derived companions and the request's other inputs.
func (e *Engine) producedKey(req Request, in *itemsInput, i int) (string, error) {
	var keys []string
	var vals map[string]*backend.Tensor
	for _, k := range e.keyed {
		if !slices.ContainsFunc(k.step.Args, func(a ir.Arg) bool { return a.Value.Name == in.name }) {
			continue
		}
		if vals == nil {
			// The keys read what the steps bind, owners only where a
			// step binds one.
			owners := slices.ContainsFunc(e.keyed, func(k keyedStep) bool {
				return slices.ContainsFunc(k.step.Args, func(a ir.Arg) bool { return slices.Contains(in.owners, a.Value.Name) })
			})
			p, err := in.pack(req.Items[in.name], []int{i}, true, owners)
			if err != nil {
				return "", err
			}
			vals = make(map[string]*backend.Tensor, len(req.Inputs)+len(p.companions)+1)
			maps.Copy(vals, req.Inputs)
			p.addTo(vals, in.name)
		}
		args := map[string]*backend.Tensor{}
		for _, a := range k.step.Args {
			if t := vals[a.Value.Name]; t != nil {
				args[a.Port] = t
			}
		}
		key, err := k.keyer.Key(args)
		if err != nil {
			// A budget refusal keeps its rule: the item is not wrong, only
			// too big.
			rule := backend.RunInput
			if re := AsRunError(err); re.Rule == backend.RunBudget {
				rule = re.Rule
			}
			return "", runErr(rule, "workflow input `%s` item %d, as component `%s` reads it: %s", in.name, i, k.step.Component.Name, AsRunError(err).Message)
		}
		if key != "" {
			keys = append(keys, key)
		}
	}
	return strings.Join(keys, "; "), nil
}

// PackItems is PackItems of the engine's workflow that also keys items by
// what its components make of them (producedKey): byte items whose images
// resize to different widths run as separate parts, as tensor items of
// different extents do.
func (e *Engine) PackItems(req Request) ([]Request, *Ragged, error) {
	if len(req.Items) == 0 {
		return []Request{req}, nil, nil
	}
	var key itemKeyer
	if len(e.keyed) > 0 {
		key = e.producedKey
	}
	rg, err := packItems(e.m, &e.itemsPlans, req, key)
	if err != nil {
		return nil, nil, err
	}
	return rg.Requests(), rg, nil
}

// itemsPlan is what a request's items inputs take from the workflow:
// each input as its contract reads (itemsContract), and which outputs
// come back per item (findOutputs). It is the same for every request that
// gives items for the same inputs nested alike, and never changes once
// made: an engine keeps one per such form (Engine.itemsPlans).
type itemsPlan struct {
	ins     []*itemsInput
	outputs map[string]itemsOutput
	order   []string // the outputs' names, in order
	drop    map[string]bool
}

// itemsPlans keeps the itemsPlan of each form of request an engine has
// met (the inputs given as items, and how deep each one's leaves lie), by
// the form's first input: found without a key made for the request, as
// every request given items looks its form up. Written once per form
// (copied, then swapped), read by every request.
type itemsPlans struct {
	forms atomic.Pointer[map[string][]itemsForm]
	mu    sync.Mutex // writers of forms
}

// itemsForm is one form of request and its plan.
type itemsForm struct {
	names  []string
	depths []int
	plan   *itemsPlan
}

// find returns the plan kept for the form of req, whose items inputs are
// names (in order), or nil.
func (ps *itemsPlans) find(req Request, names []string) *itemsPlan {
	forms := ps.forms.Load()
	if forms == nil {
		return nil
	}
	for _, f := range (*forms)[names[0]] {
		if slices.Equal(f.names, names) && slices.EqualFunc(f.depths, names, func(d int, name string) bool { return d == leafDepth(req.Items[name][0]) }) {
			return f.plan
		}
	}
	return nil
}

// keep keeps p as the plan of req's form, unless one is kept already, and
// returns the plan kept.
func (ps *itemsPlans) keep(req Request, names []string, p *itemsPlan) *itemsPlan {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if kept := ps.find(req, names); kept != nil {
		return kept
	}
	f := itemsForm{names: slices.Clone(names), plan: p}
	for _, name := range names {
		f.depths = append(f.depths, leafDepth(req.Items[name][0]))
	}
	next := map[string][]itemsForm{}
	if forms := ps.forms.Load(); forms != nil {
		maps.Copy(next, *forms)
	}
	next[names[0]] = append(slices.Clip(next[names[0]]), f)
	ps.forms.Store(&next)
	return p
}

// planItems returns the itemsPlan of req's items inputs, names in order:
// from plans where a request of the same form made it (plans may be nil),
// else made, checked and kept there.
func planItems(m *ir.Module, plans *itemsPlans, req Request, names []string) (*itemsPlan, error) {
	for _, name := range names {
		if len(req.Items[name]) == 0 {
			plans = nil // itemsContract says what is wrong
		}
	}
	if plans != nil {
		if p := plans.find(req, names); p != nil {
			return p, nil
		}
	}
	p := &itemsPlan{outputs: map[string]itemsOutput{}, drop: map[string]bool{}}
	for _, name := range names {
		in, err := itemsContract(m, name, req.Items[name])
		if err != nil {
			return nil, err
		}
		p.ins = append(p.ins, in)
	}
	rg := &Ragged{ins: p.ins, outputs: p.outputs, drop: p.drop}
	rg.findOutputs(m)
	p.order = slices.Sorted(maps.Keys(p.outputs))
	if plans != nil {
		p = plans.keep(req, names, p)
	}
	return p, nil
}

// itemNames are the inputs req gives as items, in the order of their
// names.
func itemNames(req Request) []string {
	if len(req.Items) == 1 {
		for name := range req.Items {
			return []string{name}
		}
	}
	return slices.Sorted(maps.Keys(req.Items))
}

func packItems(m *ir.Module, plans *itemsPlans, req Request, produced itemKeyer) (*Ragged, error) {
	names := itemNames(req)
	for _, name := range names {
		if _, both := req.Inputs[name]; both {
			return nil, runErr(backend.RunInput, "workflow input `%s` is given both as a tensor and as items; send one of them", name)
		}
	}
	plan, err := planItems(m, plans, req, names)
	if err != nil {
		return nil, err
	}
	ins := plan.ins
	// Partition each input's top-level items by their unpadded extents; an
	// item without rows (an empty clip) has none and joins the first part.
	// Several items inputs split only alike (item i of each in the same
	// part), so that each part pairs the inputs' items as the whole request
	// does. Nearly every request's items share one key: its items are
	// listed by key only once a second key shows up.
	groups := make([][][]int, len(ins))   // nil: one part of every item
	extents := make([][]string, len(ins)) // the parts' keys, where several
	splitAt := -1
	var keyRoom, firstRoom [64]byte
	key, first := keyRoom[:0], firstRoom[:0]
	for x, in := range ins {
		var order []string       // the keys, in the order items bring them, once there are two
		var sel [][]int          // the items of each key, alike
		var index map[string]int // order's, where it has many
		var empty []int
		first = first[:0]
		items := req.Items[in.name]
		for i, it := range items {
			var err error
			if key, err = in.key(key[:0], it, i); err != nil {
				return nil, err
			}
			if len(key) == 0 {
				empty = append(empty, i)
				continue
			}
			if produced != nil {
				pk, err := produced(req, in, i)
				if err != nil {
					return nil, err
				}
				key = joinKey(key, pk)
			}
			switch {
			case len(first) == 0:
				first = append(first, key...)
				continue
			case order == nil && string(key) == string(first):
				continue
			case order == nil:
				// A second key: the items so far (but the empty ones) are
				// the first's.
				order = []string{string(first)}
				sel = [][]int{nonEmpty(i, empty)}
			}
			j, ok := index[string(key)]
			if index == nil {
				j = slices.IndexFunc(order, func(o string) bool { return o == string(key) })
				ok = j >= 0
			}
			if !ok {
				order, sel = append(order, string(key)), append(sel, nil)
				j = len(order) - 1
				switch {
				case index != nil:
					index[order[j]] = j
				case len(order) > 16:
					// Items of many extents: found by a map from here on,
					// so that a request of n items costs n lookups.
					index = make(map[string]int, 2*len(order))
					for k, o := range order {
						index[o] = k
					}
				}
			}
			sel[j] = append(sel[j], i)
		}
		if order != nil {
			if len(empty) > 0 {
				sel[0] = append(sel[0], empty...)
				slices.Sort(sel[0])
			}
			groups[x], extents[x] = sel, order
			if splitAt < 0 {
				splitAt = x
			}
		}
	}
	var order []string // the extents of the parts, when split
	if splitAt >= 0 {
		order = extents[splitAt]
		for x, in := range ins {
			if !slices.EqualFunc(groups[x], groups[splitAt], slices.Equal[[]int]) {
				return nil, runErr(backend.RunInput, "the items of workflow input `%s` differ in an extent that is not padded (%s), so they run as separate requests (items %v), but the items of `%s` do not split alike (items %v): "+
					"send items whose unpadded extents change together across the inputs, or items of one extent per request",
					ins[splitAt].name, strings.Join(order, " vs "), groups[splitAt], in.name, groupsOf(groups[x], len(req.Items[in.name])))
			}
		}
	}
	rg := &Ragged{id: req.ID, ins: ins, outputs: plan.outputs, order: plan.order, drop: plan.drop}
	rg.counts = rg.countsInline[:0]
	for _, in := range ins {
		rg.counts = append(rg.counts, len(req.Items[in.name]))
	}
	if len(order) > 1 {
		for _, o := range m.Outputs {
			if _, ok := rg.outputs[o.Name]; !ok && !rg.drop[o.Name] {
				return nil, runErr(backend.RunInput, "the items of workflow input `%s` differ in an extent that is not padded (%s), so they run as separate requests; "+
					"output `%s` is not per item and could not be reassembled: send items of one extent per request", ins[splitAt].name, strings.Join(order, " vs "), o.Name)
			}
		}
	}
	// Derived companions of the whole request, checked against those the
	// request sends, and against each other where two inputs derive one.
	// A request of one part packs each input once: the whole request's
	// value is that part's.
	wholes := make([]packed, len(ins))
	companions := 0
	for x, in := range ins {
		whole, err := in.pack(req.Items[in.name], nil, len(order) <= 1, true)
		if err != nil {
			return nil, err
		}
		wholes[x] = whole
		companions += len(whole.companions)
	}
	derived := func(name string) *backend.Tensor {
		for _, w := range wholes {
			for _, c := range w.companions {
				if c.name == name {
					return c.t
				}
			}
		}
		return nil
	}
	for _, w := range wholes[1:] {
		for _, c := range w.companions {
			if prev := derived(c.name); !equalTensor(prev, c.t) {
				return nil, runErr(backend.RunInput, "the items of two inputs derive different `%s` (%v and %v); items that share a level must agree on it", c.name, prev.Data, c.t.Data)
			}
		}
	}
	// A request that gives companions of its items (seldom) has them
	// checked, in the order of their names.
	var given []string
	for _, w := range wholes {
		for _, c := range w.companions {
			if _, ok := req.Inputs[c.name]; ok && !slices.Contains(given, c.name) {
				given = append(given, c.name)
			}
		}
	}
	slices.Sort(given)
	for _, name := range given {
		if got, want := req.Inputs[name], derived(name); !equalTensor(got, want) {
			return nil, runErr(backend.RunInput, "request gives `%s` as %v %v, but its items derive %v: omit the companions of an input given as items, or send the ones its items imply",
				name, got, got.Data, want.Data)
		}
	}
	if len(order) <= 1 {
		in := make(map[string]*backend.Tensor, len(req.Inputs)+len(ins)+companions)
		maps.Copy(in, req.Inputs)
		for x, it := range ins {
			wholes[x].addTo(in, it.name)
		}
		rg.partsInline[0] = packedRequest{req: Request{ID: req.ID, Inputs: in}}
		rg.parts = rg.partsInline[:]
		return rg, nil
	}
	for _, sel := range groups[splitAt] {
		in := make(map[string]*backend.Tensor, len(req.Inputs)+len(ins)+companions)
		for name, v := range req.Inputs {
			if !slices.Contains(given, name) {
				in[name] = v
			}
		}
		for _, it := range ins {
			p, err := it.pack(req.Items[it.name], sel, true, true)
			if err != nil {
				return nil, err
			}
			p.addTo(in, it.name)
		}
		rg.parts = append(rg.parts, packedRequest{req: Request{ID: req.ID, Inputs: in}, items: sel})
	}
	gate := newPartGate(len(rg.parts))
	for i := range rg.parts {
		rg.parts[i].req.parts = gate
	}
	return rg, nil
}

// nonEmpty lists the items before n but those of empty (in order).
func nonEmpty(n int, empty []int) []int {
	out := make([]int, 0, n-len(empty))
	for i := range n {
		if len(empty) > 0 && empty[0] == i {
			empty = empty[1:]
			continue
		}
		out = append(out, i)
	}
	return out
}

// groupsOf lists a partition of n items for a message: nil, as packItems
// writes one of a single key, is one part of every item.
func groupsOf(parts [][]int, n int) [][]int {
	if parts == nil {
		return [][]int{allItems(n)}
	}
	return parts
}

// itemsContract checks that workflow input name takes items and reads how.
func itemsContract(m *ir.Module, name string, items []Item) (*itemsInput, error) {
	var c *ir.Contract
	found := false
	for _, in := range m.Inputs {
		if in.Name == name {
			c, found = in.Contract, true
		}
	}
	if !found {
		return nil, runErr(backend.RunInput, "request gives items for `%s`, which is not a workflow input", name)
	}
	if c == nil || c.Layout.Kind != ir.TokenPacked || len(c.Layout.Levels) == 0 || len(c.Layout.Levels) > 2 || c.Rank < 1 {
		kind := "no contract"
		if c != nil {
			kind = c.Layout.Kind.String()
		}
		return nil, runErr(backend.RunInput, "workflow input `%s` is given as items, but its contract is %s: items are for token_packed inputs; send one tensor", name, kind)
	}
	if len(items) == 0 {
		return nil, runErr(backend.RunInput, "workflow input `%s` is given as an empty items list; send at least one item (a request with no items is one tensor with 0 rows)", name)
	}
	in := &itemsInput{name: name, c: c, levels: len(c.Layout.Levels)}
	for _, l := range c.Layout.Levels {
		in.offsets = append(in.offsets, l.Offsets.Name)
		in.owners = append(in.owners, l.Owner.Name)
	}
	for _, p := range c.Padding {
		ax := c.Axis(p.Dim.Name)
		if ax < 1 {
			return nil, runErr(backend.RunInput, "workflow input `%s` pads `%s`, which is not an axis after the packed one; it cannot take items", name, p.Dim.Name)
		}
		in.pads = append(in.pads, itemsPad{axis: ax, lengths: p.Lengths.Name})
	}
	// The depth of the first leaf decides the form; every leaf must agree.
	depth := leafDepth(items[0])
	switch {
	case depth == in.levels:
		in.nested = true
	case depth == in.levels-1:
	default:
		return nil, runErr(backend.RunInput, "workflow input `%s` has %d ownership level(s), but its items nest %d deep; give %d level(s) of items (each leaf one row), or for two levels one level of items whose rows are on axis 0",
			name, in.levels, depth, in.levels)
	}
	return in, nil
}

// leafDepth is how deep the first leaf under it lies (1: it is one), the
// depth that decides an items input's form.
func leafDepth(it Item) int {
	depth := 1
	for ; it.Tensor == nil && len(it.Items) > 0; it = it.Items[0] {
		depth++
	}
	return depth
}

// leafRank is the rank of a leaf as the request gives it.
func (in *itemsInput) leafRank() int {
	if in.nested {
		return in.c.Rank - 1
	}
	return in.c.Rank
}

// itemPath is where an item lies: its top-level index, then its index in
// the list it nests in, where it does ("3.1" in messages; items nest at
// most two deep). A value, written out only where a message says it.
type itemPath struct {
	n  int
	at [2]int
}

// in is the path of child j of the item at p.
func (p itemPath) in(j int) itemPath {
	p.at[p.n] = j
	p.n++
	return p
}

func (p itemPath) String() string {
	var b []byte
	for k, i := range p.at[:p.n] {
		if k > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}

// check validates one leaf against the contract.
func (in *itemsInput) check(t *backend.Tensor, at itemPath) error {
	rank := in.leafRank()
	if d, _ := ir.LookupDType(in.c.DType); t.Rank() == in.c.Rank && in.levels == 1 && d.Name == "uint8" {
		return runErr(backend.RunInput, "workflow input `%s` packs bytes with one ownership level, so each of its items would be one byte, not an encoded image, clip or frame; "+
			"to send encoded media as items, give the input a second level (bytes → items, items → request), such as levels: [{ offsets: %s, owner: %s }, { offsets: ITEM_ROWS, owner: ITEM_ROW_OWNER }], or send the bytes as one tensor with `%s`",
			in.name, in.offsets[0], in.owners[0], in.offsets[0])
	}
	if t.Rank() != rank {
		return runErr(backend.RunInput, "workflow input `%s` item %s has rank %d, but each item of this input is of rank %d (the contract's %d axes %s)",
			in.name, at, t.Rank(), rank, in.c.Rank, map[bool]string{true: "less the packed one", false: "with its rows on axis 0"}[in.nested])
	}
	if d, ok := ir.LookupDType(in.c.DType); ok && d.Name != t.DType {
		return runErr(backend.RunInput, "workflow input `%s` item %s is %s, but the input is declared %s", in.name, at, t, in.c.DType)
	}
	if msg := t.Problem(); msg != "" {
		return runErr(backend.RunInput, "workflow input `%s` item %s is %s but %s", in.name, at, t, msg)
	}
	off := in.c.Rank - rank
	for i, d := range in.c.Shape {
		if i >= off && !d.IsSym() && t.Shape[i-off] != d.Size {
			return runErr(backend.RunInput, "workflow input `%s` fixes axis %d at %d, but item %s is %s", in.name, i, d.Size, at, t)
		}
	}
	return nil
}

// rowShape returns a leaf's shape without its rows: the contract's axes
// after the packed one.
func (in *itemsInput) rowShape(t *backend.Tensor) []int64 {
	if in.nested {
		return t.Shape
	}
	return t.Shape[1:]
}

// padded reports whether contract axis ax (≥ 1) is padded.
func (in *itemsInput) padded(ax int) bool {
	return slices.ContainsFunc(in.pads, func(p itemsPad) bool { return p.axis == ax })
}

// key checks top-level item i and appends its unpadded extents to buf:
// items of one key share a tensor. It appends nothing for an item with no
// rows. Its leaves lie at depth 1 (the item is one) or 2 (the item is a
// list of them), as itemsContract read the form.
func (in *itemsInput) key(buf []byte, it Item, i int) ([]byte, error) {
	want := in.levels
	if !in.nested {
		want--
	}
	at := itemPath{n: 1, at: [2]int{i}}
	start := len(buf)
	if want == 1 {
		return in.leafKey(buf, start, it, at, want)
	}
	if it.Tensor != nil {
		return buf, runErr(backend.RunInput, "workflow input `%s` item %s must be a list of items (items nest %d deep here), got a tensor", in.name, at, want)
	}
	for j, c := range it.Items {
		var err error
		if buf, err = in.leafKey(buf, start, c, at.in(j), want); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// leafKey checks the leaf it at a depth of want and appends its
// unpadded extents to buf ("[axis 1 = 7, axis 2 = 3]") where it is the
// first leaf of an item whose key starts at start; a later leaf's must
// equal the first's.
func (in *itemsInput) leafKey(buf []byte, start int, it Item, at itemPath, want int) ([]byte, error) {
	if it.Tensor == nil || it.Items != nil {
		return buf, runErr(backend.RunInput, "workflow input `%s` item %s must be a tensor (items nest %d deep here), got a list of items", in.name, at, want)
	}
	t := it.Tensor
	if err := in.check(t, at); err != nil {
		return buf, err
	}
	mark := len(buf)
	buf = append(buf, '[')
	for a, d := range in.rowShape(t) {
		if in.padded(a + 1) {
			continue
		}
		if len(buf) > mark+1 {
			buf = append(buf, ", "...)
		}
		buf = append(buf, "axis "...)
		buf = strconv.AppendInt(buf, int64(a+1), 10)
		buf = append(buf, " = "...)
		buf = strconv.AppendInt(buf, d, 10)
	}
	buf = append(buf, ']')
	if mark == start {
		return buf, nil
	}
	if string(buf[mark:]) != string(buf[start:mark]) {
		return buf[:mark], runErr(backend.RunInput, "workflow input `%s` item %s has extents %s, but the other rows of item %d have %s; the rows of one item must agree on every axis that is not padded",
			in.name, at, string(buf[mark:]), at.at[0], string(buf[start:mark]))
	}
	return buf[:mark], nil
}

// joinKey appends to an item's key of its own extents, own, what
// components make of it, as messages show it: the latter alone where the
// item's own extents are none (encoded bytes).
func joinKey(own []byte, produced string) []byte {
	switch {
	case produced == "":
		return own
	case string(own) == "[]":
		return append(own[:0], produced...)
	}
	return append(append(own, ' '), produced...)
}

// packed is an input packed from its items, with the companions derived.
type packed struct {
	value      *backend.Tensor
	companions []namedTensor
}

// addTo sets the packed input name and its companions in a request's
// inputs.
func (p *packed) addTo(inputs map[string]*backend.Tensor, name string) {
	inputs[name] = p.value
	for _, c := range p.companions {
		inputs[c.name] = c.t
	}
}

// namedTensor is a value of a request by its input's name.
type namedTensor struct {
	name string
	t    *backend.Tensor
}

// pack packs the top-level items sel (all when nil) into one tensor, when
// value is set, and derives its companions, owners only where owners is
// set (an encoded file's owner holds a row per byte).
func (in *itemsInput) pack(items []Item, sel []int, value, owners bool) (packed, error) {
	n := len(items)
	if sel != nil {
		n = len(sel)
	}
	pick := func(k int) Item {
		if sel == nil {
			return items[k]
		}
		return items[sel[k]]
	}
	// The offsets of the request's top-level items, and where there are
	// two levels, of each top-level item's rows; key has checked every
	// leaf.
	top := []int64{0, int64(n)}
	var rowsOf []int64
	if in.levels == 2 {
		rowsOf = make([]int64, 1, n+1)
	}
	leaves := make([]*backend.Tensor, 0, n)
	for k := range n {
		it := pick(k)
		switch {
		case in.levels == 1:
			leaves = append(leaves, it.Tensor)
		case in.nested:
			rowsOf = append(rowsOf, rowsOf[k]+int64(len(it.Items)))
			for _, c := range it.Items {
				leaves = append(leaves, c.Tensor)
			}
		default:
			rowsOf = append(rowsOf, rowsOf[k]+it.Tensor.Shape[0])
			leaves = append(leaves, it.Tensor)
		}
	}
	if len(leaves) == 0 {
		return packed{}, runErr(backend.RunInput, "workflow input `%s` is given as items, but none holds a tensor; send at least one row (a request with no rows is one tensor with 0 rows)", in.name)
	}
	// The packed shape: rows, then every axis at its largest extent (only
	// padded axes may differ: the items were partitioned by the others).
	rows := int64(0)
	shape := append([]int64{0}, in.rowShape(leaves[0])...)
	for _, t := range leaves {
		for a, d := range in.rowShape(t) {
			if value && d != shape[a+1] && !in.padded(a+1) {
				return packed{}, runErr(backend.RunInput, "workflow input `%s` items differ on axis %d (%d and %d), which is not padded; items of one request must agree there", in.name, a+1, shape[a+1], d)
			}
			shape[a+1] = max(shape[a+1], d)
		}
		rows += in.leafRows(t)
	}
	shape[0] = rows
	p := packed{companions: make([]namedTensor, 0, 2*in.levels+len(in.pads))}
	if value {
		if _, err := checkedLen(shape); err != nil {
			return packed{}, runErr(backend.RunInput, "workflow input `%s`: its items pack into shape %v: %v", in.name, shape, err)
		}
		t, err := backend.NewTensor(leaves[0].DType, shape)
		if err != nil {
			return packed{}, runErr(backend.RunInput, "workflow input `%s`: %v", in.name, err)
		}
		row := int64(0)
		for _, leaf := range leaves {
			placePadded(t, row, leaf, in.nested)
			row += in.leafRows(leaf)
		}
		p.value = t
	}
	// Level 0 is the innermost: a row's own unit where there are two.
	for k := range in.levels {
		offs := top
		if k == 0 && in.levels == 2 {
			offs = rowsOf
		}
		if in.offsets[k] != "" {
			p.companions = append(p.companions, namedTensor{in.offsets[k], offsetsTensor(offs)})
		}
		if owners && in.owners[k] != "" {
			p.companions = append(p.companions, namedTensor{in.owners[k], offsetsTensor(ownersFromOffsets(offs))})
		}
	}
	// A padded axis's lengths: each packed row's own extent there, once
	// per position of the axes between the rows and it.
	for _, pad := range in.pads {
		outer := shape[:pad.axis]
		inner := backend.Elements(outer[1:])
		lengths := make([]int64, 0, backend.Elements(outer))
		for _, t := range leaves {
			ext := in.rowShape(t)[pad.axis-1]
			for range in.leafRows(t) * inner {
				lengths = append(lengths, ext)
			}
		}
		p.companions = append(p.companions, namedTensor{pad.lengths, int64Tensor(lengths, outer...)})
	}
	return p, nil
}

// leafRows is how many packed rows a leaf brings: one where the input's
// items nest as deep as its levels (a leaf is a row), else its axis 0.
func (in *itemsInput) leafRows(t *backend.Tensor) int64 {
	if in.nested {
		return 1
	}
	return t.Shape[0]
}

// allItems returns the indices of n items: 0, 1, ..., n-1.
func allItems(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// cumulative returns the offsets of consecutive counts: [0, c0, c0+c1, ...].
func cumulative(counts []int64) []int64 {
	out := make([]int64, len(counts)+1)
	for i, c := range counts {
		out[i+1] = out[i] + c
	}
	return out
}

// maxPackedElements bounds the tensor items pack into, as a requests
// document bounds one tensor: padding many short items to one long one
// must not allocate without limit.
const maxPackedElements = 1 << 32

// checkedLen refuses shapes of more than maxPackedElements elements.
func checkedLen(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative extent")
		}
		if d != 0 && n > maxPackedElements/d {
			return 0, fmt.Errorf("more than %d elements once padded to the longest item; send fewer or more even items per request", int64(maxPackedElements))
		}
		n *= d
	}
	return n, nil
}

// placePadded copies src (rank r, rows on axis 0; where row is set, one
// row of rank r-1) into dst from row at, each axis of src at the start of
// dst's (wider or equal) axis. It allocates nothing for ranks up to
// stackRank: it runs once per item of every request given as items.
func placePadded(dst *backend.Tensor, at int64, src *backend.Tensor, row bool) {
	r := dst.Rank()
	var shapeBuf, dstBuf, srcBuf, idxBuf [stackRank]int64
	shape := onStack(&shapeBuf, r)
	if row {
		shape[0] = 1
		copy(shape[1:], src.Shape)
	} else {
		copy(shape, src.Shape)
	}
	if slices.Contains(shape, 0) {
		return
	}
	dstStride, srcStride := onStack(&dstBuf, r), onStack(&srcBuf, r)
	dstStride[r-1], srcStride[r-1] = 1, 1
	for a := r - 2; a >= 0; a-- {
		dstStride[a] = dstStride[a+1] * dst.Shape[a+1]
		srcStride[a] = srcStride[a+1] * shape[a+1]
	}
	// idx walks every position of src's axes but the last, the last
	// axis's elements copied at once from each.
	idx := onStack(&idxBuf, r)
	for {
		do, so := at*dstStride[0], int64(0)
		for a := range r - 1 {
			do += idx[a] * dstStride[a]
			so += idx[a] * srcStride[a]
		}
		dst.CopyElems(do, src, so, shape[r-1])
		a := r - 2
		for ; a >= 0; a-- {
			if idx[a]++; idx[a] < shape[a] {
				break
			}
			idx[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// stackRank is the rank up to which placePadded keeps its lists on the
// stack.
const stackRank = 8

// onStack returns n zeros in buf where they fit, else allocated.
func onStack(buf *[stackRank]int64, n int) []int64 {
	if n <= stackRank {
		clear(buf[:n])
		return buf[:n]
	}
	return make([]int64, n)
}

// itemsOutput is a workflow output that comes back per item: packed on
// levels whose offsets are, innermost first, the items input's (derived)
// or, when own is set, outputs the response holds beside it (levels the
// workflow produced, as an adapter or a token merger does).
type itemsOutput struct {
	// in is the items input whose items the output follows: the one
	// whose levels it shares, or for levels the workflow produced, the
	// first items input (by name).
	in      *itemsInput
	offsets []string
	own     bool
	// companions are the output's level and padding companions.
	companions []string
	// cut, where the output is padded on its axis 1 (the extent of each
	// row, as a text encoder's hidden states are), is that padding's
	// lengths: an item of one row is cut to its own, since an item comes
	// back without them.
	cut string
}

// findOutputs finds the workflow outputs that may come back per item:
// token_packed on levels that are the outermost of an items input's (by
// their offsets values; the output follows that input's items), or on
// levels whose offsets the workflow emits (following the first items
// input's).
func (rg *Ragged) findOutputs(m *ir.Module) {
	emitted := map[string]bool{}
	for _, o := range m.Outputs {
		emitted[o.Name] = true
	}
	for _, o := range m.Outputs {
		c := o.Contract
		if c == nil || c.Layout.Kind != ir.TokenPacked {
			continue
		}
		lv := c.Layout.Levels
		if len(lv) == 0 {
			continue
		}
		out := itemsOutput{}
		own := true
		for _, l := range lv {
			out.offsets = append(out.offsets, l.Offsets.Name)
			out.companions = append(out.companions, l.Offsets.Name, l.Owner.Name)
			own = own && emitted[l.Offsets.Name] && l.Offsets.Name != o.Name
		}
		for _, in := range rg.ins {
			if len(lv) > in.levels {
				continue
			}
			base := in.levels - len(lv)
			shares := true
			for k, l := range lv {
				shares = shares && l.Offsets.Name == in.offsets[base+k]
			}
			if shares {
				out.in = in
				break
			}
		}
		switch {
		case out.in != nil:
		case own && len(lv) <= rg.ins[0].levels:
			out.in, out.own = rg.ins[0], true
		default:
			continue
		}
		for _, p := range c.Padding {
			out.companions = append(out.companions, p.Lengths.Name)
			if c.Axis(p.Dim.Name) == 1 {
				out.cut = p.Lengths.Name
			}
		}
		rg.outputs[o.Name] = out
		for _, name := range out.companions {
			rg.drop[name] = true
		}
	}
	for name := range rg.outputs {
		delete(rg.drop, name)
	}
}

// Join reassembles the responses of Requests (in order) into the
// request's: the first error fails it; per-item outputs go to Items, in
// item order. An output on levels the workflow produced that do not count
// one unit per item stays packed, with its companions, when the request
// ran as one; split, it fails the request (run/extent). The answer views
// the parts' outputs: it takes over their leases (lease.go), so that
// releasing it releases them.
func (rg *Ragged) Join(resps []Response) Response {
	out := rg.join(resps)
	h := absorb(resps) // the answer views the parts' outputs
	if out.Err != nil {
		h.release(0)
		return out
	}
	out.held = h
	return out
}

func (rg *Ragged) join(resps []Response) Response {
	for _, r := range resps {
		if r.Err != nil {
			return Response{ID: rg.id, Err: r.Err}
		}
	}
	out := Response{ID: rg.id, Items: map[string][]Item{}}
	var keep map[string]bool // outputs left packed, with their companions
	for _, name := range rg.order {
		o := rg.outputs[name]
		if resps[0].Outputs.Get(name) == nil {
			continue
		}
		n := rg.counts[slices.Index(rg.ins, o.in)]
		var all []Item
		var err error
		for pi, part := range rg.parts {
			var its []Item
			its, err = rg.splitOutput(name, o, resps[pi], part.req)
			sent := n
			if part.items != nil {
				sent = len(part.items)
			}
			if err == nil && len(its) != sent {
				err = runErr(backend.RunExtent, "workflow output `%s` holds %d items, but the request sent %d of `%s`", name, len(its), sent, o.in.name)
			}
			if err != nil {
				break
			}
			if part.items == nil { // the one part, of every item
				all = its
				break
			}
			if all == nil {
				all = make([]Item, n)
			}
			for j, i := range part.items {
				all[i] = its[j]
			}
		}
		switch {
		case err == nil:
			out.Items[name] = all
		case o.own && len(rg.parts) == 1:
			if keep == nil {
				keep = map[string]bool{}
			}
			keep[name] = true
			for _, c := range o.companions {
				keep[c] = true
			}
		default:
			return Response{ID: rg.id, Err: err}
		}
	}
	out.Outputs = resps[0].Outputs.keep(func(name string) bool {
		_, items := out.Items[name]
		return !items && (keep[name] || !rg.drop[name])
	})
	return out
}

// splitOutput splits a packed output of one part (its response to req)
// into the items of its levels: by the offsets req's items derived, or by
// the ones the response holds beside it.
func (rg *Ragged) splitOutput(name string, o itemsOutput, resp Response, req Request) ([]Item, error) {
	in := o.in
	t := resp.Outputs.Get(name)
	levels := len(o.offsets)
	offs := make([][]int64, levels)
	for k, src := range o.offsets {
		ot := resp.Outputs.Get(src)
		if !o.own {
			ot = req.Inputs[in.offsets[in.levels-levels+k]]
		}
		if ot == nil || ot.DType != "int64" || ot.Rank() != 1 || ot.Len() == 0 {
			return nil, runErr(backend.RunExtent, "workflow output `%s` is packed on `%s`, which the response does not hold as offsets (%v)", name, src, ot)
		}
		offs[k] = ot.Int64s()
	}
	children := int64(0)
	if t.Rank() > 0 {
		children = t.Shape[0]
	}
	rows := children
	for k := range levels {
		if err := checkOffsets(o.offsets[k], k, offs[k], children); err != nil {
			return nil, runErr(backend.RunExtent, "workflow output `%s`: %s", name, AsRunError(err).Message)
		}
		children = int64(len(offs[k]) - 1)
	}
	if children != 1 {
		return nil, runErr(backend.RunExtent, "workflow output `%s`: its outermost level counts %d units, but a request is one", name, children)
	}
	flat := !in.nested && levels == in.levels
	var lengths []int64 // each row's extent on axis 1, where o.cut
	if lt := resp.Outputs.Get(o.cut); o.cut != "" && lt != nil && lt.DType == "int64" && lt.Len() == rows {
		lengths = lt.Int64s()
	}
	var node func(k int, u int64) []Item
	node = func(k int, u int64) []Item {
		lo, hi := offs[k][u], offs[k][u+1]
		its := make([]Item, 0, hi-lo)
		for c := lo; c < hi; c++ {
			switch {
			case k == 0:
				row := t.View(c, c+1)
				row.Shape = row.Shape[1:]
				if lengths != nil && row.Rank() > 0 {
					row = row.View(0, min(max(lengths[c], 0), row.Shape[0]))
				}
				its = append(its, Item{Tensor: row})
			case flat && k == 1:
				its = append(its, Item{Tensor: t.View(offs[0][c], offs[0][c+1])})
			default:
				its = append(its, Item{Items: node(k-1, c)})
			}
		}
		return its
	}
	return node(levels-1, 0), nil
}

// RunItems runs requests of the workflow, some of which may carry items,
// with runAll, which runs plain requests concurrently and answers them in
// order: each request with items is packed (Engine.PackItems), every plain
// request runs in one call so that they all may meet in groups, and the
// responses of a request's parts are joined. A request that cannot be
// packed is answered with its error.
func (e *Engine) RunItems(reqs []Request, runAll func([]Request) []Response) []Response {
	if !slices.ContainsFunc(reqs, func(r Request) bool { return len(r.Items) > 0 && r.Err == nil }) {
		return runAll(reqs)
	}
	out := make([]Response, len(reqs))
	type part struct {
		rg     *Ragged
		lo, hi int
	}
	parts := make([]part, len(reqs))
	var plain []Request
	for i, r := range reqs {
		if len(r.Items) == 0 || r.Err != nil {
			parts[i] = part{lo: len(plain), hi: len(plain) + 1}
			plain = append(plain, r)
			continue
		}
		subs, rg, err := e.PackItems(r)
		if err != nil {
			out[i] = Response{ID: r.ID, Err: err}
			parts[i] = part{lo: -1}
			continue
		}
		parts[i] = part{rg: rg, lo: len(plain), hi: len(plain) + len(subs)}
		plain = append(plain, subs...)
	}
	var resps []Response
	if len(plain) > 0 {
		resps = runAll(plain)
	}
	for i, p := range parts {
		switch {
		case p.lo < 0:
		case p.rg == nil:
			out[i] = resps[p.lo]
		default:
			out[i] = p.rg.Join(resps[p.lo:p.hi])
		}
	}
	return out
}

// hasItems reports whether a request of reqs gives items to pack.
func hasItems(reqs []Request) bool {
	return slices.ContainsFunc(reqs, func(r Request) bool { return len(r.Items) > 0 && r.Err == nil })
}

// runBatchItems is RunBatch for a batch in which some requests give
// items: each is packed into its plain requests, the whole batch of plain
// requests runs at once (so that they all may meet in groups), and a
// request is answered, and reported to opts.Finished, once its last part
// is.
func (e *Engine) runBatchItems(ctx context.Context, reqs []Request, opts BatchOptions, run RunFunc) []Response {
	out := make([]Response, len(reqs))
	type span struct {
		rg     *Ragged
		lo, hi int
	}
	spans := make([]span, len(reqs))
	var plain []Request
	var owner []int // the request each plain request is part of
	left := make([]int, len(reqs))
	for i, r := range reqs {
		subs := []Request{r}
		var rg *Ragged
		if len(r.Items) > 0 && r.Err == nil {
			var err error
			if subs, rg, err = e.PackItems(r); err != nil {
				out[i] = Response{ID: r.ID, Err: err}
				if opts.Finished != nil {
					opts.Finished(i, out[i])
				}
				continue
			}
		}
		spans[i] = span{rg: rg, lo: len(plain), hi: len(plain) + len(subs)}
		left[i] = len(subs)
		for range subs {
			owner = append(owner, i)
		}
		plain = append(plain, subs...)
	}
	if len(plain) == 0 {
		return out
	}
	parts := make([]Response, len(plain))
	var mu sync.Mutex
	inner := opts
	inner.Finished = func(j int, r Response) {
		i := owner[j]
		mu.Lock()
		parts[j] = r
		left[i]--
		last := left[i] == 0
		mu.Unlock()
		if !last {
			return
		}
		sp := spans[i]
		if sp.rg == nil {
			out[i] = parts[sp.lo]
		} else {
			out[i] = sp.rg.Join(parts[sp.lo:sp.hi])
		}
		if opts.Finished != nil {
			opts.Finished(i, out[i])
		}
	}
	e.admit(ctx, plain, inner, run)
	return out
}

// Module returns the workflow the engine runs.
func (e *Engine) Module() *ir.Module { return e.m }
