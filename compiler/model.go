package compiler

import (
	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
)

// This file is the typed model of an inference_metadata.yaml document
// (DESIGN.md §2). Every node remembers where it was written: the position of
// its value, the position of the key that introduced it, and its YAML path,
// so that any later check can point at the exact key.
//
// Struct tags drive the strict decoder in decode.go:
//
//	yaml:"key[,required]"   the mapping key; required keys must be present
//	kinds:"a,b"             the key is accepted only when `kind` is a or b
//	reqkinds:"a"            the key is required when `kind` is a
//	enum:"x|y"              the scalar must be one of these words
//	min:"n"                 the integer must be at least n
//
// A struct with a `kind` field is a tagged union: its kind is read first and
// decides which other keys the mapping may hold.

// Node is the position information every model node carries.
type Node struct {
	Pos    diag.Pos // where the value starts
	KeyPos diag.Pos // where the key that introduced it starts (zero at the root or in a list)
	Path   string   // YAML path, such as pipeline.workflow.components.vision
}

// At returns n itself; embedding it gives every model node an At method.
func (n *Node) At() *Node { return n }

// Caret is where a diagnostic about this node should point: its key when it
// has one, else its value.
func (n Node) Caret() diag.Pos {
	if n.KeyPos.Known() {
		return n.KeyPos
	}
	return n.Pos
}

// String is a string scalar.
type String struct {
	Node
	Value string
}

// Int is an integer scalar.
type Int struct {
	Node
	Value int64
}

// Bool is a boolean scalar.
type Bool struct {
	Node
	Value bool
}

// Scalar is any scalar, kept as written (numbers, words and booleans alike).
type Scalar struct {
	Node
	Value string
	Tag   string // the resolved YAML tag, such as !!int
}

// Raw is a node kept verbatim and not interpreted.
type Raw struct {
	Node
	YAML *yaml.Node
}

// List is a YAML sequence.
type List[T any] struct {
	Node
	Items []T
}

// Map is a YAML mapping with free keys (names), in document order.
type Map[T any] struct {
	Node
	Entries []Entry[T]
}

// Entry is one key and its value.
type Entry[T any] struct {
	Key   String
	Value T
}

// Get returns the value of key and whether it is present.
func (m Map[T]) Get(key string) (T, bool) {
	for _, e := range m.Entries {
		if e.Key.Value == key {
			return e.Value, true
		}
	}
	var zero T
	return zero, false
}

// Document is a whole inference_metadata.yaml.
type Document struct {
	Node
	SchemaVersion *Raw           `yaml:"schema_version"`
	Pipeline      *Pipeline      `yaml:"pipeline"`
	Preprocessing *Preprocessing `yaml:"preprocessing"`

	// Sections outside the compiler's job, kept verbatim.
	Model                *Raw `yaml:"model"`
	Quantization         *Raw `yaml:"quantization"`
	HardwareRequirements *Raw `yaml:"hardware_requirements"`
	Package              *Raw `yaml:"package"`
	Generation           *Raw `yaml:"generation"`
	Profiles             *Raw `yaml:"profiles"`
	Speculative          *Raw `yaml:"speculative"`
	Adapters             *Raw `yaml:"adapters"`
	RequiredCapabilities *Raw `yaml:"required_capabilities"`
}

// OpaqueSections lists the top-level sections that are read and kept but not
// compiled, with whether the document has them.
func (d *Document) OpaqueSections() []string {
	var out []string
	for _, s := range []struct {
		name string
		raw  *Raw
	}{
		{"model", d.Model}, {"quantization", d.Quantization},
		{"hardware_requirements", d.HardwareRequirements}, {"package", d.Package},
		{"generation", d.Generation}, {"profiles", d.Profiles},
		{"speculative", d.Speculative}, {"adapters", d.Adapters},
		{"required_capabilities", d.RequiredCapabilities},
	} {
		if s.raw != nil {
			out = append(out, s.name)
		}
	}
	return out
}

// Pipeline holds the workflow.
type Pipeline struct {
	Node
	Workflow *Workflow `yaml:"workflow,required"`
}

