package passes

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/plan"
)

// Models gives the models pass the graphs of a package's ONNX components.
// The pass sees graphs only through it, so it is tested without files.
type Models interface {
	// Graph returns the graph of the model at artifact, a path relative
	// to the package folder as the document writes it. The error wraps
	// fs.ErrNotExist for an absent file and onnx.ErrNotONNX for a file
	// that is not an ONNX model.
	Graph(artifact string) (*onnx.Graph, error)
}

// DirModels reads models from a package folder, each file once.
type DirModels struct {
	Dir   string
	mu    sync.Mutex
	cache map[string]dirModel
}

type dirModel struct {
	g   *onnx.Graph
	err error
}

// NewDirModels reads the models of the package in dir.
func NewDirModels(dir string) *DirModels { return &DirModels{Dir: dir} }

// Graph reads the model at artifact, relative to the folder.
func (d *DirModels) Graph(artifact string) (*onnx.Graph, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.cache[artifact]; ok {
		return m.g, m.err
	}
	path := filepath.FromSlash(artifact)
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.Dir, path)
	}
	g, err := onnx.Read(path)
	if d.cache == nil {
		d.cache = map[string]dirModel{}
	}
	d.cache[artifact] = dirModel{g, err}
	return g, err
}

// ModelGraphs is the result of the models pass: the graph of each ONNX
// component whose model could be read, by component name.
type ModelGraphs struct {
	Graphs map[string]*onnx.Graph
}

// Graph returns the graph of component, or nil (also on a nil receiver).
func (r *ModelGraphs) Graph(component string) *onnx.Graph {
	if r == nil {
		return nil
	}
	return r.Graphs[component]
}

// ModelsPass checks each ONNX component against its model (§3.8).
//
// A port whose graph value is missing is not compared further, and the
// lengths companion of a padded port that the graph lacks is reported once,
// as model/lengths-unseen, not also as a port the graph lacks. Ports with a
// dtype genaic does not know are left to contract/dtype.
var ModelsPass = &Pass{
	Name:       "models",
	Doc:        "check each ONNX component against its model (see docs/authoring.md#checked-against-its-models): every port a graph input or output of the same dtype, rank and fixed extents, every required graph input declared, every padded input's lengths taken by the graph, no grouped input's request axis fixed at other than one request's rows, nor its packed axis fixed",
	Kind:       Check,
	Requires:   []*Pass{ScopesPass, BindingsPass},
	ResultType: reflect.TypeFor[*ModelGraphs](),
	Rules: []diag.Rule{
		diag.ModelMissing, diag.ModelPort, diag.ModelDType, diag.ModelShape, diag.ModelLengthsUnseen,
	},
	Run: func(c *Context) (any, error) {
		res := &ModelGraphs{Graphs: map[string]*onnx.Graph{}}
		if c.opts.Models == nil {
			return res, nil
		}
		for _, comp := range c.Module.Components {
			if comp.Impl != ir.ImplONNX || comp.Artifact == "" {
				continue
			}
			g, err := c.opts.Models.Graph(comp.Artifact)
			if err != nil {
				modelMissing(c, comp, err)
				continue
			}
			res.Graphs[comp.Name] = g
			(&modelChecker{c: c, sc: c.Result(ScopesPass).(*Scopes), bind: c.Result(BindingsPass).(*Bindings), comp: comp, g: g, bound: map[string]symBinding{}}).check()
		}
		return res, nil
	},
}

// modelMissing reports a model that cannot be read: an error when the
// package's models are required, else a warning.
func modelMissing(c *Context, comp *ir.Component, err error) {
	var what, fix string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what, fix = "is absent", "put the model there, or correct `artifact`"
	case errors.Is(err, onnx.ErrNotONNX):
		why := strings.TrimPrefix(err.Error(), onnx.ErrNotONNX.Error()+": ")
		what, fix = fmt.Sprintf("is not an ONNX model (%s)", why), "point `artifact` at the component's .onnx file"
	default:
		what, fix = fmt.Sprintf("cannot be read (%v)", err), "make the file readable"
	}
	format := "component `%s` names model `%s`, which %s, so its ports cannot be checked against the graph"
	if c.opts.ModelsRequired {
		c.Report(diag.ModelMissing, comp.Loc, format+"\n%s", comp.Name, comp.Artifact, what, fix)
		return
	}
	c.Warn(diag.ModelMissing, comp.Loc, format+" (checking the package folder, or `compile`, makes this an error)\n%s", comp.Name, comp.Artifact, what, fix)
}

