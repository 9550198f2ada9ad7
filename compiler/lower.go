package compiler

import (
	"maps"

	"github.com/genaic/genaic/ir"
)

// Lower turns a decoded document into an IR module. It resolves every value
// a step reads with the structured-SSA scoping of DESIGN §2.1 and never
// reports: a name that does not resolve keeps ir.NoValue, and a name defined
// twice gets two values, for the check passes to report with positions.
func Lower(doc *Document, v DeclaredVersion) *ir.Module {
	l := &lowerer{m: ir.NewModule(), locs: map[ir.Location]ir.Loc{}}
	l.m.Schema, l.m.Major, l.m.Minor = v.Spelling, v.Major, v.Minor
	if doc.Pipeline != nil && doc.Pipeline.Workflow != nil {
		l.workflow(doc.Pipeline.Workflow)
	}
	if doc.Preprocessing != nil {
		l.programs(doc.Preprocessing)
	}
	return l.m
}

type lowerer struct {
	m    *ir.Module
	locs map[ir.Location]ir.Loc // one table entry per distinct location
}

type scope map[string]ir.ValueID

// loc records where n is written: its key when it has one, else its value.
func (l *lowerer) loc(n Node) ir.Loc {
	if n.Path == "" && !n.Pos.Known() {
		return 0
	}
	p := n.Caret()
	at := ir.Location{Line: p.Line, Col: p.Column, Path: n.Path}
	if loc, ok := l.locs[at]; ok {
		return loc
	}
	loc := l.m.AddLoc(at)
	l.locs[at] = loc
	return loc
}

func (l *lowerer) ref(s *String) ir.Ref {
	if s == nil {
		return ir.Ref{}
	}
	return ir.Ref{Name: s.Value, Loc: l.loc(s.Node)}
}

func (l *lowerer) use(s *String, sc scope) ir.Use {
	if s == nil {
		return ir.Use{ID: ir.NoValue}
	}
	id, ok := sc[s.Value]
	if !ok {
		id = ir.NoValue
	}
	return ir.Use{Name: s.Value, ID: id, Loc: l.loc(s.Node)}
}

func (l *lowerer) optUse(s *String, sc scope) *ir.Use {
	if s == nil {
		return nil
	}
	u := l.use(s, sc)
	return &u
}

func str(s *String) string {
	if s == nil {
		return ""
	}
	return s.Value
}

func (l *lowerer) workflow(w *Workflow) {
	if w.Manifest != nil {
		l.m.Manifest.Loc = l.loc(w.Manifest.Node)
		for _, e := range w.Manifest.AdapterABIs.Entries {
			l.m.Manifest.AdapterABIs = append(l.m.Manifest.AdapterABIs, ir.KV{Key: e.Key.Value, Value: e.Value.Value, Loc: l.loc(e.Value.Node)})
		}
		for _, c := range w.Manifest.Capabilities.Items {
			l.m.Manifest.Capabilities = append(l.m.Manifest.Capabilities, c.Value)
		}
	}
	sc := scope{}
	for _, e := range w.Inputs.Entries {
		l.input(e.Key.Value, e.Value, sc)
	}
	for _, e := range w.State.Entries {
		c := e.Value
		contract := l.contract(c.Contract)
		id := l.m.NewValue(e.Key.Value, ir.DefCell, contract, l.loc(c.Node))
		sc[e.Key.Value] = id
		cell := &ir.Cell{Name: e.Key.Value, Value: id, Contract: contract, Scope: str(c.Scope),
			Class: str(c.Class), Management: str(c.Management), ReleaseBoundary: str(c.ReleaseBoundary),
			ServiceGroup: str(c.ServiceGroup), Loc: l.loc(c.Node)}
		if c.Recurrence != nil {
			cell.Recurrence, cell.Next = c.Recurrence.Kind.Value, str(c.Recurrence.Next)
		}
		l.m.Cells = append(l.m.Cells, cell)
	}
	for i, e := range w.State.Entries {
		l.m.Cells[i].Initializer = l.use(e.Value.Initializer, sc)
	}
	for _, e := range w.Outputs.Entries {
		o := e.Value
		l.m.Outputs = append(l.m.Outputs, &ir.Output{Name: e.Key.Value, Contract: l.contract(o.Contract),
			Role: str(o.Role), Stage: str(o.Stage), Loc: l.loc(o.Node)})
	}
	for _, e := range w.Components.Entries {
		l.m.Components = append(l.m.Components, l.component(e.Key.Value, e.Value))
	}
	if w.Serving != nil {
		l.serving(w.Serving)
	}
	l.m.Body = l.block(w.Steps.Items, sc)
}

