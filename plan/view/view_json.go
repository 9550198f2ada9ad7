package view

import (
	"encoding/json"
	"io"

	"github.com/genaic/genaic/plan"
)

// InspectFormat names the JSON view of a plan (`genaic inspect --format
// json`), so that it is never taken for a plan file: plan.Decode refuses
// it by its "format".
const InspectFormat = "genaic-inspect"

// inspectView is the JSON view: the plan's decisions keyed by component and
// port name, for tools that look up one port without walking lists. It
// says the same as the text view; docs/plan.md is its reference.
type inspectView struct {
	Format        string                       `json:"format"`
	PlanVersion   int                          `json:"plan_version"`
	SchemaVersion string                       `json:"schema_version"`
	Source        string                       `json:"source"`
	Components    map[string]*inspectComponent `json:"components"`
}

type inspectComponent struct {
	Grouped  bool                   `json:"grouped"`
	Why      string                 `json:"why"`
	Artifact *inspectArtifact       `json:"artifact,omitempty"`
	Inputs   map[string]inspectPort `json:"inputs"`
	Outputs  map[string]inspectPort `json:"outputs"`
	// The compatibility key.
	Uniform       []string               `json:"uniform"`
	UniformFrom   map[string]inspectRead `json:"uniform_from"`
	SharedEqual   []string               `json:"shared_equal"`
	KeyedBy       []string               `json:"keyed_by,omitempty"`
	Compatibility string                 `json:"compatibility,omitempty"`
	Budgets       []inspectBudget        `json:"budgets"`
}

type inspectArtifact struct {
	Path    string   `json:"path"`
	SHA256  string   `json:"sha256,omitempty"`
	Missing bool     `json:"missing,omitempty"`
	Ops     []string `json:"ops,omitempty"`
}

// inspectPort is an input (Role set) or an output (Split set).
type inspectPort struct {
	Role      plan.Role      `json:"role,omitempty"`
	Split     plan.Split     `json:"split,omitempty"`
	Axis      *int           `json:"axis,omitempty"`
	Factor    int64          `json:"factor,omitempty"`
	Levels    int            `json:"levels,omitempty"`
	Ownership []plan.Level   `json:"ownership,omitempty"`
	Padded    []string       `json:"padded"`
	Padding   []plan.Pad     `json:"padding,omitempty"`
	Serves    *inspectServes `json:"serves,omitempty"`
	Delivery  string         `json:"delivery,omitempty"`
	Why       string         `json:"why"`
}

// inspectServes is Serves with the level always written for offsets and
// owner companions (level 0 included).
type inspectServes struct {
	Port      string `json:"port"`
	Role      string `json:"role"`
	Level     *int   `json:"level,omitempty"`
	Dimension string `json:"dimension,omitempty"`
}

type inspectRead struct {
	Port string `json:"port"`
	Axis int    `json:"axis"`
}

type inspectBudget struct {
	Dimensions []string    `json:"dimensions"`
	MaxTotal   int64       `json:"max_total"`
	Footprint  string      `json:"footprint"`
	Terms      []plan.Term `json:"terms"`
	MinItem    int64       `json:"min_item"`
	Why        string      `json:"why"`
}

// WriteJSON writes the JSON view of a plan: per component, whether it is
// grouped, each input's role, levels and padded symbols, each output's
// split, the compatibility key and the budgets, each decision with its why.
// The output is deterministic: objects are keyed by name, lists keep the
// plan's order.
func WriteJSON(w io.Writer, f *plan.File) error {
	v := inspectView{
		Format:        InspectFormat,
		PlanVersion:   f.PlanVersion,
		SchemaVersion: f.SchemaVersion,
		Source:        f.Source,
		Components:    map[string]*inspectComponent{},
	}
	for _, g := range plans(f) {
		v.Components[g.Component] = inspectComponentOf(f, g)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func inspectComponentOf(f *plan.File, g *plan.GroupPlan) *inspectComponent {
	c := &inspectComponent{
		Grouped:     g.Grouped,
		Why:         g.Why,
		Inputs:      map[string]inspectPort{},
		Outputs:     map[string]inspectPort{},
		Uniform:     []string{},
		UniformFrom: map[string]inspectRead{},
		SharedEqual: append([]string{}, g.SharedEqual...),
		KeyedBy:     g.KeyedBy,
		Budgets:     []inspectBudget{},
	}
	for _, a := range f.Artifacts {
		if a.Component == g.Component {
			c.Artifact = &inspectArtifact{Path: a.Path, SHA256: a.SHA256, Missing: a.SHA256 == "", Ops: a.Ops}
		}
	}
	for _, p := range g.Inputs {
		c.Inputs[p.Name] = inspectPortOf(p)
	}
	for _, p := range g.Outputs {
		c.Outputs[p.Name] = inspectPortOf(p)
	}
	for _, u := range g.Uniform {
		c.Uniform = append(c.Uniform, u.Symbol)
		c.UniformFrom[u.Symbol] = inspectRead{Port: u.Port, Axis: u.Axis}
	}
	if g.Grouped {
		c.Compatibility = compatibility(g)
	}
	for _, b := range g.Budgets {
		c.Budgets = append(c.Budgets, inspectBudget{
			Dimensions: b.Dimensions, MaxTotal: b.MaxTotal, Footprint: footprint(b),
			Terms: b.Terms, MinItem: b.MinItem, Why: budgetWhere(g, b),
		})
	}
	return c
}

func inspectPortOf(p plan.Port) inspectPort {
	out := inspectPort{
		Role: p.Role, Split: p.Split, Factor: p.Factor, Levels: len(p.Levels),
		Ownership: p.Levels, Padded: []string{}, Padding: p.Padded, Delivery: p.Delivery, Why: p.Why,
	}
	if hasAxis(p) {
		axis := p.Axis
		out.Axis = &axis
	}
	for _, pad := range p.Padded {
		out.Padded = append(out.Padded, pad.Dimension)
	}
	if s := p.Serves; s != nil {
		out.Serves = &inspectServes{Port: s.Port, Role: s.Role, Dimension: s.Dimension}
		if s.Role != "lengths" {
			level := s.Level
			out.Serves.Level = &level
		}
	}
	return out
}

// hasAxis reports whether a port's axis means something: the request axis
// of stacked rows, or the packed axis.
func hasAxis(p plan.Port) bool {
	switch {
	case p.Role == plan.RoleRows, p.Role == plan.RoleExpanded, p.Role == plan.RolePacked:
		return true
	case p.Split == plan.SplitRows, p.Split == plan.SplitExpanded, p.Split == plan.SplitPacked:
		return true
	}
	return false
}
