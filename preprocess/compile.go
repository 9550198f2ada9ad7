package preprocess

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/genaic/genaic/ir"
)

// Op is one compiled transform: its table row, the value it reads and the
// value it defines, and its parameters parsed to their types.
type Op struct {
	*OpDef
	Modality string
	Index    int
	In, Out  string
	Loc      ir.Loc
	args     map[string]arg
	// Size, for resize, center_crop and pad, is the height and width the op
	// makes of an input of h×w pixels.
	Size func(h, w int) (int, int)
	// Timed says that the adapter reads each frame's time (a video adapter
	// with a timestamps input port), so that sample_frames samples by fps.
	Timed bool
}

// arg is a parsed parameter.
type arg struct {
	num  float64
	word string
	nums []float64
	flag bool
}

// Int returns an Int parameter, and whether it was written.
func (o *Op) Int(name string) (int, bool) {
	a, ok := o.args[name]
	return int(a.num), ok
}

// Ints returns an Int parameter, 0 when absent (for required ones).
func (o *Op) Ints(name string) int { n, _ := o.Int(name); return n }

// Number returns a Number parameter, and whether it was written.
func (o *Op) Number(name string) (float64, bool) {
	a, ok := o.args[name]
	return a.num, ok
}

// Word returns a Word parameter in the spelling kernels read (resize's
// interpolation "bilinear" when absent, decode's format "" for auto).
func (o *Op) Word(name string) (string, bool) {
	a, ok := o.args[name]
	return a.word, ok
}

// Bool returns a Bool parameter, and whether it was written.
func (o *Op) Bool(name string) (bool, bool) {
	a, ok := o.args[name]
	return a.flag, ok
}

// Numbers returns a Numbers parameter, nil when absent.
func (o *Op) Numbers(name string) []float64 { return o.args[name].nums }

// Program is a compiled preprocessing program.
type Program struct {
	Modality string
	// Timestamps is the video adapter's input port of frame times, or "".
	Timestamps string
	Ops        []*Op
	Shapes     map[string]Shape // every value a transform defines
	Last       string           // the value the last transform defines
	// Ports maps each output port of the adapter to the program output
	// that binds it.
	Ports map[string]*ir.ProgramOutput
}

// Source returns the value a program output reads: its source, or the
// last transform's value when it names none.
func (p *Program) Source(o *ir.ProgramOutput) string {
	if o.Source == "" {
		return p.Last
	}
	return o.Source
}

// Compile checks prog against what the built-in adapter of its modality
// runs, and binds adapter's output ports to its outputs. invoked maps the
// name of each value an invoke of the adapter binds an output port to onto
// that port: the check passes take it from their bindings pass, a runtime
// from InvokedPorts. The program is usable only when no problem is
// returned.
func Compile(prog *ir.Program, adapter *ir.Component, invoked map[string]string) (*Program, []Problem) {
	p := &Program{Modality: prog.Modality, Shapes: map[string]Shape{}}
	if p.Modality == "video" {
		p.Timestamps = TimestampsPort(adapter)
	}
	probs := p.transforms(prog)
	complete := len(probs) == 0
	var bprobs []Problem
	p.Ports, bprobs = Bind(prog, adapter, invoked)
	probs = append(probs, bprobs...)
	if complete {
		probs = append(probs, p.ports(prog, adapter)...)
	}
	return p, probs
}

// transforms compiles the transforms in order, stopping at the first that
// fails: what follows it would read a value of unknown shape.
func (p *Program) transforms(prog *ir.Program) []Problem {
	if len(prog.Transforms) == 0 {
		return []Problem{problem(RuleOp, prog.Loc, "preprocessing.%s has no transforms; the %s adapter starts from encoded bytes, so the first transform is `decode`", p.Modality, p.Modality)}
	}
	prev := ""
	for i, t := range prog.Transforms {
		op, probs := p.transform(i, t, prev)
		if len(probs) > 0 {
			return probs
		}
		p.Ops = append(p.Ops, op)
		prev = op.Out
	}
	p.Last = prev
	return nil
}

func (p *Program) transform(i int, t ir.Transform, prev string) (*Op, []Problem) {
	where := fmt.Sprintf("preprocessing.%s transform %d (%s)", p.Modality, i, t.Op)
	bad := func(loc ir.Loc, format string, args ...any) []Problem {
		if !strings.HasPrefix(format, ":") {
			format = " " + format
		}
		return []Problem{problem(RuleOp, loc, where+format, args...)}
	}
	def := Lookup(t.Op)
	switch {
	case def == nil:
		return nil, bad(t.Loc, "is not a preprocessing op; the %s adapter runs %s", p.Modality, strings.Join(Runs(p.Modality), ", "))
	case !def.RunBy(p.Modality):
		return nil, bad(t.Loc, "is not run by the %s adapter, which runs %s; %s", p.Modality, strings.Join(Runs(p.Modality), ", "), elsewhere(def, p.Modality))
	case i == 0 && t.Op != "decode":
		return nil, []Problem{problem(RuleOp, t.Loc, "preprocessing.%s starts with `%s`; the %s adapter starts from encoded bytes, so the first transform is `decode`", p.Modality, t.Op, p.Modality)}
	case i > 0 && t.Op == "decode":
		return nil, bad(t.Loc, "decodes again; the %s adapter decodes once, in the first transform", p.Modality)
	case len(t.Inputs) > 1 || len(t.Outputs) > 1:
		return nil, bad(t.Loc, "reads %d values and defines %d; the %s adapter runs transforms of one input and one output", len(t.Inputs), len(t.Outputs), p.Modality)
	}
	op := &Op{OpDef: def, Modality: p.Modality, Index: i, In: prev, Out: fmt.Sprintf("#%d", i), Loc: t.Loc, Timed: p.Timestamps != ""}
	if len(t.Inputs) == 1 {
		op.In = t.Inputs[0]
	}
	if len(t.Outputs) == 1 {
		op.Out = t.Outputs[0]
	}
	in, ok := p.Shapes[op.In]
	if i > 0 && !ok {
		return nil, bad(t.Loc, "reads `%s`, which no earlier transform defines\nname an earlier transform's output", op.In)
	}
	if probs := op.parse(t, where); len(probs) > 0 {
		return nil, probs
	}
	if err := seqReads(t.Op, in); err != nil {
		return nil, bad(t.Loc, "%v", err)
	}
	out, err := def.shape(op, in)
	if err != nil {
		if pe, ok := err.(*paramError); ok {
			if x, found := t.Param(pe.param); found {
				return nil, bad(x.Loc, ": %v", err)
			}
		}
		return nil, bad(t.Loc, "%v", err)
	}
	p.Shapes[op.Out] = out
	return op, nil
}

