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

// RowErrors is the error of an invocation that failed only for some of
// its rows: the units of the outermost level of its packed inputs, in the
// order the invocation gave them, one a request of a group. Each entry
// names a row and the error its request alone would have met, worded as
// an invocation of that row alone words it; the other rows did nothing
// wrong, and an invocation without the failed ones may succeed. A session
// returns it only for a failure it can lay at the rows' own items (an
// image that does not decode), never for one of the invocation as a whole.
type RowErrors []RowError

// RowError is the failure of one row of an invocation (RowErrors).
type RowError struct {
	Row int
	Err error
}

func (e RowErrors) Error() string {
	if len(e) == 0 {
		return "no row failed"
	}
	more := ""
	if len(e) > 1 {
		more = fmt.Sprintf(" (and %d more rows)", len(e)-1)
	}
	return fmt.Sprintf("row %d: %v%s", e[0].Row, e[0].Err, more)
}

// Unwrap returns every row's error, so that errors.Is and errors.As see
// through to them.
func (e RowErrors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, r := range e {
		errs[i] = r.Err
	}
	return errs
}
