package passes

// EmitPass checks emission (§4 r8): every ragged emitted value publishes its companions, serving admits only those, and emit axes are in range.
var EmitPass = &Pass{
	Name:     "emit",
	Doc:      "check emission (§4 r8): every ragged emitted value publishes its companions, serving admits only those, and emit axes are in range",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
