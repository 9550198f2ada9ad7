package ortlib

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixCache is what a failing test over the real cache tells the reader to do.
const fixCache = `the runtime artifacts are missing or wrong: run "make setup" (scripts/setup.sh) at the root of the genaic checkout, then re-run the tests`

// fakeELF is enough of a shared library for Verify.
var fakeELF = []byte("\x7fELF\x02\x01\x01\x00fake library")

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantErrContaining(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func TestLibraryLookupOrder(t *testing.T) {
	tests := []struct {
		name     string
		files    []string // created under the temp dir $DIR
		libEnv   string   // ONNXRUNTIME_LIB; $DIR is the temp dir
		cacheEnv string   // GENAIC_CACHE
		want     string   // the path Library returns, or "" for an error
		wantErr  []string // parts of the error
	}{
		{
			name:     "env var wins over the cache",
			files:    []string{"custom/libonnxruntime.so.1", "cache/onnxruntime/libonnxruntime.so.1"},
			libEnv:   "$DIR/custom/libonnxruntime.so.1",
			cacheEnv: "$DIR/cache",
			want:     "$DIR/custom/libonnxruntime.so.1",
		},
		{
			name:     "env var wins with an empty cache",
			files:    []string{"custom/libonnxruntime.so.1"},
			libEnv:   "$DIR/custom/libonnxruntime.so.1",
			cacheEnv: "$DIR/cache",
			want:     "$DIR/custom/libonnxruntime.so.1",
		},
		{
			name:     "missing file under env var is an error, not a fallback",
			files:    []string{"cache/onnxruntime/libonnxruntime.so.1"},
			libEnv:   "$DIR/nowhere/libonnxruntime.so.1",
			cacheEnv: "$DIR/cache",
			wantErr:  []string{"ONNXRUNTIME_LIB", "$DIR/nowhere/libonnxruntime.so.1", "no file exists there"},
		},
		{
			name:     "env var naming a directory is an error",
			files:    []string{"custom/keep"},
			libEnv:   "$DIR/custom",
			cacheEnv: "$DIR/cache",
			wantErr:  []string{"ONNXRUNTIME_LIB", "$DIR/custom", "directory"},
		},
		{
			name:     "empty env var falls back to the cache",
			files:    []string{"cache/onnxruntime/libonnxruntime.so.1"},
			cacheEnv: "$DIR/cache",
			want:     "$DIR/cache/onnxruntime/libonnxruntime.so.1",
		},
		{
			name:     "missing cache says to run make setup",
			cacheEnv: "$DIR/cache",
			wantErr: []string{
				`run "make setup"`,
				"$DIR/cache/onnxruntime/libonnxruntime.so.1",
				"ONNXRUNTIME_LIB",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			expand := func(s string) string { return strings.ReplaceAll(s, "$DIR", dir) }
			for _, f := range tt.files {
				writeFile(t, filepath.Join(dir, f), fakeELF)
			}
			t.Setenv(EnvLib, expand(tt.libEnv))
			t.Setenv(EnvCache, expand(tt.cacheEnv))

			got, err := Library()
			if tt.want == "" {
				parts := make([]string, len(tt.wantErr))
				for i, p := range tt.wantErr {
					parts[i] = expand(p)
				}
				wantErrContaining(t, err, parts...)
				return
			}
			if err != nil {
				t.Fatalf("Library() error: %v", err)
			}
			if want := expand(tt.want); got != want {
				t.Errorf("Library() = %q, want %q", got, want)
			}
		})
	}
}

func TestLibraryMissingCacheMessage(t *testing.T) {
	t.Setenv(EnvLib, "")
	t.Setenv(EnvCache, "/x/.cache")
	_, err := Library()
	want := `ONNX Runtime shared library not found at /x/.cache/onnxruntime/libonnxruntime.so.1: run "make setup" in the genaic checkout, or set ONNXRUNTIME_LIB to the path of libonnxruntime.so.1`
	if err == nil || err.Error() != want {
		t.Errorf("Library() error = %v\nwant %s", err, want)
	}
}

const genaicMod = "module github.com/genaic/genaic\n\ngo 1.26\n"

func TestCacheDir(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string // path under $DIR -> contents
		cacheEnv string
		cwd      string // under $DIR
		want     string
	}{
		{
			name:     "env var wins over the checkout",
			files:    map[string]string{"repo/go.mod": genaicMod},
			cacheEnv: "$DIR/elsewhere",
			cwd:      "repo",
			want:     "$DIR/elsewhere",
		},
		{
			name:     "relative env var is made absolute",
			files:    map[string]string{"repo/go.mod": genaicMod},
			cacheEnv: "rel/cache",
			cwd:      "repo",
			want:     "$DIR/repo/rel/cache",
		},
		{
			name:  "checkout root itself",
			files: map[string]string{"repo/go.mod": genaicMod},
			cwd:   "repo",
			want:  "$DIR/repo/.cache",
		},
		{
			name:  "walks up from a subdirectory",
			files: map[string]string{"repo/go.mod": genaicMod, "repo/vm/ortlib/x.go": "package ortlib\n"},
			cwd:   "repo/vm/ortlib",
			want:  "$DIR/repo/.cache",
		},
		{
			name: "skips a nearer go.mod of another module",
			files: map[string]string{
				"repo/go.mod":       genaicMod,
				"repo/other/go.mod": "module example.com/other\n",
				"repo/other/a/keep": "",
			},
			cwd:  "repo/other/a",
			want: "$DIR/repo/.cache",
		},
		{
			name:  "quoted module path with a comment",
			files: map[string]string{"repo/go.mod": "// genaic\nmodule \"github.com/genaic/genaic\" // the compiler\n"},
			cwd:   "repo",
			want:  "$DIR/repo/.cache",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			expand := func(s string) string { return strings.ReplaceAll(s, "$DIR", dir) }
			for f, data := range tt.files {
				writeFile(t, filepath.Join(dir, f), []byte(data))
			}
			t.Chdir(filepath.Join(dir, tt.cwd))
			t.Setenv(EnvCache, expand(tt.cacheEnv))

			got, err := CacheDir()
			if err != nil {
				t.Fatalf("CacheDir() error: %v", err)
			}
			if want := expand(tt.want); got != want {
				t.Errorf("CacheDir() = %q, want %q", got, want)
			}
		})
	}
}

