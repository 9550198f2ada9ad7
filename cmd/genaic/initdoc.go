package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
)

// initComponent is one model as genaic init declares it.
type initComponent struct {
	name, artifact string
	inputs         []initPort
	outputs        []initPort
	constants      []string // graph inputs an initializer backs: not declared
	// skipped are graph outputs genaic cannot declare (a sequence, a map,
	// strings), each with what it is: left out, as a port may be.
	skipped []string
	// steady are the output symbols the graph leaves dynamic that kept
	// one extent, given here, on inputs of different extents
	// (probeOutputs): constants the export left dynamic.
	steady map[string]int64
	// whole are the outputs of fixed extents whose values changed with
	// the inputs' extents (probeOutputs): computed over the whole call.
	whole map[string]bool
	// unified are the input symbols probeOutputs renamed to another
	// input's symbol on the same axis, where the model ran only with
	// them equal (a graph that names each input's axes apart).
	unified map[string]string
	// probed says whether probeOutputs ran the model.
	probed bool
	// counting are the graph's operators whose outputs' extents are
	// computed from values (NonMaxSuppression, NonZero): a symbol that
	// kept one extent over init's two runs may be such a count, which
	// only took one value on init's inputs.
	counting []string
}

// countingOps are the operators whose outputs' extents the values decide.
var countingOps = []string{"Compress", "NonMaxSuppression", "NonZero", "Unique"}

// initPort is a graph input or output: its dtype and its shape, where
// every dimension the graph leaves open is a shape symbol.
type initPort struct {
	name     string
	dtype    string
	hasShape bool
	dims     []initDim
}

type initDim struct {
	sym  string // the shape symbol; "" for a literal extent
	size int64
}

// newInitComponent reads a component's ports from its graph. A dimension
// the graph names keeps its name; one it leaves unnamed gets a symbol of
// its own, PORT_dimI, unique in the component.
func newInitComponent(name, artifact string, g *onnx.Graph) (*initComponent, error) {
	c := &initComponent{name: name, artifact: artifact}
	for _, op := range g.Ops {
		if slices.Contains(countingOps, op) {
			c.counting = append(c.counting, op)
		}
	}
	taken := map[string]bool{}
	for _, vs := range [][]onnx.Value{g.Inputs, g.Outputs} {
		for _, v := range vs {
			for _, d := range v.Dims {
				if !d.Literal && d.Param != "" {
					taken[d.Param] = true
				}
			}
		}
	}
	kind := func(v onnx.Value) string {
		switch {
		case v.NotTensor != "":
			return "a " + v.NotTensor
		case v.DType() == "":
			return "no tensor type"
		}
		return "element type " + v.DType()
	}
	port := func(v onnx.Value, what string) (initPort, error) {
		dt, ok := ir.LookupDType(v.DType())
		if !ok {
			return initPort{}, fmt.Errorf("graph %s %q has %s; genaic declares tensors of %s only",
				what, v.Name, kind(v), strings.Join(ir.DTypeNames(), ", "))
		}
		p := initPort{name: v.Name, dtype: dt.Name, hasShape: v.HasShape}
		for i, d := range v.Dims {
			switch {
			case d.Literal:
				p.dims = append(p.dims, initDim{size: d.Value})
			case d.Param != "":
				p.dims = append(p.dims, initDim{sym: d.Param})
			default:
				p.dims = append(p.dims, initDim{sym: freshName(fmt.Sprintf("%s_dim%d", identifier(v.Name), i), taken)})
			}
		}
		return p, nil
	}
	for _, v := range g.Inputs {
		if v.Initialized {
			c.constants = append(c.constants, v.Name)
			continue
		}
		p, err := port(v, "input")
		if err != nil {
			return nil, err
		}
		c.inputs = append(c.inputs, p)
	}
	// An output genaic cannot declare (a classifier's sequence of maps,
	// its string labels) is left out, as check allows: the runtime fetches
	// only the declared outputs. The graph must keep one it can declare.
	var firstErr error
	for _, v := range g.Outputs {
		p, err := port(v, "output")
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			c.skipped = append(c.skipped, fmt.Sprintf("%s (%s)", v.Name, kind(v)))
			continue
		}
		c.outputs = append(c.outputs, p)
	}
	if len(c.outputs) == 0 {
		if firstErr != nil {
			return nil, firstErr
		}
		return nil, fmt.Errorf("the graph has no outputs")
	}
	return c, nil
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// identifier turns a name into [A-Za-z_][A-Za-z0-9_]*.
func identifier(s string) string {
	s = strings.Trim(nonIdent.ReplaceAllString(s, "_"), "_")
	if s == "" {
		return "model"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "m_" + s
	}
	return s
}

// componentName is a component's name from its model file: the file name
// without its extension, as an identifier.
func componentName(path string) string {
	base := filepath.Base(path)
	return identifier(strings.TrimSuffix(base, filepath.Ext(base)))
}

// freshName returns name, or name_2, name_3, ... if taken, and takes it.
func freshName(name string, taken map[string]bool) string {
	n := name
	for i := 2; taken[n]; i++ {
		n = fmt.Sprintf("%s_%d", name, i)
	}
	taken[n] = true
	return n
}

// chains reports whether a value of contract a may be bound to a port of
// contract b without contract/incompatible: the same dtype and rank, the
// same literal extents, and a symbol only where the other has a symbol.
func chains(a, b initPort) bool {
	if a.dtype != b.dtype || a.hasShape != b.hasShape || len(a.dims) != len(b.dims) {
		return false
	}
	for i := range a.dims {
		x, y := a.dims[i], b.dims[i]
		if (x.sym == "") != (y.sym == "") || (x.sym == "" && x.size != y.size) {
			return false
		}
	}
	return true
}