// elsewhere says why an op the adapter of modality does not run is
// refused: no adapter runs it yet, or it belongs to other programs.
func elsewhere(d *OpDef, modality string) string {
	const notYet = "no built-in adapter runs it yet\nremove it, or prepare this input outside the package"
	switch {
	case slices.Contains(d.Modalities, modality):
		return notYet
	case len(d.Runs) == 0:
		return "it is an op of " + strings.Join(d.Modalities, " and ") + " programs, and " + notYet
	}
	return "it is an op of " + strings.Join(d.Modalities, " and ") + " programs"
}

// parse type-checks the written parameters against the table and keeps
// them parsed.
func (o *Op) parse(t ir.Transform, where string) []Problem {
	o.args = map[string]arg{}
	var probs []Problem
	for _, x := range t.Params {
		spec := o.Param(x.Key)
		if spec == nil {
			probs = append(probs, problem(RuleOp, x.Loc, "%s takes no parameter `%s`; it takes %s", where, x.Key, o.paramNames()))
			continue
		}
		a, err := spec.parse(x)
		if err != nil {
			probs = append(probs, problem(RuleOp, x.Loc, "%s: %v", where, err))
			continue
		}
		o.args[x.Key] = a
	}
	for _, spec := range o.Params {
		if _, ok := o.args[spec.Name]; spec.Required && !ok && len(probs) == 0 {
			probs = append(probs, problem(RuleOp, t.Loc, "%s has no `%s`\nwrite it, %s", where, spec.Name, spec.Type))
		}
	}
	return probs
}

// parse reads a written parameter as the type the table gives it.
func (p *Param) parse(x ir.Param) (arg, error) {
	wrong := fmt.Errorf("`%s` must be %s, read the %s %q", p.Name, p.Type, x.Kind, paramText(x))
	switch p.Type {
	case Int:
		n, err := strconv.ParseInt(x.Text, 0, 32)
		if x.Kind != ir.ParamInt || err != nil {
			return arg{}, wrong
		}
		return arg{num: float64(n)}, p.inRange(float64(n))
	case Number:
		v, ok := number(x)
		if !ok {
			return arg{}, wrong
		}
		return arg{num: v}, p.inRange(v)
	case Word:
		w, ok := p.Words[strings.ToLower(x.Text)]
		if x.Kind != ir.ParamString || !ok {
			return arg{}, fmt.Errorf("`%s` is %q\nwrite one of %s", p.Name, paramText(x), strings.Join(sortedKeys(p.Words), ", "))
		}
		return arg{word: w}, nil
	case Bool:
		b, err := strconv.ParseBool(strings.ToLower(x.Text))
		if x.Kind != ir.ParamBool || err != nil {
			return arg{}, wrong
		}
		return arg{flag: b}, nil
	}
	return p.parseNumbers(x, wrong)
}

func (p *Param) parseNumbers(x ir.Param, wrong error) (arg, error) {
	if x.Kind != ir.ParamList || len(x.Items) == 0 {
		return arg{}, wrong
	}
	a := arg{nums: make([]float64, len(x.Items))}
	for i, it := range x.Items {
		v, ok := number(it)
		if !ok {
			return arg{}, fmt.Errorf("`%s` holds the %s %q at index %d; it must be a list of finite numbers", p.Name, it.Kind, it.Text, i)
		}
		a.nums[i] = v
	}
	return a, nil
}

// number reads a finite int or float scalar.
func number(x ir.Param) (float64, bool) {
	if x.Kind != ir.ParamInt && x.Kind != ir.ParamFloat {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(x.Text, "_", ""), 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

func (p *Param) inRange(v float64) error {
	if p.Positive && v <= 0 {
		return fmt.Errorf("`%s` is %g; it must be a positive %s", p.Name, v, map[Type]string{Int: "integer", Number: "number"}[p.Type])
	}
	return nil
}

func paramText(x ir.Param) string {
	if x.Kind != ir.ParamList {
		return x.Text
	}
	items := make([]string, len(x.Items))
	for i, it := range x.Items {
		items[i] = it.Text
	}
	return "[" + strings.Join(items, ", ") + "]"
}
