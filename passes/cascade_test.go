package passes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
)

// TestOneTypoOneError misspells one name in a package that checks clean and
// expects exactly one diagnostic, with the name it misspells suggested on
// its help line. Each case is a typo that once also set off a dependent
// check (the port it meant reported unbound, a preserved level reported
// unpaired, the symbol it meant reported free, the companions of the output
// it meant reported orphaned).
func TestOneTypoOneError(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "packages", "image_padded", "inference_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := string(b)
	tests := []struct {
		name, old, new string
		rule           diag.Rule
		help           string
	}{
		{"port an invoke binds", "          patch_lengths: patch_lengths\n", "          patch_lenghts: patch_lengths\n", diag.SSAUnknownPort, "patch_lengths"},
		{"owner of an input port's level",
			"                  - { offsets: image_offsets, owner: image_owner }\n              padding",
			"                  - { offsets: image_offsets, owner: image_ownr }\n              padding", diag.PackedUnresolved, "image_owner"},
		{"uniform dimension", "uniform_dimensions: [features]", "uniform_dimensions: [featurs]", diag.CapacityUnknownSymbol, "features"},
		{"output an emit writes", "        output: embeddings\n", "        output: embedings\n", diag.SSAUnknownOutput, "embeddings"},
		{"padded dimension", "dimension: patches, valid_lengths: patch_lengths }]\n        role", "dimension: pathces, valid_lengths: patch_lengths }]\n        role", diag.PaddingDimension, "patches"},
		{"component an invoke names", "        component: encoder\n", "        component: encodr\n", diag.SSAUnknownComponent, "encoder"},
		{"value a step reads", "        value: image_embeddings\n", "        value: image_embedings\n", diag.SSAUndefined, "image_embeddings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Count(base, tt.old) != 1 {
				t.Fatalf("%q is not in the package once", tt.old)
			}
			d, err := CheckSource("t.yaml", []byte(strings.Replace(base, tt.old, tt.new, 1)), Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			ds := d.Diags()
			if len(ds) != 1 || ds[0].Rule != tt.rule || !strings.HasPrefix(ds[0].Help+"\n", "did you mean `"+tt.help+"`?\n") {
				t.Fatalf("want one %s suggesting %s, got %d: %+v", tt.rule, tt.help, len(ds), ds)
			}
			line := strings.Split(strings.Replace(base, tt.old, tt.new, 1), "\n")[ds[0].Line-1]
			if got := string([]rune(line)[ds[0].Column-1 : ds[0].End.Column-1]); got == "" || !strings.Contains(tt.new, got) || strings.Contains(tt.old, got) {
				t.Errorf("the span %q (%d:%d-%d) is not the misspelt name in %q", got, ds[0].Line, ds[0].Column, ds[0].End.Column, line)
			}
		})
	}
}

// TestLengthsDTypeReportedOnce: a lengths port declared int32 where the
// graph takes int64 is one mistake, which padding/companion reports;
// model/dtype stays quiet about it.
func TestLengthsDTypeReportedOnce(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "models", "models.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(b), "\n---\n")
	for _, old := range []string{
		"line_count: { contract: { dtype: int64",
		"nl: { dtype: int64",
	} {
		if strings.Count(doc, old) != 1 {
			t.Fatalf("%q is not in the accepted fixture once", old)
		}
		doc = strings.Replace(doc, old, strings.Replace(old, "int64", "int32", 1), 1)
	}
	d, err := CheckSource("t.yaml", []byte(doc), Options{Check: true, Models: modelFixtures})
	if err != nil {
		t.Fatal(err)
	}
	if rules := d.Diags().Rules(); !slices.Equal(rules, []diag.Rule{diag.PaddingCompanion}) {
		t.Errorf("want padding/companion alone, got %v", d.Diags())
	}
}
