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
// whose parameters hold "items" carries its items concatenated along
// their first axis, and "items" lists each item's extent on that axis:
// item i has shape [items[i], shape[1:]...]. Per-item outputs come back
// the same way. HTTP takes and gives the list as a JSON array; gRPC's
// parameters are scalars, so there it is a string_param of comma-separated
// extents ("5,12,3").

// itemsParam is the parameter naming item extents.
const itemsParam = "items"

// parseExtents reads an items parameter: a JSON array of non-negative
// integers, or a string of them separated by commas.
func parseExtents(name string, v any) ([]int64, error) {
	bad := func(why string) error {
		return inputErr("input `%s`: parameter `items` %s; give each item's extent along the tensor's first axis, as an array [5, 12] (HTTP) or a string \"5,12\"", name, why)
	}
	var out []int64
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			var n int64
			switch x := e.(type) {
			case float64:
				if x != float64(int64(x)) {
					return nil, bad(fmt.Sprintf("holds %v, which is no integer", x))
				}
				n = int64(x)
			case json.Number:
				var err error
				if n, err = x.Int64(); err != nil {
					return nil, bad(fmt.Sprintf("holds %v, which is no integer", x))
				}
			default:
				return nil, bad(fmt.Sprintf("holds %v, which is no integer", e))
			}
			out = append(out, n)
		}
	case string:
		for _, f := range strings.Split(t, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, bad(fmt.Sprintf("%q is no list of integers", t))
			}
			out = append(out, n)
		}
	default:
		return nil, bad(fmt.Sprintf("is %T", v))
	}
	if len(out) == 0 {
		return nil, bad("is empty (a request of no items is one tensor with 0 rows, sent without `items`)")
	}
	for _, n := range out {
		if n < 0 {
			return nil, bad(fmt.Sprintf("holds %d, a negative extent", n))
		}
	}
	return out, nil
}

// splitItems cuts a tensor into items along axis 0 by their extents.
func splitItems(name string, t *backend.Tensor, extents []int64) ([]vm.Item, error) {
	if t.Rank() == 0 {
		return nil, inputErr("input `%s` has parameter `items` but is a scalar: items are concatenated along the tensor's first axis", name)
	}
	var sum int64
	for _, n := range extents {
		if n > t.Shape[0]-sum {
			sum = t.Shape[0] + 1
			break
		}
		sum += n
	}
	if sum != t.Shape[0] {
		return nil, inputErr("input `%s` has shape %v, but its parameter `items` %v does not add up to %d (the items' extents along the first axis must sum to it)", name, t.Shape, extents, t.Shape[0])
	}
	items := make([]vm.Item, len(extents))
	var at int64
	for i, n := range extents {
		items[i] = vm.Item{Tensor: t.View(at, at+n)}
		at += n
	}
	return items, nil
}

// joinItems concatenates items along their first axis, as the protocol's
// items form carries them (an answer's per-item outputs, a client's items
// inputs), and returns the tensor and the items' extents. kind ("output",
// "input") names what they are in its errors.
func joinItems(kind, name string, items []vm.Item) (*backend.Tensor, []int64, error) {
	if len(items) == 0 {
		return nil, nil, fmt.Errorf("%s `%s` holds no items", kind, name)
	}
	var rest []int64
	var dtype string
	var rows int64
	extents := make([]int64, len(items))
	for i, it := range items {
		t := it.Tensor
		if t == nil || it.Items != nil {
			return nil, nil, fmt.Errorf("%s `%s` item %d holds items of its own, which the OIP items form cannot carry; send the input as one tensor with its companions", kind, name, i)
		}
		if t.Rank() == 0 {
			return nil, nil, fmt.Errorf("%s `%s` item %d is a scalar, which the OIP items form (items concatenated along their first axis) cannot carry; send the input as one tensor with its companions", kind, name, i)
		}
		if i == 0 {
			rest, dtype = t.Shape[1:], t.DType
		} else if !slices.Equal(rest, t.Shape[1:]) || dtype != t.DType {
			return nil, nil, fmt.Errorf("%s `%s` items differ beyond their first axis (%s, %s), so they cannot share one OIP tensor; send items that agree there, or one request per item", kind, name, items[0].Tensor, t)
		}
		extents[i] = t.Shape[0]
		rows += t.Shape[0]
	}
	out, err := backend.NewTensor(dtype, append([]int64{rows}, rest...))
	if err != nil {
		return nil, nil, fmt.Errorf("%s `%s`: %v", kind, name, err)
	}
	var at int64
	for _, it := range items {
		at += out.CopyElems(at, it.Tensor, 0, it.Tensor.Len())
	}
	return out, extents, nil
}

// output returns a response's output by name: a tensor, or per-item
// outputs joined (with their extents).
func output(resp vm.Response, name string) (*backend.Tensor, []int64, error) {
	if t := resp.Outputs.Get(name); t != nil {
		return t, nil, nil
	}
	t, extents, err := joinItems("output", name, resp.Items[name])
	if err != nil {
		return nil, nil, backend.Errorf(backend.RunBackend, "%v", err)
	}
	return t, extents, nil
}

// extentsString is the gRPC form of an items parameter.
func extentsString(extents []int64) string {
	var b strings.Builder
	for i, n := range extents {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(n, 10))
	}
	return b.String()
}

// addItems puts an input given in the items form into the request's
// items.
func addItems(req *vm.Request, name string, t *backend.Tensor, v any) error {
	extents, err := parseExtents(name, v)
	if err != nil {
		return err
	}
	items, err := splitItems(name, t, extents)
	if err != nil {
		return err
	}
	if req.Items == nil {
		req.Items = map[string][]vm.Item{}
	}
	req.Items[name] = items
	return nil
}
