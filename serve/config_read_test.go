package serve

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadConfigRefusesNonFiles: a FIFO or a device given as --config is
// refused at once, never opened and read (a FIFO would hang start-up,
// /dev/zero would fill memory); an oversized file is refused too.
func TestReadConfigRefusesNonFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", big} {
		if _, err := ReadConfig(path); err == nil {
			t.Errorf("%s: accepted", path)
		}
	}
}
