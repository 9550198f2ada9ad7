// Package safefile opens the files genaic reads from paths people give it
// (documents, plans, models, requests, stats, configs): only regular
// files, and within a bound. Opening a named pipe for reading waits for a
// writer, and a device such as /dev/zero never ends, so such a path is
// refused before anything is read; the file is opened without blocking
// and checked again once open, so a path swapped between the two looks is
// refused too.
package safefile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Open opens a regular file for reading.
func Open(path string) (*os.File, os.FileInfo, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if err := regular(path, info); err != nil {
		return nil, nil, err
	}
	// O_NONBLOCK: should path now name a pipe, the open returns at once
	// (and the check below refuses it) instead of waiting for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil {
		err = regular(path, info)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

func regular(path string, info os.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", path, describe(info.Mode()))
	}
	return nil
}

func describe(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// ReadFile reads a regular file of at most limit bytes; a larger one is
// refused without being read whole.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, info, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, tooLarge(path, info.Size(), limit)
	}
	// The size may grow while it is read: read at most one byte past the
	// limit to tell.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, int64(len(b)), limit)
	}
	return b, nil
}

func tooLarge(path string, size, limit int64) error {
	return fmt.Errorf("%s is %d bytes or more; genaic reads at most %d bytes from it", path, size, limit)
}
