package diag

import "slices"

// Rule is a rule id of the public catalogue (RULES.md). An id never changes
// meaning; every diagnostic carries one.
type Rule string

// Reading the document: these ids are reported by the front end while it
// reads the document, before any workflow rule.
const (
	Syntax                 Rule = "syntax"
	VersionMalformed       Rule = "version/malformed"
	VersionMajor           Rule = "version/major"
	VersionTooNew          Rule = "version/too-new"
	RetiredFlatTokenPacked Rule = "retired/flat-token-packed"
	RetiredBatchingHint    Rule = "retired/batching-hint"
	SchemaUnknownField     Rule = "schema/unknown-field"
	SchemaMissingField     Rule = "schema/missing-field"
	SchemaType             Rule = "schema/type"
	VersionFeatureNeedsV11 Rule = "version/feature-needs-v1.1"
)

// Workflow structure: these ids are reported by the structure, contract and
// preprocessing passes.
const (
	SSAUndefined         Rule = "ssa/undefined"
	SSARedefined         Rule = "ssa/redefined"
	SSAUnknownComponent  Rule = "ssa/unknown-component"
	SSAUnknownPort       Rule = "ssa/unknown-port"
	SSAUnboundPort       Rule = "ssa/unbound-port"
	SSAUnknownOutput     Rule = "ssa/unknown-output"
	ContractDType        Rule = "contract/dtype"
	ContractShape        Rule = "contract/shape"
	ContractIncompatible Rule = "contract/incompatible"
	PreprocessAdapter    Rule = "preprocess/adapter"
	PreprocessBinding    Rule = "preprocess/binding"
	PreprocessOp         Rule = "preprocess/op"
	PreprocessUnbound    Rule = "preprocess/unbound"
)

// Packed layouts: these ids are token_packed layout rules (§4 r1–r8).
const (
	PackedUnresolved      Rule = "packed/unresolved"
	PackedAxis            Rule = "packed/axis"
	PackedLevels          Rule = "packed/levels"
	PackedCompanion       Rule = "packed/companion"
	PackedCompanionRole   Rule = "packed/companion-role"
	PackedExtent          Rule = "packed/extent"
	PackedPair            Rule = "packed/pair"
	PackedDoubleSpelling  Rule = "packed/double-spelling"
	PackedOwnerSuppliable Rule = "packed/owner-suppliable"
)

// Padding: these ids are padding rules (§3.2).
const (
	PaddingUnresolved Rule = "padding/unresolved"
	PaddingDimension  Rule = "padding/dimension"
	PaddingDuplicate  Rule = "padding/duplicate"
	PaddingSelf       Rule = "padding/self"
	PaddingCompanion  Rule = "padding/companion"
)

// Batch capacity: these ids are batch_capacity rules (§3.1 r1–r9).
const (
	CapacityUnknownSymbol    Rule = "capacity/unknown-symbol"
	CapacityUniformDuplicate Rule = "capacity/uniform-duplicate"
	CapacityUniformCount     Rule = "capacity/uniform-count"
	CapacityPaddedAndPinned  Rule = "capacity/padded-and-pinned"
	CapacityBudgetRoot       Rule = "capacity/budget-root"
	CapacityBudgetDuplicate  Rule = "capacity/budget-duplicate"
	CapacityLevelUnbudgeted  Rule = "capacity/level-unbudgeted"
	CapacityFreeLiteral      Rule = "capacity/free-literal"
	CapacityUnreconciled     Rule = "capacity/unreconciled"
	CapacityBudgetTooSmall   Rule = "capacity/budget-too-small"
	CapacityRowScope         Rule = "capacity/row-scope"
	CapacitySharedOutput     Rule = "capacity/shared-output"
)

// Emission: these ids are emission rules (§4 r8 and the emit rules).
const (
	EmitUnpublishedCompanion Rule = "emit/unpublished-companion"
	EmitCompanionOfUnemitted Rule = "emit/companion-of-unemitted"
	EmitMalformedCompanion   Rule = "emit/malformed-companion"
	EmitServingShared        Rule = "emit/serving-shared"
	EmitTrimPadded           Rule = "emit/trim-padded"
	EmitRowAxis              Rule = "emit/row-axis"
	EmitAxis                 Rule = "emit/axis"
	EmitAxisRequired         Rule = "emit/axis-required"
)

// Models: these ids are checks of a package against its ONNX graphs (§3.8).
const (
	ModelMissing       Rule = "model/missing"
	ModelPort          Rule = "model/port"
	ModelDType         Rule = "model/dtype"
	ModelShape         Rule = "model/shape"
	ModelLengthsUnseen Rule = "model/lengths-unseen"
)

// Runtime: these ids are reported by the VM and generated executors, never
// by check.
const (
	RunOffsets     Rule = "run/offsets"
	RunOwner       Rule = "run/owner"
	RunExtent      Rule = "run/extent"
	RunLengths     Rule = "run/lengths"
	RunBudget      Rule = "run/budget"
	RunUniform     Rule = "run/uniform"
	RunInput       Rule = "run/input"
	RunBackend     Rule = "run/backend"
	RunUnsupported Rule = "run/unsupported"
	RunQueueFull   Rule = "run/queue-full"
	RunClosed      Rule = "run/closed"
	RunCancelled   Rule = "run/cancelled"
	RunDeadline    Rule = "run/deadline"
)

// Rules is the public catalogue of rule ids (RULES.md), in its order. A test
// keeps this list equal to the catalogue.
var Rules = []Rule{
	// Reading the document.
	Syntax, VersionMalformed, VersionMajor, VersionTooNew, RetiredFlatTokenPacked,
	RetiredBatchingHint, SchemaUnknownField, SchemaMissingField, SchemaType,
	VersionFeatureNeedsV11,
	// Workflow structure.
	SSAUndefined, SSARedefined, SSAUnknownComponent, SSAUnknownPort, SSAUnboundPort,
	SSAUnknownOutput, ContractDType, ContractShape, ContractIncompatible, PreprocessAdapter,
	PreprocessBinding, PreprocessOp, PreprocessUnbound,
	// Packed layouts.
	PackedUnresolved, PackedAxis, PackedLevels, PackedCompanion, PackedCompanionRole,
	PackedExtent, PackedPair, PackedDoubleSpelling, PackedOwnerSuppliable,
	// Padding.
	PaddingUnresolved, PaddingDimension, PaddingDuplicate, PaddingSelf, PaddingCompanion,
	// Batch capacity.
	CapacityUnknownSymbol, CapacityUniformDuplicate, CapacityUniformCount,
	CapacityPaddedAndPinned, CapacityBudgetRoot, CapacityBudgetDuplicate,
	CapacityLevelUnbudgeted, CapacityFreeLiteral, CapacityUnreconciled,
	CapacityBudgetTooSmall, CapacityRowScope, CapacitySharedOutput,
	// Emission.
	EmitUnpublishedCompanion, EmitCompanionOfUnemitted, EmitMalformedCompanion,
	EmitServingShared, EmitTrimPadded, EmitRowAxis, EmitAxis, EmitAxisRequired,
	// Models.
	ModelMissing, ModelPort, ModelDType, ModelShape, ModelLengthsUnseen,
	// Runtime.
	RunOffsets, RunOwner, RunExtent, RunLengths, RunBudget, RunUniform, RunInput,
	RunBackend, RunUnsupported, RunQueueFull, RunClosed, RunCancelled, RunDeadline,
}

// KnownRule reports whether r is in the catalogue.
func KnownRule(r Rule) bool { return slices.Contains(Rules, r) }
