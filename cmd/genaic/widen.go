package main

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

func init() {
	register(command{
		name:    "widen",
		usage:   "widen MODEL.onnx -o OUT.onnx [--input NAME] [--force]",
		summary: "rewrite a model that takes its lengths (or offsets, owners) as int32 to take them as int64, as genaic's companions are",
		run:     runWiden,
	})
}

func runWiden(e *env, args []string) int {
	rw := newRewriteCmd("widen")
	input := rw.flags.String("input", "", "the int32 graph input to take as int64 (default: the one int32 input named like lengths, offsets or an owner)")
	in, m, _, code := rw.read(e, args)
	if m == nil {
		return code
	}
	out := rw.out
	if *input == "" {
		var err error
		if *input, err = narrowCompanion(m); err != nil {
			e.errorf("widen: %s: %v", in, err)
			return exitUsage
		}
	}
	if err := onnx.WidenInput(m, *input); err != nil {
		e.errorf("widen: %s: %v", in, err)
		return exitUsage
	}
	if code := writeRewritten(e, m, *out); code != exitOK {
		return code
	}
	fmt.Fprintf(e.stdout, "wrote %s: input %s is now int64; the graph casts it to int32 before its own nodes read it\n", *out, *input)
	fmt.Fprintln(e.stdout, nextInit(*out, ""))
	return exitOK
}

// narrowCompanion is the graph's one int32 input named like lengths,
// offsets or an owner: what genaic hands a model as int64.
func narrowCompanion(m *onnxpb.ModelProto) (string, error) {
	var found []string
	for _, v := range m.GetGraph().GetInput() {
		if v.GetType().GetTensorType().GetElemType() != int32(onnxpb.TensorProto_INT32) {
			continue
		}
		if name := v.GetName(); namedLike(name, "len") || namedLike(name, "offset") || namedLike(name, "owner") {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no int32 graph input is named like lengths, offsets or an owner: name one with --input")
	}
	return "", fmt.Errorf("several int32 graph inputs are named like lengths, offsets or owners (%s): name one with --input", strings.Join(found, ", "))
}
