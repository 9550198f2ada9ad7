package backend

import "fmt"

// RunError is a runtime error with a rule id of the catalogue (run/*). It
// fails only the request that owns the bad item.
type RunError struct {
	Rule    string
	Message string
}

func (e *RunError) Error() string { return fmt.Sprintf("error[%s]: %s", e.Rule, e.Message) }

// Errorf returns a RunError with rule and a formatted message.
func Errorf(rule, format string, args ...any) *RunError {
	return &RunError{Rule: rule, Message: fmt.Sprintf(format, args...)}
}
