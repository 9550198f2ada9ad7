package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatIsNoRegularFile: a named pipe, a device and a directory
// are refused at once (a pipe without a writer would block an open), and
// a file over the limit is refused; a regular file within it is read.
func TestRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range []struct{ path, want string }{
			{fifo, "named pipe"}, {"/dev/zero", "device"}, {dir, "directory"},
		} {
			if _, err := ReadFile(c.path, 1<<20); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error naming a %s", c.path, err, c.want)
			}
		}
		if _, err := ReadFile(ok, 4); err == nil || !strings.Contains(err.Error(), "at most 4 bytes") {
			t.Errorf("a 5-byte file under a 4-byte limit: %v", err)
		}
		if b, err := ReadFile(ok, 5); err != nil || string(b) != "hello" {
			t.Errorf("a 5-byte file under a 5-byte limit: %q, %v", b, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("reading a path blocked")
	}
}
