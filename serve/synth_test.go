package serve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/genaic/genaic/engine"
)

// TestSynthRequests: the requests serve synthesizes where a package has no
// requests.json give each request its own item count and each item its
// own padded extents, run alone without error, and group short items
// beside long ones, so that a comparison with alone compares something.
func TestSynthRequests(t *testing.T) {
	for _, pkg := range []string{"text_padded", "image_padded", "video_frames"} {
		t.Run(pkg, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "packages", pkg)
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
			counts, extents := map[int]bool{}, map[int64]bool{}
			for _, r := range set {
				for _, items := range r.Items {
					counts[len(items)] = true
					for _, it := range items {
						if it.Tensor != nil && it.Tensor.Rank() > 0 {
							extents[it.Tensor.Shape[0]] = true
						}
					}
				}
			}
			if len(counts) < 2 || len(extents) < 2 {
				t.Errorf("items per request %v, first extents %v: not varied", counts, extents)
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
