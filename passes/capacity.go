package passes

// CapacityPass checks batch_capacity (§3.1 r1–r9): known, well-classified uniform symbols and group-rooted, distinct, feasible budgets.
var CapacityPass = &Pass{
	Name:     "capacity",
	Doc:      "check batch_capacity (§3.1 r1–r9): known, well-classified uniform symbols and group-rooted, distinct, feasible budgets",
	Kind:     Check,
	Requires: []*Pass{ScopesPass},
	Run: func(c *Context) (any, error) {
		return nil, nil
	},
}
