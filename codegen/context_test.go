package codegen_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/examples/imagepadded"
	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/vm/jsonio"
)

// TestExecutorContextErrors: a generated executor run under a cancelled or
// expired context fails the request with run/cancelled or run/deadline, as
// the VM does, the context's error still wrapped; never with the bare
// context error.
func TestExecutorContextErrors(t *testing.T) {
	pkg := filepath.Join(testenv.Root(t), "testdata", "packages", "image_padded")
	x, err := imagepadded.New(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	f, err := os.Open(filepath.Join(pkg, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs, err := jsonio.ReadRequests(f, pkg)
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx   context.Context
		rule  string
		cause error
	}{{cancelled, backend.RunCancelled, context.Canceled}, {expired, backend.RunDeadline, context.DeadlineExceeded}} {
		resp := x.RunRequest(c.ctx, reqs[0])
		var re *backend.RunError
		if !errors.As(resp.Err, &re) || re.Rule != c.rule || !errors.Is(resp.Err, c.cause) {
			t.Errorf("under a context ended by %v: %v (%T), want a %s RunError wrapping it", c.cause, resp.Err, resp.Err, c.rule)
		}
		if _, err := x.Run(c.ctx, &imagepadded.Request{PixelPatches: reqs[0].Inputs["pixel_patches"], PatchLengths: reqs[0].Inputs["patch_lengths"],
			ImageOffsets: reqs[0].Inputs["image_offsets"], ImageOwner: reqs[0].Inputs["image_owner"]}); !errors.As(err, &re) || re.Rule != c.rule {
			t.Errorf("Run under a context ended by %v: %v, want %s", c.cause, err, c.rule)
		}
	}
}
