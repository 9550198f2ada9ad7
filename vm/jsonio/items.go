package jsonio

import (
	"encoding/json"
	"fmt"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/vm"
)

// Items in documents (vm/items.go): a token_packed input may be given as
//
//	{"items": [TENSOR, ...]}                       one tensor per item
//	{"items": [{"items": [TENSOR, ...]}, ...]}     two levels: units of rows
//
// and a response to such a request writes its per-item outputs the same
// way.

// maxItemsDepth is how deep items may nest: two ownership levels.
const maxItemsDepth = 2

// decodeInput decodes one input of a request: a tensor, or its items.
func decodeInput(raw json.RawMessage, baseDir string, opts ReadOptions) (*backend.Tensor, []vm.Item, error) {
	tj, err := parseTensorJSON(raw)
	if err != nil {
		return nil, nil, err
	}
	if tj.Items == nil {
		t, err := tj.tensor(baseDir, opts)
		return t, nil, err
	}
	items, err := decodeItems(tj.Items, "", 1, baseDir, opts)
	return nil, items, err
}

func decodeItems(raws []json.RawMessage, at string, depth int, baseDir string, opts ReadOptions) ([]vm.Item, error) {
	items := make([]vm.Item, 0, len(raws))
	for i, raw := range raws {
		where := fmt.Sprintf("%s%d", at, i)
		tj, err := parseTensorJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("item %s: %v", where, err)
		}
		if tj.Items == nil {
			t, err := tj.tensor(baseDir, opts)
			if err != nil {
				return nil, fmt.Errorf("item %s: %v", where, err)
			}
			items = append(items, vm.Item{Tensor: t})
			continue
		}
		if depth >= maxItemsDepth {
			return nil, fmt.Errorf("item %s: items nest at most %d levels deep (an input has one or two ownership levels)", where, maxItemsDepth)
		}
		sub, err := decodeItems(tj.Items, where+".", depth+1, baseDir, opts)
		if err != nil {
			return nil, err
		}
		items = append(items, vm.Item{Items: sub})
	}
	return items, nil
}

// encodeItemsWith writes per-item outputs as {"items": [...]}: each item
// inline, or, with a store, kept there under the output's name and the
// item's position (NAME.0, NAME.1.2) and named by its path.
func encodeItemsWith(items []vm.Item, id, name string, store Store) (*TensorJSON, error) {
	out := &TensorJSON{Items: make([]json.RawMessage, 0, len(items))}
	for i, it := range items {
		at := fmt.Sprintf("%s.%d", name, i)
		var v any
		var err error
		switch {
		case it.Tensor == nil:
			v, err = encodeItemsWith(it.Items, id, at, store)
		case store == nil:
			v, err = encodeTensor(it.Tensor)
		default:
			var path string
			if path, err = store(id, at, it.Tensor); err != nil {
				return nil, fmt.Errorf("request %q output %q: %w", id, at, err)
			}
			shape := it.Tensor.Shape
			if shape == nil {
				shape = []int64{}
			}
			v = npyRef{DType: it.Tensor.DType, Shape: shape, NPY: path}
		}
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, b)
	}
	return out, nil
}

// MarshalJSON writes an items value as {"items": [...]} alone, and a
// tensor as its fields.
func (tj TensorJSON) MarshalJSON() ([]byte, error) {
	if tj.Items != nil {
		return json.Marshal(struct {
			Items []json.RawMessage `json:"items"`
		}{tj.Items})
	}
	type plain TensorJSON
	return json.Marshal(plain(tj))
}

// ItemTensors decodes an items value of a response into its tensors (one
// level) or, for nested items, each unit's items.
func (tj TensorJSON) ItemTensors() ([]vm.Item, error) {
	if tj.Items == nil {
		return nil, fmt.Errorf("not an items value")
	}
	return decodeItems(tj.Items, "", 1, "", ReadOptions{})
}
