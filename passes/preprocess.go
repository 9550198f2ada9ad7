package passes

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/preprocess"
)

// PreprocessPass compiles each preprocessing program for its pinned
// adapter, as the adapter will at run time, and checks that the outputs it
// binds have the adapter's contracts; then, while no check has reported an
// error, it loads each adapter as the runtime will (loadAdapters).
var PreprocessPass = &Pass{
	Name:       "preprocess",
	Doc:        "compile preprocessing programs: each has its pinned adapter component, uses only ops and parameters the adapter runs, binds every adapter output port once, with outputs whose contracts match the adapter's ports; then load each adapter as the runtime will, so that a port it cannot fill is refused at check",
	Kind:       Check,
	Requires:   []*Pass{ScopesPass, BindingsPass},
	Rules:      []diag.Rule{diag.PreprocessAdapter, diag.PreprocessBinding, diag.PreprocessOp, diag.PreprocessUnbound},
	ResultType: reflect.TypeFor[AdapterKeys](),
	Run: func(c *Context) (any, error) {
		m := c.Module
		bindings := c.Result(BindingsPass).(*Bindings)
		for _, p := range m.Programs {
			adapter := preprocess.AdapterOf(m, p.Modality)
			if adapter == nil {
				c.Report(diag.PreprocessAdapter, p.Loc, "preprocessing.%s has no adapter component to run it\ndeclare a component with implementation { kind: adapter, abi: %s, version: \"1\" } and invoke it",
					p.Modality, preprocess.ABI(p.Modality))
				continue
			}
			compiled, probs := preprocess.Compile(p, adapter, invokedPorts(bindings, adapter))
			for _, pr := range probs {
				c.ReportHelp(diag.Rule(pr.Rule), pr.Loc, pr.Help, "%s", pr.Message)
			}
			preprocessBindings(c, p, adapter, compiled.Ports)
		}
		for _, comp := range m.Components {
			if comp.Impl != ir.ImplAdapter {
				continue
			}
			preprocessPin(c, comp)
			if mod, ok := preprocess.ModalityOf(comp.ABI); ok && preprocess.ProgramOf(m, mod) == nil {
				c.Report(diag.PreprocessAdapter, comp.Loc, "component `%s` is the %s adapter, but the document has no preprocessing.%s program for it to run\nadd the program or remove the component",
					comp.Name, comp.ABI, mod)
			}
		}
		keys := AdapterKeys{}
		if !c.diags.HasErrors() {
			loadAdapters(c, keys)
		}
		return keys, nil
	},
}

// invokedPorts maps the names the invokes of adapter give its output
// ports' values onto the ports, from the bindings pass.
func invokedPorts(b *Bindings, adapter *ir.Component) map[string]string {
	out := map[string]string{}
	for _, port := range adapter.Outputs {
		for _, name := range b.ResultNames(adapter.Name, port.Name) {
			out[name] = port.Name
		}
	}
	return out
}

// preprocessPin checks that the manifest pins the adapter's ABI at exactly
// the version the component asks for.
func preprocessPin(c *Context, comp *ir.Component) {
	pin, ok := ir.Get(c.Module.Manifest.AdapterABIs, comp.ABI)
	switch {
	case !ok:
		c.Report(diag.PreprocessAdapter, comp.Loc, "component `%s` uses adapter ABI %s version %q, but pipeline.workflow.manifest.adapter_abis does not pin it\nadd `%s: %q` to manifest.adapter_abis",
			comp.Name, comp.ABI, comp.Version, comp.ABI, comp.Version)
	case pin.Value != comp.Version:
		c.ReportRelated(diag.PreprocessAdapter, comp.Loc, []Related{{pin.Loc, fmt.Sprintf("the manifest pins %s at %q here", comp.ABI, pin.Value)}},
			"component `%s` asks for adapter ABI %s version %q, but the manifest pins version %q; an adapter is pinned exactly\nmake the two agree",
			comp.Name, comp.ABI, comp.Version, pin.Value)
	}
}

// preprocessBindings compares each adapter output port with the program
// output that binds it (preprocess.Bind says which).
func preprocessBindings(c *Context, p *ir.Program, adapter *ir.Component, ports map[string]*ir.ProgramOutput) {
	for _, port := range adapter.Outputs {
		o := ports[port.Name]
		if o == nil || o.Contract == nil || port.Contract == nil {
			continue
		}
		if diffs := contractDiffs(o.Contract, port.Contract); len(diffs) > 0 {
			c.ReportRelated(diag.PreprocessBinding, o.Loc, []Related{{port.Loc, fmt.Sprintf("output port `%s` of component `%s` is declared here", port.Name, adapter.Name)}},
				"preprocessing.%s output `%s` binds output port `%s` of adapter `%s`, but their contracts differ: %s\ndeclare the same contract on both",
				p.Modality, o.Name, port.Name, adapter.Name, strings.Join(diffs, "; "))
		}
	}
}

// contractDiffs lists how two contracts that must be the same differ.
func contractDiffs(a, b *ir.Contract) []string {
	var out []string
	if !ir.SameDType(a.DType, b.DType) {
		out = append(out, fmt.Sprintf("dtype %s vs %s", a.DType, b.DType))
	}
	if a.HasShape && b.HasShape && shapeText(a.Shape) != shapeText(b.Shape) {
		out = append(out, fmt.Sprintf("shape %s vs %s", shapeText(a.Shape), shapeText(b.Shape)))
	} else if a.Rank >= 0 && b.Rank >= 0 && a.Rank != b.Rank {
		out = append(out, fmt.Sprintf("rank %d vs %d", a.Rank, b.Rank))
	}
	if a.Layout.Kind != b.Layout.Kind || a.Layout.Axis != b.Layout.Axis {
		out = append(out, fmt.Sprintf("batch layout %s vs %s", layoutText(a.Layout), layoutText(b.Layout)))
	}
	return out
}

func layoutText(l ir.Layout) string {
	switch l.Kind {
	case ir.Shared:
		return "shared"
	case ir.RequestExpanded:
		return fmt.Sprintf("request_expanded on axis %d (factor %d)", l.Axis, l.Factor)
	}
	return fmt.Sprintf("%s on axis %d", l.Kind, l.Axis)
}
