package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
	// again with its constant Reshape shapes opened.
	probed, err := probeRewrite(in, *rw.out, g, m, r)
	if errors.Is(err, errBatchProbe) {
		second := new(onnxpb.ModelProto)
		if uerr := proto.Unmarshal(b, second); uerr != nil {
			return ioError(e, uerr)
		}
		// The same model, refused by none of the first try's checks.
		if r2, _ := onnx.DynamicBatch(second, *symbol, true); len(r2.Reshapes) > 0 {
			if probed2, err2 := probeRewrite(in, *rw.out, g, second, r2); !errors.Is(err2, errBatchProbe) {
				probed, r, err = probed2, r2, err2
			} else {
				err = fmt.Errorf("%w; with the constant shapes of %s opened too, %v", err, nodeList(r2.Reshapes), strings.TrimPrefix(err2.Error(), errBatchProbe.Error()+": "))
			}
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
	switch len(r.Reshapes) {
	case 0:
	case 1:
		msg += fmt.Sprintf("; %s, whose constant shape fixed the batch at 1, copies it from its input", nodeList(r.Reshapes))
	default:
		msg += fmt.Sprintf("; %s, whose constant shapes fixed the batch at 1, copy it from their inputs", nodeList(r.Reshapes))
	}
	fmt.Fprintf(e.stdout, "wrote %s: %s; %d rows run together answered as each alone\n", *rw.out, msg, batchProbeRows)
	fmt.Fprintf(e.stdout, "next: `genaic init %s` writes a starting document\n", *rw.out)
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

// checkBatching runs the model at orig on each of batchProbeRows rows
// alone, and the rewritten model at rewritten on them together, and
// reports errBatchProbe where the rows differ: the graph still fixes the
// batch somewhere (it fails on the batch, or mixes the rows). Each input
// the rewrite opened holds other values in every row; an input it left
// (a scalar, a table) is shared by the rows, as it is by the requests of
// a group. An input's other dynamic axes take probeOther.
func checkBatching(orig, rewritten string, g *onnx.Graph, r onnx.BatchRewrite) error {
	batched := map[string]bool{}
	for _, name := range r.Inputs {
		batched[name] = true
	}
	type probeInput struct {
		name, dtype string
		alone       []int64 // the shape of one row; rows add up along axis 0
		batched     bool
	}
	var inputs []probeInput
	total := int64(0)
	for _, v := range g.Inputs {
		if v.Initialized {
			continue
		}
		dt, ok := ir.LookupDType(v.DType())
		if !ok || dt.Name == "string" || !v.HasShape {
			return fmt.Errorf("input %s is %s %s, which the probe does not make; rewrite unprobed with --no-probe", v.Name, orUnknownDType(v.DType()), v.ShapeText())
		}
		in := probeInput{name: v.Name, dtype: dt.Name, alone: make([]int64, len(v.Dims)), batched: batched[v.Name]}
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
			return fmt.Errorf("the probe's inputs would hold more than %d elements; rewrite unprobed with --no-probe", maxBatchProbeElements)
		}
		inputs = append(inputs, in)
	}
	load := func(path string, b *ort.Backend) (backend.Session, error) {
		comp := &ir.Component{Name: "probe", Impl: ir.ImplONNX, Artifact: filepath.Base(path)}
		for _, in := range inputs {
			comp.Inputs = append(comp.Inputs, &ir.Port{Name: in.name})
		}
		for _, o := range r.Outputs {
			comp.Outputs = append(comp.Outputs, &ir.Port{Name: o})
		}
		return b.Load(comp, filepath.Dir(path))
	}
	b, err := ort.New(ort.Options{IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		return err
	}
	alone, err := load(orig, b)
	if err != nil {
		return err
	}
	defer alone.Close()
	together, err := load(rewritten, b)
	if err != nil {
		return fmt.Errorf("%w: ONNX Runtime refuses it: %v", errBatchProbe, err)
	}
	defer together.Close()

	// values makes the inputs of row (the rows together where row < 0).
	// A float holds a value of its row and position in [0, 1); an integer
	// or a bool, where varied, 1 or 2 (0 or 1) alternating by row and
	// position, else ones: a model that looks its integers up in a table
	// of two (token types) refuses the twos.
	values := func(row int, variedInts bool) (map[string]*backend.Tensor, error) {
		out := map[string]*backend.Tensor{}
		for _, in := range inputs {
			shape := append([]int64(nil), in.alone...)
			first, rows := row, 1
			switch {
			case !in.batched:
				first = 0 // shared: every row's call sees row 0's
			case row < 0:
				first, rows = 0, batchProbeRows
				shape[0] *= batchProbeRows
			}
			t, err := backend.NewTensor(in.dtype, shape)
			if err != nil {
				return nil, fmt.Errorf("input %s: %w", in.name, err)
			}
			per := backend.Elements(in.alone)
			for k := range t.Len() {
				rk, pos := int64(first)+k/max(per, 1), k%max(per, 1)
				if rows == 1 {
					rk = int64(first)
				}
				var x float64
				switch {
				case strings.HasPrefix(in.dtype, "float") || in.dtype == "bfloat16":
					x = math.Mod(float64(pos+1)*0.6180339887+float64(rk+1)*0.3819660113, 1)
				case !variedInts:
					x = 1
				case in.dtype == "bool":
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
	var lastErr error
	for _, variedInts := range []bool{true, false} {
		want := make([]map[string]*backend.Tensor, batchProbeRows)
		for row := range batchProbeRows {
			vals, err := values(row, variedInts)
			if err != nil {
				return err
			}
			if want[row], lastErr = alone.Run(context.Background(), vals, r.Outputs); lastErr != nil {
				break
			}
		}
		if lastErr != nil {
			continue // the model refuses these values: try ones
		}
		vals, err := values(-1, variedInts)
		if err != nil {
			return err
		}
		got, err := together.Run(context.Background(), vals, r.Outputs)
		if err != nil {
			return fmt.Errorf("%w: it fails on %d rows: %v", errBatchProbe, batchProbeRows, err)
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
	return fmt.Errorf("the model fails on the probe's inputs, a row of values in [0, 1) (integers 1 and 2, then ones): %v; rewrite unprobed with --no-probe", lastErr)
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
