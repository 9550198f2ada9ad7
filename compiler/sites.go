package compiler

// SiteKind says what declares a contract.
type SiteKind int

// Where a contract can be declared.
const (
	SiteInput         SiteKind = iota // a workflow input
	SiteOutput                        // a workflow output
	SiteState                         // a workflow state cell
	SitePortIn                        // a component input port
	SitePortOut                       // a component output port
	SiteProgramOutput                 // a preprocessing program output
)

// ContractSite is one declared tensor contract and who declares it.
type ContractSite struct {
	Kind      SiteKind
	Component string // for ports
	Program   string // for program outputs: image, video or audio
	Name      string // the input, output, cell, port or program output name
	Contract  *Contract
}

// Describe names the site the way a message should.
func (s ContractSite) Describe() string {
	switch s.Kind {
	case SiteInput:
		return "workflow input `" + s.Name + "`"
	case SiteOutput:
		return "workflow output `" + s.Name + "`"
	case SiteState:
		return "state cell `" + s.Name + "`"
	case SitePortIn:
		return "input port `" + s.Name + "` of component `" + s.Component + "`"
	case SitePortOut:
		return "output port `" + s.Name + "` of component `" + s.Component + "`"
	default:
		return "preprocessing." + s.Program + " output `" + s.Name + "`"
	}
}

// ContractSites lists every contract of the document in document order.
//
// It is the front end's twin of ir.Module.Sites, kept on purpose: the v1.1
// feature gate runs on the YAML model before lowering (a document the gate
// refuses is never lowered), and it needs the YAML nodes of each contract's
// padding and levels to point at, which the IR does not keep.
func (d *Document) ContractSites() []ContractSite {
	var out []ContractSite
	if d.Pipeline != nil && d.Pipeline.Workflow != nil {
		out = d.Pipeline.Workflow.contractSites(out)
	}
	for _, prog := range d.Preprocessing.Programs() {
		for _, o := range prog.Outputs.Items {
			if o.Contract != nil && o.Name != nil {
				out = append(out, ContractSite{Kind: SiteProgramOutput, Program: prog.Modality, Name: o.Name.Value, Contract: o.Contract})
			}
		}
	}
	return out
}

func (w *Workflow) contractSites(out []ContractSite) []ContractSite {
	for _, e := range w.Inputs.Entries {
		out = appendSite(out, ContractSite{Kind: SiteInput, Name: e.Key.Value, Contract: e.Value.Contract})
	}
	for _, e := range w.Outputs.Entries {
		out = appendSite(out, ContractSite{Kind: SiteOutput, Name: e.Key.Value, Contract: e.Value.Contract})
	}
	for _, e := range w.State.Entries {
		out = appendSite(out, ContractSite{Kind: SiteState, Name: e.Key.Value, Contract: e.Value.Contract})
	}
	for _, c := range w.Components.Entries {
		if c.Value.Ports == nil {
			continue
		}
		ins, outs := c.Value.Ports.Inputs.Entries, c.Value.Ports.Outputs.Entries
		for i := range ins {
			out = appendSite(out, ContractSite{Kind: SitePortIn, Component: c.Key.Value, Name: ins[i].Key.Value, Contract: &ins[i].Value})
		}
		for i := range outs {
			out = appendSite(out, ContractSite{Kind: SitePortOut, Component: c.Key.Value, Name: outs[i].Key.Value, Contract: &outs[i].Value})
		}
	}
	return out
}

func appendSite(out []ContractSite, s ContractSite) []ContractSite {
	if s.Contract == nil {
		return out
	}
	return append(out, s)
}