func (l *lowerer) input(name string, in Input, sc scope) {
	contract := l.contract(in.Contract)
	id := l.m.NewValue(name, ir.DefInput, contract, l.loc(in.Node))
	sc[name] = id
	x := &ir.Input{Name: name, Value: id, Contract: contract, HasDefault: in.Default != nil,
		PresentAs: str(in.PresentAs), Loc: l.loc(in.Node)}
	if in.Role != nil {
		x.Role, x.RuntimeRole, x.RoleVersion = in.Role.Kind.Value, str(in.Role.Role), str(in.Role.Version)
	}
	if in.Source != nil {
		x.Source, x.SourceArg = in.Source.Kind.Value, str(in.Source.Name)+str(in.Source.Path)
	}
	if in.Required != nil {
		r := in.Required.Value
		x.Required = &r
	}
	if es := in.ExternallySuppliable; es != nil {
		x.ExternallySuppliable, x.ExternalLoc = es.Value, l.loc(es.Node)
	}
	l.m.Inputs = append(l.m.Inputs, x)
}

func (l *lowerer) component(name string, c Component) *ir.Component {
	x := &ir.Component{Name: name, Loc: l.loc(c.Node)}
	if impl := c.Implementation; impl != nil {
		switch impl.Kind.Value {
		case "adapter":
			x.Impl = ir.ImplAdapter
		case "binding":
			x.Impl = ir.ImplBinding
		}
		x.Artifact, x.ABI, x.Version = str(impl.Artifact), str(impl.ABI), str(impl.Version)
	}
	if c.Ports != nil {
		for _, p := range c.Ports.Inputs.Entries {
			x.Inputs = append(x.Inputs, &ir.Port{Name: p.Key.Value, Contract: l.contract(&p.Value), Loc: l.loc(p.Value.Node)})
		}
		for _, p := range c.Ports.Outputs.Entries {
			x.Outputs = append(x.Outputs, &ir.Port{Name: p.Key.Value, Contract: l.contract(&p.Value), Loc: l.loc(p.Value.Node)})
		}
	}
	if bc := c.BatchCapacity; bc != nil {
		capa := &ir.Capacity{Loc: l.loc(bc.Node)}
		for _, u := range bc.UniformDimensions.Items {
			capa.Uniform = append(capa.Uniform, l.ref(&u))
		}
		for _, b := range bc.Budgets.Items {
			capa.Budgets = append(capa.Budgets, l.budget(b))
		}
		x.Capacity = capa
	}
	if rs := c.RowScope; rs != nil {
		x.RowScope = &ir.RowScope{Loc: l.loc(rs.Node)}
		if rs.Axis != nil {
			x.RowScope.Axis = rs.Axis.Value
			x.RowScope.Loc = l.loc(rs.Axis.Node)
		}
		if rs.Stateful != nil {
			x.RowScope.Stateful = rs.Stateful.Value
		}
	}
	return x
}

func (l *lowerer) budget(b Budget) ir.Budget {
	x := ir.Budget{Loc: l.loc(b.Node)}
	if b.Dimensions != nil {
		for _, d := range b.Dimensions.Items {
			x.Path = append(x.Path, l.ref(&d))
		}
	}
	if b.MaxTotal != nil {
		x.MaxTotal = b.MaxTotal.Value
	}
	return x
}

// contract lowers a tensor contract; a nil contract lowers to nil.
func (l *lowerer) contract(c *Contract) *ir.Contract {
	if c == nil {
		return nil
	}
	x := &ir.Contract{DType: str(c.DType), Rank: -1, Loc: l.loc(c.Node)}
	if c.DType != nil {
		x.DTypeLoc = l.loc(c.DType.Node)
	}
	if c.Shape != nil && c.Shape.KeyPos.Known() {
		x.HasShape = true
		x.Shape = make([]ir.Dim, 0, len(c.Shape.Items))
		for _, d := range c.Shape.Items {
			x.Shape = append(x.Shape, ir.Dim{Sym: d.Symbol, Size: d.Size, Loc: l.loc(d.Node)})
		}
		x.Rank = len(x.Shape)
	}
	if c.Rank != nil {
		// A written rank wins, so that a rank disagreeing with the shape
		// stays visible for contract/shape.
		x.RankLoc, x.Rank = l.loc(c.Rank.Node), int(c.Rank.Value)
	}
	if c.Optional != nil {
		x.Optional = c.Optional.Value
	}
	if bl := c.BatchLayout; bl != nil {
		x.Layout = l.layout(bl)
	}
	for _, p := range c.Padding.Items {
		x.Padding = append(x.Padding, ir.Padding{Dim: l.ref(p.Dimension), Lengths: l.ref(p.ValidLengths), Loc: l.loc(p.Node)})
	}
	return x
}

