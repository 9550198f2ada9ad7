package genrt

import "github.com/genaic/genaic/internal/steps"

// The step helpers of generated executors are the interpreter's own
// (internal/steps): a request fails in a generated executor exactly as it
// fails in the VM, with the same rule and message.
var (
	Missing         = steps.Missing
	NotLoaded       = steps.NotLoaded
	Unexpected      = steps.Unexpected
	NoValue         = steps.NoValue
	Result          = steps.Result
	UnsupportedEmit = steps.UnsupportedEmit
	Emit            = steps.Emit
	Key             = steps.Key
	NoPhi           = steps.NoPhi
	Iteration       = steps.Iteration
	Continue        = steps.Continue
)
