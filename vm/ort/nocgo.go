//go:build !cgo

package ort

import (
	"errors"
	"fmt"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/ir"
)

// errNoCgo is what a build without cgo answers: onnxruntime_go loads ONNX
// Runtime through cgo, so such a build cannot run ONNX components.
var errNoCgo = errors.New("this genaic was built without cgo (CGO_ENABLED=0), and the onnxruntime backend needs cgo: rebuild with CGO_ENABLED=1 and a C compiler")

// New reports that ONNX Runtime is unavailable in a build without cgo.
func New(opts Options) (*Backend, error) { return nil, errNoCgo }

// Load reports that ONNX Runtime is unavailable in a build without cgo.
func (b *Backend) Load(comp *ir.Component, pkgDir string) (backend.Session, error) {
	if comp == nil {
		return nil, errNoCgo
	}
	return nil, fmt.Errorf("component `%s`: %w", comp.Name, errNoCgo)
}
