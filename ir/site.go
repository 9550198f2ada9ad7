package ir

import "fmt"

// SiteKind says what declares a contract.
type SiteKind uint8

// Contract sites.
const (
	SiteInput   SiteKind = iota // a workflow input
	SiteOutput                  // a workflow output
	SiteCell                    // a workflow state cell
	SitePortIn                  // a component input port
	SitePortOut                 // a component output port
	SiteProgram                 // a preprocessing program output
)

// Site is one declared contract and who declares it.
type Site struct {
	Kind      SiteKind
	Component *Component // ports
	Program   *Program   // program outputs
	Name      string
	Contract  *Contract
	Loc       Loc
}

// IsPort reports whether the site is a component port.
func (s *Site) IsPort() bool { return s.Kind == SitePortIn || s.Kind == SitePortOut }

// String names the site the way a message should.
func (s *Site) String() string {
	switch s.Kind {
	case SiteInput:
		return fmt.Sprintf("workflow input `%s`", s.Name)
	case SiteOutput:
		return fmt.Sprintf("workflow output `%s`", s.Name)
	case SiteCell:
		return fmt.Sprintf("state cell `%s`", s.Name)
	case SitePortIn:
		return fmt.Sprintf("input port `%s` of component `%s`", s.Name, s.Component.Name)
	case SitePortOut:
		return fmt.Sprintf("output port `%s` of component `%s`", s.Name, s.Component.Name)
	default:
		return fmt.Sprintf("preprocessing.%s output `%s`", s.Program.Modality, s.Name)
	}
}

// PortSite is the site of port p of component c; input says which side.
func PortSite(c *Component, p *Port, input bool) *Site {
	kind := SitePortOut
	if input {
		kind = SitePortIn
	}
	return &Site{Kind: kind, Component: c, Name: p.Name, Contract: p.Contract, Loc: p.Loc}
}

// Sites lists every declared contract of the module in document order:
// workflow inputs, outputs and state cells, each component's input then
// output ports, and each program's outputs. A declaration without a
// contract is no site.
func (m *Module) Sites() []*Site {
	var out []*Site
	add := func(s *Site) {
		if s.Contract != nil {
			out = append(out, s)
		}
	}
	// A nil entry is skipped: a module decoded from a hand-made plan may
	// hold one, and Verify, not Sites, is what refuses it.
	for _, in := range m.Inputs {
		if in != nil {
			add(&Site{Kind: SiteInput, Name: in.Name, Contract: in.Contract, Loc: in.Loc})
		}
	}
	for _, o := range m.Outputs {
		if o != nil {
			add(&Site{Kind: SiteOutput, Name: o.Name, Contract: o.Contract, Loc: o.Loc})
		}
	}
	for _, c := range m.Cells {
		if c != nil {
			add(&Site{Kind: SiteCell, Name: c.Name, Contract: c.Contract, Loc: c.Loc})
		}
	}
	for _, c := range m.Components {
		if c == nil {
			continue
		}
		for _, p := range c.Inputs {
			if p != nil {
				add(PortSite(c, p, true))
			}
		}
		for _, p := range c.Outputs {
			if p != nil {
				add(PortSite(c, p, false))
			}
		}
	}
	for _, p := range m.Programs {
		if p == nil {
			continue
		}
		for _, o := range p.Outputs {
			add(&Site{Kind: SiteProgram, Program: p, Name: o.Name, Contract: o.Contract, Loc: o.Loc})
		}
	}
	return out
}

// ProgramOutput returns the program output declaration behind a site, or
// nil.
func (s *Site) ProgramOutput() *ProgramOutput {
	if s == nil || s.Kind != SiteProgram {
		return nil
	}
	for i := range s.Program.Outputs {
		if s.Program.Outputs[i].Name == s.Name {
			return &s.Program.Outputs[i]
		}
	}
	return nil
}