type modelChecker struct {
	c    *Context
	sc   *Scopes
	bind *Bindings
	comp *ir.Component
	g    *onnx.Graph
	// bound is the literal extent each shape symbol met first in the
	// graph, so that a second, different one is reported.
	bound map[string]symBinding
}

type symBinding struct {
	size int64
	loc  ir.Loc
	port string
}

func (m *modelChecker) check() {
	unseen := m.lengthsUnseen()
	declared := map[string]bool{}
	for _, p := range m.comp.Inputs {
		declared[p.Name] = true
	}
	// A port the graph lacks is suggested the graph's undeclared inputs
	// first; the input it is most likely a misspelling of is then not
	// reported again as undeclared.
	var undeclared []onnx.Value
	for _, in := range m.g.Inputs {
		if !in.Initialized && !declared[in.Name] {
			undeclared = append(undeclared, in)
		}
	}
	explained := map[string]bool{}
	for _, p := range m.comp.Inputs {
		if unseen[p.Name] {
			continue
		}
		if near := m.port(p, "input", m.g.Input(p.Name), undeclared, m.g.Inputs, m.g.Outputs); near != "" {
			explained[near] = true
		}
	}
	for _, p := range m.comp.Outputs {
		m.port(p, "output", m.g.Output(p.Name), nil, m.g.Outputs, m.g.Inputs)
	}
	m.groupAxes()
	for _, in := range undeclared {
		if explained[in.Name] {
			continue
		}
		m.c.Report(diag.ModelPort, m.comp.Loc,
			"the graph of component `%s` (%s) requires input `%s` (%s %s), which no input port declares; ONNX Runtime refuses to run it without one\ndeclare `%s` under the component's ports.inputs and bind it in the invoke",
			m.comp.Name, m.comp.Artifact, in.Name, orAny(in.DType()), in.ShapeText(), in.Name)
	}
}

// groupAxes reports, for a component that groups requests, every
// input whose rows stack on an axis (request_aligned, request_expanded)
// that the graph fixes at other than one request's rows: grouped, such a
// component can run no request at all, and the runtime refuses to load
// it. Fixed at exactly one request's rows, the graph runs one request per
// invocation, which the runtime does without grouping (it says why in
// its stats): that is no error. Likewise a token_packed input whose
// packed axis the graph fixes (a model exported with its example's token
// count): a group's items are concatenated there, so only a group whose
// units happen to add up to that extent could run. A companion is
// recomputed for the group and judged with its port; an axis the
// contract fixes itself is compared with the graph by port.
func (m *modelChecker) groupAxes() {
	if m.comp.Capacity == nil {
		return
	}
	pl := &planner{sc: m.sc, comp: m.comp, serves: map[string]*plan.Serves{}, bind: m.bind}
	pl.markCompanions(m.comp.Inputs, ir.SitePortIn)
	for _, p := range m.comp.Inputs {
		k, v := p.Contract, m.g.Input(p.Name)
		if k == nil || v == nil || pl.serves[sideKey(ir.SitePortIn, p.Name)] != nil {
			continue
		}
		rows, axis := int64(1), int(k.Layout.Axis)
		switch k.Layout.Kind {
		case ir.RequestAligned:
		case ir.RequestExpanded:
			rows = max(k.Layout.Factor, 1)
		case ir.TokenPacked:
			rows, axis = 0, 0
		default:
			continue
		}
		fixed, ok := v.Fixed(axis)
		if !ok || fixed == rows {
			continue
		}
		if k.HasShape && axis < len(k.Shape) && !k.Shape[axis].IsSym() {
			continue
		}
		loc := packedLoc(k.Layout.AxisLoc, k.Layout.Loc, k.Loc, p.Loc)
		if rows == 0 {
			m.c.Report(diag.ModelShape, loc,
				"input port `%s` of component `%s` concatenates the units of a group's items on axis 0 (token_packed), but its graph (%s) fixes that axis at %d (shape %s): only a group whose units add up to exactly %d could run\nexport the model with axis 0 dynamic",
				p.Name, m.comp.Name, m.comp.Artifact, fixed, v.ShapeText(), fixed)
			continue
		}
		m.c.Report(diag.ModelShape, loc,
			"input port `%s` of component `%s` stacks the requests of a group on axis %d (%s: one request brings %d row(s) there), but its graph (%s) fixes that axis at %d (shape %s): no request could run\nexport the model with axis %d dynamic (or fixed at %d, which runs one request per invocation)",
			p.Name, m.comp.Name, axis, k.Layout.Kind, rows, m.comp.Artifact, fixed, v.ShapeText(), axis, rows)
	}
}