// Workflow is the compiled part of a document (DESIGN §2.1).
type Workflow struct {
	Node
	Manifest   *Manifest         `yaml:"manifest"`
	Inputs     Map[Input]        `yaml:"inputs"`
	Outputs    Map[Output]       `yaml:"outputs"`
	Components Map[Component]    `yaml:"components"`
	State      Map[StateCell]    `yaml:"state"`
	Effects    Map[EffectDomain] `yaml:"effects"`
	Serving    *Serving          `yaml:"serving"`
	Steps      List[Step]        `yaml:"steps"`
}

// Manifest declares what the workflow needs from its runtime.
type Manifest struct {
	Node
	AdapterABIs  Map[String]  `yaml:"adapter_abis"`
	Capabilities List[String] `yaml:"capabilities"`
}

// Input is a workflow input.
type Input struct {
	Node
	Contract             *Contract `yaml:"contract,required"`
	Role                 *Role     `yaml:"role,required"`
	Source               *Source   `yaml:"source,required"`
	Required             *Bool     `yaml:"required"`
	Default              *Raw      `yaml:"default"`
	PresentAs            *String   `yaml:"present_as"`
	ExternallySuppliable *Bool     `yaml:"externally_suppliable"`
}

// Role says what a workflow input means to the runtime.
type Role struct {
	Node
	Kind    String  `yaml:"kind,required" enum:"opaque|runtime"`
	Version *String `yaml:"version" kinds:"runtime" reqkinds:"runtime"`
	Role    *String `yaml:"role" kinds:"runtime" reqkinds:"runtime"`
}

// Source says where a workflow input's value comes from.
type Source struct {
	Node
	Kind String  `yaml:"kind,required" enum:"request|application|literal|artifact"`
	Name *String `yaml:"name" kinds:"application" reqkinds:"application"`
	Path *String `yaml:"path" kinds:"artifact" reqkinds:"artifact"`
}

// Output is a workflow output.
type Output struct {
	Node
	Contract   *Contract `yaml:"contract,required"`
	Role       *String   `yaml:"role,required"`
	Stage      *String   `yaml:"stage,required"`
	ValueRange *Raw      `yaml:"value_range"`
	Media      *Raw      `yaml:"media"`
}

// Component is a unit of computation the workflow invokes.
type Component struct {
	Node
	Implementation         *Implementation `yaml:"implementation,required"`
	Ports                  *Ports          `yaml:"ports"`
	RowScope               *RowScope       `yaml:"row_scope"`
	BatchCapacity          *BatchCapacity  `yaml:"batch_capacity"`
	Contract               *Raw            `yaml:"contract"`
	Effects                List[String]    `yaml:"effects"`
	CacheAffectsState      *Bool           `yaml:"cache_affects_state"`
	ApplicationOverridable *Bool           `yaml:"application_overridable"`
}

// Implementation says what runs a component.
type Implementation struct {
	Node
	Kind     String  `yaml:"kind,required" enum:"onnx|adapter|binding"`
	Artifact *String `yaml:"artifact" kinds:"onnx,adapter" reqkinds:"onnx"`
	ABI      *String `yaml:"abi" kinds:"adapter" reqkinds:"adapter"`
	Version  *String `yaml:"version" kinds:"adapter" reqkinds:"adapter"`
}

// Ports are a component's named input and output contracts.
type Ports struct {
	Node
	Inputs  Map[Contract] `yaml:"inputs"`
	Outputs Map[Contract] `yaml:"outputs"`
}

// RowScope names the axis along which a component's rows are independent.
type RowScope struct {
	Node
	Axis     *Int  `yaml:"axis,required"`
	Stateful *Bool `yaml:"stateful"`
}

// BatchCapacity declares that a component may take several items in one
// invocation (DESIGN §3.1).
type BatchCapacity struct {
	Node
	UniformDimensions List[String] `yaml:"uniform_dimensions"`
	Budgets           List[Budget] `yaml:"budgets"`
}

// Budget bounds the materialized footprint along a nesting path of symbols.
type Budget struct {
	Node
	Dimensions *List[String] `yaml:"dimensions,required"`
	MaxTotal   *Int          `yaml:"max_total,required"`
}

