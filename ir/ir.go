// Package ir is genaic's SSA-like intermediate representation of a
// workflow: values with dense ids and tensor contracts, components and their
// ports, workflow inputs, outputs and state cells, and structured steps
// (invoke, emit, sequence, branch with phi outputs, loop with carried cells).
//
// Names are kept as written and resolved to value ids by lowering; a use
// that does not resolve keeps the id NoValue so that a check pass can report
// it. Every node that a diagnostic may point at carries a Loc, an index into
// the module's location table.
//
// The package imports only the standard library.
package ir

// Loc indexes Module.Locs. The zero Loc is "unknown".
type Loc int32

// Location is a position in the source document and the YAML path there.
type Location struct {
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Path string `json:"path,omitempty"`
}

// ValueID is a dense value number, indexing Module.Values.
type ValueID int32

// NoValue marks a use that names no visible value, or an absent value.
const NoValue ValueID = -1

// Module is one compiled workflow document.
type Module struct {
	// Schema is the document's schema_version exactly as written ("" when
	// absent); Major and Minor are its normal form.
	Schema string `json:"schema,omitempty"`
	Major  int    `json:"major,omitempty"`
	Minor  int    `json:"minor,omitempty"`

	Locs   []Location `json:"locs,omitempty"`   // Locs[0] is the unknown location
	Values []*Value   `json:"values,omitempty"` // indexed by ValueID

	Manifest   Manifest     `json:"manifest,omitzero"`
	Inputs     []*Input     `json:"inputs,omitempty"`
	Outputs    []*Output    `json:"outputs,omitempty"`
	Cells      []*Cell      `json:"cells,omitempty"`
	Components []*Component `json:"components,omitempty"`
	Programs   []*Program   `json:"programs,omitempty"`
	Serving    *Serving     `json:"serving,omitempty"`
	Body       *Block       `json:"body,omitempty"`

	index moduleIndex // name lookups, rebuilt when the lists grow
}

// moduleIndex caches name lookups so that resolving every step of a large
// workflow stays linear. It is rebuilt whenever a list's length changes.
type moduleIndex struct {
	components map[string]*Component
	outputs    map[string]*Output
	nc, no     int
}

func (m *Module) indexed() *moduleIndex {
	ix := &m.index
	if ix.components == nil || ix.nc != len(m.Components) {
		ix.components, ix.nc = make(map[string]*Component, len(m.Components)), len(m.Components)
		for _, c := range m.Components {
			if _, dup := ix.components[c.Name]; !dup {
				ix.components[c.Name] = c
			}
		}
	}
	if ix.outputs == nil || ix.no != len(m.Outputs) {
		ix.outputs, ix.no = make(map[string]*Output, len(m.Outputs)), len(m.Outputs)
		for _, o := range m.Outputs {
			if _, dup := ix.outputs[o.Name]; !dup {
				ix.outputs[o.Name] = o
			}
		}
	}
	return ix
}

// NewModule returns an empty module whose location table holds the unknown
// location.
func NewModule() *Module {
	return &Module{Locs: []Location{{}}, Body: &Block{}}
}

// AddLoc records a location and returns its index.
func (m *Module) AddLoc(l Location) Loc {
	m.Locs = append(m.Locs, l)
	return Loc(len(m.Locs) - 1)
}

// Location returns the location of l, or the unknown location when l is out
// of range.
func (m *Module) Location(l Loc) Location {
	if l <= 0 || int(l) >= len(m.Locs) {
		return Location{}
	}
	return m.Locs[l]
}

// NewValue defines a value and returns its id.
func (m *Module) NewValue(name string, def DefKind, c *Contract, loc Loc) ValueID {
	id := ValueID(len(m.Values))
	m.Values = append(m.Values, &Value{ID: id, Name: name, Def: def, Contract: c, Loc: loc})
	return id
}

// Value returns the value of id, or nil for NoValue or an id out of range.
func (m *Module) Value(id ValueID) *Value {
	if id < 0 || int(id) >= len(m.Values) {
		return nil
	}
	return m.Values[id]
}

// Component returns the component called name, or nil.
func (m *Module) Component(name string) *Component { return m.indexed().components[name] }

// Output returns the workflow output called name, or nil.
func (m *Module) Output(name string) *Output { return m.indexed().outputs[name] }

// DefKind says what defines a value.
type DefKind uint8

// What defines a value.
const (
	DefInput     DefKind = iota // a workflow input
	DefCell                     // a workflow state cell
	DefInvoke                   // an output port of an invoke step
	DefPhi                      // a branch output
	DefIteration                // a loop's iteration counter
)

var defNames = [...]string{"input", "cell", "invoke", "phi", "iteration"}

func (k DefKind) String() string {
	if int(k) < len(defNames) {
		return defNames[k]
	}
	return "?"
}

