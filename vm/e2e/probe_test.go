package e2e

import (
	"context"
	"testing"
)

func TestProbe(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.pkg, func(t *testing.T) {
			reqs := randomRequests(f, 1, 16)
			g := grouped(t, f.pkg, nil)
			s := solo(t, f.pkg)
			got := g.RunAll(context.Background(), reqs)
			want := s.RunAll(context.Background(), reqs)
			same, total := compareResponses(t, f.pkg, reqs, got, want)
			t.Logf("%d/%d identical; grouped %+v", same, total, g.Stats().Components[f.component])
		})
	}
}