// initWorkflow is the wiring of the components: the request inputs, each
// invoke's bindings and the emitted outputs.
type initWorkflow struct {
	inputs  []initValue
	outputs []initValue // name: the workflow output; value: what is emitted
	binds   map[*initComponent]map[string]string
	results map[*initComponent]map[string]string
}

type initValue struct {
	name, value string
	port        initPort
}

// wire connects the components in the order given. A graph input takes
// the output of the latest earlier component that has an output of the
// same name and a contract that binds (dtype, rank, literal extents);
// otherwise it is a request input of its own name (shared by components
// whose inputs agree in name and contract; a clash is renamed
// COMPONENT_PORT). Outputs that no later component takes are emitted
// under their own names (COMPONENT_PORT on a clash).
func wire(comps []*initComponent) *initWorkflow {
	w := &initWorkflow{binds: map[*initComponent]map[string]string{}, results: map[*initComponent]map[string]string{}}
	values := map[string]bool{}
	inputIdx := map[string]int{} // request input name → index
	type produced struct {
		value string
		port  initPort
	}
	latest := map[string]produced{}
	consumed := map[string]bool{}
	for _, c := range comps {
		w.binds[c] = map[string]string{}
		for _, p := range c.inputs {
			if pr, ok := latest[p.name]; ok && chains(pr.port, p) {
				w.binds[c][p.name] = pr.value
				consumed[pr.value] = true
				continue
			}
			if i, ok := inputIdx[p.name]; ok && chains(w.inputs[i].port, p) {
				w.binds[c][p.name] = w.inputs[i].name
				continue
			}
			name := p.name
			if values[name] {
				name = freshName(c.name+"_"+identifier(p.name), values)
			} else {
				values[name] = true
			}
			if _, ok := inputIdx[p.name]; !ok {
				inputIdx[p.name] = len(w.inputs)
			}
			w.inputs = append(w.inputs, initValue{name: name, value: name, port: p})
			w.binds[c][p.name] = name
		}
		w.results[c] = map[string]string{}
		for _, p := range c.outputs {
			v := freshName(c.name+"."+p.name, values)
			w.results[c][p.name] = v
			latest[p.name] = produced{v, p}
		}
	}
	outNames := map[string]bool{}
	for _, c := range comps {
		for _, p := range c.outputs {
			v := w.results[c][p.name]
			if consumed[v] {
				continue
			}
			name := p.name
			if outNames[name] {
				name = freshName(c.name+"_"+identifier(p.name), outNames)
			} else {
				outNames[name] = true
			}
			w.outputs = append(w.outputs, initValue{name: name, value: v, port: p})
		}
	}
	return w
}

// yamlPlain matches a scalar written without quotes.
var yamlPlain = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// yq writes a name as a YAML scalar: plain when it cannot be read as
// anything but that string, double-quoted otherwise.
func yq(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf":
	default:
		if yamlPlain.MatchString(s) {
			return s
		}
	}
	b, _ := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
	return string(b)
}

func (p initPort) shapeYAML() string {
	ds := make([]string, len(p.dims))
	for i, d := range p.dims {
		if d.sym != "" {
			ds[i] = yq(d.sym)
		} else {
			ds[i] = fmt.Sprint(d.size)
		}
	}
	return "[" + strings.Join(ds, ", ") + "]"
}

// contractYAML is the port's contract in flow style.
func (p initPort) contractYAML() string {
	if !p.hasShape {
		return fmt.Sprintf("{ dtype: %s }", p.dtype)
	}
	return fmt.Sprintf("{ dtype: %s, shape: %s }", p.dtype, p.shapeYAML())
}

