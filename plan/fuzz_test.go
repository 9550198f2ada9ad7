package plan_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/plan"
)

// FuzzDecode: any bytes, signed or not, decode into a plan or an error,
// never a panic. Inputs are also re-signed, as a hand-edited plan with a
// recomputed digest would be, so that the IR's checks see hostile modules.
func FuzzDecode(f *testing.F) {
	examples, _ := filepath.Glob(filepath.Join("..", "examples", "*", "plan.json"))
	for _, p := range examples {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"format":"genaic-plan","plan_version":2,"ir":{"inputs":[null],"values":[null]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := plan.Decode("fuzz", b); err == nil {
			return
		}
		var pf plan.File
		if json.Unmarshal(b, &pf) != nil || pf.IR == nil {
			return
		}
		signed, err := pf.Marshal()
		if err != nil {
			return
		}
		plan.Decode("fuzz (signed)", signed)
	})
}
