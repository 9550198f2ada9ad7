package backend

import (
	"errors"
	"fmt"

	"github.com/genaic/genaic/ir"
)

// RunError is a runtime error with a rule id of the catalogue (run/*). It
// fails only the request that owns the bad item.
type RunError struct {
	Rule    string
	Message string
	// At is where the metadata document declares what the error concerns:
	// the port whose value was refused, or the invoke step that failed
	// (from the plan's location table); nil when nothing is located.
	At *ir.Location
	// Err is the error this one stands for, when there is one (a context's
	// error, the VM's closed engine or full queue): errors.Is and errors.As
	// see it through Unwrap.
	Err error
}

// Located returns err with its location set to at when err is a RunError
// that has none; a located error, or another error, comes back as it is.
// The RunError is copied, never changed: one error may reach several
// requests.
func Located(err error, at ir.Location) error {
	var re *RunError
	if at.Line == 0 || !errors.As(err, &re) || re != err || re.At != nil {
		return err
	}
	c := *re
	c.At = &at
	return &c
}

func (e *RunError) Error() string { return fmt.Sprintf("error[%s]: %s", e.Rule, e.Message) }

// Unwrap returns the error this one stands for, or nil.
func (e *RunError) Unwrap() error { return e.Err }

// Errorf returns a RunError with rule and a formatted message.
func Errorf(rule, format string, args ...any) *RunError {
	return &RunError{Rule: rule, Message: fmt.Sprintf(format, args...)}
}
