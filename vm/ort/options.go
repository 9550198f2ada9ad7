// Package ort is the ONNX Runtime backend of the VM: it loads a component's
// ONNX graph into one onnxruntime_go DynamicAdvancedSession and runs named
// host tensors through it. It is the only package of genaic that uses cgo;
// built without cgo, New fails and says how to rebuild.
package ort

// Options configures the backend.
type Options struct {
	// IntraOpThreads and InterOpThreads size ONNX Runtime's thread pools
	// for every session; 0 keeps ONNX Runtime's default.
	IntraOpThreads, InterOpThreads int
	// LibraryPath is the ONNX Runtime shared library; empty means
	// ortlib.Library() ($ONNXRUNTIME_LIB, then the cache "make setup" fills).
	LibraryPath string
	// NotReady is the readiness table: component name → why grouped
	// execution is declined for it.
	NotReady map[string]string
}

// Backend runs ONNX components with ONNX Runtime on the CPU.
type Backend struct {
	opts Options
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "onnxruntime" }

// LibraryPath returns the ONNX Runtime library the process loaded.
func (b *Backend) LibraryPath() string { return b.opts.LibraryPath }
