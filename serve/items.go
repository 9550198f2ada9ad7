package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// The items form over OIP (docs/serve.md): a token_packed input tensor
// whose parameters hold "items" carries its items, and "items" says where
// each lies. It has two forms:
//
//   - extents, [12, 24, 5]: the items are concatenated along their first
//     axis and item i has shape [items[i], shape[1:]...];
//   - shapes, [[12, 8], [24, 16], {"items": [[5, 8], [2, 8]]}]: each entry
//     is an item's whole shape, or a unit of nested items ({"items": [...]}
//     of its items' shapes, as a requests document nests them), and the
//     tensor is rank 1: every item's elements, row-major, one item after
//     another. Items of any shapes share one tensor this way.
//
// Per-item outputs come back the same way: extents where the items agree
// beyond their first axis, shapes otherwise. HTTP takes and gives the
// value as JSON; gRPC's parameters are scalars, so there it is a
// string_param: comma-separated extents ("12,24,5") or the JSON text of
// either form.

// itemsParam is the parameter naming where a tensor's items lie.
const itemsParam = "items"

// itemsLayout is an items parameter: the items' extents along the
// tensor's first axis, or (extents nil) every item's shape.
type itemsLayout struct {
	extents []int64
	shapes  []itemShape
}

// itemShape is one entry of the shapes form: a tensor item's shape, or
// (unit) the shapes of a unit's nested items.
type itemShape struct {
	shape []int64
	unit  bool
	items []itemShape
}

// isSet reports whether the layout places any item, that is whether the
// tensor goes in the items form.
func (l itemsLayout) isSet() bool { return l.extents != nil || l.shapes != nil }

// appendJSON appends the layout's JSON value.
func (l itemsLayout) appendJSON(b []byte) []byte {
	if l.extents != nil {
		return appendInts(b, l.extents)
	}
	return appendShapes(b, l.shapes)
}

func appendShapes(b []byte, shapes []itemShape) []byte {
	b = append(b, '[')
	for i, s := range shapes {
		if i > 0 {
			b = append(b, ',')
		}
		if s.unit {
			b = append(b, `{"items":`...)
			b = append(appendShapes(b, s.items), '}')
			continue
		}
		if len(s.shape) == 0 {
			b = append(b, "[]"...) // a scalar's shape, never null
			continue
		}
		b = appendInts(b, s.shape)
	}
	return append(b, ']')
}

// httpValue is the layout as an HTTP parameter's value.
func (l itemsLayout) httpValue() any {
	if l.extents != nil {
		return l.extents
	}
	return json.RawMessage(l.appendJSON(nil))
}

// grpcValue is the layout as a gRPC string parameter: extents separated
// by commas, or the shapes form's JSON text.
func (l itemsLayout) grpcValue() string {
	if l.extents == nil {
		return string(l.appendJSON(nil))
	}
	var b strings.Builder
	for i, n := range l.extents {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(n, 10))
	}
	return b.String()
}

// maxItemsDepth is how deep the shapes form nests: units of items, as an
// input of two ownership levels takes them.
const maxItemsDepth = 2

// parseItems reads an items parameter: a JSON value (HTTP), or a string
// holding extents separated by commas or the JSON text of either form.
func parseItems(name string, v any) (itemsLayout, error) {
	bad := func(why string) error {
		return inputErr("input `%s`: parameter `items` %s; give each item's extent along the tensor's first axis ([5, 12], or \"5,12\" over gRPC), or each item's shape ([[5, 8], [12, 16]]) with the items' elements one after another in a tensor of rank 1", name, why)
	}
	if s, ok := v.(string); ok {
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "[") {
			d := json.NewDecoder(strings.NewReader(t))
			d.UseNumber()
			if err := d.Decode(&v); err != nil || d.More() {
				return itemsLayout{}, bad(fmt.Sprintf("%q is no JSON list", s))
			}
		} else {
			var out []int64
			for _, f := range strings.Split(s, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
				if err != nil {
					return itemsLayout{}, bad(fmt.Sprintf("%q is no list of integers", s))
				}
				out = append(out, n)
			}
			v = toAny(out)
		}
	}
	list, ok := v.([]any)
	if !ok {
		return itemsLayout{}, bad(fmt.Sprintf("is %T", v))
	}
	if len(list) == 0 {
		return itemsLayout{}, bad("is empty (a request of no items is one tensor with 0 rows, sent without `items`)")
	}
	if isNumber(list[0]) {
		extents, err := integers(list)
		if err != nil {
			return itemsLayout{}, bad(err.Error())
		}
		return itemsLayout{extents: extents}, nil
	}
	shapes, err := parseShapes(list, 1)
	if err != nil {
		return itemsLayout{}, bad(err.Error())
	}
	return itemsLayout{shapes: shapes}, nil
}