// Contract is a tensor contract (DESIGN §2.2).
type Contract struct {
	Node
	DType       *String       `yaml:"dtype,required"`
	Shape       *List[Dim]    `yaml:"shape"`
	Rank        *Int          `yaml:"rank"`
	Optional    *Bool         `yaml:"optional"`
	BatchLayout *BatchLayout  `yaml:"batch_layout"`
	Padding     List[Padding] `yaml:"padding"`
}

// Dim is one dimension of a shape: a fixed extent or a shape symbol.
type Dim struct {
	Node
	Symbol string // non-empty for a symbol
	Size   int64  // the extent when Symbol is empty
}

// IsSymbol reports whether the dimension is a shape symbol.
func (d Dim) IsSymbol() bool { return d.Symbol != "" }

// Batch layout kinds.
const (
	LayoutShared          = "shared"
	LayoutRequestAligned  = "request_aligned"
	LayoutRequestExpanded = "request_expanded"
	LayoutTokenPacked     = "token_packed"
)

// BatchLayout says how a value's rows relate to the requests of an
// invocation. Absent means shared.
type BatchLayout struct {
	Node
	Kind   String      `yaml:"kind,required" enum:"shared|request_aligned|request_expanded|token_packed"`
	Axis   *Int        `yaml:"axis" kinds:"request_aligned,request_expanded,token_packed" reqkinds:"request_aligned,request_expanded,token_packed" min:"0"`
	Factor *Int        `yaml:"factor" kinds:"request_expanded" reqkinds:"request_expanded" min:"1"`
	Levels List[Level] `yaml:"levels" kinds:"token_packed" reqkinds:"token_packed"`
}

// Extent words of an output level.
const (
	ExtentPreserved = "preserved"
	ExtentProduced  = "produced"
)

// Level is one ownership level of a packed axis.
type Level struct {
	Node
	Offsets *String `yaml:"offsets,required"`
	Owner   *String `yaml:"owner,required"`
	Extent  *String `yaml:"extent" enum:"preserved|produced"`
}

// Padding declares that a dimension is right-padded, with per-item lengths.
type Padding struct {
	Node
	Dimension    *String `yaml:"dimension,required"`
	ValidLengths *String `yaml:"valid_lengths,required"`
}

// StateCell is a workflow state cell.
type StateCell struct {
	Node
	Contract        *Contract   `yaml:"contract,required"`
	Scope           *String     `yaml:"scope,required"`
	Initializer     *String     `yaml:"initializer,required"`
	Recurrence      *Recurrence `yaml:"recurrence,required"`
	Class           *String     `yaml:"class"`
	Management      *String     `yaml:"management"`
	ReleaseBoundary *String     `yaml:"release_boundary"`
	ServiceGroup    *String     `yaml:"service_group"`
	Session         *Raw        `yaml:"session"`
}

// Recurrence says how a state cell changes between iterations.
type Recurrence struct {
	Node
	Kind String  `yaml:"kind,required"`
	Next *String `yaml:"next"`
}

// EffectDomain declares how a domain of side effects behaves.
type EffectDomain struct {
	Node
	Retry             *Scalar `yaml:"retry,required"`
	SpeculationSafety *Scalar `yaml:"speculation_safety"`
}

// Serving names the decoder-serving values of a workflow. genaic checks such
// workflows but does not execute them.
type Serving struct {
	Node
	Active       *String       `yaml:"active,required"`
	Done         *String       `yaml:"done,required"`
	AcceptedLen  *String       `yaml:"accepted_len"`
	StateService *StateService `yaml:"state_service,required"`
}

// StateService describes runtime-managed state groups (KV caches).
type StateService struct {
	Node
	Groups Map[StateGroup] `yaml:"groups"`
}

// StateGroup is one runtime-managed state group.
type StateGroup struct {
	Node
	Kind           *String `yaml:"kind,required"`
	SequenceAxis   *Int    `yaml:"sequence_axis"`
	Layout         *String `yaml:"layout"`
	LogicalLengths *String `yaml:"logical_lengths"`
	Aliasing       *String `yaml:"aliasing"`
}

// Step kinds.
const (
	StepInvoke   = "invoke"
	StepEmit     = "emit"
	StepSequence = "sequence"
	StepBranch   = "branch"
	StepLoop     = "loop"
)

