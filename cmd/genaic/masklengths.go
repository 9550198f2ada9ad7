package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
)

func init() {
	register(command{
		name:    "mask-lengths",
		usage:   "mask-lengths MODEL.onnx -o OUT.onnx [--mask NAME] [--ones valid|padding] [--like NAME] [--lengths NAME] [--no-probe] [--force]",
		summary: "rewrite a model that takes an attention mask to take the lengths of its rows instead, so that a package may pad it",
		run:     runMaskLengths,
	})
}

// maxModelBytes bounds the model mask-lengths reads whole: protobuf's own
// limit on a message.
const maxModelBytes = 2 << 30

func runMaskLengths(e *env, args []string) int {
	rw := newRewriteCmd("mask-lengths")
	flags, out := rw.flags, rw.out
	mask := flags.String("mask", "", "the graph input that is the attention mask, [batch, sequence] (default: the one input named like a mask)")
	like := flags.String("like", "", "the graph input whose axis 1 is the sequence, read for its extent (default: the first input of the mask's leading dimensions)")
	lengths := flags.String("lengths", "", "the name of the lengths input that replaces the mask (default: lengths, or for a mask named PREFIX_mask beside others, such as query_mask, PREFIX_lengths)")
	ones := flags.String("ones", "", "what the mask's ones mark: valid (the real positions, as an attention mask's do; the default) or padding (as a key padding mask's do); required for a mask named like a padding mask")
	noProbe := flags.Bool("no-probe", false, "rewrite without first running the model on a probe that checks its mask masks the padding (the probe needs ONNX Runtime)")
	in, m, b, code := rw.read(e, args)
	if m == nil {
		return code
	}
	var err error
	if *mask == "" {
		if *mask, err = maskInput(m); err != nil {
			e.errorf("mask-lengths: %s: %v", in, err)
			return exitUsage
		}
	}
	switch *ones {
	case "valid", "padding":
	case "":
		// A mask whose ones mark padding, taken for one whose ones mark
		// the real positions, would be rewritten to attend to nothing
		// but the padding: the name decides only where it cannot mislead.
		if namedLike(*mask, "pad") {
			e.errorf("mask-lengths: input %s is named like a padding mask, whose ones mark the padding: say what its ones mark with --ones padding or --ones valid", *mask)
			return exitUsage
		}
		*ones = "valid"
	default:
		e.errorf("mask-lengths: --ones %q: say valid (the mask's ones mark the real positions) or padding", *ones)
		return exitUsage
	}
	if *lengths == "" {
		*lengths = lengthsName(*mask)
	}
	r := onnx.MaskRewrite{Mask: *mask, Like: *like, Lengths: *lengths, OnesMarkPadding: *ones == "padding"}
	if err := onnx.MaskToLengths(m, r); err != nil {
		e.errorf("mask-lengths: %s: %v", in, err)
		return exitUsage
	}
	if !*noProbe {
		// Padding is only as safe as the model's masking: a row padded
		// beside a longer one must give what it gives alone. The probe
		// runs the model as it is on disk (m is rewritten by now).
		g, err := onnx.DecodeBytes(b)
		if err != nil {
			e.errorf("mask-lengths: %s: %v", in, err)
			return exitUsage
		}
		skipped, err := checkMasking(in, g, *mask, r.OnesMarkPadding)
		if err != nil {
			e.errorf("mask-lengths: %s: not rewritten: %v", in, err)
			return exitDiags
		}
		if skipped != "" {
			fmt.Fprintf(e.stderr, "genaic: mask-lengths: the masking was not probed: %s; compare `genaic run --solo` with grouped runs of the package\n", skipped)
		}
	}
	if code := writeRewritten(e, m, *out); code != exitOK {
		return code
	}
	rule := "position < length"
	if r.OnesMarkPadding {
		rule = "position >= length"
	}
	fmt.Fprintf(e.stdout, "wrote %s: input %s is now %s, int64 [batch], the length of each row; the graph computes the mask from it (ones where %s)\n", *out, *mask, *lengths, rule)
	fmt.Fprintln(e.stdout, nextInit(*out, fmt.Sprintf("pad the sequence with valid_lengths %s (docs/authoring.md#padding); ", *lengths)))
	return exitOK
}

