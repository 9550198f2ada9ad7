package serve

import (
	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/jsondata"
)

// jsonOptions read data as fromJSON's slow path does: arrays nested as
// deep as it goes (the outer one and 32 within it), 16-bit floats
// written as numbers.
var jsonOptions = jsondata.Options{MaxNesting: 33, F16: backend.Float32ToHalf, BF16: backend.Float32ToBFloat16}

// fastJSON decodes the common form of a tensor's JSON data in one pass
// (internal/jsondata); ok is false for anything else, which fromJSON
// leaves to its slow path. FuzzJSONData checks that whatever fastJSON
// reads, the slow path reads the same.
func fastJSON(dtype string, shape []int64, data []byte) (t *backend.Tensor, ok bool) {
	// Every element takes at least one byte of the data, so a shape of
	// more elements than the data has bytes is refused before allocating.
	if _, err := elements("", shape, int64(len(data))+1); err != nil {
		return nil, false
	}
	t, err := backend.NewTensor(dtype, shape)
	if err != nil || !jsondata.Fill(t, data, jsonOptions) {
		return nil, false
	}
	return t, true
}
