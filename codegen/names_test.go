package codegen

import "testing"

func TestIdentifier(t *testing.T) {
	for _, c := range []struct{ name, exported, local string }{
		{"pixel_patches", "PixelPatches", "pixelPatches"},
		{"clips.embeddings", "ClipsEmbeddings", "clipsEmbeddings"},
		{"token_ids", "TokenIDs", "tokenIDs"},
		{"id", "ID", "id"},
		{"f.g", "FG", "fG"},
		{"pixelValues", "PixelValues", "pixelValues"},
		{"HTTPServer", "HTTPServer", "httpServer"},
		{"3d_volume", "V3dVolume", "v3dVolume"},
		{"--", "Value", "value"},
		{"naïve", "NaVe", "naVe"},
	} {
		if got := identifier(c.name, true); got != c.exported {
			t.Errorf("identifier(%q, exported) = %q, want %q", c.name, got, c.exported)
		}
		if got := identifier(c.name, false); got != c.local {
			t.Errorf("identifier(%q, local) = %q, want %q", c.name, got, c.local)
		}
	}
}

// TestNamerDistinct: names that map to one identifier, keywords and
// predeclared identifiers get distinct, deterministic identifiers.
func TestNamerDistinct(t *testing.T) {
	n := newNamer("ctx")
	var got []string
	for _, name := range []string{"a_b", "a.b", "aB", "type", "len", "ctx", "ctx"} {
		got = append(got, n.claim(identifier(name, false)))
	}
	want := []string{"aB", "aB2", "aB3", "type2", "len2", "ctx2", "ctx3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("claims = %v, want %v", got, want)
			break
		}
	}
}
