package vm

import (
	"fmt"
	"sort"
)

// The helpers below are what executing a workflow step needs beyond
// invoking a component. The interpreter and generated executors both call
// them, so that a request fails the same way, with the same rule and
// message, in either.

// ErrMissing is the error of a request that leaves out a required input.
func ErrMissing(input string) error {
	return runErr("run/input", "the request has no value for workflow input `%s`", input)
}

// ErrNotLoaded is the error of a request that leaves out an input whose
// source (a literal or an artifact) the runtime does not load yet.
func ErrNotLoaded(input, source string) error {
	return runErr("run/unsupported", "workflow input `%s` comes from a %s, which this runtime does not load yet", input, source)
}

// ErrUnexpected reports the first name of inputs, in sorted order, that is
// not among the workflow's inputs, or nil.
func ErrUnexpected(inputs map[string]*Tensor, known ...string) error {
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

// ErrNoValue is the error of a step that reads a value the request does not
// have (an optional input left out).
func ErrNoValue(name string) error {
	return runErr("run/input", "`%s` has no value in this request (an optional input left out?)", name)
}

// Result returns one output port of an invoke's outputs, or the error of a
// component that did not return it.
func Result(outs map[string]*Tensor, component, port string) (*Tensor, error) {
	t, ok := outs[port]
	if !ok {
		return nil, runErr("run/backend", "component `%s` returned no output `%s`", component, port)
	}
	return t, nil
}

// ErrUnsupportedEmit is the error of an emit the runtime does not execute:
// only replace emits without when or valid_length run.
func ErrUnsupportedEmit(output, mode string) error {
	return runErr("run/unsupported", "emit into `%s` uses mode %s with when/valid_length; this runtime executes replace emits", output, mode)
}

// Key reads a branch predicate as a case key: the decimal value of an
// integer scalar, or true or false.
func Key(t *Tensor) (string, error) {
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

// ErrNoPhi is the error of a branch output that has no value for the key
// the branch took: no case of it names that key, and it has no default.
func ErrNoPhi(predicate, key, output string) error {
	return runErr("run/input", "branch predicate `%s` is %s: no case handles it and branch output `%s` has no default", predicate, key, output)
}

// Iteration is the value of a loop's iteration counter.
func Iteration(i int64) *Tensor {
	return &Tensor{DType: "int64", Shape: []int64{}, Data: []int64{i}}
}

// Continue reads a loop's continue_when value after an iteration: the loop
// goes on unless it is false or 0.
func Continue(t *Tensor) (bool, error) {
	key, err := Key(t)
	if err != nil {
		return false, err
	}
	return key != "false" && key != "0", nil
}
