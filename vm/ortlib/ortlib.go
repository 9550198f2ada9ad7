// Package ortlib locates the runtime artifacts genaic needs: the ONNX Runtime
// shared library and the reference models that scripts/setup.sh (run by
// "make setup") caches in the .cache folder of the genaic checkout.
//
// It only finds files and checks that they look right; it never loads them.
// Every not-found error says what to run to fix it.
package ortlib

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const (
	// EnvLib names the environment variable that, when set, overrides the
	// cached ONNX Runtime shared library with an explicit path.
	EnvLib = "ONNXRUNTIME_LIB"
	// EnvCache names the environment variable that, when set, overrides the
	// cache directory (normally the .cache folder of the genaic checkout).
	EnvCache = "GENAIC_CACHE"
	// ModulePath is the module line that identifies a genaic checkout.
	ModulePath = "github.com/genaic/genaic"
	// LibName is the file name of the ONNX Runtime shared library.
	LibName = "libonnxruntime.so.1"
)

// installedCache is the .cache folder of the checkout a binary was built
// from, set by "make install" with -ldflags -X: an installed genaic lives
// outside any checkout, so walking up from it finds none. Empty in every
// other build.
var installedCache string

// setupHint is the fix for anything missing from the cache.
const setupHint = `run "make setup" in the genaic checkout`

// Library returns the path of the ONNX Runtime shared library: $ONNXRUNTIME_LIB
// when it is set, otherwise <cache>/onnxruntime/libonnxruntime.so.1 where
// <cache> is CacheDir(). It fails when the chosen file does not exist. Callers
// about to load the library should also call Verify on the result.
func Library() (string, error) {
	if p := os.Getenv(EnvLib); p != "" {
		if err := isFile(p); err != nil {
			return "", fmt.Errorf("%s is set to %s, but %v: point %s at %s, or unset it to use the library cached by \"make setup\"",
				EnvLib, p, err, EnvLib, LibName)
		}
		return p, nil
	}
	cache, err := CacheDir()
	if err != nil {
		return "", fmt.Errorf("ONNX Runtime shared library: %w; or set %s to the path of %s", err, EnvLib, LibName)
	}
	p := filepath.Join(cache, "onnxruntime", LibName)
	if err := isFile(p); err != nil {
		return "", fmt.Errorf("ONNX Runtime shared library not found at %s: %s, or set %s to the path of %s",
			p, setupHint, EnvLib, LibName)
	}
	return p, nil
}

// Model returns the path of the cached model <cache>/models/<name>, for
// example Model("melspectrogram.onnx"). It fails when the file is missing.
func Model(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", fmt.Errorf("model name %q is not a plain file name", name)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", fmt.Errorf("model %s: %w", name, err)
	}
	p := filepath.Join(cache, "models", name)
	if err := isFile(p); err != nil {
		return "", fmt.Errorf("model %s not found at %s: %s (it fetches the models listed in scripts/setup.sha256)",
			name, p, setupHint)
	}
	return p, nil
}

// CacheDir returns the directory that holds the cached artifacts: $GENAIC_CACHE
// when it is set; otherwise the .cache folder of the first genaic checkout (a
// directory whose go.mod declares module github.com/genaic/genaic) found by
// walking up from the current working directory, and then from the directory
// of the running executable; otherwise, for a binary "make install" built,
// the cache of the checkout it was built from. The directory itself need not
// exist yet.
func CacheDir() (string, error) {
	if c := os.Getenv(EnvCache); c != "" {
		if abs, err := filepath.Abs(c); err == nil {
			return abs, nil
		}
		return c, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		starts = append(starts, filepath.Dir(exe))
	}
	return cacheDirFrom(starts, installedCache)
}

// cacheDirFrom walks up from each start directory in turn and returns the
// .cache folder of the first genaic checkout it meets, else installed when
// it is set.
func cacheDirFrom(starts []string, installed string) (string, error) {
	for _, start := range starts {
		if root, ok := findCheckout(start); ok {
			return filepath.Join(root, ".cache"), nil
		}
	}
	if installed != "" {
		return installed, nil
	}
	return "", fmt.Errorf("cache directory not found: no genaic checkout (a go.mod with \"module %s\") at or above %s: %s, or set %s to its .cache folder",
		ModulePath, strings.Join(starts, " or "), setupHint, EnvCache)
}

// findCheckout returns the nearest directory at or above dir that is the root
// of a genaic checkout.
func findCheckout(dir string) (string, bool) {
	dir = filepath.Clean(dir)
	for {
		if isCheckout(dir) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isCheckout reports whether dir/go.mod declares the genaic module.
func isCheckout(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], "\"`") == ModulePath {
			return true
		}
	}
	return false
}

// isFile returns nil when p exists and is not a directory, and otherwise an
// error that reads well after "but".
func isFile(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no file exists there")
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("it is a directory")
	}
	return nil
}

// elfMagic starts every ELF file, shared libraries included.
var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

// Verify checks that path looks like a shared library: that it can be read
// and starts with the ELF magic. It does not check the architecture.
func Verify(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(elfMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		return fmt.Errorf("%s is not a shared library: it is shorter than an ELF header; %s to fetch it again", path, setupHint)
	}
	if !bytes.Equal(head, elfMagic) {
		return fmt.Errorf("%s is not a shared library: it starts with % x, not the ELF magic % x; %s to fetch it again, or point %s at %s",
			path, head, elfMagic, setupHint, EnvLib, LibName)
	}
	return nil
}
