// Package ort is the ONNX Runtime backend of the VM: it loads a component's
// ONNX graph into one onnxruntime_go DynamicAdvancedSession and runs named
// host tensors through it. It is the only package of genaic that uses cgo;
// built without cgo, New fails and says how to rebuild.
package ort

import (
	"fmt"
	"slices"
	"strings"
)

// Options configures the backend.
type Options struct {
	// IntraOpThreads and InterOpThreads size ONNX Runtime's thread pools
	// for every session; 0 keeps ONNX Runtime's default.
	IntraOpThreads, InterOpThreads int
	// LibraryPath is the ONNX Runtime shared library; empty means
	// ortlib.Library() ($ONNXRUNTIME_LIB, then the cache "make setup" fills).
	LibraryPath string
	// Provider is the execution provider sessions run on: cpu (the
	// default, also for ""), cuda, tensorrt, openvino, coreml or directml.
	// A provider the loaded library lacks is not an error: each session
	// then runs on the cpu and declines grouped execution, saying why
	// (Session.Ready), so its requests run one per invocation.
	Provider string
}

// Providers are the execution providers Options.Provider may name.
var Providers = []string{"cpu", "cuda", "tensorrt", "openvino", "coreml", "directml"}

// provider returns the provider Options asks for, in lower case.
func (o Options) provider() string {
	if o.Provider == "" {
		return "cpu"
	}
	return strings.ToLower(o.Provider)
}

// checkProvider refuses a provider name the backend does not know at all
// (a typo), unlike a known provider the library may lack.
func (o Options) checkProvider() error {
	if !slices.Contains(Providers, o.provider()) {
		return fmt.Errorf("onnxruntime execution provider %q is not one genaic knows; use one of %s", o.Provider, strings.Join(Providers, ", "))
	}
	return nil
}

// Backend runs ONNX components with ONNX Runtime on the CPU.
type Backend struct {
	opts Options
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "onnxruntime" }

// LibraryPath returns the ONNX Runtime library the process loaded.
func (b *Backend) LibraryPath() string { return b.opts.LibraryPath }
