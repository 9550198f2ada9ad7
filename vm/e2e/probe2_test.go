package e2e

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/genaic/genaic/vm"
)

func TestProbeEmptyUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]vm.Request{
		"text":         textRequest(rng, "t", []int{0, 0}),
		"token_merge":  mergeRequest(rng, "m", []int{0, 0}),
		"audio":        audioRequest(rng, "a", []int{0, 0}),
		"video_frames": videoRequest(rng, "v", []int{0, 0}, 3, nil),
	}
	for pkg, req := range cases {
		for _, mode := range []string{"grouped", "solo"} {
			var e *vm.Engine
			if mode == "solo" {
				e = solo(t, pkg)
			} else {
				e = grouped(t, pkg, nil)
			}
			r := e.Run(context.Background(), req)
			t.Logf("%s %s alone: err=%v outs=%v", pkg, mode, r.Err, r.Outputs)
			other := lookup(pkg).gen(rng, "o", 1)
			res := e.RunAll(context.Background(), []vm.Request{req, other})
			t.Logf("%s %s with other: err=%v outs=%v; other err %v", pkg, mode, res[0].Err, res[0].Outputs, res[1].Err)
		}
	}
}
