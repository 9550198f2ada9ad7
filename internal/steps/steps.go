// Package steps holds what executing a workflow step needs beyond invoking
// a component: the interpreter (vm) and generated executors (through
// codegen/genrt) both call it, so that a request fails the same way, with
// the same rule and message, in either.
package steps

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
)

// Missing is the error of a request that leaves out a required input.
// Given the names of the inputs the request does give (the VM's request
// map, a generated executor's typed fields that are set), it lists them
// and names the one likely to be the input misspelt.
func Missing(input string, have ...string) error {
	return backend.Errorf("run/input", "%s", missing(input, have))
}

// MissingCompanion is Missing for a companion (offsets, owners, valid
// lengths) of the packed input of: it says that giving of as items
// derives it.
func MissingCompanion(input, of string, have ...string) error {
	return backend.Errorf("run/input", "%s; it is a companion of `%s`: give it with `%s`, or give `%s` as items (\"items\" in a requests document, an `items` parameter over the Open Inference Protocol) and its companions are derived from them",
		missing(input, have), of, of, of)
}

func missing(input string, have []string) string {
	msg := fmt.Sprintf("the request has no value for workflow input `%s`", input)
	if len(have) > 0 {
		have = slices.Sorted(slices.Values(have))
		msg += fmt.Sprintf(" (it gives %s)", "`"+strings.Join(have, "`, `")+"`")
		if near := diag.Nearest(input, have); near != "" {
			msg += fmt.Sprintf("; did you misspell it as `%s`?", near)
		}
	}
	return msg
}

// NotLoaded is the error of a request that leaves out an input whose
// source (a literal or an artifact) the runtime does not load yet.
func NotLoaded(input, source string) error {
	return backend.Errorf("run/unsupported", "workflow input `%s` comes from a %s, which this runtime does not load yet", input, source)
}

