// Package irtext parses the text form of the IR that ir.Print writes back
// into an *ir.Module. It is the only package that imports participle, so
// that the IR itself depends on the standard library only.
package irtext

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/genaic/genaic/ir"
)

// Parse reads a module in the text form ir.Print writes. Errors carry the
// file name, line and column. Parse checks only what the text form itself
// needs (dense location table, site references that name a site with a
// contract, no repeated layout option); the IR's invariants are ir.Verify's
// business, so a text that parses may still fail Verify.
func Parse(filename string, src []byte) (*ir.Module, error) {
	f, err := textParser.ParseBytes(filename, src)
	if err != nil {
		return nil, err
	}
	c := &converter{m: ir.NewModule()}
	c.module(f)
	if c.err != nil {
		return nil, c.err
	}
	return c.m, nil
}

// Grammar returns the grammar of the text form in EBNF.
func Grammar() string { return textParser.String() }

type converter struct {
	m   *ir.Module
	err error
}

func (c *converter) fail(pos lexer.Position, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s: "+format, append([]any{pos}, args...)...)
	}
}

func (c *converter) module(f *file) {
	m := c.m
	m.Schema, m.Major, m.Minor = string(f.Schema), int(f.Major), int(f.Minor)
	c.locs(f.Locs)
	if f.Manifest != nil {
		m.Manifest = manifestOf(f.Manifest)
	}
	m.Inputs = mapAll(f.Inputs, inputOf)
	m.Cells = mapAll(f.Cells, cellOf)
	m.Outputs = mapAll(f.Outputs, outputOf)
	m.Components = mapAll(f.Components, componentOf)
	if f.Serving != nil {
		m.Serving = servingOf(f.Serving)
	}
	m.Programs = mapAll(f.Programs, programOf)
	c.values(f.Values)
	m.Body = blockOf(f.Body)
}