// initDocument writes the starting document of the components.
func initDocument(comps []*initComponent) string {
	w := wire(comps)
	b, line := docLines()
	arts := make([]string, len(comps))
	for i, c := range comps {
		arts[i] = c.artifact
	}
	line(0, "# Written by `genaic init` from %s: a starting point.", strings.Join(arts, ", "))
	line(0, "# Every port, dtype and shape is read from the graphs: a dimension the")
	line(0, "# graph names is a shape symbol, a fixed one stays literal, and an unnamed")
	line(0, "# dynamic one gets a symbol PORT_dimN; an output's dynamic dimension that")
	line(0, "# followed an input's when init ran the model twice, on inputs of")
	line(0, "# different extents, takes that input's symbol. As written, no component")
	line(0, "# groups requests: each call takes one request. The comments show where")
	line(0, "# batch_capacity, padding and ownership levels go; run `genaic check` on")
	line(0, "# the folder after each edit.")
	if len(comps) > 1 {
		line(0, "#")
		line(0, "# Components run in the order the models were given. A graph input takes")
		line(0, "# an earlier component's output of the same name, dtype and rank;")
		line(0, "# every other input is a request input, and every output no later")
		line(0, "# component takes is emitted.")
	}
	if len(comps) == 1 {
		if im, err := imageInputOf(comps[0]); err == nil {
			line(0, "#")
			line(0, "# Its input %s takes images: `genaic init --images %s`", im.port.name, comps[0].artifact)
			line(0, "# writes instead a package that takes them encoded (PNG, JPEG, GIF, WebP),")
			line(0, "# preprocessed by the built-in image adapter, and groups them.")
		}
		if au, err := audioInputOf(comps[0]); err == nil {
			what, whose, values := "log-mel features", "Whisper's", "features"
			if au.samples {
				what, whose, values = "audio samples", "wav2vec 2.0's", "input values"
			}
			line(0, "#")
			line(0, "# Its input %s takes %s: `genaic init --audio %s`", au.port.name, what, comps[0].artifact)
			line(0, "# writes instead a package that takes WAV clips, computes %s", whose)
			line(0, "# %s of them with the built-in audio adapter, and groups them.", values)
		}
		if v, err := videoInputOf(comps[0]); err == nil {
			line(0, "#")
			line(0, "# Its input %s takes video clips: `genaic init --video %s`", v.port.name, comps[0].artifact)
			line(0, "# writes instead a package that takes each clip's frames encoded (PNG,")
			line(0, "# JPEG, GIF), samples and preprocesses them with the built-in video")
			line(0, "# adapter, and groups the clips.")
		}
		var masked *maskError
		if tx, err := textInputOf(comps[0]); errors.As(err, &masked) {
			line(0, "#")
			line(0, "# Its input %s is an attention mask: `genaic mask-lengths %s -o %s`", masked.mask, masked.artifact, masked.rewritten())
			line(0, "# rewrites the model to take its segments' lengths instead, and `genaic")
			line(0, "# init --text %s` then writes a package that pads segments of", masked.rewritten())
			line(0, "# different lengths by them and groups them.")
		} else if err == nil {
			line(0, "#")
			line(0, "# Its input %s takes segments of token ids: `genaic init --text %s`", tx.tokens[0].name, comps[0].artifact)
			line(0, "# writes instead a package that takes them as items and groups them,")
			if tx.lengths != "" {
				line(0, "# padded by their lengths (%s).", tx.lengths)
			} else {
				line(0, "# only segments of one length in a call (the model takes no lengths).")
			}
		}
	}
	line(0, "schema_version: v1.0 # declare v1.1 when you add batch_capacity, padding or levels")
	line(0, "model:")
	line(1, "name: %s", yq(comps[0].name))
	line(0, "pipeline:")
	line(1, "workflow:")
	line(2, "inputs:")
	for _, in := range w.inputs {
		line(3, "%s:", yq(in.name))
		line(4, "contract: %s", in.port.contractYAML())
		line(4, "role: { kind: opaque }")
		line(4, "source: { kind: request }")
	}
	line(2, "outputs:")
	for _, out := range w.outputs {
		line(3, "%s:", yq(out.name))
		line(4, "contract: %s", out.port.contractYAML())
		line(4, "role: tensor")
		line(4, "stage: pre_adapter")
	}
	line(2, "components:")
	for _, c := range comps {
		line(3, "%s:", yq(c.name))
		line(4, "implementation: { kind: onnx, artifact: %s }", yq(c.artifact))
		unifiedComment(line, c)
		capacityComment(line, c)
		line(4, "ports:")
		if len(c.inputs) > 0 {
			line(5, "inputs:")
		}
		for i, p := range c.inputs {
			line(6, "%s:", yq(p.name))
			line(7, "dtype: %s", p.dtype)
			if p.hasShape {
				line(7, "shape: %s", p.shapeYAML())
			}
			if i == c.payload() {
				layoutComment(line, c)
			} else {
				alongComment(line, c, p)
			}
		}
		if len(c.constants) > 0 {
			line(5, "# Not declared: graph inputs an initializer backs (constants a port may")
			line(5, "# override): %s", strings.Join(c.constants, ", "))
		}
		line(5, "outputs:")
		if len(c.skipped) > 0 {
			line(6, "# Not declared: graph outputs that are not tensors of a dtype genaic")
			line(6, "# declares (the runtime fetches only declared outputs): %s", strings.Join(c.skipped, ", "))
		}
		for _, p := range c.outputs {
			line(6, "%s:", yq(p.name))
			line(7, "dtype: %s", p.dtype)
			if p.hasShape {
				line(7, "shape: %s", p.shapeYAML())
			}
			outputLayoutComment(line, c, p)
		}
	}
	line(2, "steps:")
	for _, c := range comps {
		line(3, "- kind: invoke")
		line(4, "component: %s", yq(c.name))
		if len(c.inputs) > 0 {
			line(4, "inputs:")
			for _, p := range c.inputs {
				line(5, "%s: %s", yq(p.name), yq(w.binds[c][p.name]))
			}
		}
		line(4, "outputs:")
		for _, p := range c.outputs {
			line(5, "%s: %s", yq(p.name), yq(w.results[c][p.name]))
		}
	}
	for _, out := range w.outputs {
		line(3, "- { kind: emit, value: %s, output: %s, mode: replace }", yq(out.value), yq(out.name))
	}
	return b.String()
}

// initHints are the names the commented examples use: the component's
// own symbols and graph inputs where the graph suggests them, placeholders
// in capitals otherwise. They are suggestions to verify, not facts.
type initHints struct {
	root, padded            string   // the payload input's request-axis symbol; the one to pad
	uniform                 []string // its other symbols
	offsets, owner, lengths string
	// axis is the payload input's request axis: 0, or the axis of a symbol
	// named like a batch after axis 0 (a recurrent network's time-major
	// [steps, batch, ...]), where no axis outside it can be padded.
	axis int
	// mask is an input shaped as the payload (or the payload itself) and
	// named like a mask (a transformer's attention_mask), where no input
	// is named like lengths: such a graph cannot be handed padding.
	mask string
	// outerLengths is an input named like lengths with one entry per item
	// where the payload's varying axis comes after fixed ones (channels
	// first, [batch, 80, frames]): genaic's lengths have one entry per
	// position of every axis outside the padded one, so such a graph is
	// not padded as exported; padded is then that axis, kept uniform.
	outerLengths string
	// narrowLengths is an int32 input named like lengths that would pad
	// the payload, were it int64 (a TensorFlow export's): genaic widen
	// rewrites the model to take it so.
	narrowLengths string
}

// payload is the index of the input the commented examples are written
// on: the first of the highest rank, the one items are made of (a
// model's lengths or offsets may come first in its graph).
func (c *initComponent) payload() int {
	at := 0
	for i, p := range c.inputs {
		if len(p.dims) > len(c.inputs[at].dims) {
			at = i
		}
	}
	return at
}