func (l *lowerer) layout(bl *BatchLayout) ir.Layout {
	kind, _ := ir.ParseLayoutKind(bl.Kind.Value)
	x := ir.Layout{Kind: kind, Loc: l.loc(bl.Node)}
	if bl.Axis != nil {
		x.Axis, x.AxisLoc = bl.Axis.Value, l.loc(bl.Axis.Node)
	}
	if bl.Factor != nil {
		x.Factor = bl.Factor.Value
	}
	for _, lv := range bl.Levels.Items {
		level := ir.Level{Offsets: l.ref(lv.Offsets), Owner: l.ref(lv.Owner), Loc: l.loc(lv.Node)}
		if lv.Extent != nil {
			level.Extent, _ = ir.ParseExtent(lv.Extent.Value)
		}
		x.Levels = append(x.Levels, level)
	}
	return x
}

func (l *lowerer) serving(s *Serving) {
	x := &ir.Serving{Active: l.ref(s.Active), Done: l.ref(s.Done), AcceptedLen: l.ref(s.AcceptedLen), Loc: l.loc(s.Node)}
	if s.StateService != nil {
		for _, g := range s.StateService.Groups.Entries {
			sg := ir.ServiceGroup{Name: g.Key.Value, Kind: str(g.Value.Kind), Layout: str(g.Value.Layout),
				Aliasing: str(g.Value.Aliasing), LogicalLengths: l.ref(g.Value.LogicalLengths), Loc: l.loc(g.Value.Node)}
			if g.Value.SequenceAxis != nil {
				a := g.Value.SequenceAxis.Value
				sg.SequenceAxis = &a
			}
			x.Groups = append(x.Groups, sg)
		}
	}
	l.m.Serving = x
}

// block lowers steps in sc, which it extends with what they define.
func (l *lowerer) block(steps []Step, sc scope) *ir.Block {
	b := &ir.Block{}
	for i := range steps {
		b.Steps = append(b.Steps, l.step(&steps[i], sc))
	}
	return b
}

func (l *lowerer) step(s *Step, sc scope) *ir.Step {
	op, _ := ir.ParseOp(s.Kind.Value)
	x := &ir.Step{Op: op, Loc: l.loc(s.Node)}
	switch op {
	case ir.OpInvoke:
		l.invoke(s, x, sc)
	case ir.OpEmit:
		x.Value, x.Output, x.Mode = l.use(s.Value, sc), l.ref(s.Output), str(s.Mode)
		x.When, x.ValidLength = l.optUse(s.When, sc), l.optUse(s.ValidLength, sc)
		if s.Axis != nil {
			a := s.Axis.Value
			x.Axis, x.AxisLoc = &a, l.loc(s.Axis.Node)
		}
	case ir.OpSequence:
		x.Body = l.block(s.Steps.Items, sc)
	case ir.OpBranch:
		l.branch(s, x, sc)
	case ir.OpLoop:
		l.loop(s, x, sc)
	}
	return x
}

func (l *lowerer) invoke(s *Step, x *ir.Step, sc scope) {
	x.Component = l.ref(s.Component)
	var contracts *ir.Component
	if s.Component != nil {
		contracts = l.m.Component(s.Component.Value)
	}
	for _, a := range s.Inputs.Entries {
		x.Args = append(x.Args, ir.Arg{Port: a.Key.Value, Value: l.use(&a.Value, sc), Loc: l.loc(a.Key.Node)})
	}
	for _, r := range s.InvokeOutputs.Entries {
		var c *ir.Contract
		if contracts != nil {
			if p := contracts.Output(r.Key.Value); p != nil {
				c = p.Contract
			}
		}
		id := l.m.NewValue(r.Value.Value, ir.DefInvoke, c, l.loc(r.Value.Node))
		x.Results = append(x.Results, ir.Result{Port: r.Key.Value, Value: id, Loc: l.loc(r.Key.Node)})
	}
	// Results become visible after every argument is read.
	for _, r := range x.Results {
		sc[l.m.Values[r.Value].Name] = r.Value
	}
}