// Value is an SSA value: defined once, visible after its definition.
type Value struct {
	ID   ValueID `json:"id,omitempty"`
	Name string  `json:"name,omitempty"`
	Def  DefKind `json:"def"`
	// Contract types the value: the input's, the cell's or the producing
	// port's. It is nil when nothing declares one (a phi, an iteration).
	Contract *Contract `json:"contract,omitempty"`
	Loc      Loc       `json:"loc,omitempty"`
}

// Ref is a name written in the document that passes resolve with the
// scoping rules of their reference (a symbol, a companion, an output).
type Ref struct {
	Name string `json:"name,omitempty"`
	Loc  Loc    `json:"loc,omitempty"`
}

// Use is a step's read of a value by name, resolved by lowering.
type Use struct {
	Name string  `json:"name,omitempty"`
	ID   ValueID `json:"id,omitempty"` // NoValue when the name does not resolve
	Loc  Loc     `json:"loc,omitempty"`
}

// Manifest is the workflow's manifest.
type Manifest struct {
	AdapterABIs  []KV     `json:"adapter_abis,omitempty"` // in document order
	Capabilities []string `json:"capabilities,omitempty"`
	Loc          Loc      `json:"loc,omitempty"`
}

// KV is a name and a string value in document order.
type KV struct {
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	Loc   Loc    `json:"loc,omitempty"`
}

// Get returns the value of key in kvs.
func Get(kvs []KV, key string) (KV, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv, true
		}
	}
	return KV{}, false
}

// Input is a workflow input.
type Input struct {
	Name     string    `json:"name,omitempty"`
	Value    ValueID   `json:"value,omitempty"`
	Contract *Contract `json:"contract,omitempty"`
	// Role is "opaque" or "runtime"; RuntimeRole and RoleVersion are set for
	// runtime roles.
	Role        string `json:"role,omitempty"`
	RuntimeRole string `json:"runtime_role,omitempty"`
	RoleVersion string `json:"role_version,omitempty"`
	// Source is request, application, literal or artifact; SourceArg is the
	// application name or artifact path.
	Source               string `json:"source,omitempty"`
	SourceArg            string `json:"source_arg,omitempty"`
	Required             *bool  `json:"required,omitempty"`
	HasDefault           bool   `json:"has_default,omitempty"`
	PresentAs            string `json:"present_as,omitempty"`
	ExternallySuppliable bool   `json:"externally_suppliable,omitempty"`
	Loc                  Loc    `json:"loc,omitempty"`
	ExternalLoc          Loc    `json:"external_loc,omitempty"` // where externally_suppliable is written
}

// Output is a workflow output.
type Output struct {
	Name     string    `json:"name,omitempty"`
	Contract *Contract `json:"contract,omitempty"`
	Role     string    `json:"role,omitempty"`
	Stage    string    `json:"stage,omitempty"`
	Loc      Loc       `json:"loc,omitempty"`
}

// Cell is a workflow state cell. It defines a value of its own name.
type Cell struct {
	Name            string    `json:"name,omitempty"`
	Value           ValueID   `json:"value,omitempty"`
	Contract        *Contract `json:"contract,omitempty"`
	Scope           string    `json:"scope,omitempty"`
	Initializer     Use       `json:"initializer,omitzero"`
	Recurrence      string    `json:"recurrence,omitempty"`
	Next            string    `json:"next,omitempty"`
	Class           string    `json:"class,omitempty"`
	Management      string    `json:"management,omitempty"`
	ReleaseBoundary string    `json:"release_boundary,omitempty"`
	ServiceGroup    string    `json:"service_group,omitempty"`
	Loc             Loc       `json:"loc,omitempty"`
}

// Serving names the decoder-serving values of a workflow (checked, never
// executed by genaic).
type Serving struct {
	Active      Ref            `json:"active,omitzero"`
	Done        Ref            `json:"done,omitzero"`
	AcceptedLen Ref            `json:"accepted_len,omitzero"`
	Groups      []ServiceGroup `json:"groups,omitempty"`
	Loc         Loc            `json:"loc,omitempty"`
}

// ServiceGroup is a runtime-managed state group.
type ServiceGroup struct {
	Name           string `json:"name,omitempty"`
	Kind           string `json:"kind,omitempty"`
	Layout         string `json:"layout,omitempty"`
	Aliasing       string `json:"aliasing,omitempty"`
	SequenceAxis   *int64 `json:"sequence_axis,omitempty"`
	LogicalLengths Ref    `json:"logical_lengths,omitzero"`
	Loc            Loc    `json:"loc,omitempty"`
}

// ImplKind says what runs a component.
type ImplKind uint8

// Component implementations.
const (
	ImplONNX    ImplKind = iota // an ONNX graph in the package
	ImplAdapter                 // a runtime adapter, pinned by ABI
	ImplBinding                 // a Go function the application registers
)