// Unexpected reports the first name of inputs, in sorted order, that is
// not among the workflow's inputs, or nil.
func Unexpected(inputs map[string]*backend.Tensor, known ...string) error {
	// A workflow has a handful of inputs: a scan allocates nothing, which
	// every request would pay for otherwise.
	var extra []string
	for name := range inputs {
		if !slices.Contains(known, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return backend.Errorf("run/input", "the request supplies `%s`, which is not a workflow input", extra[0])
}

// NoValue is the error of a step that reads a value the request does not
// have (an optional input left out).
func NoValue(name string) error {
	return backend.Errorf("run/input", "`%s` has no value in this request (an optional input left out?)", name)
}

// Result returns one output port of an invoke's outputs, or the error of a
// component that did not return it.
func Result(outs map[string]*backend.Tensor, component, port string) (*backend.Tensor, error) {
	t, ok := outs[port]
	if !ok {
		return nil, backend.Errorf("run/backend", "component `%s` returned no output `%s`", component, port)
	}
	return t, nil
}

// UnsupportedEmit is the error of an emit the runtime does not execute:
// only replace emits without when or valid_length run.
func UnsupportedEmit(output, mode string) error {
	return backend.Errorf("run/unsupported", "emit into `%s` uses mode %s with when/valid_length; this runtime executes replace emits", output, mode)
}

// Key reads a branch predicate as a case key: the decimal value of an
// integer scalar, or true or false.
func Key(t *backend.Tensor) (string, error) {
	if t == nil || t.Len() != 1 {
		return "", backend.Errorf("run/input", "a branch predicate must be a scalar, got %s", t)
	}
	switch d := t.Data.(type) {
	case []int64:
		return fmt.Sprint(d[0]), nil
	case []int32:
		return fmt.Sprint(d[0]), nil
	case []bool:
		return fmt.Sprint(d[0]), nil
	}
	return "", backend.Errorf("run/input", "a branch predicate must be an integer or boolean scalar, got %s", t)
}

// NoPhi is the error of a branch output that has no value for the key
// the branch took: no case of it names that key, and it has no default.
func NoPhi(predicate, key, output string) error {
	return backend.Errorf("run/input", "branch predicate `%s` is %s: no case handles it and branch output `%s` has no default", predicate, key, output)
}

// Iteration is the value of a loop's iteration counter.
func Iteration(i int64) *backend.Tensor {
	return &backend.Tensor{DType: "int64", Shape: []int64{}, Data: []int64{i}}
}

// Continue reads a loop's continue_when value after an iteration: the loop
// goes on unless it is false or 0.
func Continue(t *backend.Tensor) (bool, error) {
	key, err := Key(t)
	if err != nil {
		return false, err
	}
	return key != "false" && key != "0", nil
}

// Emit computes a workflow output after an emit step: prev is the output's
// value so far (nil before its first emit). when, when given, must be a
// true scalar for the emit to happen; validLength, when given, keeps only
// the first n entries of the emitted value along axis; mode replace sets
// the output, append concatenates along axis. axis < 0 means the value's
// final axis, the growth axis a default append meant (§6.1). A replace
// emit without valid_length reads no axis, so it sets an output of any
// rank, a scalar's included.
func Emit(output string, prev, value *backend.Tensor, mode string, axis int64, when, validLength *backend.Tensor) (*backend.Tensor, error) {
	if when != nil {
		emit, err := Continue(when)
		if err != nil || !emit {
			return prev, err
		}
	}
	if mode == "replace" && validLength == nil {
		return value, nil
	}
	if axis < 0 {
		axis = int64(value.Rank() - 1)
	}
	if axis < 0 || axis >= int64(value.Rank()) {
		return nil, backend.Errorf("run/input", "emit into `%s`: axis %d is outside the rank of %s", output, axis, value)
	}
	if validLength != nil {
		n, err := scalarInt(validLength)
		if err != nil {
			return nil, backend.Errorf("run/input", "emit into `%s`: valid_length %v", output, err)
		}
		if n < 0 || n > value.Shape[axis] {
			return nil, backend.Errorf("run/lengths", "emit into `%s`: valid_length %d is outside [0, %d], the extent of axis %d of %s", output, n, value.Shape[axis], axis, value)
		}
		value = sliceAxis(value, int(axis), n)
	}
	switch mode {
	case "replace":
		return value, nil
	case "append":
		if prev == nil {
			return value, nil
		}
		return concatAxis(output, prev, value, int(axis))
	}
	return nil, UnsupportedEmit(output, mode)
}

// scalarInt reads an integer scalar (or a one-element vector).
func scalarInt(t *backend.Tensor) (int64, error) {
	if t.Len() != 1 {
		return 0, fmt.Errorf("must be one integer, got %s", t)
	}
	switch d := t.Data.(type) {
	case []int64:
		return d[0], nil
	case []int32:
		return int64(d[0]), nil
	}
	return 0, fmt.Errorf("must be an integer, got %s", t)
}

// sliceAxis keeps the first n entries of t along axis.
func sliceAxis(t *backend.Tensor, axis int, n int64) *backend.Tensor {
	if n == t.Shape[axis] {
		return t
	}
	shape := append([]int64(nil), t.Shape...)
	shape[axis] = n
	out, _ := backend.NewTensor(t.DType, shape)
	outer, inner := backend.Elements(t.Shape[:axis]), backend.Elements(t.Shape[axis+1:])
	for o := range outer {
		out.CopyElems(o*n*inner, t, o*t.Shape[axis]*inner, n*inner)
	}
	return out
}

// concatAxis joins a and b along axis; their other axes must agree.
func concatAxis(output string, a, b *backend.Tensor, axis int) (*backend.Tensor, error) {
	if a.DType != b.DType || a.Rank() != b.Rank() {
		return nil, backend.Errorf("run/input", "emit into `%s`: cannot append %s to %s", output, b, a)
	}
	for i := range a.Shape {
		if i != axis && a.Shape[i] != b.Shape[i] {
			return nil, backend.Errorf("run/input", "emit into `%s`: cannot append %s to %s along axis %d", output, b, a, axis)
		}
	}
	shape := append([]int64(nil), a.Shape...)
	shape[axis] += b.Shape[axis]
	out, err := backend.NewTensor(a.DType, shape)
	if err != nil {
		return nil, err
	}
	outer, inner := backend.Elements(a.Shape[:axis]), backend.Elements(a.Shape[axis+1:])
	na, nb := a.Shape[axis]*inner, b.Shape[axis]*inner
	for o := range outer {
		out.CopyElems(o*(na+nb), a, o*na, na)
		out.CopyElems(o*(na+nb)+na, b, o*nb, nb)
	}
	return out, nil
}
