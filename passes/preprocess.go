package passes

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/ir"
)

// PreprocessPass checks that each preprocessing program runs on its pinned
// adapter and binds outputs whose contracts are the adapter's.
var PreprocessPass = &Pass{
	Name:     "preprocess",
	Doc:      "check preprocessing programs: each has its pinned adapter component and binds outputs whose contracts match the adapter's ports",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		m := c.Module
		for _, p := range m.Programs {
			adapter := preprocessAdapter(m, p.Modality)
			if adapter == nil {
				c.Report("preprocess/adapter", p.Loc, "preprocessing.%s has no adapter component to run it; declare a component with implementation { kind: adapter, abi: %s, version: \"1\" } and invoke it",
					p.Modality, preprocessABI(p.Modality))
				continue
			}
			preprocessBindings(c, p, adapter)
		}
		for _, comp := range m.Components {
			if comp.Impl != ir.ImplAdapter {
				continue
			}
			preprocessPin(c, comp)
			if mod, ok := preprocessModality(comp.ABI); ok && preprocessProgram(m, mod) == nil {
				c.Report("preprocess/adapter", comp.Loc, "component `%s` is the %s adapter, but the document has no preprocessing.%s program for it to run; add the program or remove the component",
					comp.Name, comp.ABI, mod)
			}
		}
		return nil, nil
	},
}

var preprocessModalities = []string{"image", "video", "audio"}

func preprocessABI(modality string) string { return "onnx-genai." + modality + "-preprocess" }

func preprocessModality(abi string) (string, bool) {
	for _, m := range preprocessModalities {
		if abi == preprocessABI(m) {
			return m, true
		}
	}
	return "", false
}

func preprocessAdapter(m *ir.Module, modality string) *ir.Component {
	for _, c := range m.Components {
		if c.Impl == ir.ImplAdapter && c.ABI == preprocessABI(modality) {
			return c
		}
	}
	return nil
}

func preprocessProgram(m *ir.Module, modality string) *ir.Program {
	for _, p := range m.Programs {
		if p.Modality == modality {
			return p
		}
	}
	return nil
}

// preprocessPin checks that the manifest pins the adapter's ABI at exactly
// the version the component asks for.
func preprocessPin(c *Context, comp *ir.Component) {
	pin, ok := ir.Get(c.Module.Manifest.AdapterABIs, comp.ABI)
	switch {
	case !ok:
		c.Report("preprocess/adapter", comp.Loc, "component `%s` uses adapter ABI %s version %q, but pipeline.workflow.manifest.adapter_abis does not pin it; add `%s: %q` to manifest.adapter_abis",
			comp.Name, comp.ABI, comp.Version, comp.ABI, comp.Version)
	case pin.Value != comp.Version:
		c.ReportRelated("preprocess/adapter", comp.Loc, []Related{{pin.Loc, fmt.Sprintf("the manifest pins %s at %q here", comp.ABI, pin.Value)}},
			"component `%s` asks for adapter ABI %s version %q, but the manifest pins version %q; an adapter is pinned exactly, so make the two agree",
			comp.Name, comp.ABI, comp.Version, pin.Value)
	}
}

// preprocessBindings compares each program output with the adapter output
// port it binds: the port whose invoke result carries the output's name, or
// failing an invoke, the port of the same name.
func preprocessBindings(c *Context, p *ir.Program, adapter *ir.Component) {
	bound := map[string]*ir.Port{}
	c.Module.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke && s.Component.Name == adapter.Name {
			for _, r := range s.Results {
				if port := adapter.Output(r.Port); port != nil {
					bound[c.Module.Values[r.Value].Name] = port
				}
			}
		}
		return true
	})
	for _, o := range p.Outputs {
		port := bound[o.Name]
		if port == nil {
			port = adapter.Output(o.Name)
		}
		if port == nil || o.Contract == nil || port.Contract == nil {
			continue
		}
		if diffs := contractDiffs(o.Contract, port.Contract); len(diffs) > 0 {
			c.ReportRelated("preprocess/binding", o.Loc, []Related{{port.Loc, fmt.Sprintf("output port `%s` of component `%s` is declared here", port.Name, adapter.Name)}},
				"preprocessing.%s output `%s` binds output port `%s` of adapter `%s`, but their contracts differ: %s; declare the same contract on both",
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
