package passes

// Pipeline is every pass in the order it runs. A pass may read the result
// of a pass that runs earlier and that it lists in Requires; a test keeps it
// so.
var Pipeline = []*Pass{
	// Name resolution first: every check below resolves companion and
	// symbol names through it.
	ScopesPass,
	// Workflow structure: names, components, ports and contract shapes,
	// which the batching rules below assume are sound.
	SSAPass,
	ContractsPass,
	PreprocessPass,
	// The batching contracts, innermost facts first: packed layouts and
	// padding are what a capacity's symbols are classified by.
	PackedPass,
	PaddingPass,
	CapacityPass,
	// Emission: whether every ragged value leaves the workflow with the
	// companions that decode it.
	EmitPass,
	// Plan passes run only when every check above accepted the module.
	PlanPass,
}
