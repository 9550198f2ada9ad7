package passes

// SSAPass checks workflow structure: every name read is visible, defined once, and names a declared component, port or output.
var SSAPass = &Pass{
	Name:     "ssa",
	Doc:      "check workflow structure: every name read is visible, defined once, and names a declared component, port or output",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
