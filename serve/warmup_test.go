package serve

import (
	"os"
	"path/filepath"
	"testing"
)

// copyPackage copies an example package into a repository folder, less
// the files named in drop.
func copyPackage(t testing.TB, dst, name string, drop ...string) {
	t.Helper()
	src := filepath.Join("..", "testdata", "packages", name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, name), 0o755); err != nil {
		t.Fatal(err)
	}
outer:
	for _, e := range ents {
		for _, d := range drop {
			if e.Name() == d {
				continue outer
			}
		}
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWarmupWithoutRequests: packages copied without requests.json are
// warmed with a request synthesized from their contracts (a packed input
// as one item, a feature width the graph fixes, a request_expanded
// factor): every component has run before the first client request. An
// adapter package, whose synthesized media cannot decode, turns ready
// all the same.
func TestWarmupWithoutRequests(t *testing.T) {
	dir := t.TempDir()
	warmed := []string{"image_padded", "ocr_lines", "request_expanded", "video_frames"}
	for _, n := range append(warmed, "image_patches") {
		copyPackage(t, dir, n, "requests.json")
	}
	s := newServer(t, Config{Repo: dir})
	if !s.Ready() {
		t.Fatal("the server is not ready after New")
	}
	for _, n := range warmed {
		st := s.Engine(n).Stats()
		if len(st.Components) == 0 {
			t.Fatalf("%s: no components in stats", n)
		}
		for comp, cs := range st.Components {
			if cs.Invocations == 0 {
				t.Errorf("%s: component %s was not warmed up (0 invocations)", n, comp)
			}
		}
	}
	if a, _ := s.Counts(); a != 0 {
		t.Errorf("warm-up counted as %d client requests", a)
	}
}
