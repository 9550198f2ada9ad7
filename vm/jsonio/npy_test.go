package jsonio

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// npyBytes writes a .npy file of format version major holding int64s.
func npyBytes(major byte, shape string, data []int64) []byte {
	var b bytes.Buffer
	header := "{'descr': '<i8', 'fortran_order': False, 'shape': (" + shape + "), }"
	pre := 10
	if major > 1 {
		pre = 12
	}
	header += strings.Repeat(" ", 64-(pre+len(header)+1)%64) + "\n"
	b.WriteString("\x93NUMPY")
	b.WriteByte(major)
	b.WriteByte(0)
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(header)))
	}
	b.WriteString(header)
	binary.Write(&b, binary.LittleEndian, data)
	return b.Bytes()
}

// readOne reads a one-request document whose input x is {"npy": name}
// and returns the tensor or the request's error.
func readOne(t *testing.T, dir, name string, opts ReadOptions) error {
	t.Helper()
	doc := `{"requests":[{"id":"a","inputs":{"x":{"npy":` + quote(name) + `}}}]}`
	reqs, err := ReadRequestsWith(strings.NewReader(doc), dir, opts)
	if err != nil {
		t.Fatalf("%s: the document failed: %v", name, err)
	}
	return reqs[0].Err
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

// TestNPYVersions: format versions 1.0, 2.0 and 3.0 are read.
func TestNPYVersions(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []byte{1, 2, 3} {
		path := filepath.Join(dir, "x.npy")
		if err := os.WriteFile(path, npyBytes(v, "2, 2", []int64{1, 2, 3, 4}), 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := ReadNPY(path)
		if err != nil || x.String() != "int64[2, 2]" || x.Int64s()[3] != 4 {
			t.Errorf("version %d: %v, %v", v, x, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "x.npy"), npyBytes(4, "1,", []int64{1}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNPY(filepath.Join(dir, "x.npy")); err == nil || !strings.Contains(err.Error(), "version 4.0") {
		t.Errorf("version 4: %v", err)
	}
}

// TestNPYSizesCheckedBeforeReading: a 2 GiB file (sparse, so the test
// costs no disk) is refused from its header and size, never read whole;
// devices and FIFOs are refused as not regular files, without hanging.
func TestNPYSizesCheckedBeforeReading(t *testing.T) {
	dir := t.TempDir()
	big := func(name, shape string) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Write(npyBytes(1, shape, nil))
		if err := f.Truncate(2 << 30); err != nil {
			t.Skipf("no sparse 2 GiB file here: %v", err)
		}
	}
	big("huge.npy", "268435456,") // 2 GiB of int64, above the limit
	big("liar.npy", "4,")         // says 32 bytes, holds 2 GiB
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.npy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.npy")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"huge.npy": "above the limit",
		"liar.npy": "payload bytes for shape [4]",
		"fifo.npy": "not a regular file",
		"zero.npy": "not a regular file",
	} {
		before := bytesRead(t)
		err := readOne(t, dir, name, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if n := bytesRead(t) - before; n > 1<<20 {
			t.Errorf("%s: %d bytes read to refuse it, want at most its header's", name, n)
		}
	}
	for _, path := range []string{"/dev/zero", filepath.Join(dir, "fifo.npy")} {
		if _, err := ReadNPY(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadNPY(%s): %v", path, err)
		}
		if err := readOne(t, dir, path, ReadOptions{AllowAbs: true}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s with absolute paths allowed: %v", path, err)
		}
	}
	if err := readOne(t, dir, "huge.npy", ReadOptions{MaxNPYBytes: 8}); err == nil || !strings.Contains(err.Error(), "above the limit of 8") {
		t.Errorf("a smaller limit: %v", err)
	}
}

// TestNPYPathsConfined: .npy paths stay inside the requests folder as
// written: a `..` that leaves it is refused, and an absolute path is
// refused unless allowed, then taken as given (not joined under the
// folder). Symbolic links inside the folder are followed, to a file or
// through a folder, wherever they point.
func TestNPYPathsConfined(t *testing.T) {
	outside := t.TempDir()
	dir := filepath.Join(t.TempDir(), "requests")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := npyBytes(1, "1,", []int64{5})
	for _, p := range []string{filepath.Join(outside, "x.npy"), filepath.Join(dir, "sub", "x.npy")} {
		if err := os.WriteFile(p, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "x.npy"), filepath.Join(dir, "out.npy")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("sub", "x.npy"), filepath.Join(dir, "in.npy")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"../../etc/passwd":              "leaves the requests folder",
		"sub/../../x.npy":               "leaves the requests folder",
		"out.npy":                       "",
		"linked/x.npy":                  "",
		"linked/../../x.npy":            "leaves the requests folder",
		"linked/none.npy":               "no such file",
		filepath.Join(outside, "x.npy"): "is absolute",
		"/etc/passwd":                   "is absolute",
		"sub/x.npy":                     "",
		"in.npy":                        "",
		"./sub/../sub/x.npy":            "",
	} {
		err := readOne(t, dir, name, ReadOptions{})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if err := readOne(t, dir, filepath.Join(outside, "x.npy"), ReadOptions{AllowAbs: true}); err != nil {
		t.Errorf("an absolute path allowed: %v", err)
	}
}

// bytesRead is how many bytes this process has read through read system
// calls (rchar in /proc/self/io): what refusing a 2 GiB file must not
// cost, counted without a clock. The test reads no other file meanwhile.
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no read counter here: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("/proc/self/io: %q", line)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}