// toAny is a list of integers as JSON decodes one.
func toAny(ns []int64) []any {
	out := make([]any, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

// parseShapes reads the entries of the shapes form at a depth (1 for the
// request's items, 2 for a unit's).
func parseShapes(list []any, depth int) ([]itemShape, error) {
	out := make([]itemShape, len(list))
	for i, e := range list {
		switch x := e.(type) {
		case []any:
			shape, err := integers(x)
			if err != nil {
				return nil, fmt.Errorf("holds the shape %v: %v", e, err)
			}
			out[i] = itemShape{shape: shape}
		case map[string]any:
			sub, ok := x[itemsParam].([]any)
			if !ok || len(x) != 1 {
				return nil, fmt.Errorf("holds %v, which is no unit of items ({\"items\": [SHAPE, ...]})", e)
			}
			if depth >= maxItemsDepth {
				return nil, fmt.Errorf("nests units of items deeper than %d levels (an input has one or two ownership levels)", maxItemsDepth)
			}
			items, err := parseShapes(sub, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = itemShape{unit: true, items: items}
		default:
			return nil, fmt.Errorf("mixes extents and shapes (entry %d is %v): give every item's extent, or every item's shape", i, e)
		}
	}
	return out, nil
}

// isNumber reports whether a decoded JSON value is a number.
func isNumber(v any) bool {
	switch v.(type) {
	case float64, json.Number, int64:
		return true
	}
	return false
}

// integer reads a JSON integer (a float64 from encoding/json, a
// json.Number, or an int64 from a gRPC string).
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
	case int64:
		return x, true
	}
	return 0, false
}

// integers reads a list of non-negative integers.
func integers(list []any) ([]int64, error) {
	out := make([]int64, len(list))
	for i, e := range list {
		n, ok := integer(e)
		switch {
		case !ok:
			return nil, fmt.Errorf("holds %v, which is no integer", e)
		case n < 0:
			return nil, fmt.Errorf("holds %d, a negative extent", n)
		}
		out[i] = n
	}
	return out, nil
}

// splitItems cuts a tensor into the items its layout places.
func splitItems(name string, t *backend.Tensor, l itemsLayout) ([]vm.Item, error) {
	if l.extents == nil {
		return splitShapes(name, t, l.shapes)
	}
	if t.Rank() == 0 {
		return nil, inputErr("input `%s` has parameter `items` but is a scalar: items are concatenated along the tensor's first axis", name)
	}
	var sum int64
	for _, n := range l.extents {
		if n > t.Shape[0]-sum {
			sum = t.Shape[0] + 1
			break
		}
		sum += n
	}
	if sum != t.Shape[0] {
		return nil, inputErr("input `%s` has shape %v, but its parameter `items` %v does not add up to %d (the items' extents along the first axis must sum to it)", name, t.Shape, l.extents, t.Shape[0])
	}
	items := make([]vm.Item, len(l.extents))
	var at int64
	for i, n := range l.extents {
		items[i] = vm.Item{Tensor: t.View(at, at+n)}
		at += n
	}
	return items, nil
}

// splitShapes cuts a rank-1 tensor into items of the given shapes, each a
// view of its elements.
func splitShapes(name string, t *backend.Tensor, shapes []itemShape) ([]vm.Item, error) {
	if t.Rank() != 1 {
		return nil, inputErr("input `%s` has shape %v and parameter `items` of item shapes: such a tensor is rank 1, every item's elements one after another", name, t.Shape)
	}
	var at int64
	var cut func(shapes []itemShape) ([]vm.Item, error)
	cut = func(shapes []itemShape) ([]vm.Item, error) {
		items := make([]vm.Item, len(shapes))
		for i, s := range shapes {
			if s.unit {
				sub, err := cut(s.items)
				if err != nil {
					return nil, err
				}
				items[i] = vm.Item{Items: sub}
				continue
			}
			left := t.Shape[0] - at
			n, err := elements(name, s.shape, left+1)
			if err != nil || n > left {
				return nil, inputErr("input `%s` has %d elements, too few for the item shapes of its parameter `items` (item of shape %v after %d elements)", name, t.Shape[0], s.shape, at)
			}
			v := t.View(at, at+n)
			items[i] = vm.Item{Tensor: &backend.Tensor{DType: v.DType, Shape: slices.Clone(s.shape), Data: v.Data}}
			at += n
		}
		return items, nil
	}
	items, err := cut(shapes)
	if err != nil {
		return nil, err
	}
	if at != t.Shape[0] {
		return nil, inputErr("input `%s` has %d elements, but the item shapes of its parameter `items` hold %d", name, t.Shape[0], at)
	}
	return items, nil
}

// joinItems puts items into one tensor, as the protocol's items form
// carries them (an answer's per-item outputs, a client's items inputs):
// concatenated along their first axis where they are tensors that agree
// beyond it, else their elements one after another with their shapes.
// kind ("output", "input") names what they are in its errors.
func joinItems(kind, name string, items []vm.Item) (*backend.Tensor, itemsLayout, error) {
	if len(items) == 0 {
		return nil, itemsLayout{}, fmt.Errorf("%s `%s` holds no items", kind, name)
	}
	var dtype string
	var elems int64
	var rest []int64 // the first tensor item's shape beyond its first axis
	alongFirst := true
	var walk func(items []vm.Item, depth int) ([]itemShape, error)
	walk = func(items []vm.Item, depth int) ([]itemShape, error) {
		shapes := make([]itemShape, len(items))
		for i, it := range items {
			if it.Tensor == nil {
				if depth >= maxItemsDepth {
					return nil, fmt.Errorf("%s `%s` nests items deeper than %d levels, which the OIP items form cannot carry; send the input as one tensor with its companions", kind, name, maxItemsDepth)
				}
				sub, err := walk(it.Items, depth+1)
				if err != nil {
					return nil, err
				}
				shapes[i], alongFirst = itemShape{unit: true, items: sub}, false
				continue
			}
			t := it.Tensor
			switch {
			case dtype == "":
				dtype = t.DType
			case t.DType != dtype:
				return nil, fmt.Errorf("%s `%s` holds items of %s and of %s, which cannot share one OIP tensor", kind, name, dtype, t.DType)
			}
			switch {
			case t.Rank() == 0 || depth > 1:
				alongFirst = false
			case rest == nil:
				rest = t.Shape[1:]
			case !slices.Equal(t.Shape[1:], rest):
				alongFirst = false
			}
			shapes[i] = itemShape{shape: t.Shape}
			elems += t.Len()
		}
		return shapes, nil
	}
	shapes, err := walk(items, 1)
	if err != nil {
		return nil, itemsLayout{}, err
	}
	if dtype == "" {
		return nil, itemsLayout{}, fmt.Errorf("%s `%s` holds units of no items, which give the OIP tensor no datatype; send the input as one tensor with its companions", kind, name)
	}
	var l itemsLayout
	shape := []int64{elems}
	if alongFirst {
		l.extents = make([]int64, len(items))
		var rows int64
		for i, it := range items {
			l.extents[i] = it.Tensor.Shape[0]
			rows += it.Tensor.Shape[0]
		}
		shape = append([]int64{rows}, items[0].Tensor.Shape[1:]...)
	} else {
		l.shapes = shapes
	}
	out, err := backend.NewTensor(dtype, shape)
	if err != nil {
		return nil, itemsLayout{}, fmt.Errorf("%s `%s`: %v", kind, name, err)
	}
	var at int64
	var fill func(items []vm.Item)
	fill = func(items []vm.Item) {
		for _, it := range items {
			if it.Tensor == nil {
				fill(it.Items)
				continue
			}
			at += out.CopyElems(at, it.Tensor, 0, it.Tensor.Len())
		}
	}
	fill(items)
	return out, l, nil
}

// output returns a response's output by name: a tensor, or per-item
// outputs joined (with their layout).
func output(resp vm.Response, name string) (*backend.Tensor, itemsLayout, error) {
	if t := resp.Outputs.Get(name); t != nil {
		return t, itemsLayout{}, nil
	}
	t, l, err := joinItems("output", name, resp.Items[name])
	if err != nil {
		return nil, itemsLayout{}, backend.Errorf(backend.RunBackend, "%v", err)
	}
	return t, l, nil
}

// addItems cuts a tensor in the items form (a request's input, an
// answer's output) into the items its parameter v places, as
// (*items)[name]; the items view the tensor.
func addItems(items *map[string][]vm.Item, name string, t *backend.Tensor, v any) error {
	l, err := parseItems(name, v)
	if err != nil {
		return err
	}
	its, err := splitItems(name, t, l)
	if err != nil {
		return err
	}
	if *items == nil {
		*items = map[string][]vm.Item{}
	}
	(*items)[name] = its
	return nil
}
