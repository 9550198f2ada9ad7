package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/genaic/genaic/backend"
)

// A text encoder's package as init --text writes it: each request brings
// segments of token ids (any number, as items), the model runs on the
// segments of many requests at once, right-padded to the longest of the
// call where the model takes their lengths, and each output is split
// back per segment.

// textInput is what a text encoder takes: segments of tokens.
type textInput struct {
	batch, seq string     // the symbols of the segments' axis and of their tokens'
	inputs     []initPort // the model's inputs, their axes named as the package names them
	tokens     []initPort // the inputs [batch, seq]: the ids, and any alike (token types)
	lengths    string     // the input of each segment's length, int64 [batch]; "" where none
	// outs are the outputs that give one row per segment (settleRows);
	// skipped says why each other output is left out.
	outs    []initPort
	skipped []string
}

// textInputOf is what the component takes, if it is a text encoder: integer
// inputs [batch, sequence] of one batch and one sequence the graph leaves
// open (token ids, and token types alike), and at most one int64 [batch]
// of each segment's length. It says why not otherwise, naming mask-lengths
// for a model that takes an attention mask and widen for lengths of
// int32. Axes tf2onnx names apart on each input (unk__N) are one axis
// under the first input's name.
func textInputOf(c *initComponent) (textInput, error) {
	renames := unifiedAxes(c.inputs, 2)
	maps.DeleteFunc(renames, func(from, to string) bool { return !tf2onnxAxis.MatchString(from) || !tf2onnxAxis.MatchString(to) })
	tx := textInput{inputs: renamed(c.inputs, renames)}
	var lengths, masks []initPort
	for _, p := range tx.inputs {
		integer := p.dtype == "int64" || p.dtype == "int32"
		switch {
		case p.hasShape && len(p.dims) == 2 && namedLike(p.name, "mask"):
			masks = append(masks, p)
		case !p.hasShape || !integer || len(p.dims) == 0 || len(p.dims) > 2:
			return tx, inputError(p, "not token ids [batch, sequence] (integers) nor their lengths [batch]: --text takes a model of segments of token ids")
		case len(p.dims) == 2:
			tx.tokens = append(tx.tokens, p)
		default:
			lengths = append(lengths, p)
		}
	}
	if len(tx.tokens) == 0 {
		return tx, fmt.Errorf("--text takes a model of segments of token ids [batch, sequence]; this one takes none")
	}
	ids := tx.tokens[0]
	tx.batch, tx.seq = ids.dims[0].sym, ids.dims[1].sym
	for _, p := range tx.tokens {
		switch {
		case p.dims[0].sym == "" && p.dims[0].size == 1:
			return tx, inputError(p, fmt.Sprintf("whose first axis the graph fixes at 1: open it first (`genaic dynamic-batch %s -o ...`)", c.artifact))
		case p.dims[0].sym == "":
			return tx, inputError(p, "whose first axis the graph fixes: --text needs a dynamic batch of segments")
		case p.dims[1].sym == "":
			return tx, inputError(p, "whose sequence the graph fixes: every segment would take as many tokens; export the model with its sequence dynamic")
		case p.dims[0].sym != tx.batch || p.dims[1].sym != tx.seq:
			return tx, inputError(p, fmt.Sprintf("not over %s's axes [%s, %s]: --text takes inputs of one batch of segments", ids.name, tx.batch, tx.seq))
		}
	}
	switch {
	case len(masks) > 0:
		return tx, &maskError{mask: masks[0].name, artifact: c.artifact}
	case len(lengths) > 1:
		return tx, fmt.Errorf("inputs %s and %s both look like lengths [batch]: --text takes at most one", lengths[0].name, lengths[1].name)
	case len(lengths) == 1 && lengths[0].dims[0].sym != tx.batch:
		return tx, inputError(lengths[0], fmt.Sprintf("not one length per segment [%s]", tx.batch))
	case len(lengths) == 1 && lengths[0].dtype != "int64":
		return tx, inputError(lengths[0], fmt.Sprintf("the lengths genaic pads by are int64: widen them first (`genaic widen %s -o ...`)", c.artifact))
	case len(lengths) == 1:
		tx.lengths = lengths[0].name
	}
	return tx, nil
}

