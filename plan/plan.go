// Package plan holds genaic's compiled plans: for every component, a
// GroupPlan deciding at package build time how items from many requests are
// assembled into one invocation and split back (DESIGN §5), and the plan
// file that carries the GroupPlans with the IR and the artifacts they run.
//
// Every decision records why it was made (the contract fact and the rule),
// so that `genaic inspect` can explain it to a person.
package plan

// Role is how an input port takes part in a group.
type Role string

// Input roles.
const (
	RoleBroadcast Role = "broadcast" // shared: passed once, must be equal across the group
	RoleRows      Role = "rows"      // request_aligned: one row per request, stacked on its axis
	RoleExpanded  Role = "expanded"  // request_expanded: factor rows per request, stacked on its axis
	RolePacked    Role = "packed"    // token_packed: items concatenated on axis 0, with ownership levels
	RoleCompanion Role = "companion" // serves another port's level or padding; recomputed for the group, never gathered
)

// Split is how an output port is split back to each request.
type Split string

// Output splits.
const (
	SplitRows      Split = "rows"      // a request's rows, as a view
	SplitExpanded  Split = "expanded"  // a request's factor rows, as a view
	SplitPacked    Split = "packed"    // a request's span of the packed axis, by its levels
	SplitBroadcast Split = "broadcast" // the same shared value to every request
	SplitCompanion Split = "companion" // delivered companion: offsets rebased to 0, lengths sliced
	SplitInternal  Split = "internal"  // an owner map: never delivered; derived per request from rebased offsets
)

// Ref names where a companion comes from: a port of the same component, or
// a workflow-level value when the port's contract names one it is not
// bound to.
type Ref struct {
	Port  string `json:"port,omitempty"`
	Value string `json:"value,omitempty"`
}

// Name returns the port or value name.
func (r Ref) Name() string {
	if r.Port != "" {
		return r.Port
	}
	return r.Value
}

// Level is one ownership level of a packed port, innermost first.
type Level struct {
	Index   int    `json:"level"`
	Offsets Ref    `json:"offsets"`
	Owner   Ref    `json:"owner"`
	Units   string `json:"units"` // the symbol counting this level's units (level 0: the packed symbol)
	// Extent is set on output levels: preserved or produced.
	Extent string `json:"extent,omitempty"`
	// From is, for a preserved output level, the input level whose units it
	// keeps one for one; the output splits with that input pair.
	From *LevelOf `json:"from,omitempty"`
}

// LevelOf names a level of a port.
type LevelOf struct {
	Port  string `json:"port"`
	Level int    `json:"level"`
}

// Pad is one padded dimension of a port.
type Pad struct {
	Dimension string `json:"dimension"`
	Axis      int    `json:"axis"`
	Lengths   Ref    `json:"lengths"`
}

// Serves says which level or padding entry a companion port serves.
type Serves struct {
	Port      string `json:"port"`
	Role      string `json:"role"` // offsets, owner or lengths
	Level     int    `json:"level,omitempty"`
	Dimension string `json:"dimension,omitempty"`
}

// Port is the plan of one input or output port.
type Port struct {
	Name   string  `json:"port"`
	Role   Role    `json:"role,omitempty"`  // inputs
	Split  Split   `json:"split,omitempty"` // outputs
	Axis   int     `json:"axis"`
	Factor int64   `json:"factor,omitempty"`
	Levels []Level `json:"levels,omitempty"`
	Padded []Pad   `json:"padded,omitempty"`
	Serves *Serves `json:"serves,omitempty"`
	// Delivery says what a delivered companion becomes per request.
	Delivery string `json:"delivery,omitempty"` // rebased or sliced
	Why      string `json:"why"`
}

// Uniform is one uniform symbol of the compatibility key and where its
// extent is read.
type Uniform struct {
	Symbol string `json:"symbol"`
	Port   string `json:"port"`
	Axis   int    `json:"axis"`
}

// TermKind says how a symbol's footprint is computed from a candidate
// group (DESIGN §3.5).
type TermKind string

// Footprint terms.
const (
	TermPacked TermKind = "packed" // the packed extent: the sum of the items' extents
	TermUnits  TermKind = "units"  // the number of units of an ownership level in the group
	TermRows   TermKind = "rows"   // the group's request rows (× factor when expanded)
	TermPadded TermKind = "padded" // the group's padded extent: the maximum item extent
	TermPinned TermKind = "pinned" // the extent every item shares
)

// Term is one symbol of a budget path and how to measure it.
type Term struct {
	Symbol string   `json:"symbol"`
	Kind   TermKind `json:"kind"`
	Port   string   `json:"port"`
	Axis   int      `json:"axis"`
	Level  int      `json:"level,omitempty"`
	Factor int64    `json:"factor,omitempty"`
}

// Budget is a bound on the materialized footprint: the product of its
// terms, outermost first, must not exceed MaxTotal.
type Budget struct {
	Dimensions []string `json:"dimensions"`
	MaxTotal   int64    `json:"max_total"`
	Terms      []Term   `json:"terms"`
	// MinItem is the smallest footprint one non-empty item can have on this
	// path: one unit of every count, one position of every free extent, the
	// factor of an expanded request axis. Admission refuses what exceeds it
	// at run time; statically, MinItem <= MaxTotal (rule 8).
	MinItem int64 `json:"min_item"`
}

// GroupPlan is what the compiler decided for one component.
type GroupPlan struct {
	Component string `json:"component"`
	Grouped   bool   `json:"grouped"`
	Why       string `json:"why"`
	Inputs    []Port `json:"inputs"`
	Outputs   []Port `json:"outputs"`
	// The compatibility key: items share an invocation only when they agree
	// on every uniform extent and on every shared input.
	Uniform     []Uniform `json:"uniform,omitempty"`
	SharedEqual []string  `json:"shared_equal,omitempty"`
	// KeyedBy, for an adapter, is what it keys its invocations by besides
	// (backend.KeyDescriber): extents each item makes that the adapter's
	// ports neither fix nor pad, read off the item's header at admission
	// (an aspect-keeping resize's width). Items that make different ones
	// never share an invocation. It informs; the adapter keys.
	KeyedBy []string `json:"keyed_by,omitempty"`
	Budgets []Budget `json:"budgets,omitempty"`
}

// Input returns the plan of input port name, or nil.
func (g *GroupPlan) Input(name string) *Port { return find(g.Inputs, name) }

// Output returns the plan of output port name, or nil.
func (g *GroupPlan) Output(name string) *Port { return find(g.Outputs, name) }

func find(ps []Port, name string) *Port {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// OpenAxis says how to let groups form where a graph fixes the axis a
// group stacks its requests' rows on at n: a batch of one on the first
// axis, as an export given no dynamic axes writes it, genaic
// dynamic-batch may open.
func OpenAxis(axis int, n int64) string {
	if axis == 0 && n == 1 {
		return "export the graph with that axis dynamic, or rewrite it with `genaic dynamic-batch`, to group requests"
	}
	return "export the graph with that axis dynamic to group requests"
}