// lengthsUnseen reports every padded input port whose valid_lengths the
// graph does not take, and returns the names of those companions.
func (m *modelChecker) lengthsUnseen() map[string]bool {
	unseen := map[string]bool{}
	for _, p := range m.comp.Inputs {
		if p.Contract == nil {
			continue
		}
		for _, pad := range p.Contract.Padding {
			name := pad.Lengths.Name
			if name == "" || name == p.Name || m.g.Input(name) != nil {
				continue
			}
			if _, ok := m.sc.Lookup(ir.PortSite(m.comp, p, true), name); !ok {
				continue // padding/unresolved
			}
			if m.comp.Input(name) != nil {
				unseen[name] = true
			}
			rewrite := ""
			if i := slices.IndexFunc(m.g.Inputs, func(v onnx.Value) bool { return strings.Contains(strings.ToLower(v.Name), "mask") }); i >= 0 {
				rewrite = fmt.Sprintf("; `genaic mask-lengths %s -o NEW.onnx` rewrites this one, which takes the mask `%s`, to take lengths", m.comp.Artifact, m.g.Inputs[i].Name)
			}
			m.c.Report(diag.ModelLengthsUnseen, packedLoc(pad.Lengths.Loc, pad.Loc, p.Loc),
				"input port `%s` of component `%s` is padded on `%s` with valid_lengths `%s`, but the graph (%s) takes no input `%s`%s: the model cannot mask the padding, so grouping items of different `%s` could change a request's result\ndrop the padding (items then group only when `%s` agrees: list it in uniform_dimensions) or use a model that takes the lengths%s",
				p.Name, m.comp.Name, pad.Dim.Name, name, m.comp.Artifact, name, graphNamesHint("inputs", name, m.g.Inputs), pad.Dim.Name, pad.Dim.Name, rewrite)
		}
	}
	return unseen
}

