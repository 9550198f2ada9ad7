package backend

import (
	"context"
	"errors"
)

// The runtime rule ids of the catalogue (RULES.md, "Runtime"): the Rule of
// every RunError the runtime reports is one of these. They are a public
// contract, so Go callers match on them rather than on messages.
const (
	RunOffsets     = "run/offsets"
	RunOwner       = "run/owner"
	RunExtent      = "run/extent"
	RunLengths     = "run/lengths"
	RunBudget      = "run/budget"
	RunUniform     = "run/uniform"
	RunInput       = "run/input"
	RunBackend     = "run/backend"
	RunUnsupported = "run/unsupported"
	RunQueueFull   = "run/queue-full"
	RunClosed      = "run/closed"
	RunCancelled   = "run/cancelled"
	RunDeadline    = "run/deadline"
)

// ContextError returns the RunError for a context's error: run/deadline
// for context.DeadlineExceeded, run/cancelled for a cancellation (and any
// other cause). The RunError wraps err, so errors.Is(e, context.Canceled)
// still holds; nil comes back as nil, and a RunError as it is.
func ContextError(err error) error {
	if err == nil {
		return nil
	}
	var re *RunError
	if errors.As(err, &re) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &RunError{Rule: RunDeadline, Message: "the request's deadline passed before its result was ready", Err: err}
	}
	return &RunError{Rule: RunCancelled, Message: "the request was cancelled before its result was ready", Err: err}
}