// Step is one workflow step, tagged by kind.
type Step struct {
	Node
	Kind String `yaml:"kind,required" enum:"invoke|emit|sequence|branch|loop"`

	// invoke
	Component     *String     `yaml:"component" kinds:"invoke" reqkinds:"invoke"`
	Inputs        Map[String] `yaml:"inputs" kinds:"invoke"`
	InvokeOutputs Map[String] `yaml:"outputs" kinds:"invoke"`

	// emit
	Value       *String `yaml:"value" kinds:"emit" reqkinds:"emit"`
	Output      *String `yaml:"output" kinds:"emit" reqkinds:"emit"`
	Mode        *String `yaml:"mode" kinds:"emit" reqkinds:"emit" enum:"replace|append|event"`
	When        *String `yaml:"when" kinds:"emit"`
	ValidLength *String `yaml:"valid_length" kinds:"emit"`
	Axis        *Int    `yaml:"axis" kinds:"emit"`

	// sequence and loop
	Steps List[Step] `yaml:"steps" kinds:"sequence,loop" reqkinds:"sequence,loop"`

	// branch
	Predicate     *String           `yaml:"predicate" kinds:"branch" reqkinds:"branch"`
	Cases         Map[Step]         `yaml:"cases" kinds:"branch" reqkinds:"branch"`
	Default       *Step             `yaml:"default" kinds:"branch"`
	BranchOutputs Map[BranchOutput] `yaml:"outputs" kinds:"branch"`

	// loop
	Setup         List[Step]    `yaml:"setup" kinds:"loop"`
	ContinueWhen  *String       `yaml:"continue_when" kinds:"loop" reqkinds:"loop"`
	MaxIterations *Int          `yaml:"max_iterations" kinds:"loop" reqkinds:"loop"`
	Iteration     *String       `yaml:"iteration" kinds:"loop"`
	Carried       List[Carried] `yaml:"carried" kinds:"loop"`
}

// BranchOutput is a value that escapes a branch: one value per case.
type BranchOutput struct {
	Node
	Cases   Map[String] `yaml:"cases,required"`
	Default *String     `yaml:"default"`
}

// Carried is a state cell a loop carries between iterations.
type Carried struct {
	Node
	Cell    *String `yaml:"cell,required"`
	Initial *String `yaml:"initial"`
	Next    *String `yaml:"next,required"`
}

// Preprocessing holds the media programs (DESIGN §9).
type Preprocessing struct {
	Node
	Image *Program `yaml:"image"`
	Video *Program `yaml:"video"`
	Audio *Program `yaml:"audio"`
}

// NamedProgram is a declared program and its modality.
type NamedProgram struct {
	Modality string // image, video or audio
	*Program
}

// Programs returns the declared programs in modality order: image, video,
// audio.
func (p *Preprocessing) Programs() []NamedProgram {
	var out []NamedProgram
	if p == nil {
		return nil
	}
	for _, np := range []NamedProgram{{"image", p.Image}, {"video", p.Video}, {"audio", p.Audio}} {
		if np.Program != nil {
			out = append(out, np)
		}
	}
	return out
}

// Program is a preprocessing program: transforms and the outputs it binds.
type Program struct {
	Node
	Transforms List[Transform]     `yaml:"transforms"`
	Outputs    List[ProgramOutput] `yaml:"outputs"`
}

// Transform is one op of a preprocessing program. Every key beside op,
// inputs and outputs is a parameter; the op table (package preprocess)
// decides which ones an op takes, so the front end reads them all alike.
type Transform struct {
	Node
	Op      String
	Inputs  List[String]
	Outputs List[String]
	Params  []Param // in document order
}

// Param is one transform parameter: a scalar, or a list of scalars.
type Param struct {
	Node  // the value, introduced by its key
	Key   string
	Value Scalar        // a scalar parameter
	List  *List[Scalar] // a list parameter, nil otherwise
}

// ProgramOutput binds a program value to a named output with a content role.
type ProgramOutput struct {
	Node
	Name     *String   `yaml:"name,required"`
	Source   *String   `yaml:"source,required"`
	Content  *String   `yaml:"content,required"`
	DType    *String   `yaml:"dtype"`
	Contract *Contract `yaml:"contract"`
}