// hints reads the examples' names from the payload input port: its axis-0
// symbol roots the budget, a rank-1 int64 input named like an owner of
// that axis, or like offsets, fills the level, and an int64 input named
// like lengths, shaped as the axes outer to a symbol, makes that symbol
// the padded one (and not a uniform one); without one, every symbol is
// uniform, and an input of the payload's shape named like a mask is
// why the graph cannot be padded.
func (c *initComponent) hints() initHints {
	h := initHints{root: "ITEMS", padded: "SYMBOL", offsets: "OFFSETS", owner: "OWNER", lengths: "LENGTHS"}
	if len(c.inputs) == 0 {
		return h
	}
	p := c.inputs[c.payload()]
	named := func(q initPort, word string) bool {
		return q.name != p.name && q.dtype == "int64" && namedLike(q.name, word)
	}
	if len(p.dims) > 0 && !namedLike(p.dims[0].sym, "batch") {
		for i, d := range p.dims[1:] {
			if namedLike(d.sym, "batch") {
				h.axis = i + 1
				break
			}
		}
	}
	var rest []int // axes of p's symbols other than the request axis
	for i, d := range p.dims {
		switch {
		case d.sym == "":
		case i == h.axis:
			h.root = yq(d.sym)
		default:
			rest = append(rest, i)
		}
	}
	if h.axis > 0 {
		for _, i := range rest {
			h.uniform = append(h.uniform, yq(p.dims[i].sym))
		}
		return h
	}
	for _, q := range c.inputs {
		switch {
		case h.owner == "OWNER" && named(q, "owner") && len(p.dims) > 0 && len(q.dims) == 1 && q.dims[0] == p.dims[0] && p.dims[0].sym != "":
			h.owner = yq(q.name)
		case h.offsets == "OFFSETS" && named(q, "offset") && len(q.dims) == 1:
			h.offsets = yq(q.name)
		}
	}
	padAxis := -1
	for _, i := range rest {
		for _, q := range c.inputs {
			if padAxis < 0 && named(q, "len") && slices.Equal(q.dims, p.dims[:i]) {
				padAxis, h.lengths = i, yq(q.name)
			}
		}
	}
	for _, i := range rest {
		for _, q := range c.inputs {
			if padAxis < 0 && h.narrowLengths == "" && q.dtype == "int32" && namedLike(q.name, "len") && slices.Equal(q.dims, p.dims[:i]) {
				h.narrowLengths = yq(q.name)
			}
		}
	}
	if padAxis < 0 && len(rest) > 0 && rest[0] > 1 && len(p.dims) > 0 {
		for _, q := range c.inputs {
			if h.outerLengths == "" && named(q, "len") && slices.Equal(q.dims, p.dims[:1]) {
				h.outerLengths = yq(q.name)
			}
		}
	}
	if padAxis < 0 {
		for _, q := range c.inputs {
			if h.mask == "" && len(q.dims) > 1 && slices.Equal(q.dims, p.dims) && namedLike(q.name, "mask") {
				h.mask = yq(q.name)
			}
		}
	}
	if padAxis < 0 && len(rest) > 0 {
		h.padded = yq(p.dims[rest[0]].sym)
	}
	for _, i := range rest {
		if i == padAxis {
			h.padded = yq(p.dims[i].sym)
			continue
		}
		h.uniform = append(h.uniform, yq(p.dims[i].sym))
	}
	return h
}

// unifiedComment says which input symbols init wrote as another input's
// (probeOutputs: the model ran only with them equal).
func unifiedComment(line func(int, string, ...any), c *initComponent) {
	if len(c.unified) == 0 {
		return
	}
	var pairs []string
	for _, from := range slices.Sorted(maps.Keys(c.unified)) {
		pairs = append(pairs, from+" as "+c.unified[from])
	}
	line(4, "# The graph names the inputs' axes apart, but the model runs only where")
	line(4, "# they are equal: init wrote %s.", strings.Join(pairs, ", "))
}

// capacityComment shows, commented, where batch_capacity goes; or, where
// the graph fixes the first axis of every input, that no call can hold
// more than one request's rows until the model is exported otherwise.
func capacityComment(line func(int, string, ...any), c *initComponent) {
	if fixed := c.fixedFirstAxes(); fixed != "" {
		line(4, "# This component is called with one request at a time, and cannot group:")
		line(4, "# its graph fixes the first axis of every input (%s),", fixed)
		line(4, "# so no call can hold more rows than one request brings. To group, export")
		line(4, "# the model with a dynamic first axis (torch.onnx.export: dynamic_axes=")
		line(4, "# {\"%s\": {0: \"batch\"}, ...}, and the outputs likewise), then run", c.inputs[c.payload()].name)
		line(4, "# `genaic init` on it again.")
		if c.batchOfOne() {
			stem := strings.TrimSuffix(c.artifact, filepath.Ext(c.artifact))
			line(4, "# Or, where only the export fixed that batch of one, rewrite the graph")
			line(4, "# to take any number of rows (it checks that rows run together answer")
			line(4, "# as each alone): `genaic dynamic-batch %s -o %s_batch.onnx`.", c.artifact, stem)
		}
		return
	}
	h := c.hints()
	line(4, "# Without batch_capacity this component is called with one request at a")
	line(4, "# time. To let one call take the items of many requests, give its ports a")
	if at := c.payload(); at == 0 {
		line(4, "# batch_layout (see the first input port) and declare (the names are")
	} else {
		line(4, "# batch_layout (see input port %s) and declare (the names are", yq(c.inputs[at].name))
	}
	line(4, "# suggestions from the graph; verify them):")
	uniform, kinds := h.uniform, c.rowKinds()
	if kinds != nil {
		line(4, "# Its inputs bring rows of %d kinds, each a request axis of its own (init", len(kinds))
		line(4, "# ran them at different extents):")
		for _, k := range kinds {
			line(4, "#   %s: %s", yq(k.sym), strings.Join(k.inputs, ", "))
			uniform = c.kindUniform(k, uniform)
		}
		line(4, "# Give every input of a kind the same batch_layout, and each kind a budget.")
	}
	line(4, "# batch_capacity:")
	line(4, "#   uniform_dimensions: [%s]  # extents co-batched items must share", strings.Join(uniform, ", "))
	line(4, "#   budgets:  # bounds on the group's materialized footprint, by symbol")
	line(4, "#     - { dimensions: [%s], max_total: 8 }  # first symbol: a request or packed axis", h.root)
	for _, k := range kinds {
		if yq(k.sym) != h.root {
			line(4, "#     - { dimensions: [%s], max_total: 8 }", yq(k.sym))
		}
	}
}