// port compares one declared port with its graph value v. A port the graph
// lacks is reported with the closest names of first (when any), else of
// same; the closest name of first is returned.
func (m *modelChecker) port(p *ir.Port, side string, v *onnx.Value, first, same, other []onnx.Value) string {
	if v == nil {
		msg := fmt.Sprintf("%s port `%s` of component `%s` is not an %s of its graph (%s)", side, p.Name, m.comp.Name, side, m.comp.Artifact)
		near, help := "", ""
		if find(other, p.Name) != nil {
			msg += fmt.Sprintf(", but an %s of it", otherSide(side))
			help = fmt.Sprintf("declare it under ports.%ss", otherSide(side))
		} else if len(first) > 0 {
			msg = withinParens(msg, graphNamesHint("inputs no port declares", p.Name, first)) + "; a port carries the graph's own name"
			near = diag.Closest(p.Name, names(first), 1)[0]
			help = diag.JoinHelp(diag.DidYouMean(p.Name, names(first)), "rename the port (and its bindings)")
		} else {
			msg = withinParens(msg, graphNamesHint(side+"s", p.Name, same)) + "; a port carries the graph's own name"
			help = diag.JoinHelp(diag.DidYouMean(p.Name, names(same)), "rename the port (and its bindings)")
		}
		m.c.ReportHelp(diag.ModelPort, p.Loc, help, "%s", msg)
		return near
	}
	k := p.Contract
	if k == nil {
		return ""
	}
	site := fmt.Sprintf("%s port `%s` of component `%s`", side, p.Name, m.comp.Name)
	if v.NotTensor != "" {
		fix := "leave the port out: a graph output may go undeclared"
		if side == "input" {
			fix = "export the model with a tensor input there"
		}
		m.c.Report(diag.ModelDType, packedLoc(k.DTypeLoc, k.Loc, p.Loc),
			"%s declares a tensor, but its graph (%s) has `%s` as a %s: genaic carries tensors only\n%s",
			site, m.comp.Artifact, v.Name, v.NotTensor, fix)
		return ""
	}
	if _, known := ir.LookupDType(k.DType); known && v.ElemType != 0 && !ir.SameDType(k.DType, v.DType()) && !m.misdeclaredLengths(p, v) {
		m.c.Report(diag.ModelDType, packedLoc(k.DTypeLoc, k.Loc, p.Loc),
			"%s declares dtype %s, but its graph (%s) has `%s` as %s\ndeclare `dtype: %s` (or convert the model)",
			site, k.DType, m.comp.Artifact, v.Name, v.DType(), v.DType())
	}
	if !k.HasShape && k.Rank < 0 || !v.HasShape {
		return ""
	}
	rank := k.Rank
	if k.HasShape {
		rank = len(k.Shape)
	}
	if rank != len(v.Dims) {
		at := k.RankLoc
		if k.HasShape && len(k.Shape) > 0 {
			at = packedLoc(at, k.Shape[0].Loc)
		}
		m.c.Report(diag.ModelShape, packedLoc(at, k.Loc, p.Loc),
			"%s has rank %d, but its graph (%s) has `%s` with rank %d, shape %s\ndeclare the graph's shape",
			site, rank, m.comp.Artifact, v.Name, len(v.Dims), v.ShapeText())
		return ""
	}
	if !k.HasShape {
		return ""
	}
	for i, d := range k.Shape {
		gd := v.Dims[i]
		if !gd.Literal {
			continue
		}
		loc := packedLoc(d.Loc, k.Loc, p.Loc)
		if !d.IsSym() {
			if d.Size != gd.Value {
				m.c.Report(diag.ModelShape, loc,
					"%s fixes axis %d to %d, but its graph (%s) fixes it to %d (shape %s)\ndeclare %d",
					site, i, d.Size, m.comp.Artifact, gd.Value, v.ShapeText(), gd.Value)
			}
			continue
		}
		prev, seen := m.bound[d.Sym]
		if !seen {
			m.bound[d.Sym] = symBinding{size: gd.Value, loc: loc, port: p.Name}
			continue
		}
		if prev.size != gd.Value {
			m.c.ReportRelated(diag.ModelShape, loc,
				[]Related{{Loc: prev.loc, Message: fmt.Sprintf("here the graph fixes `%s` to %d (port `%s`)", d.Sym, prev.size, prev.port)}},
				"%s puts shape symbol `%s` on axis %d, which its graph (%s) fixes to %d, but the graph fixes `%s` to %d on port `%s`; one symbol is one extent\nuse two symbols, or correct the model",
				site, d.Sym, i, m.comp.Artifact, gd.Value, d.Sym, prev.size, prev.port)
		}
	}
	return ""
}

// misdeclaredLengths reports whether p is the valid_lengths of a sibling
// port, declared other than int64 where the graph takes int64:
// padding/companion reports that one mistake, with the same fix.
func (m *modelChecker) misdeclaredLengths(p *ir.Port, v *onnx.Value) bool {
	if !ir.SameDType(v.DType(), "int64") {
		return false
	}
	for _, q := range m.comp.Inputs {
		if q.Contract != nil && slices.ContainsFunc(q.Contract.Padding, func(pd ir.Padding) bool { return pd.Lengths.Name == p.Name }) {
			return true
		}
	}
	return false
}

// withinParens adds hint, " (…)", inside the parentheses msg ends with:
// "its graph (a.onnx; the graph's outputs: `b`)".
func withinParens(msg, hint string) string {
	if !strings.HasSuffix(msg, ")") {
		return msg + hint
	}
	return strings.TrimSuffix(msg, ")") + "; " + strings.TrimPrefix(hint, " (")
}

// graphNamesHint lists the graph's names closest to name, for a message.
func graphNamesHint(what, name string, vs []onnx.Value) string {
	near := diag.Closest(name, names(vs), 3)
	if len(near) == 0 {
		return fmt.Sprintf(" (the graph has no %s)", what)
	}
	quoted := make([]string, len(near))
	for i, n := range near {
		quoted[i] = "`" + n + "`"
	}
	lead := "the graph's " + what + " closest to it"
	if len(near) == len(vs) {
		lead = "the graph's " + what
	}
	return fmt.Sprintf(" (%s: %s)", lead, strings.Join(quoted, ", "))
}

func names(vs []onnx.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

func find(vs []onnx.Value, name string) *onnx.Value {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}

func otherSide(side string) string {
	if side == "input" {
		return "output"
	}
	return "input"
}

func orAny(dtype string) string {
	if dtype == "" {
		return "any dtype"
	}
	return dtype
}