// rewriteCmd is what mask-lengths and widen share: a model in, -o the
// rewritten model's file, --force to replace it.
type rewriteCmd struct {
	flags *flag.FlagSet
	out   *string
	force *bool
}

func newRewriteCmd(name string) rewriteCmd {
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	return rewriteCmd{flags: flags,
		out:   flags.String("o", "", "the rewritten model's file (required; never the model itself)"),
		force: flags.Bool("force", false, "replace OUT.onnx if it exists")}
}

// read parses args (once the command has defined its own flags) and reads
// the model they name (readToRewrite): its path, the model and its bytes,
// or nil and the exit code.
func (r rewriteCmd) read(e *env, args []string) (string, *onnxpb.ModelProto, []byte, int) {
	name := r.flags.Name()
	paths, ok := parseFlags(e, r.flags, commands[name], args)
	if !ok {
		return "", nil, nil, exitUsage
	}
	if len(paths) != 1 || *r.out == "" {
		r.flags.Usage()
		return "", nil, nil, exitUsage
	}
	m, b, code := readToRewrite(e, name, paths[0], *r.out, *r.force)
	return paths[0], m, b, code
}

// readToRewrite reads the model at in for a command (what) that writes
// it rewritten to out, which must be another file, absent unless force;
// a model whose weights are in files beside it is rewritten in its own
// folder, where the same relative paths name them. It returns the model
// and its bytes, or nil and the exit code where it cannot.
func readToRewrite(e *env, what, in, out string, force bool) (*onnxpb.ModelProto, []byte, int) {
	if !noStdin(e, what, "MODEL", in, "give the model's file") || !noStdin(e, what, "-o", out, "give the rewritten model's file") {
		return nil, nil, exitUsage
	}
	absIn, err := filepath.Abs(in)
	if err != nil {
		return nil, nil, ioError(e, err)
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, nil, ioError(e, err)
	}
	if absIn == absOut {
		e.errorf("%s: -o names the model itself; write the rewritten model to another file", what)
		return nil, nil, exitUsage
	}
	if _, err := os.Stat(absOut); err == nil && !force {
		e.errorf("%s: %s exists; pass --force to replace it", what, out)
		return nil, nil, exitUsage
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ioError(e, err)
	}
	b, err := safefile.ReadFile(in, maxModelBytes)
	if err != nil {
		return nil, nil, ioError(e, err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(b, &m); err != nil || m.GetGraph() == nil {
		e.errorf("%s: %s is not an ONNX model", what, in)
		return nil, nil, exitUsage
	}
	if filepath.Dir(absIn) != filepath.Dir(absOut) && hasExternalData(&m) {
		e.errorf("%s: %s keeps weights in files beside it, which the rewritten model names by the same relative paths; write it in the model's folder", what, in)
		return nil, nil, exitUsage
	}
	return &m, b, exitOK
}

// writeRewritten writes the rewritten model m to out.
func writeRewritten(e *env, m *onnxpb.ModelProto, out string) int {
	b, err := onnx.Marshal(m)
	if err != nil {
		return ioError(e, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return ioError(e, err)
	}
	return exitOK
}

// lengthsName is the default name of the lengths that replace mask:
// lengths for a transformer's attention_mask (or a key padding mask), and
// PREFIX_lengths for PREFIX_mask (query_mask, doc_mask), so that a model
// of two masks, rewritten once for each, takes two lengths.
func lengthsName(mask string) string {
	prefix, ok := strings.CutSuffix(strings.ToLower(mask), "_mask")
	if !ok || prefix == "" || namedLike(prefix, "attention") || namedLike(prefix, "pad") {
		return "lengths"
	}
	return mask[:len(prefix)] + "_lengths"
}

// maskInput is the graph's one input named like a mask.
func maskInput(m *onnxpb.ModelProto) (string, error) {
	var found []string
	for _, v := range m.GetGraph().GetInput() {
		if namedLike(v.GetName(), "mask") {
			found = append(found, v.GetName())
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", errors.New("no graph input is named like a mask: name it with --mask")
	}
	return "", errors.New("several graph inputs are named like a mask (" + strings.Join(found, ", ") + "): name one with --mask")
}

// hasExternalData reports whether any initializer keeps its data in
// another file.
func hasExternalData(m *onnxpb.ModelProto) bool {
	for _, t := range m.GetGraph().GetInitializer() {
		if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			return true
		}
	}
	return false
}