func TestIsCheckout(t *testing.T) {
	tests := []struct {
		gomod string
		want  bool
	}{
		{genaicMod, true},
		{"module github.com/genaic/genaic", true},
		{"module `github.com/genaic/genaic`\n", true},
		{"module github.com/genaic/genaic/v2\n", false},
		{"module github.com/genaic/genaicx\n", false},
		{"// module github.com/genaic/genaic\nmodule example.com/x\n", false},
		{"require github.com/genaic/genaic v1.0.0\n", false},
		{"", false},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "go.mod"), []byte(tt.gomod))
		if got := isCheckout(dir); got != tt.want {
			t.Errorf("isCheckout(go.mod %q) = %v, want %v", tt.gomod, got, tt.want)
		}
	}
	if isCheckout(t.TempDir()) {
		t.Error("isCheckout(directory without go.mod) = true")
	}
}

func TestCacheDirFromStarts(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	repo := filepath.Join(dir, "repo")
	writeFile(t, filepath.Join(plain, "keep"), nil)
	writeFile(t, filepath.Join(repo, "go.mod"), []byte(genaicMod))
	writeFile(t, filepath.Join(repo, "bin", "keep"), nil)

	// The working directory is outside any checkout, the executable inside one.
	got, err := cacheDirFrom([]string{plain, filepath.Join(repo, "bin")}, "")
	if err != nil {
		t.Fatalf("cacheDirFrom: %v", err)
	}
	if want := filepath.Join(repo, ".cache"); got != want {
		t.Errorf("cacheDirFrom = %q, want %q", got, want)
	}

	_, err = cacheDirFrom([]string{plain}, "")
	wantErrContaining(t, err, `run "make setup"`, "GENAIC_CACHE", plain, "module github.com/genaic/genaic")

	// An installed binary outside any checkout falls back on the cache of
	// the checkout that built it; a checkout on the way still comes first.
	installed := filepath.Join(dir, "built-from", ".cache")
	if got, err := cacheDirFrom([]string{plain}, installed); err != nil || got != installed {
		t.Errorf("cacheDirFrom(outside any checkout, installed) = %q, %v; want %q", got, err, installed)
	}
	if got, err := cacheDirFrom([]string{repo}, installed); err != nil || got != filepath.Join(repo, ".cache") {
		t.Errorf("cacheDirFrom(inside a checkout, installed) = %q, %v; want the checkout's cache", got, err)
	}
}