// maskError says that a text encoder --text would take takes an
// attention mask, which mask-lengths rewrites into lengths first.
type maskError struct{ mask, artifact string }

func (e *maskError) Error() string {
	return fmt.Sprintf("input %s is a mask: rewrite the model to take each segment's length instead (`genaic mask-lengths %s -o %s`), so that segments of different lengths share a call, then give --text the model it writes", e.mask, e.artifact, e.rewritten())
}

// rewritten is the file mask-lengths is suggested to write.
func (e *maskError) rewritten() string {
	return strings.TrimSuffix(e.artifact, filepath.Ext(e.artifact)) + "_lengths.onnx"
}

// tf2onnxAxis is how tf2onnx names a dynamic axis: each input's apart.
var tf2onnxAxis = regexp.MustCompile(`^unk__[0-9]+$`)

// textProbe are the segments' token extents in settleRows' two runs.
var textProbe = [2]int64{5, 7}

// textItems is the model's inputs for n segments of textProbe[r] tokens
// each: ids of ones (a token every vocabulary has), the inputs beside
// them zeros (token type 0), and every length full.
func (tx textInput) textItems(n int64, r int) (map[string]*backend.Tensor, error) {
	in := map[string]*backend.Tensor{}
	for i, p := range tx.tokens {
		x, err := backend.NewTensor(p.dtype, []int64{n, textProbe[r]})
		if err != nil {
			return nil, err
		}
		if i == 0 { // the ids; the inputs beside them stay zeros
			for k := range x.Len() {
				x.SetFloat64At(k, 1)
			}
		}
		in[p.name] = x
	}
	if tx.lengths != "" {
		l, err := backend.NewTensor("int64", []int64{n})
		if err != nil {
			return nil, err
		}
		for k := range n {
			l.SetFloat64At(k, float64(textProbe[r]))
		}
		in[tx.lengths] = l
	}
	return in, nil
}

// textPackage is the package init --text writes of the model c at path.
func textPackage(path string, c *initComponent) (string, error) {
	tx, err := textInputOf(c)
	if err == nil {
		tx.outs, tx.skipped, err = settleRows(path, c, "segment", tx.batch, tx.textItems, &itemExtent{sym: tx.seq, runs: textProbe})
	}
	if err != nil {
		return "", err
	}
	return textDocument(c, tx), nil
}

