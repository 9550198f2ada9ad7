package vm

import "context"

// WithPriority returns a context whose requests run at priority level: at
// every grouped component, waiting items of a lower level are grouped and
// run before any of a higher one, whenever they came, and items of one
// level in the order they came (sched.Entry.Priority). A request's
// deadline, where its context has one, bounds how long its group waits
// for more items. The default level is 0.
func WithPriority(ctx context.Context, level int) context.Context {
	return context.WithValue(ctx, priorityKey{}, level)
}

// PriorityOf is the priority level of ctx's requests: the level
// WithPriority gave it, or 0.
func PriorityOf(ctx context.Context) int {
	if ctx == nil {
		return 0
	}
	level, _ := ctx.Value(priorityKey{}).(int)
	return level
}

type priorityKey struct{}