func (l *lowerer) branch(s *Step, x *ir.Step, sc scope) {
	x.Predicate = l.use(s.Predicate, sc)
	inner := map[string]scope{}
	for _, c := range s.Cases.Entries {
		csc := maps.Clone(sc)
		x.Cases = append(x.Cases, ir.Case{Key: c.Key.Value, Body: l.block([]Step{c.Value}, csc), Loc: l.loc(c.Key.Node)})
		inner[c.Key.Value] = csc
	}
	dsc := maps.Clone(sc)
	if s.Default != nil {
		x.Default = l.block([]Step{*s.Default}, dsc)
	}
	var defs []ir.ValueID
	for _, o := range s.BranchOutputs.Entries {
		phi := ir.Phi{Loc: l.loc(o.Key.Node)}
		for _, c := range o.Value.Cases.Entries {
			csc, ok := inner[c.Key.Value]
			if !ok {
				csc = sc
			}
			phi.Inputs = append(phi.Inputs, ir.PhiInput{Key: c.Key.Value, Value: l.use(&c.Value, csc)})
		}
		phi.Default = l.optUse(o.Value.Default, dsc)
		phi.Value = l.m.NewValue(o.Key.Value, ir.DefPhi, nil, l.loc(o.Key.Node))
		x.Phis = append(x.Phis, phi)
		defs = append(defs, phi.Value)
	}
	for _, id := range defs {
		sc[l.m.Values[id].Name] = id
	}
}

func (l *lowerer) loop(s *Step, x *ir.Step, sc scope) {
	inner := maps.Clone(sc)
	if s.Setup.KeyPos.Known() {
		x.Setup = l.block(s.Setup.Items, inner)
	}
	if s.Iteration != nil {
		id := l.m.NewValue(s.Iteration.Value, ir.DefIteration, nil, l.loc(s.Iteration.Node))
		x.Iteration = &id
		inner[s.Iteration.Value] = id
	}
	x.Body = l.block(s.Steps.Items, inner)
	x.ContinueWhen = l.use(s.ContinueWhen, inner)
	if s.MaxIterations != nil {
		x.MaxIterations = s.MaxIterations.Value
	}
	for _, c := range s.Carried.Items {
		x.Carried = append(x.Carried, ir.Carry{Cell: l.ref(c.Cell), Initial: l.optUse(c.Initial, sc),
			Next: l.use(c.Next, inner), Loc: l.loc(c.Node)})
	}
}

func (l *lowerer) programs(p *Preprocessing) {
	for _, prog := range p.Programs() {
		x := &ir.Program{Modality: prog.Modality, Loc: l.loc(prog.Node)}
		for _, t := range prog.Transforms.Items {
			x.Transforms = append(x.Transforms, l.transform(t))
		}
		for _, o := range prog.Outputs.Items {
			x.Outputs = append(x.Outputs, ir.ProgramOutput{Name: str(o.Name), Source: str(o.Source), Content: str(o.Content),
				DType: str(o.DType), Contract: l.contract(o.Contract), Loc: l.loc(o.Node)})
		}
		l.m.Programs = append(l.m.Programs, x)
	}
}

func (l *lowerer) transform(t Transform) ir.Transform {
	x := ir.Transform{Op: t.Op.Value, Loc: l.loc(t.Node)}
	for _, s := range t.Inputs.Items {
		x.Inputs = append(x.Inputs, s.Value)
	}
	for _, s := range t.Outputs.Items {
		x.Outputs = append(x.Outputs, s.Value)
	}
	for _, p := range t.Params {
		x.Params = append(x.Params, l.param(p))
	}
	return x
}

// param lowers a transform parameter, keeping the YAML kind of each scalar
// so that the op table can type-check it.
func (l *lowerer) param(p Param) ir.Param {
	x := ir.Param{Key: p.Key, Loc: l.loc(p.Node)}
	if p.List == nil {
		x.Kind, x.Text = scalarKind(p.Value.Tag), p.Value.Value
		return x
	}
	x.Kind = ir.ParamList
	for _, it := range p.List.Items {
		x.Items = append(x.Items, ir.Param{Kind: scalarKind(it.Tag), Text: it.Value})
	}
	return x
}

func scalarKind(tag string) ir.ParamKind {
	switch tag {
	case "!!int":
		return ir.ParamInt
	case "!!float":
		return ir.ParamFloat
	case "!!bool":
		return ir.ParamBool
	}
	return ir.ParamString
}
