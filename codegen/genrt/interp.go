package genrt

import "github.com/genaic/genaic/vm"

// The step helpers of generated executors are the interpreter's own
// (vm/steps.go): a request fails in a generated executor exactly as it
// fails in the VM, with the same rule and message.
var (
	Missing         = vm.ErrMissing
	NotLoaded       = vm.ErrNotLoaded
	Unexpected      = vm.ErrUnexpected
	NoValue         = vm.ErrNoValue
	Result          = vm.Result
	UnsupportedEmit = vm.ErrUnsupportedEmit
	Emit            = vm.Emit
	Key             = vm.Key
	NoPhi           = vm.ErrNoPhi
	Iteration       = vm.Iteration
	Continue        = vm.Continue
)
