package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/onnx/onnxpb"
	"github.com/genaic/genaic/vm/ort"
)

func init() {
	register(command{
		name:    "dynamic-batch",
		usage:   "dynamic-batch MODEL.onnx -o OUT.onnx [--symbol NAME] [--no-probe] [--force]",
		summary: "rewrite a model whose graph fixes a batch of one to take any number of rows, so that a package may group its requests",
		run:     runDynamicBatch,
	})
}

func runDynamicBatch(e *env, args []string) int {
	rw := newRewriteCmd("dynamic-batch")
	symbol := rw.flags.String("symbol", "batch", "the shape symbol the first axis of the inputs and outputs takes")
	noProbe := rw.flags.Bool("no-probe", false, "rewrite only the inputs' and outputs' first axes, without running the model (the probe needs ONNX Runtime): whether the graph keeps the rows apart is then for genaic run --verify to find out")
	in, m, b, code := rw.read(e, args)
	if m == nil {
		return code
	}
	if *symbol == "" || strings.TrimSpace(*symbol) != *symbol {
		e.errorf("dynamic-batch: --symbol %q: name the axis (batch)", *symbol)
		return exitUsage
	}
	r, err := onnx.DynamicBatch(m, *symbol, false)
	if err != nil {
		e.errorf("dynamic-batch: %s: %v", in, err)
		return exitUsage
	}
	if *noProbe {
		if code := writeRewritten(e, m, *rw.out); code != exitOK {
			return code
		}
		fmt.Fprintf(e.stdout, "wrote %s: %s; not probed: `genaic run --verify` on a package of it compares grouped answers with answers alone\n", *rw.out, opened(r, *symbol))
		return exitOK
	}
	g, err := onnx.DecodeBytes(b)
	if err != nil {
		e.errorf("dynamic-batch: %s: %v", in, err)
		return exitUsage
	}
	// The first try opens the inputs and outputs alone; a graph that
	// fixed the batch inside too (a flatten's Reshape to [1, -1]) is tried
	// again with its constant Reshape shapes opened, then with the batch
	// found an entry in each constant shape (scaleShapes). A try that
	// does not apply gives no model; one whose rows differ adds to err.
	tries := []struct {
		what string // how the try differs from the first, for messages
		make func() (*onnxpb.ModelProto, onnx.BatchRewrite, error)
	}{
		{"", func() (*onnxpb.ModelProto, onnx.BatchRewrite, error) { return m, r, nil }},
		{"with the constant shapes of REWRITTEN opened too", func() (*onnxpb.ModelProto, onnx.BatchRewrite, error) {
			second := new(onnxpb.ModelProto)
			if err := proto.Unmarshal(b, second); err != nil {
				return nil, r, err
			}
			// The same model, refused by none of the first try's checks.
			r2, _ := onnx.DynamicBatch(second, *symbol, true)
			if len(r2.Reshapes) == 0 {
				return nil, r, nil
			}
			return second, r2, nil
		}},
		{"with the batch taken by an entry of each constant shape", func() (*onnxpb.ModelProto, onnx.BatchRewrite, error) {
			third, scaled, err := scaleShapes(in, b, g, *symbol, r, func(n, budget int) {
				fmt.Fprintf(e.stderr, "genaic: dynamic-batch: %s: the graph fixes the batch inside its constant shapes too; probing its %d constant shapes one by one (up to %d runs of the model)\n", in, n, budget)
			})
			r3 := r
			r3.Scaled = scaled
			return third, r3, err
		}},
	}
	var probed string
	for i, try := range tries {
		tm, tr, terr := try.make()
		if terr == nil && tm != nil {
			var p string
			if p, terr = probeRewrite(in, *rw.out, g, tm, tr); terr == nil {
				probed, r, err = p, tr, nil
				break
			}
		}
		switch {
		case i == 0:
			err = terr
		case terr == nil: // the try does not apply
		case errors.Is(terr, errBatchProbe):
			what := strings.Replace(try.what, "REWRITTEN", nodeList(tr.Reshapes), 1)
			err = fmt.Errorf("%w; %s, %v", err, what, strings.TrimPrefix(terr.Error(), errBatchProbe.Error()+": "))
		default:
			err = terr
		}
		if !errors.Is(err, errBatchProbe) {
			break
		}
	}
	switch {
	case errors.Is(err, errBatchProbe):
		e.errorf("dynamic-batch: %s: not rewritten: %v. The graph's first axis is more than a batch of rows (a batch of one fixed inside it, or values computed across the rows): where it is a batch, export the model with that axis dynamic (torch.onnx.export: dynamic_axes={%q: {0: %q}, ...}, and the outputs likewise)",
			in, err, r.Inputs[0], *symbol)
		return exitDiags
	case err != nil:
		e.errorf("dynamic-batch: %s: not rewritten: %v", in, err)
		return exitDiags
	}
	if err := os.Rename(probed, *rw.out); err != nil {
		os.Remove(probed)
		return ioError(e, err)
	}
	msg := opened(r, *symbol)
	switch {
	case len(r.Scaled) > 0:
		msg += fmt.Sprintf("; the batch multiplies an entry of the constant shapes of %s", strings.Join(r.Scaled, ", "))
	case len(r.Reshapes) == 0:
	case len(r.Reshapes) == 1:
		msg += fmt.Sprintf("; %s, whose constant shape fixed the batch at 1, copies it from its input", nodeList(r.Reshapes))
	default:
		msg += fmt.Sprintf("; %s, whose constant shapes fixed the batch at 1, copy it from their inputs", nodeList(r.Reshapes))
	}
	fmt.Fprintf(e.stdout, "wrote %s: %s; %d rows run together answered as each alone\n", *rw.out, msg, batchProbeRows)
	fmt.Fprintln(e.stdout, nextInit(*rw.out, ""))
	return exitOK
}