var implNames = [...]string{"onnx", "adapter", "binding"}

func (k ImplKind) String() string {
	if int(k) < len(implNames) {
		return implNames[k]
	}
	return "?"
}

// Component is a unit of computation the workflow invokes.
type Component struct {
	Name     string    `json:"name,omitempty"`
	Impl     ImplKind  `json:"impl"`
	Artifact string    `json:"artifact,omitempty"` // onnx, and optionally adapter
	ABI      string    `json:"abi,omitempty"`      // adapter
	Version  string    `json:"version,omitempty"`  // adapter
	Inputs   []*Port   `json:"inputs,omitempty"`
	Outputs  []*Port   `json:"outputs,omitempty"`
	Capacity *Capacity `json:"capacity,omitempty"` // nil: one request row per invocation
	RowScope *RowScope `json:"row_scope,omitempty"`
	Loc      Loc       `json:"loc,omitempty"`
}

// Input returns the input port called name, or nil.
func (c *Component) Input(name string) *Port { return findPort(c.Inputs, name) }

// Output returns the output port called name, or nil.
func (c *Component) Output(name string) *Port { return findPort(c.Outputs, name) }

func findPort(ps []*Port, name string) *Port {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Port is a component's named input or output contract.
type Port struct {
	Name     string    `json:"name,omitempty"`
	Contract *Contract `json:"contract,omitempty"`
	Loc      Loc       `json:"loc,omitempty"`
}

// Capacity is a component's batch_capacity (DESIGN §3.1).
type Capacity struct {
	Uniform []Ref    `json:"uniform,omitempty"` // shape symbols
	Budgets []Budget `json:"budgets,omitempty"`
	Loc     Loc      `json:"loc,omitempty"`
}

// Budget bounds the materialized footprint along a nesting path of symbols,
// read outermost first.
type Budget struct {
	Path     []Ref `json:"path,omitempty"`
	MaxTotal int64 `json:"max_total,omitempty"`
	Loc      Loc   `json:"loc,omitempty"`
}

// RowScope names the axis along which a component's rows are independent.
type RowScope struct {
	Axis     int64 `json:"axis,omitempty"`
	Stateful bool  `json:"stateful,omitempty"`
	Loc      Loc   `json:"loc,omitempty"`
}

// Program is a preprocessing program (image, video or audio) and the
// outputs it binds.
type Program struct {
	Modality   string          `json:"modality,omitempty"` // image, video or audio
	Transforms []Transform     `json:"transforms,omitempty"`
	Outputs    []ProgramOutput `json:"outputs,omitempty"`
	Loc        Loc             `json:"loc,omitempty"`
}

// Transform is one op of a program with its parameters as written.
type Transform struct {
	Op      string   `json:"op,omitempty"`
	Inputs  []string `json:"inputs,omitempty"`
	Outputs []string `json:"outputs,omitempty"`
	Params  []Param  `json:"params,omitempty"`
	Loc     Loc      `json:"loc,omitempty"`
}

// Param returns the parameter key of t.
func (t Transform) Param(key string) (Param, bool) {
	for _, p := range t.Params {
		if p.Key == key {
			return p, true
		}
	}
	return Param{}, false
}

// Param is one transform parameter as written: a scalar of its YAML kind,
// or a list of scalars. It keeps the kind so that the op table, not the
// front end, decides what each parameter accepts.
type Param struct {
	Key   string    `json:"key,omitempty"`
	Kind  ParamKind `json:"kind"`
	Text  string    `json:"text,omitempty"`  // a scalar's text as written
	Items []Param   `json:"items,omitempty"` // a list's items: scalars without a key or Loc
	Loc   Loc       `json:"loc,omitempty"`
}

// ParamKind is the YAML kind of a parameter value.
type ParamKind uint8

// The kinds of parameter values.
const (
	ParamString ParamKind = iota
	ParamInt
	ParamFloat
	ParamBool
	ParamList
)

var paramKinds = [...]string{"string", "int", "float", "bool", "list"}

func (k ParamKind) String() string {
	if int(k) < len(paramKinds) {
		return paramKinds[k]
	}
	return "kind(" + itoa(int64(k)) + ")"
}

// ParseParamKind is the inverse of ParamKind.String.
func ParseParamKind(s string) (ParamKind, bool) {
	for i, w := range paramKinds {
		if w == s {
			return ParamKind(i), true
		}
	}
	return 0, false
}

// ProgramOutput binds a program value to a named output with a content role.
type ProgramOutput struct {
	Name     string    `json:"name,omitempty"`
	Source   string    `json:"source,omitempty"`
	Content  string    `json:"content,omitempty"`
	DType    string    `json:"dtype,omitempty"`
	Contract *Contract `json:"contract,omitempty"` // nil when not declared
	Loc      Loc       `json:"loc,omitempty"`
}