func TestModel(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCache, dir)
	writeFile(t, filepath.Join(dir, "models", "melspectrogram.onnx"), []byte{0x08, 0x07})

	got, err := Model("melspectrogram.onnx")
	if err != nil {
		t.Fatalf("Model: %v", err)
	}
	if want := filepath.Join(dir, "models", "melspectrogram.onnx"); got != want {
		t.Errorf("Model = %q, want %q", got, want)
	}

	_, err = Model("embedding_model.onnx")
	wantErrContaining(t, err, `run "make setup"`, "embedding_model.onnx", filepath.Join(dir, "models"))

	for _, bad := range []string{"", ".", "..", "../x.onnx", "models/x.onnx", "/abs.onnx"} {
		if _, err := Model(bad); err == nil {
			t.Errorf("Model(%q) succeeded, want an error", bad)
		}
	}
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		data    []byte // nil: no file at all
		wantErr string // "" for success
	}{
		{"elf", fakeELF, ""},
		{"bare magic", []byte("\x7fELF"), ""},
		{"text file", []byte("this is a text file, not a library\n"), "not the ELF magic"},
		{"short file", []byte("\x7fE"), "shorter than an ELF header"},
		{"empty file", []byte{}, "shorter than an ELF header"},
		{"missing", nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if tt.data != nil {
				writeFile(t, p, tt.data)
			}
			err := Verify(p)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Verify: %v", err)
				}
				return
			}
			wantErrContaining(t, err, tt.wantErr, p)
		})
	}
}

// TestCachedArtifactsPresent checks the real cache that "make setup" fills.
// It fails, never skips, when the artifacts are missing: tests that need the
// runtime must not pass vacuously on a machine that was never set up.
func TestCachedArtifactsPresent(t *testing.T) {
	t.Setenv(EnvLib, "") // the cached library, not a local override

	lib, err := Library()
	if err != nil {
		t.Fatalf("%v\n%s", err, fixCache)
	}
	if err := Verify(lib); err != nil {
		t.Fatalf("%v\n%s", err, fixCache)
	}

	for _, name := range []string{"embedding_model.onnx", "melspectrogram.onnx", "ch_PP-OCRv4_rec_infer.onnx"} {
		p, err := Model(name)
		if err != nil {
			t.Fatalf("%v\n%s", err, fixCache)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v\n%s", err, fixCache)
		}
		// A serialized ModelProto starts with field 1 (ir_version), a varint:
		// tag byte 0x08.
		if len(data) == 0 || data[0] != 0x08 {
			head := data[:min(len(data), 8)]
			t.Fatalf("%s is not an ONNX model (%d bytes, starts with % x)\n%s", p, len(data), head, fixCache)
		}
	}
}

// TestCachedArtifactsMatchManifest checks every cached file against the
// sha256 values in scripts/setup.sha256, the same check scripts/setup.sh makes.
func TestCachedArtifactsMatchManifest(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := findCheckout(wd)
	if !ok {
		t.Fatalf("no genaic checkout above %s", wd)
	}
	manifest, err := os.ReadFile(filepath.Join(root, "scripts", "setup.sha256"))
	if err != nil {
		t.Fatalf("reading the manifest: %v", err)
	}
	cache, err := CacheDir()
	if err != nil {
		t.Fatalf("%v\n%s", err, fixCache)
	}

	n := 0
	for line := range strings.Lines(string(manifest)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || len(f[0]) != 64 {
			t.Fatalf("malformed manifest line %q", line)
		}
		want, rel := f[0], strings.TrimPrefix(f[1], "*")
		inCache, ok := strings.CutPrefix(rel, ".cache/")
		if !ok {
			t.Fatalf("manifest entry %s is not under .cache/", rel)
		}
		p := filepath.Join(cache, filepath.FromSlash(inCache))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v\n%s", err, fixCache)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("%s: sha256 %s, want %s (from scripts/setup.sha256)\n%s", p, got, want, fixCache)
		}
		n++
	}
	if n == 0 {
		t.Fatal("scripts/setup.sha256 lists no files")
	}
}
