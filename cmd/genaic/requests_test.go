package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/vm"
)

const packagesDir = "../../testdata/packages"

// TestPackageRequests: every example package ships a requests.json,
// whose first request warms `genaic serve` up, and `genaic run` answers
// every request of it without an error. GENAIC_UPDATE=1 writes the
// missing ones from the package's request generator (internal/fixtures):
// requests of 1, 2 and the most items, values rounded to 3 decimals.
func TestPackageRequests(t *testing.T) {
	ents, err := os.ReadDir(packagesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pkg := filepath.Join(packagesDir, e.Name())
		if _, err := os.Stat(filepath.Join(pkg, "inference_metadata.yaml")); err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			path := filepath.Join(pkg, "requests.json")
			if _, err := os.Stat(path); err != nil {
				if os.Getenv("GENAIC_UPDATE") != "1" {
					t.Fatalf("package %s ships no requests.json (GENAIC_UPDATE=1 writes it)", e.Name())
				}
				writeRequests(t, fixtures.Lookup(e.Name()), path)
			}
			out, errOut, code := runCLI(t, "run", pkg, "--requests", path)
			if code != exitOK {
				t.Fatalf("genaic run %s --requests %s: exit %d: %s", pkg, path, code, errOut)
			}
			rf := decodeResponses(t, out)
			if len(rf.Responses) == 0 {
				t.Fatalf("%s holds no request", path)
			}
			for _, r := range rf.Responses {
				if r.Error != nil {
					t.Errorf("request %s failed: %s", r.ID, r.Error.Message)
				}
			}
		})
	}
}

// writeRequests writes a requests document of f's generated requests, one
// request a line.
func writeRequests(t *testing.T, f fixtures.Fixture, path string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(43, uint64(len(f.Name))))
	var reqs []vm.Request
	for i, n := range slices.Compact([]int{1, min(2, f.MaxItems), f.MaxItems}) {
		r := f.Gen(rng, fmt.Sprintf("%s-%d", f.Name, i), n)
		if len(r.Items) > 0 {
			t.Fatalf("%s: the generator gives items, which writeRequests does not write", f.Name)
		}
		reqs = append(reqs, r)
	}
	writeRequestFile(t, path, reqs...)
}

// writeRequestFile writes reqs (their inputs, not their items) to path as
// a requests document, one request a line.
func writeRequestFile(t *testing.T, path string, reqs ...vm.Request) {
	t.Helper()
	type request struct {
		ID     string                     `json:"id"`
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	var lines []byte
	for _, r := range reqs {
		rq := request{ID: r.ID, Inputs: map[string]json.RawMessage{}}
		for name, x := range r.Inputs {
			rq.Inputs[name] = tensorJSON(t, x)
		}
		b, err := json.Marshal(rq)
		if err != nil {
			t.Fatal(err)
		}
		if lines != nil {
			lines = append(lines, ",\n"...)
		}
		lines = append(lines, "  "...)
		lines = append(lines, b...)
	}
	doc := append(append([]byte("{\"requests\": [\n"), lines...), "\n]}\n"...)
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tensorJSON writes a tensor as a requests document does, its floats
// rounded to 3 decimals.
func tensorJSON(t *testing.T, x *backend.Tensor) json.RawMessage {
	t.Helper()
	var data []json.RawMessage
	number := func(s string) { data = append(data, json.RawMessage(s)) }
	switch d := x.Data.(type) {
	case []float32:
		for _, v := range d {
			number(strconv.FormatFloat(math.Round(float64(v)*1000)/1000, 'g', -1, 32))
		}
	case []float64:
		for _, v := range d {
			number(strconv.FormatFloat(math.Round(v*1000)/1000, 'g', -1, 64))
		}
	case []int64:
		for _, v := range d {
			number(strconv.FormatInt(v, 10))
		}
	case []uint8:
		for _, v := range d {
			number(strconv.Itoa(int(v)))
		}
	default:
		t.Fatalf("tensorJSON: %s data", x.DType)
	}
	if data == nil {
		data = []json.RawMessage{}
	}
	b, err := json.Marshal(struct {
		DType string            `json:"dtype"`
		Shape []int64           `json:"shape"`
		Data  []json.RawMessage `json:"data"`
	}{x.DType, x.Shape, data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
