package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPathsThatAreNoFiles: every path a command reads (a document, a plan,
// a requests file, a stats file, a config, a model) may name a named pipe
// or a device; the command refuses it at once with a usage or I/O error
// naming what it is, instead of blocking on the pipe or reading a device
// without end.
func TestPathsThatAreNoFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", fifo},
		{"check", "/dev/zero"},
		{"compile", fifo},
		{"inspect", fifo},
		{"inspect", imagePkg, "--stats", fifo},
		{"run", imagePkg, "--requests", fifo},
		{"bench", imagePkg, "--requests", fifo},
		{"serve", imagePkg, "--config", fifo},
		{"init", fifo},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, stderr, code := runCLI(t, args...)
			if code == 0 || !strings.Contains(stderr, "not a regular file") {
				t.Errorf("genaic %s: exit %d, %q; want a refusal naming what the path is", strings.Join(args, " "), code, stderr)
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("genaic %s blocked", strings.Join(args, " "))
		}
	}
}