// rowKind is one kind of rows a component's inputs bring, with a request
// axis of its own (CLIP's texts and images in one graph): its symbol, and
// the inputs of rank 2 or more whose first axis it is.
type rowKind struct {
	sym    string
	inputs []string
}

// rowKinds are the kinds of rows the inputs of a probed component bring,
// in input order, where they are two or more: inputs of rank 2 or more
// whose first axes are different symbols. The probe ran those at
// different extents (it writes axes the model refuses so under one
// symbol), so each counts rows of its own. nil otherwise: one kind, an
// unprobed graph (whose exporter may have named one batch apart on each
// input), or a request axis that is not the first.
func (c *initComponent) rowKinds() []rowKind {
	if !c.probed || c.fixedFirstAxes() != "" || c.hints().axis > 0 {
		return nil
	}
	var kinds []rowKind
	for _, p := range c.inputs {
		if len(p.dims) < 2 || p.dims[0].sym == "" {
			continue
		}
		at := slices.IndexFunc(kinds, func(k rowKind) bool { return k.sym == p.dims[0].sym })
		if at < 0 {
			kinds, at = append(kinds, rowKind{sym: p.dims[0].sym}), len(kinds)
		}
		kinds[at].inputs = append(kinds[at].inputs, p.name)
	}
	if len(kinds) < 2 {
		return nil
	}
	return kinds
}

// kindUniform adds to uniform the symbols of the first input of kind k
// beyond its rows that it does not list: items of every kind must agree
// on them, as the payload's do, where nothing pads them.
func (c *initComponent) kindUniform(k rowKind, uniform []string) []string {
	p := c.inputs[slices.IndexFunc(c.inputs, func(q initPort) bool { return q.name == k.inputs[0] })]
	for _, d := range p.dims[1:] {
		if d.sym != "" && yq(d.sym) != c.hints().padded && !slices.Contains(uniform, yq(d.sym)) {
			uniform = append(uniform, yq(d.sym))
		}
	}
	return uniform
}

// kindOf is the kind of rows whose first input is p, where the
// component's inputs bring several and p's is not the payload's; nil
// otherwise.
func (c *initComponent) kindOf(p initPort) *rowKind {
	kinds := c.rowKinds()
	for i, k := range kinds {
		if k.inputs[0] == p.name && yq(k.sym) != c.hints().root {
			return &kinds[i]
		}
	}
	return nil
}

// fixedFirstAxes lists the inputs' shapes, "x: [2, 8]", where the graph
// gives every input a shape whose first axis is a number (a scalar beside
// them has no rows to stack: every request's call shares it); ""
// otherwise.
func (c *initComponent) fixedFirstAxes() string {
	var shapes []string
	for _, p := range c.inputs {
		switch {
		case !p.hasShape || len(p.dims) > 0 && p.dims[0].sym != "":
			return ""
		case len(p.dims) > 0:
			shapes = append(shapes, p.name+": "+p.shapeYAML())
		}
	}
	return strings.Join(shapes, "; ")
}

// batchOfOne reports whether the graph fixes a batch of one, the first
// axis of an input and of every output at 1: what genaic dynamic-batch
// opens.
func (c *initComponent) batchOfOne() bool {
	one := func(p initPort) bool {
		return p.hasShape && len(p.dims) > 0 && p.dims[0].sym == "" && p.dims[0].size == 1
	}
	return slices.ContainsFunc(c.inputs, one) && len(c.outputs) > 0 && !slices.ContainsFunc(c.outputs, func(p initPort) bool { return !one(p) })
}

