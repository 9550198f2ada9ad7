//go:build !cgo

package ort

import (
	"errors"
	"testing"

	"github.com/genaic/genaic/ir"
)

// TestNeedsCgo fails by design: without cgo the real-model guard cannot
// run, and a missing guard must not pass as a skipped one.
func TestNeedsCgo(t *testing.T) {
	if _, err := New(Options{}); !errors.Is(err, errNoCgo) {
		t.Errorf("New without cgo: got %v, want %v", err, errNoCgo)
	}
	if _, err := (&Backend{}).Load(&ir.Component{Name: "enc"}, "."); !errors.Is(err, errNoCgo) {
		t.Errorf("Load without cgo: got %v, want %v", err, errNoCgo)
	}
	t.Fatal("the onnxruntime backend's tests need cgo: run them with CGO_ENABLED=1 and a C compiler")
}