// textDocument writes the package of a text encoder c that takes tx.
func textDocument(c *initComponent, tx textInput) string {
	b, line := docLines()
	taken := takenNames(c)
	for _, p := range tx.inputs {
		taken[p.name] = true
	}
	offsets, owner := freshName("segment_offsets", taken), freshName("segment_owner", taken)
	plusOne := freshName("segments_plus_one", taken)
	level := fmt.Sprintf("{ offsets: %s, owner: %s", yq(offsets), yq(owner))
	layout := func(indent int, extent string) {
		line(indent, "batch_layout: { kind: token_packed, axis: 0, levels: [%s%s }] }", level, extent)
	}
	padded := func(p initPort) bool {
		return tx.lengths != "" && slices.ContainsFunc(p.dims, func(d initDim) bool { return d.sym == tx.seq })
	}
	padding := func(indent int, p initPort) {
		if padded(p) {
			line(indent, "padding: [{ dimension: %s, valid_lengths: %s }]", yq(tx.seq), yq(tx.lengths))
		}
	}
	// shared writes a companion of the segments, as a request input or a
	// workflow output.
	shared := func(name, sym string, input bool) {
		line(3, "%s:", yq(name))
		line(4, "contract: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", yq(sym))
		if input {
			line(4, "role: { kind: opaque }")
			line(4, "source: { kind: request }")
		} else {
			line(4, "role: tensor")
			line(4, "stage: pre_adapter")
		}
	}
	ids := tx.tokens[0].name
	line(0, "# Written by `genaic init --text` from %s: a package that takes", c.artifact)
	line(0, "# segments of token ids (any number per request, as items) and runs the")
	line(0, "# model on the segments of many requests at once; each request gets its")
	line(0, "# own segments' rows of every output, one item each. A requests document")
	line(0, "# (genaic run, bench) gives each segment's ids:")
	line(0, "#   {\"id\": \"r1\", \"inputs\": {%q: {\"items\": [{\"dtype\": \"int64\", \"shape\": [3], \"data\": [101, 7592, 102]}]}}}", ids)
	if len(tx.tokens) > 1 {
		names := make([]string, len(tx.tokens)-1)
		for i, p := range tx.tokens[1:] {
			names[i] = p.name
		}
		line(0, "# and %s alike, an item per segment of as many tokens.", strings.Join(names, ", "))
	}
	if tx.lengths != "" {
		line(0, "# A call right-pads its segments to the longest, and the model reads each")
		line(0, "# one's length (%s, derived from the items), so its padding changes", tx.lengths)
		line(0, "# nothing: `genaic run --verify` checks that on your requests.")
	} else {
		line(0, "# The model takes no lengths, so it cannot mask padding: only segments of")
		line(0, "# one length share a call (%s is uniform). Where its export took an", tx.seq)
		line(0, "# attention mask, `genaic mask-lengths` lets segments of any length share one.")
	}
	line(0, "# Tokenize as the model was trained (its tokenizer's ids, [CLS] and")
	line(0, "# [SEP] where it adds them); genaic takes the ids as they are.")
	line(0, "schema_version: v1.1")
	line(0, "model:")
	line(1, "name: %s", yq(c.name))
	line(0, "pipeline:")
	line(1, "workflow:")
	line(2, "inputs:")
	// port writes p's contract, packed by segment and padded where it
	// holds tokens, its layout's extent after the level.
	port := func(indent int, p initPort, extent string) {
		line(indent, "dtype: %s", p.dtype)
		line(indent, "shape: %s", p.shapeYAML())
		layout(indent, extent)
		padding(indent, p)
	}
	for _, p := range tx.tokens {
		line(3, "%s:", yq(p.name))
		line(4, "contract:")
		port(5, p, "")
		line(4, "role: { kind: opaque }")
		line(4, "source: { kind: request }")
	}
	if tx.lengths != "" {
		shared(tx.lengths, tx.batch, true)
	}
	shared(offsets, plusOne, true)
	shared(owner, tx.batch, true)
	line(2, "outputs:")
	for _, o := range tx.outs {
		line(3, "%s:", yq(o.name))
		line(4, "contract:")
		port(5, o, ", extent: preserved")
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
	shared(offsets, plusOne, false)
	shared(owner, tx.batch, false)
	if slices.ContainsFunc(tx.outs, padded) {
		shared(tx.lengths, tx.batch, false)
	}
	line(2, "components:")
	line(3, "%s:", yq(c.name))
	line(4, "implementation: { kind: onnx, artifact: %s }", yq(c.artifact))
	line(4, "# At most 32 segments and 8192 tokens, padding included, per call:")
	line(4, "# raise them to what your model runs fastest at (`genaic bench` measures it).")
	line(4, "batch_capacity:")
	if tx.lengths == "" {
		line(5, "uniform_dimensions: [%s]", yq(tx.seq))
	}
	line(5, "budgets:")
	line(6, "- { dimensions: [%s], max_total: 32 }", yq(tx.batch))
	line(6, "- { dimensions: [%s, %s], max_total: 8192 }", yq(tx.batch), yq(tx.seq))
	line(4, "ports:")
	line(5, "inputs:")
	for _, p := range tx.inputs {
		if p.name == tx.lengths {
			line(6, "%s: { dtype: int64, shape: [%s], batch_layout: { kind: shared } }", yq(p.name), yq(tx.batch))
			continue
		}
		line(6, "%s:", yq(p.name))
		port(7, p, "")
	}
	line(5, "outputs:")
	for _, s := range tx.skipped {
		line(6, "# Not declared: %s.", s)
	}
	for _, o := range tx.outs {
		line(6, "%s:", yq(o.name))
		port(7, o, ", extent: preserved")
	}
	line(2, "steps:")
	inputs := make([][2]string, len(tx.inputs))
	for i, p := range tx.inputs {
		inputs[i] = [2]string{p.name, p.name}
	}
	invokeModel(line, c, inputs, tx.outs)
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", yq(offsets), yq(offsets))
	line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", yq(owner), yq(owner))
	if slices.ContainsFunc(tx.outs, padded) {
		line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", yq(tx.lengths), yq(tx.lengths))
	}
	return b.String()
}
