package genrt

import (
	"fmt"
	"sort"

	"github.com/genaic/genaic/vm"
)

// The errors below are the interpreter's (vm/interp.go), with its rules
// and messages: a request fails in a generated executor exactly as it
// fails in the VM. The differential tests of package codegen hold them
// to it.

func runErr(rule, format string, args ...any) error {
	return &vm.RunError{Rule: rule, Message: fmt.Sprintf(format, args...)}
}

// Missing is the error of a request that leaves out a required input.
func Missing(input string) error {
	return runErr("run/input", "the request has no value for workflow input `%s`", input)
}

// NotLoaded is the error of a request that leaves out an input whose
// source (a literal or an artifact) the runtime does not load yet.
func NotLoaded(input, source string) error {
	return runErr("run/unsupported", "workflow input `%s` comes from a %s, which this runtime does not load yet", input, source)
}

// Unexpected reports the first name of inputs, in sorted order, that is
// not a workflow input.
func Unexpected(inputs map[string]*vm.Tensor, known ...string) error {
	isKnown := map[string]bool{}
	for _, k := range known {
		isKnown[k] = true
	}
	var extra []string
	for name := range inputs {
		if !isKnown[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return runErr("run/input", "the request supplies `%s`, which is not a workflow input", extra[0])
}

// NoValue is the error of a step that reads a value the request does not
// have (an optional input left out).
func NoValue(name string) error {
	return runErr("run/input", "`%s` has no value in this request (an optional input left out?)", name)
}

// Result returns output port of an invoke's outputs, or the error of a
// component that did not return it.
func Result(outs map[string]*vm.Tensor, component, port string) (*vm.Tensor, error) {
	t, ok := outs[port]
	if !ok {
		return nil, runErr("run/backend", "component `%s` returned no output `%s`", component, port)
	}
	return t, nil
}

// UnsupportedEmit is the error of an emit the runtime does not execute:
// only replace emits without when or valid_length run. It never returns
// nil; it returns an error so that the code after it stays reachable.
func UnsupportedEmit(output, mode string) error {
	return runErr("run/unsupported", "emit into `%s` uses mode %s with when/valid_length; this runtime executes replace emits", output, mode)
}

// Key reads a branch predicate as a case key: the decimal value of an
// integer scalar, or true or false.
func Key(t *vm.Tensor) (string, error) {
	if t == nil || t.Len() != 1 {
		return "", runErr("run/input", "a branch predicate must be a scalar, got %s", t)
	}
	switch d := t.Data.(type) {
	case []int64:
		return fmt.Sprint(d[0]), nil
	case []int32:
		return fmt.Sprint(d[0]), nil
	case []bool:
		return fmt.Sprint(d[0]), nil
	}
	return "", runErr("run/input", "a branch predicate must be an integer or boolean scalar, got %s", t)
}

// NoPhi is the error of a branch output that has no value for the key the
// branch took: no case of it names that key, and it has no default.
func NoPhi(predicate, key, output string) error {
	return runErr("run/input", "branch predicate `%s` is %s: no case handles it and branch output `%s` has no default", predicate, key, output)
}

// Iteration is the value of a loop's iteration counter.
func Iteration(i int64) *vm.Tensor {
	return &vm.Tensor{DType: "int64", Shape: []int64{}, Data: []int64{i}}
}

// Continue reads a loop's continue_when value after an iteration: the loop
// goes on unless it is false or 0.
func Continue(t *vm.Tensor) (bool, error) {
	key, err := Key(t)
	if err != nil {
		return false, err
	}
	return key != "false" && key != "0", nil
}
