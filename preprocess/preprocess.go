// Package preprocess is the one description of genaic's preprocessing
// programs (DESIGN §9): the op table (Ops), the program compiler (Compile)
// that checks a program against what its built-in adapter runs, and the
// rule that binds the adapter's output ports to program outputs (Bind).
//
// The preprocess pass reports what Compile finds at check time; the
// built-in adapters (vm/adapters) run the compiled program with their own
// kernels. Both ask this package, so a program that passes `genaic check`
// is one the runtime loads.
//
// It depends only on ir and the standard library.
package preprocess

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/ir"
)

// The rule ids Compile and Bind report (RULES.md).
const (
	RuleOp      = "preprocess/op"
	RuleUnbound = "preprocess/unbound"
)

// Modalities lists the preprocessing programs a document may declare, in
// document order.
var Modalities = []string{"image", "video", "audio"}

// ABI returns the adapter ABI name of a modality.
func ABI(modality string) string { return "onnx-genai." + modality + "-preprocess" }

// ModalityOf returns the modality whose built-in adapter has ABI abi.
func ModalityOf(abi string) (string, bool) {
	for _, m := range Modalities {
		if abi == ABI(m) {
			return m, true
		}
	}
	return "", false
}

// ProgramOf returns m's program of a modality, or nil.
func ProgramOf(m *ir.Module, modality string) *ir.Program {
	for _, p := range m.Programs {
		if p.Modality == modality {
			return p
		}
	}
	return nil
}

// AdapterOf returns the first adapter component of m that runs the
// built-in adapter of a modality, or nil.
func AdapterOf(m *ir.Module, modality string) *ir.Component {
	for _, c := range m.Components {
		if c.Impl == ir.ImplAdapter && c.ABI == ABI(modality) {
			return c
		}
	}
	return nil
}

// Problem is one thing a program or binding does that its adapter would
// refuse, positioned at the transform, parameter, output or port at fault.
type Problem struct {
	Rule    string
	Loc     ir.Loc
	Message string
	// Help is the fix, for a help line of its own ("" when none is said).
	Help string
}

// Error is the message followed by the fix, for a runtime error that has
// no help line to put it on.
func (p Problem) Error() string {
	if p.Help == "" {
		return p.Message
	}
	return p.Message + "; " + p.Help
}

func problem(rule string, loc ir.Loc, format string, args ...any) Problem {
	// The text after a newline is the fix: messages come through errors
	// of the shape checks as well as from formats.
	msg, help, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	return Problem{Rule: rule, Loc: loc, Message: msg, Help: help}
}
