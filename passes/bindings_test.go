package passes

import (
	"slices"
	"testing"

	"github.com/genaic/genaic/ir"
)

// TestBindingsBothWays reads the generated workflow's bindings from the
// port side and from the value side.
func TestBindingsBothWays(t *testing.T) {
	d, err := CheckSource("gen.yaml", generatedWorkflow(2), Options{})
	if err != nil || !d.Valid() {
		t.Fatalf("%v %v", err, d.Diags())
	}
	b := d.Results[BindingsPass].(*Bindings)
	if got := b.ToPort("enc1", ir.SitePortIn, "off"); len(got) != 1 || got[0].Value != "off1" || got[0].ID == ir.NoValue {
		t.Errorf("enc1.off is bound to %v, want off1", got)
	}
	if got := b.OfValue("own0"); len(got) != 1 || got[0].Component != "enc0" || got[0].Port != "own" {
		t.Errorf("own0 is bound to %v, want enc0.own", got)
	}
	if got := b.PortOf("enc0", ir.SitePortIn, "len0"); got != "len" {
		t.Errorf("a contract of enc0 naming len0 names port %q, want len", got)
	}
	if got := b.PortOf("enc1", ir.SitePortIn, "len0"); got != "" {
		t.Errorf("enc1 is not given len0, got port %q", got)
	}
	if got := b.ResultNames("enc1", "emb"); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("enc1.emb arrives as %v, want [e1]", got)
	}
	if got := b.Writers("off0"); len(got) != 1 || got[0].Value.Name != "off0" || len(b.Emits) != 6 {
		t.Errorf("off0 is written by %v of %d emits", got, len(b.Emits))
	}
	if !b.Read("px0") || b.Read("emb0") {
		t.Errorf("read px0 %v (want true), emb0 %v (want false: it is an output)", b.Read("px0"), b.Read("emb0"))
	}
}