// errBatchProbe marks a rewritten model that does not keep the rows of a
// batch apart (or fails on one) where the model itself answers each row.
var errBatchProbe = errors.New("the rewritten graph does not answer a batch as its rows alone")

// batchProbeRows is how many rows the probe runs together: each differs
// from the others in every input that varies.
const batchProbeRows = 2

// maxBatchProbeElements bounds the elements of the probe's inputs run
// together: an image model fixed at [1, 3, 1024, 1024] takes six million.
const maxBatchProbeElements = 1 << 25

// probeRewrite writes the rewritten model m beside out and probes it
// against the model at in (whose graph is g): the batched rows must answer
// as each row alone. It returns the probed file, to be renamed to out, or
// an error (errBatchProbe where the rewrite is at fault), having removed it.
func probeRewrite(in, out string, g *onnx.Graph, m *onnxpb.ModelProto, r onnx.BatchRewrite) (string, error) {
	enc, err := onnx.Marshal(m)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.onnx")
	if err != nil {
		return "", errors.New(ioErrorText(err))
	}
	_, err = f.Write(enc)
	if err == nil {
		err = f.Chmod(0o644) // as writeRewritten writes a model
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkBatching(in, f.Name(), g, r)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// batchProbe makes the rows dynamic-batch probes a model on, and loads
// the sessions that run them. Each input the rewrite opened holds other
// values in every row; an input it left (a scalar, a table) is shared by
// the rows, as it is by the requests of a group. An input's other dynamic
// axes take probeOther.
type batchProbe struct {
	inputs []probeInput
	be     *ort.Backend
	// ints is how integers and bools vary by row and position: intsBinary
	// (0 and 1: a mask whose zeros differ by row, so that the rows differ
	// wherever the mask reaches), intsFromOne (1 and 2, for a model that
	// takes no zero) or intsOnes (a model that refuses both).
	ints int
}

// The schemes of a batch probe's integers, tried in turn.
const (
	intsBinary = iota
	intsFromOne
	intsOnes
	intSchemes
)

type probeInput struct {
	name, dtype string
	alone       []int64 // the shape of one row; rows add up along axis 0
	batched     bool
}

func newBatchProbe(g *onnx.Graph, r onnx.BatchRewrite) (*batchProbe, error) {
	p := &batchProbe{}
	total := int64(0)
	for _, v := range g.Inputs {
		if v.Initialized {
			continue
		}
		dt, ok := ir.LookupDType(v.DType())
		if !ok || dt.Name == "string" || !v.HasShape {
			return nil, fmt.Errorf("input %s is %s %s, which the probe does not make; rewrite unprobed with --no-probe", v.Name, orUnknownDType(v.DType()), v.ShapeText())
		}
		in := probeInput{name: v.Name, dtype: dt.Name, alone: make([]int64, len(v.Dims)), batched: slices.Contains(r.Inputs, v.Name)}
		for i, d := range v.Dims {
			in.alone[i] = probeOther
			if d.Literal {
				in.alone[i] = d.Value
			}
		}
		n := backend.Elements(in.alone)
		if in.batched {
			n *= batchProbeRows
		}
		if total += n; n < 0 || total > maxBatchProbeElements {
			return nil, fmt.Errorf("the probe's inputs would hold more than %d elements; rewrite unprobed with --no-probe", maxBatchProbeElements)
		}
		p.inputs = append(p.inputs, in)
	}
	var err error
	p.be, err = ort.New(ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	return p, err
}

// load opens a session of the model at path that fetches outputs.
func (p *batchProbe) load(path string, outputs []string) (backend.Session, error) {
	comp := &ir.Component{Name: "probe", Impl: ir.ImplONNX, Artifact: filepath.Base(path)}
	for _, in := range p.inputs {
		comp.Inputs = append(comp.Inputs, &ir.Port{Name: in.name})
	}
	for _, o := range outputs {
		comp.Outputs = append(comp.Outputs, &ir.Port{Name: o})
	}
	return p.be.Load(comp, filepath.Dir(path))
}

// values makes the inputs of row (the rows together where row < 0). A
// float holds a value of its row and position in [0, 1); an integer or a
// bool as ints says.
func (p *batchProbe) values(row int) (map[string]*backend.Tensor, error) {
	out := map[string]*backend.Tensor{}
	for _, in := range p.inputs {
		shape := append([]int64(nil), in.alone...)
		first, together := row, false
		switch {
		case !in.batched:
			first = 0 // shared: every row's call sees row 0's
		case row < 0:
			first, together = 0, true
			shape[0] *= batchProbeRows
		}
		t, err := backend.NewTensor(in.dtype, shape)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.name, err)
		}
		per := max(backend.Elements(in.alone), 1)
		for k := range t.Len() {
			rk, pos := int64(first), k%per
			if together {
				rk = k / per
			}
			var x float64
			switch {
			case strings.HasPrefix(in.dtype, "float") || in.dtype == "bfloat16":
				x = math.Mod(float64(pos+1)*0.6180339887+float64(rk+1)*0.3819660113, 1)
			case p.ints == intsOnes:
				x = 1
			case p.ints == intsBinary || in.dtype == "bool":
				x = float64((pos + rk) % 2)
			default:
				x = float64(1 + (pos+rk)%2)
			}
			t.SetFloat64At(k, x)
		}
		out[in.name] = t
	}
	return out, nil
}

// alone runs the model at orig on each row alone, fetching outputs; where
// it refuses the varied integers, on ones.
func (p *batchProbe) alone(orig string, outputs []string) ([]map[string]*backend.Tensor, error) {
	s, err := p.load(orig, outputs)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var lastErr error
	for p.ints = range intSchemes {
		want := make([]map[string]*backend.Tensor, batchProbeRows)
		for row := range batchProbeRows {
			vals, err := p.values(row)
			if err != nil {
				return nil, err
			}
			if want[row], lastErr = s.Run(context.Background(), vals, outputs); lastErr != nil {
				break
			}
		}
		if lastErr == nil {
			return want, nil
		}
	}
	return nil, fmt.Errorf("the model fails on the probe's inputs, a row of values in [0, 1) (integers 0 and 1, then 1 and 2, then ones): %v; rewrite unprobed with --no-probe", lastErr)
}

// together runs the model at path on the rows together, fetching outputs.
func (p *batchProbe) together(path string, outputs []string) (map[string]*backend.Tensor, error) {
	s, err := p.load(path, outputs)
	if err != nil {
		return nil, fmt.Errorf("%w: ONNX Runtime refuses it: %v", errBatchProbe, err)
	}
	defer s.Close()
	vals, err := p.values(-1)
	if err != nil {
		return nil, err
	}
	got, err := s.Run(context.Background(), vals, outputs)
	if err != nil {
		return nil, fmt.Errorf("%w: it fails on %d rows: %v", errBatchProbe, batchProbeRows, err)
	}
	return got, nil
}

// checkBatching runs the model at orig on each of batchProbeRows rows
// alone, and the rewritten model at rewritten on them together, and
// reports errBatchProbe where the rows differ: the graph still fixes the
// batch somewhere (it fails on the batch, or mixes the rows).
func checkBatching(orig, rewritten string, g *onnx.Graph, r onnx.BatchRewrite) error {
	p, err := newBatchProbe(g, r)
	if err != nil {
		return err
	}
	want, err := p.alone(orig, r.Outputs)
	if err != nil {
		return err
	}
	got, err := p.together(rewritten, r.Outputs)
	if err != nil {
		return err
	}
	for _, o := range r.Outputs {
		t := got[o]
		if t == nil || t.Rank() == 0 || t.Shape[0] != batchProbeRows {
			shape := "nothing"
			if t != nil {
				shape = fmt.Sprint(t.Shape)
			}
			return fmt.Errorf("%w: output %s of %d rows is %s", errBatchProbe, o, batchProbeRows, shape)
		}
		for row := range batchProbeRows {
			if what := engine.AgreeAlone(t.View(int64(row), int64(row)+1), want[row][o], nil); what != "" {
				return fmt.Errorf("%w: output %s of row %d of %d run together differs from the row alone (it %s)", errBatchProbe, o, row, batchProbeRows, what)
			}
		}
	}
	return nil
}

// opened says what a rewrite opened, as dynamic-batch reports it.
func opened(r onnx.BatchRewrite, symbol string) string {
	verb := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	return fmt.Sprintf("%s %s %s any number of rows along axis 0 (%s), and %s %s %s one row each",
		plural(len(r.Inputs), "input"), strings.Join(r.Inputs, ", "), verb(len(r.Inputs), "takes", "take"), symbol,
		plural(len(r.Outputs), "output"), strings.Join(r.Outputs, ", "), verb(len(r.Outputs), "gives", "give"))
}

// nodeList names Reshape nodes: "Reshape /Reshape" or "3 Reshapes (a, b, c)".
func nodeList(names []string) string {
	if len(names) == 1 {
		return "Reshape " + names[0]
	}
	return fmt.Sprintf("%d Reshapes (%s)", len(names), strings.Join(names, ", "))
}

func orUnknownDType(s string) string {
	if s == "" {
		return "of no element type"
	}
	return s
}

// scaleShapes is dynamic-batch's third try, for a graph whose constant
// shapes hide the batch inside an entry (an attention's [T, batch×heads,
// D], a class token expanded to [1, 1, D]): shape node by shape node, in
// graph order, an entry multiplied by the batch at run time (or none) is
// kept where the node's output, on the rows together, holds each row's
// output alone (unchanged, as contiguous blocks, or interleaved along the
// axis that doubled, tried in that order); where a later node then takes
// no entry, or the graph's outputs do not hold the rows, the next choice
// is tried, up to scaleRuns runs of the model. It returns the
// rewritten model and the nodes it rewrote; nil and no error where the
// graph has no such node.
func scaleShapes(in string, b []byte, g *onnx.Graph, symbol string, r onnx.BatchRewrite, starting func(nodes, budget int)) (*onnxpb.ModelProto, []string, error) {
	unmarshal := func() (*onnxpb.ModelProto, error) {
		m := new(onnxpb.ModelProto)
		return m, proto.Unmarshal(b, m)
	}
	ref, err := unmarshal()
	if err != nil {
		return nil, nil, err
	}
	nodes := onnx.ShapeNodes(ref)
	if len(nodes) == 0 {
		return nil, nil, nil
	}
	watched := slices.Clone(r.Outputs)
	for _, n := range nodes {
		watched = append(watched, n.Output, n.Shape)
	}
	onnx.AddOutputs(ref, watched...)
	p, err := newBatchProbe(g, r)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(in)
	// run writes m beside the model (its weights may be in files there)
	// and runs it on the rows together, fetching outputs.
	runs := 0
	run := func(m *onnxpb.ModelProto, outputs ...string) (map[string]*backend.Tensor, error) {
		runs++
		onnx.KeepOutputs(m, outputs...)
		enc, err := onnx.Marshal(m)
		if err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(dir, ".dynamic-batch-*.onnx")
		if err != nil {
			return nil, errors.New(ioErrorText(err))
		}
		defer os.Remove(f.Name())
		_, err = f.Write(enc)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		return p.together(f.Name(), outputs)
	}
	enc, err := onnx.Marshal(ref)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.CreateTemp(dir, ".dynamic-batch-*.onnx")
	if err != nil {
		return nil, nil, errors.New(ioErrorText(err))
	}
	_, err = f.Write(enc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var alone []map[string]*backend.Tensor
	if err == nil {
		alone, err = p.alone(f.Name(), watched)
	}
	os.Remove(f.Name())
	if err != nil {
		return nil, nil, err
	}
	start, err := unmarshal()
	if err != nil {
		return nil, nil, err
	}
	if _, err := onnx.DynamicBatch(start, symbol, false); err != nil {
		return nil, nil, err
	}
	budget := scaleRuns(len(nodes))
	starting(len(nodes), budget)
	var stuck string // the deepest node no entry of which took the batch
	deepest := -1
	var choose func(i int, cur *onnxpb.ModelProto, scaled []string) (*onnxpb.ModelProto, []string, bool)
	choose = func(i int, cur *onnxpb.ModelProto, scaled []string) (*onnxpb.ModelProto, []string, bool) {
		if runs > budget {
			return nil, nil, false
		}
		if i == len(nodes) {
			got, err := run(onnx.Derive(cur), r.Outputs...)
			if err != nil {
				return nil, nil, false
			}
			for _, o := range r.Outputs {
				t := got[o]
				if t == nil || t.Rank() == 0 || t.Shape[0] != batchProbeRows {
					return nil, nil, false
				}
				for row := range batchProbeRows {
					if engine.AgreeAlone(t.View(int64(row), int64(row)+1), alone[row][o], nil) != "" {
						return nil, nil, false
					}
				}
			}
			return cur, scaled, true
		}
		n := nodes[i]
		target := alone[0][n.Shape]
		if target == nil || target.DType != "int64" || target.Rank() != 1 {
			return choose(i+1, cur, scaled)
		}
		values := slices.Clone(target.Data.([]int64))
		// The choices are tried as they hold the rows: unchanged or in
		// blocks at once (a batch outermost, the common case, is found
		// without running the rest), interleaved once those fail.
		type option struct {
			j int
			m *onnxpb.ModelProto
		}
		var interleaved []option
		try := func(o option) (*onnxpb.ModelProto, []string, bool) {
			next := scaled
			if o.j >= 0 {
				next = append(slices.Clone(scaled), n.Op+" "+n.Label)
			}
			return choose(i+1, o.m, next)
		}
		for j := -1; j < len(values); j++ { // -1: as it is
			if j >= 0 && values[j] <= 0 {
				continue
			}
			cand := onnx.Derive(cur)
			if j >= 0 {
				onnx.ScaleShape(cand, n, values, j, r.Inputs[0])
			}
			got, err := run(onnx.Derive(cand), n.Output)
			if err != nil {
				continue
			}
			switch holdsRows(got[n.Output], alone[0][n.Output], alone[1][n.Output]) {
			case holdsUnchanged, holdsBlocks:
				if m, sc, ok := try(option{j, cand}); ok {
					return m, sc, true
				}
			case holdsInterleaved:
				interleaved = append(interleaved, option{j, cand})
			}
		}
		for _, o := range interleaved {
			if m, sc, ok := try(o); ok {
				return m, sc, true
			}
		}
		if i > deepest {
			deepest, stuck = i, fmt.Sprintf("%s %s (its shape %v at a batch of one)", n.Op, n.Label, values)
		}
		return nil, nil, false
	}
	m, scaled, ok := choose(0, start, nil)
	if !ok {
		why := fmt.Sprintf("no entry of %s takes the batch", stuck)
		if stuck == "" {
			why = "no choice of entries makes the outputs hold the rows"
		}
		if runs > budget {
			why += fmt.Sprintf(" (%d runs tried)", runs)
		}
		return nil, nil, fmt.Errorf("%w: %s", errBatchProbe, why)
	}
	return m, scaled, nil
}

// scaleRuns bounds the runs of the model scaleShapes tries on a graph of
// n shape nodes: a few for each, as a node takes one run per entry it
// tries and a later node's failure sends it back to its next.
func scaleRuns(n int) int { return 64 + 6*n }

// How a value of the rows run together holds each row's value alone.
const (
	holdsNot         = iota
	holdsUnchanged   // it does not depend on the row
	holdsBlocks      // in contiguous blocks along the one axis that doubled (a batch outermost, [batch×heads, ...])
	holdsInterleaved // interleaved along it (a [T×batch, E] flatten of time-major rows)
)

// holdsRows says how together, a value of the rows run together, holds
// alone[r], each row's value alone.
func holdsRows(together *backend.Tensor, alone ...*backend.Tensor) int {
	a0, a1 := alone[0], alone[1]
	if together == nil || a0 == nil || a1 == nil || together.DType != a0.DType || together.Rank() != a0.Rank() || !slices.Equal(a0.Shape, a1.Shape) {
		return holdsNot
	}
	if slices.Equal(together.Shape, a0.Shape) {
		if engine.AgreeAlone(together, a0, nil) == "" && engine.AgreeAlone(together, a1, nil) == "" {
			return holdsUnchanged
		}
		return holdsNot
	}
	for axis := range a0.Shape {
		if together.Shape[axis] != 2*a0.Shape[axis] || !slices.Equal(together.Shape[:axis], a0.Shape[:axis]) || !slices.Equal(together.Shape[axis+1:], a0.Shape[axis+1:]) {
			continue
		}
		if rowsAt(together, alone, axis, false) {
			return holdsBlocks
		}
		if rowsAt(together, alone, axis, true) {
			return holdsInterleaved
		}
	}
	return holdsNot
}

// rowsAt reports whether together holds each alone[r] along axis: at
// r·n + i (blocks) or 2i + r (interleaved) for position i of n.
func rowsAt(together *backend.Tensor, alone []*backend.Tensor, axis int, interleaved bool) bool {
	n := alone[0].Shape[axis]
	at := make([]int64, alone[0].Rank())
	for r, a := range alone {
		clear(at)
		for k := range a.Len() {
			off := int64(0)
			for i, c := range at {
				if i == axis {
					if interleaved {
						c = 2*c + int64(r)
					} else {
						c += int64(r) * n
					}
				}
				off = off*together.Shape[i] + c
			}
			g, gok := together.Float64At(off)
			w, wok := a.Float64At(k)
			if !gok || !wok || math.Abs(g-w) > 1e-4*max(1, math.Abs(w)) && !(math.IsNaN(g) && math.IsNaN(w)) {
				return false
			}
			step(at, a.Shape)
		}
	}
	return true
}
