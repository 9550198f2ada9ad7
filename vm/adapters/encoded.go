package adapters

import (
	"context"
	"fmt"
	"sync"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/vm"
)

// kind names a modality and what one of its encodings holds, for messages.
type kind struct{ modality, item string }

// encoded is what every adapter session shares: its component, where its
// encoded items come from, and how they are split and processed.
type encoded struct {
	b    *Backend
	comp *ir.Component
	k    kind
	in   encodedInput
}

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
}

// encodedPorts finds the uint8 input port and the ports of its level
// offsets.
func encodedPorts(comp *ir.Component, k kind) (encodedInput, error) {
	var in encodedInput
	var payload *ir.Port
	for _, p := range comp.Inputs {
		if p.Contract == nil {
			continue
		}
		if d, ok := ir.LookupDType(p.Contract.DType); ok && d.Name == "uint8" {
			if payload != nil {
				return in, unsupported("adapter `%s` has two uint8 input ports, `%s` and `%s`; the %s adapter reads its encoded %ss from one", comp.Name, payload.Name, p.Name, k.modality, k.item)
			}
			payload = p
		}
	}
	if payload == nil {
		return in, unsupported("adapter `%s` has no uint8 input port for its encoded %ss; declare one, such as encoded: { dtype: uint8, shape: [bytes] }", comp.Name, k.item)
	}
	in.port = payload.Name
	companions := map[string]bool{}
	grouped := comp.Capacity != nil
	if l := payload.Contract.Layout; l.Kind == ir.TokenPacked {
		if len(l.Levels) == 0 || len(l.Levels) > 2 {
			return in, unsupported("input port `%s` of adapter `%s` declares %d ownership levels; the %s adapter reads one (bytes→%ss) or two (bytes→%ss, %ss→rows)", payload.Name, comp.Name, len(l.Levels), k.modality, k.item, k.item, k.item)
		}
		in.itemOffsets = l.Levels[0].Offsets.Name
		if comp.Input(in.itemOffsets) == nil {
			return in, unsupported("input port `%s` of adapter `%s` is token_packed, but its level 0 offsets `%s` is not an input port of the adapter, and a session sees only the ports an invoke binds; declare `%s` as an input port (int64, shared) and bind it to the byte offsets",
				payload.Name, comp.Name, in.itemOffsets, in.itemOffsets)
		}
		for _, lv := range l.Levels {
			companions[lv.Offsets.Name], companions[lv.Owner.Name] = true, true
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
	for _, p := range comp.Inputs {
		if p != payload && !companions[p.Name] {
			return in, unsupported("input port `%s` of adapter `%s` is neither the encoded %ss `%s` nor a level companion of them; the %s adapter reads nothing else", p.Name, comp.Name, k.item, payload.Name, k.modality)
		}
	}
	return in, nil
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

func ints(data []int64) *vm.Tensor {
	return &vm.Tensor{DType: "int64", Shape: []int64{int64(len(data))}, Data: data}
}

// offsetsOf reads an int64 offsets vector of an input port and checks it:
// it starts at 0, never decreases, and ends at children (counted is a
// format that says what they count, for messages).
func (s *encoded) offsetsOf(inputs map[string]*vm.Tensor, port, what string, children int64, counted string) ([]int64, error) {
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
func (s *encoded) split(inputs map[string]*vm.Tensor) ([]byte, []int64, error) {
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

// rows returns the offsets of the invocation's rows over its n items.
func (s *encoded) rows(inputs map[string]*vm.Tensor, n int) ([]int64, error) {
	if s.in.rowOffsets != "" {
		return s.offsetsOf(inputs, s.in.rowOffsets, s.k.item, int64(n), "the byte offsets delimit %d "+s.k.item+"s")
	}
	if !s.in.perItemRows {
		return []int64{0, int64(n)}, nil
	}
	rows := make([]int64, n+1)
	for i := range rows {
		rows[i] = int64(i)
	}
	return rows, nil
}

// each calls f on every item of the invocation, several at once, and
// returns the first error in item order; an item's error is run/input
// naming the item, its row and its bytes.
func (s *encoded) each(ctx context.Context, data []byte, offs, rows []int64, f func(i int, b []byte) error) error {
	n := len(offs) - 1
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.b.workers(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				if err := f(i, data[offs[i]:offs[i+1]]); err != nil {
					errs[i] = fail("run/input", "%s %d%s of input port `%s` of adapter `%s` (bytes %d to %d) %v",
						s.k.item, i, rowOf(s.k.item, rows, i), s.in.port, s.comp.Name, offs[i], offs[i+1], err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
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