// mapAll converts every item, keeping an empty list nil as lowering does.
func mapAll[T, U any](xs []T, f func(T) U) []U {
	var out []U
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// locs rebuilds the location table, whose entries must be numbered
// consecutively from #1 (or from #0 when the unknown location is written).
func (c *converter) locs(es []*locEntry) {
	if len(es) > 0 && es[0].Index == 0 {
		c.m.Locs = c.m.Locs[:0]
	}
	for _, e := range es {
		if want := len(c.m.Locs); int(e.Index) != want {
			c.fail(e.Pos, "location #%d is out of order: the table numbers its entries consecutively, so write #%d here", e.Index, want)
			return
		}
		c.m.Locs = append(c.m.Locs, ir.Location{Line: int(e.Line), Col: int(e.Col), Path: string(e.Path)})
	}
}

func manifestOf(f *manifest) ir.Manifest {
	return ir.Manifest{
		AdapterABIs:  mapAll(f.ABIs, kvOf),
		Capabilities: mapAll(f.Capabilities, func(t text) string { return string(t) }),
		Loc:          ir.Loc(f.Loc),
	}
}

func kvOf(f *keyValue) ir.KV {
	return ir.KV{Key: string(f.Key), Value: string(f.Value), Loc: ir.Loc(f.Loc)}
}

func refOf(f ref) ir.Ref { return ir.Ref{Name: string(f.Name), Loc: ir.Loc(f.Loc)} }

func refPtrOf(f *ref) ir.Ref {
	if f == nil {
		return ir.Ref{}
	}
	return refOf(*f)
}

func useOf(f use) ir.Use {
	return ir.Use{Name: string(f.Name), ID: ir.ValueID(f.ID), Loc: ir.Loc(f.Loc)}
}

func optUseOf(f *use) *ir.Use {
	if f == nil {
		return nil
	}
	u := useOf(*f)
	return &u
}

func texts(ts []text) []string {
	return mapAll(ts, func(t text) string { return string(t) })
}

func inputOf(f *input) *ir.Input {
	in := &ir.Input{Name: string(f.Name), Value: ir.ValueID(f.Value), Contract: contractOf(f.Contract),
		HasDefault: f.Default, PresentAs: string(f.PresentAs), Loc: ir.Loc(f.Loc)}
	roleOf(f.Role, in)
	if s := f.Source; s != nil {
		in.Source = string(s.Kind)
		if s.Arg != nil {
			in.SourceArg = string(*s.Arg)
		}
	}
	if f.Required != nil {
		r := bool(*f.Required)
		in.Required = &r
	}
	if e := f.External; e != nil {
		in.ExternallySuppliable, in.ExternalLoc = bool(e.Value), ir.Loc(e.Loc)
	}
	return in
}

func roleOf(r *role, in *ir.Input) {
	if r == nil {
		return
	}
	in.Role, in.RoleVersion = string(r.Kind), string(r.Version)
	if r.Runtime != nil {
		in.RuntimeRole = string(*r.Runtime)
	}
}

func cellOf(f *cell) *ir.Cell {
	c := &ir.Cell{Name: string(f.Name), Value: ir.ValueID(f.Value), Contract: contractOf(f.Contract),
		Scope: string(f.Scope), Initializer: ir.Use{ID: ir.NoValue}, Recurrence: string(f.Recurrence),
		Next: string(f.Next), Class: string(f.Class), Management: string(f.Management),
		ReleaseBoundary: string(f.ReleaseBoundary), ServiceGroup: string(f.ServiceGroup), Loc: ir.Loc(f.Loc)}
	if f.Init != nil {
		c.Initializer = useOf(*f.Init)
	}
	return c
}

func outputOf(f *output) *ir.Output {
	return &ir.Output{Name: string(f.Name), Contract: contractOf(f.Contract), Role: string(f.Role),
		Stage: string(f.Stage), Loc: ir.Loc(f.Loc)}
}

func componentOf(f *component) *ir.Component {
	c := &ir.Component{Name: string(f.Name), Impl: implOf(f.Impl), Artifact: string(f.Artifact),
		ABI: string(f.ABI), Version: string(f.Version), Loc: ir.Loc(f.Loc)}
	c.Inputs = mapAll(f.Inputs, portOf)
	c.Outputs = mapAll(f.Outputs, portOf)
	if f.Capacity != nil {
		c.Capacity = capacityOf(f.Capacity)
	}
	if rs := f.RowScope; rs != nil {
		c.RowScope = &ir.RowScope{Axis: int64(rs.Axis), Stateful: rs.Stateful, Loc: ir.Loc(rs.Loc)}
	}
	return c
}

// implOf reads an implementation word; the grammar admits only the words
// of ir's table.
func implOf(s string) ir.ImplKind {
	for k := ir.ImplKind(0); k.String() != "?"; k++ {
		if k.String() == s {
			return k
		}
	}
	return 0
}

func portOf(f *port) *ir.Port {
	return &ir.Port{Name: string(f.Name), Contract: contractOf(f.Contract), Loc: ir.Loc(f.Loc)}
}

func capacityOf(f *capacity) *ir.Capacity {
	return &ir.Capacity{
		Uniform: mapAll(f.Uniform, func(r *ref) ir.Ref { return refOf(*r) }),
		Budgets: mapAll(f.Budgets, budgetOf),
		Loc:     ir.Loc(f.Loc),
	}
}

func budgetOf(f *budget) ir.Budget {
	return ir.Budget{Path: mapAll(f.Path, func(r *ref) ir.Ref { return refOf(*r) }),
		MaxTotal: int64(f.MaxTotal), Loc: ir.Loc(f.Loc)}
}

func servingOf(f *serving) *ir.Serving {
	return &ir.Serving{Active: refPtrOf(f.Active), Done: refPtrOf(f.Done), AcceptedLen: refPtrOf(f.AcceptedLen),
		Groups: mapAll(f.Groups, groupOf), Loc: ir.Loc(f.Loc)}
}

func groupOf(f *group) ir.ServiceGroup {
	g := ir.ServiceGroup{Name: string(f.Name), Kind: string(f.Kind), Layout: string(f.Layout),
		Aliasing: string(f.Aliasing), LogicalLengths: refPtrOf(f.LogicalLengths), Loc: ir.Loc(f.Loc)}
	if f.SequenceAxis != nil {
		a := int64(*f.SequenceAxis)
		g.SequenceAxis = &a
	}
	return g
}

func programOf(f *program) *ir.Program {
	return &ir.Program{Modality: string(f.Modality), Transforms: mapAll(f.Transforms, transformOf),
		Outputs: mapAll(f.Outputs, programOutputOf), Loc: ir.Loc(f.Loc)}
}

func transformOf(f *transform) ir.Transform {
	return ir.Transform{Op: string(f.Op), Inputs: texts(f.Inputs), Outputs: texts(f.Outputs),
		Params: mapAll(f.Params, paramOf), Loc: ir.Loc(f.Loc)}
}

func paramOf(f *param) ir.Param {
	if f.List {
		return ir.Param{Key: string(f.Key), Kind: ir.ParamList, Items: mapAll(f.Items, scalarOf), Loc: ir.Loc(f.Loc)}
	}
	p := scalarOf(f.Scalar)
	p.Key, p.Loc = string(f.Key), ir.Loc(f.Loc)
	return p
}

func scalarOf(f *paramScalar) ir.Param {
	return ir.Param{Kind: ir.ParamKind(f.Kind), Text: string(f.Text)}
}

func programOutputOf(f *programOutput) ir.ProgramOutput {
	return ir.ProgramOutput{Name: string(f.Name), Source: string(f.Source), Content: string(f.Content),
		DType: string(f.DType), Contract: contractOf(f.Contract), Loc: ir.Loc(f.Loc)}
}

// contractOf converts a contract; the rank is the shape's length (or -1
// without a shape) unless written.
func contractOf(f *contract) *ir.Contract {
	if f == nil {
		return nil
	}
	c := &ir.Contract{DType: string(f.DType), Rank: -1, Optional: f.Optional,
		Loc: ir.Loc(f.Loc), DTypeLoc: ir.Loc(f.DTypeLoc)}
	if f.Shape != nil {
		// A written shape is never nil, even when empty (a scalar).
		c.HasShape, c.Shape = true, append([]ir.Dim{}, mapAll(f.Shape.Dims, dimOf)...)
		c.Rank = len(c.Shape)
	}
	if f.Rank != nil {
		c.Rank, c.RankLoc = int(f.Rank.N), ir.Loc(f.Rank.Loc)
	}
	if f.Layout != nil {
		c.Layout = layoutOf(f.Layout)
	}
	c.Padding = mapAll(f.Padding, func(p *padding) ir.Padding {
		return ir.Padding{Dim: refOf(p.Dim), Lengths: refOf(p.Lengths), Loc: ir.Loc(p.Loc)}
	})
	return c
}

func dimOf(f *dim) ir.Dim {
	d := ir.Dim{Loc: ir.Loc(f.Loc)}
	if f.Sym != nil {
		d.Sym = string(*f.Sym)
	} else if f.Size != nil {
		d.Size = int64(*f.Size)
	}
	return d
}

func layoutOf(f *layout) ir.Layout {
	kind, _ := ir.ParseLayoutKind(f.Kind)
	l := ir.Layout{Kind: kind, Loc: ir.Loc(f.Loc)}
	if a := f.Args; a != nil {
		l.Axis, l.AxisLoc, l.Factor = int64(a.Axis), ir.Loc(a.AxisLoc), int64(a.Factor)
		l.Levels = mapAll(a.Levels, levelOf)
	}
	return l
}

func levelOf(f *level) ir.Level {
	ext, _ := ir.ParseExtent(f.Extent)
	return ir.Level{Offsets: refOf(f.Offsets), Owner: refOf(f.Owner), Extent: ext, Loc: ir.Loc(f.Loc)}
}
