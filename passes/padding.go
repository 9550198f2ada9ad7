package passes

// PaddingPass checks padding (§3.2): resolvable int64 shared lengths companions shaped as the padded value's outer axes.
var PaddingPass = &Pass{
	Name:     "padding",
	Doc:      "check padding (§3.2): resolvable int64 shared lengths companions shaped as the padded value's outer axes",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