// layoutComment shows, commented, where a port's batch_layout, its
// ownership levels and its padding go.
func layoutComment(line func(int, string, ...any), c *initComponent) {
	if c.fixedFirstAxes() != "" {
		return
	}
	h := c.hints()
	if h.axis > 0 {
		line(7, "# batch_layout: { kind: request_aligned, axis: %d }  # one row per request, along %s", h.axis, h.root)
		line(7, "# The request axis is not the first: items group where they agree on the")
		line(7, "# axes outside it (uniform_dimensions), which are never padded; a model")
		line(7, "# exported with its request axis first (batch_first) may pad them.")
		return
	}
	line(7, "# batch_layout: { kind: request_aligned, axis: 0 }  # one row per request")
	line(7, "# or, for any number of items per request packed along axis 0, with")
	line(7, "# ownership levels (innermost first; the owner is int64 [%s], the", h.root)
	line(7, "# offsets int64 [units + 1]; both are sibling ports or workflow inputs):")
	line(7, "# batch_layout:")
	line(7, "#   kind: token_packed")
	line(7, "#   axis: 0")
	line(7, "#   levels: [{ offsets: %s, owner: %s }]", h.offsets, h.owner)
	if h.mask != "" {
		line(7, "# Items that differ in a dimension may be right-padded to the longest")
		line(7, "# only where the graph takes their lengths (int64, one per item): %s", h.mask)
		line(7, "# is a mask, not lengths, so as exported this model groups items that")
		line(7, "# agree on every dimension (uniform_dimensions) and is never padded;")
		stem := strings.TrimSuffix(c.artifact, filepath.Ext(c.artifact))
		line(7, "# `genaic mask-lengths %s -o %s_lengths.onnx` rewrites it to take lengths.", c.artifact, stem)
		return
	}
	if h.narrowLengths != "" {
		stem := strings.TrimSuffix(c.artifact, filepath.Ext(c.artifact))
		line(7, "# Items that differ in a dimension may be right-padded to the longest;")
		line(7, "# the graph takes their lengths (%s), but as int32, where genaic's are", h.narrowLengths)
		line(7, "# int64: `genaic widen %s -o %s_int64.onnx --input %s` rewrites the", c.artifact, stem, h.narrowLengths)
		line(7, "# model to take them as int64; init on that model writes the padding.")
		return
	}
	if h.outerLengths != "" {
		at := slices.IndexFunc(c.inputs[c.payload()].dims, func(d initDim) bool { return yq(d.sym) == h.padded })
		line(7, "# The graph takes one length per item (%s), but %s is axis %d,", h.outerLengths, h.padded, at)
		line(7, "# after fixed axes (channels first): genaic pads by lengths with one")
		line(7, "# entry per position of every axis outside the padded one, so as")
		line(7, "# exported this model groups items that agree on %s (uniform_dimensions);", h.padded)
		line(7, "# exported with %s right after the request axis, it may be padded.", h.padded)
		return
	}
	line(7, "# Items that differ in a dimension may be right-padded to the longest;")
	line(7, "# the lengths (int64, the axes outer to %s) must be an input of the", h.padded)
	line(7, "# graph, or the model cannot mask the padding and check refuses it:")
	line(7, "# padding: [{ dimension: %s, valid_lengths: %s }]", h.padded, h.lengths)
}

// alongComment says, of an input port shaped as the payload one (token
// types beside token ids), that it takes the payload's batch_layout and
// padding: left shared, it would be passed once for a whole group, and
// check refuses it where the group pads its dimensions. Of a channels-
// first model's per-item lengths (outerLengths), it says the same of the
// request axis.
func alongComment(line func(int, string, ...any), c *initComponent, p initPort) {
	if h := c.hints(); h.outerLengths == yq(p.name) {
		line(7, "# One length per request, which nothing pads by here: give it one row")
		line(7, "# per request, batch_layout: { kind: request_aligned, axis: 0 }, or a")
		line(7, "# group takes only requests of equal lengths.")
		return
	}
	first := c.inputs[c.payload()]
	if c.fixedFirstAxes() != "" || len(p.dims) == 0 {
		return
	}
	if k := c.kindOf(p); k != nil {
		line(7, "# Rows of their own kind, %s, not %s's: give", yq(k.sym), yq(first.name))
		line(7, "# it a batch_layout as %s's (one row per request, or packed", yq(first.name))
		line(7, "# with levels of its own).")
		return
	}
	for _, k := range c.rowKinds() {
		if lead := c.input(yq(k.inputs[0])); lead != nil && lead.name != p.name && lead.name != first.name && slices.Equal(p.dims, lead.dims) {
			first = *lead
		}
	}
	if slices.Equal(p.dims, first.dims) {
		line(7, "# Shaped as %s: give it the same batch_layout (and padding) as %s.", yq(first.name), yq(first.name))
		return
	}
	// A second sequence beside the first (a document beside a query),
	// over the same batch, with lengths of its own.
	if len(p.dims) < 2 || p.dims[0] != first.dims[0] || p.dims[0].sym == "" || c.hints().axis > 0 {
		return
	}
	for i, d := range p.dims[1:] {
		if d.sym == "" || slices.Contains(first.dims, d) {
			continue
		}
		if lengths := c.ownLengths(p, i+1); lengths != "" {
			line(7, "# A sequence of its own (%s): give it %s's batch_layout, and pad it", yq(d.sym), yq(first.name))
			line(7, "# with its own lengths: padding: [{ dimension: %s, valid_lengths: %s }]", yq(d.sym), lengths)
			return
		}
	}
}

// ownLengths names the int64 input named like lengths, shaped as p's axes
// outer to axis i, that no other input's padding would take: the one
// whose name begins as p's (doc_lengths for doc_ids), else the only such
// input; "" where none is.
func (c *initComponent) ownLengths(p initPort, i int) string {
	h := c.hints()
	var fits []initPort
	for _, q := range c.inputs {
		if q.name != p.name && yq(q.name) != h.lengths && q.dtype == "int64" && namedLike(q.name, "len") && slices.Equal(q.dims, p.dims[:i]) {
			fits = append(fits, q)
		}
	}
	stem, _, _ := strings.Cut(p.name, "_")
	for _, q := range fits {
		if stem != p.name && strings.HasPrefix(q.name, stem+"_") {
			return yq(q.name)
		}
	}
	if len(fits) == 1 {
		return yq(fits[0].name)
	}
	return ""
}

