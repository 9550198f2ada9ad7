package passes

// PreprocessPass checks preprocessing programs: each has its pinned adapter component and binds outputs whose contracts match the adapter's ports.
var PreprocessPass = &Pass{
	Name:     "preprocess",
	Doc:      "check preprocessing programs: each has its pinned adapter component and binds outputs whose contracts match the adapter's ports",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
