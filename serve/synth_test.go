package serve

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/engine"
)

// TestSynthRequests: the requests serve synthesizes where a package has no
// requests.json give each request its own item count and each item its
// own padded extents, run alone without error, and group short items
// beside long ones, so that a comparison with alone compares something.
func TestSynthRequests(t *testing.T) {
	for _, pkg := range []string{"text_padded", "image_padded", "video_frames", "bare/text_packed", "bare/image_padded"} {
		t.Run(pkg, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "packages", pkg)
			if name, ok := strings.CutPrefix(pkg, "bare/"); ok {
				dir = bare(t, name)
			}
			f, err := compile(dir)
			if err != nil {
				t.Fatal(err)
			}
			set, err := synthSets(f.IR, dir)[1].make(f.IR)
			if err != nil {
				t.Fatal(err)
			}
			if len(set) != synthesizedRequests {
				t.Fatalf("%d requests", len(set))
			}
			// Each request's shapes, as the items form or the packed tensors
			// give them: the set must hold requests of several.
			shapes := map[string]bool{}
			for _, r := range set {
				var sig []string
				for _, name := range slices.Sorted(maps.Keys(r.Inputs)) {
					sig = append(sig, fmt.Sprint(name, r.Inputs[name].Shape))
				}
				for _, name := range slices.Sorted(maps.Keys(r.Items)) {
					for _, it := range r.Items[name] {
						if it.Tensor != nil {
							sig = append(sig, fmt.Sprint(name, it.Tensor.Shape))
						}
					}
				}
				shapes[strings.Join(sig, " ")] = true
			}
			if len(shapes) < 3 {
				t.Errorf("%d requests of %d shapes: not varied", len(set), len(shapes))
			}
			eng, err := engine.Open(f, dir, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			for _, r := range set {
				if resp := eng.Run(context.Background(), r); resp.Err != nil {
					t.Fatalf("request %s alone: %v", r.ID, resp.Err)
				}
			}
			grouped := eng.RunAll(context.Background(), set)
			if divs := engine.CompareAlone(context.Background(), eng, set, grouped); len(divs) > 0 {
				t.Errorf("differ grouped and alone: %v", divs)
			}
			if most := engine.LargestGroup(eng); most < 2 {
				t.Errorf("largest group %d", most)
			}
		})
	}
}

// TestSynthBound: synthSets counts a set's elements before making it, an
// upper bound of what it makes, and leaves out the scales whose requests
// would hold more than maxSynthElements.
func TestSynthBound(t *testing.T) {
	dir := filepath.Join("..", "testdata", "packages", "image_padded")
	f, err := compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	sets := synthSets(f.IR, dir)
	if len(sets) != 1+len(synthScales) {
		t.Fatalf("%d sets", len(sets))
	}
	for _, ss := range sets {
		reqs, err := ss.make(f.IR)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			n := int64(0)
			for _, x := range r.Inputs {
				n += x.Len()
			}
			for _, items := range r.Items {
				for _, it := range items {
					n += it.Tensor.Len()
				}
			}
			if want := ss.elements(f.IR, ss.n); n > want {
				t.Errorf("scale %d: request %s holds %d elements, counted at most %d", ss.scale, r.ID, n, want)
			}
		}
	}
	defer func(was int64) { maxSynthElements = was }(maxSynthElements)
	maxSynthElements = sets[2].elements(f.IR, synthesizedRequests)
	if got := synthSets(f.IR, dir); len(got) != 3 {
		t.Errorf("bounded at scale %d's elements: %d sets, want the minimal one and two scales", synthScales[1], len(got))
	}
}

// bare copies an example package whose first workflow input is
// token_packed into a folder, that input's contract left without layout
// and padding, as init writes workflow inputs (the layout is the port's):
// its requests then bring the packed tensor and its companions, not items.
func bare(t *testing.T, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	copyPackage(t, dir, pkg, "requests.json", "requests64.json", "requests_long.json")
	dir = filepath.Join(dir, pkg)
	path := filepath.Join(dir, "inference_metadata.yaml")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first input's batch_layout block (and padding line), up to its role.
	re := regexp.MustCompile(`(?s)(    inputs:\n      \w+:\n        contract:\n          dtype: \w+\n          shape: \[[^\]]*\]\n).*?(        role:)`)
	stripped := re.ReplaceAll(doc, []byte("${1}${2}"))
	if string(stripped) == string(doc) {
		t.Fatalf("%s: no workflow input layout to strip", pkg)
	}
	if err := os.WriteFile(path, stripped, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