// outputLayoutComment shows, commented, the batch_layout that splits an
// output back per request once the component groups: without one an
// output is shared, every request would receive the whole group's rows,
// and check refuses it (capacity/shared-output).
func outputLayoutComment(line func(int, string, ...any), c *initComponent, p initPort) {
	if c.whole[p.name] {
		line(7, "# Its value changed with the inputs' extents when init ran the model")
		line(7, "# twice: where the model computes it over the whole call (a count or a")
		line(7, "# mean over the batch), each request of a group would receive the")
		line(7, "# group's, not its own. Once the component groups, leave this output")
		line(7, "# out (a graph output no port declares is not fetched), or keep the")
		line(7, "# component ungrouped.")
		return
	}
	if len(p.dims) == 0 || p.dims[0].sym == "" {
		return // a literal or rank-0 output is one value for any group
	}
	h := c.hints()
	if of, sym := c.lengthsOfComputed(p); of != "" {
		line(7, "# Each item's `%s`, which no input names: once %s", sym, of)
		line(7, "# is padded on it, this is its valid_lengths, a companion left shared")
		line(7, "# (no batch_layout), and a workflow output too.")
		if p.dtype == "int32" {
			line(7, "# Lengths are int64: export it as int64 first.")
		}
		return
	}
	if first := p.dims[0]; c.probed && h.offsets == "OFFSETS" && c.computed(first) && !slices.ContainsFunc(p.dims, func(d initDim) bool { return yq(d.sym) == h.root }) {
		// Rows that followed no input of a model that takes no
		// offsets (whose outputs' rows may be units of a level): no
		// layout splits them per request.
		if n, ok := c.steady[first.sym]; ok {
			line(7, "# %s kept %d on inputs of different extents (init ran the model", yq(first.sym), n)
			if len(c.counting) == 0 {
				line(7, "# twice): a constant the export left dynamic; write %d in its place.", n)
				line(7, "# Left shared, each request of a group receives it whole: right where")
				line(7, "# it does not depend on the items (a table of anchors); where it does,")
				line(7, "# leave this output out once the component groups.")
				return
			}
			line(7, "# twice), but the graph computes extents from values")
			line(7, "# (%s): a count of what the model keeps", strings.Join(c.counting, ", "))
			line(7, "# (detections) may take one value on init's inputs and others on")
			line(7, "# yours: leave %s a symbol. No layout splits such a count per", yq(first.sym))
			line(7, "# request: once the component groups, leave this output out, or keep")
			line(7, "# it ungrouped.")
			return
		}
		line(7, "# %s followed no input's extent when init ran the model twice: a", yq(first.sym))
		line(7, "# count the model computes from the values (detections kept, NonZero's")
		line(7, "# positions), not rows of %s, and no layout splits it per request.", h.root)
		line(7, "# Once the component groups, leave this output out (a graph output no")
		line(7, "# port declares is not fetched), or keep the component ungrouped.")
		return
	}
	if kinds := c.rowKinds(); kinds != nil {
		var follows []rowKind // the kinds of rows the output's axes follow
		for _, k := range kinds {
			if slices.ContainsFunc(p.dims, func(d initDim) bool { return d.sym == k.sym }) {
				follows = append(follows, k)
			}
		}
		switch {
		case len(follows) > 1:
			var syms []string
			for _, k := range follows {
				syms = append(syms, yq(k.sym))
			}
			line(7, "# Its axes follow rows of %d kinds (%s):", len(follows), strings.Join(syms, ", "))
			line(7, "# split by one, each request of a group would receive its rows across")
			line(7, "# every request's of the other, and check refuses it")
			line(7, "# (capacity/unreconciled). Once the component groups, leave this output")
			line(7, "# out (a graph output no port declares is not fetched) and compute it")
			line(7, "# from outputs split per request, or keep the component ungrouped.")
			line(7, "# Where one kind is no request's own (a table of class embeddings every")
			line(7, "# request sends alike), leave its inputs shared: requests that bring")
			line(7, "# equal values share a call, and this output splits by the other rows.")
			return
		case len(follows) == 1 && yq(follows[0].sym) != h.root:
			k := follows[0]
			at := slices.IndexFunc(p.dims, func(d initDim) bool { return d.sym == k.sym })
			line(7, "# Once the component groups, say how this output splits back per")
			line(7, "# request (left shared, each request would receive the whole group's")
			line(7, "# rows, and check refuses it): its rows are %s's,", yq(k.inputs[0]))
			line(7, "# %s, axis %d:", yq(k.sym), at)
			line(7, "# batch_layout: { kind: request_aligned, axis: %d }", at)
			if at == 0 {
				line(7, "# or, where %s is packed, its levels, each with extent: preserved.", yq(k.inputs[0]))
			}
			return
		}
	}
	if h.axis > 0 {
		for i, d := range p.dims {
			if yq(d.sym) == h.root {
				line(7, "# Once the component groups, say how this output splits back per")
				line(7, "# request (left shared, each request would receive the whole group's")
				line(7, "# rows, and check refuses it):")
				line(7, "# batch_layout: { kind: request_aligned, axis: %d }", i)
			}
		}
		return
	}
	if at := slices.IndexFunc(p.dims, func(d initDim) bool { return yq(d.sym) == h.root }); at > 0 {
		// The input's rows come first, this output's later: a model
		// that runs time-major inside and returns [steps, batch, ...].
		line(7, "# Once the component groups, say how this output splits back per")
		line(7, "# request (left shared, each request would receive the whole group's")
		line(7, "# rows, and check refuses it): its rows are along %s, axis %d:", h.root, at)
		line(7, "# batch_layout: { kind: request_aligned, axis: %d }", at)
		if pad := slices.IndexFunc(p.dims[:at], func(d initDim) bool { return yq(d.sym) == h.padded }); pad >= 0 && h.lengths != "LENGTHS" {
			line(7, "# but where the input is padded on %s, this output is too, on axis", h.padded)
			line(7, "# %d, outside its request axis, where no lengths can split it: return", pad)
			line(7, "# it batch first from the model (a transpose), or leave it out.")
		}
		return
	}
	line(7, "# Once the component groups, say how this output splits back per")
	line(7, "# request (left shared, each request would receive the whole group's")
	line(7, "# rows, and check refuses it): with the input packed and one row per")
	line(7, "# `%s`,", h.root)
	line(7, "# batch_layout:")
	line(7, "#   kind: token_packed")
	line(7, "#   axis: 0")
	line(7, "#   levels: [{ offsets: %s, owner: %s, extent: preserved }]", h.offsets, h.owner)
	line(7, "# or, with one row per request:")
	line(7, "# batch_layout: { kind: request_aligned, axis: 0 }")
	if at := slices.IndexFunc(p.dims, func(d initDim) bool { return yq(d.sym) == h.padded }); h.lengths != "LENGTHS" && at > 0 {
		if lengths := c.input(h.lengths); lengths != nil && !slices.Equal(lengths.dims, p.dims[:at]) {
			line(7, "# Padded on %s (axis %d), its lengths would be one per position of", h.padded, at)
			line(7, "# the axes outside it, which %s is not; where nothing holds", h.lengths)
			line(7, "# such lengths (attention weights), leave this output out: a graph")
			line(7, "# output no port declares is not fetched.")
		} else {
			line(7, "# and, where the input is padded on %s, padded as it is (then", h.padded)
			line(7, "# publish its lengths as a workflow output too):")
			line(7, "# padding: [{ dimension: %s, valid_lengths: %s }]", h.padded, h.lengths)
		}
	}
	if h.lengths == "LENGTHS" {
		return
	}
	for i, d := range p.dims {
		if i == 0 || !c.computed(d) {
			continue
		}
		if n, ok := c.steady[d.sym]; ok {
			line(7, "# %s kept %d on inputs of different extents (init ran the model", yq(d.sym), n)
			if len(c.counting) > 0 {
				line(7, "# twice), but the graph computes extents from values")
				line(7, "# (%s): write %d in its place only where it is no count.", strings.Join(c.counting, ", "), n)
				continue
			}
			line(7, "# twice): a constant the export left dynamic; write %d in its place.", n)
			continue
		}
		lengths := c.lengthsOutput(p, i)
		if narrow := c.lengthsOutputOf(p, i, "int32"); lengths == "" && narrow != "" {
			line(7, "# %s is computed per item, and %s holds each item's, but as int32:", yq(d.sym), narrow)
			line(7, "# lengths are int64. Export it as int64 (torch: .to(torch.int64)); then")
			line(7, "# pad %s with it, a companion left shared, on this port and on the", yq(d.sym))
			line(7, "# workflow output: padding: [{ dimension: %s, valid_lengths: %s }]", yq(d.sym), narrow)
			continue
		}
		if lengths == "" {
			if c.probed {
				line(7, "# %s followed no input's extent when init ran the model twice: the", yq(d.sym))
				line(7, "# model computes it per item; padded, it needs lengths the graph outputs")
				line(7, "# (int64, the axes outer to it), or no input is padded (list %s", h.padded)
				line(7, "# in uniform_dimensions).")
				continue
			}
			line(7, "# %s is named by no input: where it is one extent whatever the", yq(d.sym))
			line(7, "# items (a head count the export left dynamic), write that number in")
			line(7, "# its place; where it follows %s, the graph must output its lengths", h.padded)
			line(7, "# to pad it by, or no input is padded (list %s in uniform_dimensions).", h.padded)
			continue
		}
		line(7, "# and, where the input is padded on %s, padded on %s too, which", h.padded, yq(d.sym))
		line(7, "# no input names: the model computes it per item, and a group at its")
		line(7, "# longest item (publish %s as a workflow output too):", lengths)
		line(7, "# padding: [{ dimension: %s, valid_lengths: %s }]", yq(d.sym), lengths)
	}
}

// input is the input port called name (as yq quotes it), or nil.
func (c *initComponent) input(name string) *initPort {
	for i := range c.inputs {
		if yq(c.inputs[i].name) == name {
			return &c.inputs[i]
		}
	}
	return nil
}

// computed reports whether d is a dimension the graph computes: a symbol
// no input of the component names (a convolution's frames of samples).
func (c *initComponent) computed(d initDim) bool {
	return d.sym != "" && !slices.ContainsFunc(c.inputs, func(q initPort) bool { return slices.Contains(q.dims, d) })
}

// lengthsOutput names the output of the component that holds each item's
// extent on axis i of output p: an int64 output shaped as p's axes outer
// to i and named like lengths; "" where none is.
func (c *initComponent) lengthsOutput(p initPort, i int) string {
	return c.lengthsOutputOf(p, i, "int64")
}

// lengthsOutputOf is lengthsOutput for an output of dtype.
func (c *initComponent) lengthsOutputOf(p initPort, i int, dtype string) string {
	for _, q := range c.outputs {
		if q.name != p.name && q.dtype == dtype && namedLike(q.name, "len") && slices.Equal(q.dims, p.dims[:i]) {
			return yq(q.name)
		}
	}
	return ""
}

// lengthsOfComputed reports, of an output that holds the lengths of a
// computed dimension of another output (lengthsOutput), that output and
// the dimension; "" where p is none.
func (c *initComponent) lengthsOfComputed(p initPort) (of, sym string) {
	for _, q := range c.outputs {
		for i, d := range q.dims {
			if i > 0 && c.computed(d) && (c.lengthsOutput(q, i) == yq(p.name) || c.lengthsOutputOf(q, i, "int32") == yq(p.name)) {
				return yq(q.name), yq(d.sym)
			}
		}
	}
	return "", ""
}

// namedLike reports whether a graph's name for a value holds word, in any
// case: how init and mask-lengths recognize lengths, offsets and masks.
func namedLike(name, word string) bool {
	return strings.Contains(strings.ToLower(name), word)
}

// docLines is a document being written and the function that writes a
// line of it at an indent of two spaces a level.
func docLines() (*strings.Builder, func(indent int, format string, args ...any)) {
	b := &strings.Builder{}
	return b, func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(b, format, args...)
		b.WriteByte('\n')
	}
}
