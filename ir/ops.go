package ir

// Op is a step's operation.
type Op uint8

// The step operations. Their shapes are data in opTable.
const (
	OpInvoke Op = iota
	OpEmit
	OpSequence
	OpBranch
	OpLoop
)

// OpInfo describes an op as data: its name, one line of semantics, and
// which Step fields it uses. Verify and the text form read this table;
// nothing else switches on the op to learn its shape.
type OpInfo struct {
	Name string
	Doc  string
	// Fields an op uses; a field outside this set must be empty.
	Component, Args, Results bool // invoke
	Emit                     bool // Value, Output, Mode, When, ValidLength, Axis
	Body                     bool // Body block
	Branch                   bool // Predicate, Cases, Default, Phis
	Loop                     bool // Setup, ContinueWhen, MaxIterations, Iteration, Carried
	// Scope says whether values defined in the op's nested blocks stay
	// visible after the op (sequence) or only what the op itself defines
	// escapes (branch phis, loop carried cells).
	Scope bool
}

var opTable = [...]OpInfo{
	OpInvoke:   {Name: "invoke", Doc: "results = component(args); each result port defines a value", Component: true, Args: true, Results: true},
	OpEmit:     {Name: "emit", Doc: "output ⟵ value (replace | append | event), optionally when, trimmed to valid_length, on axis", Emit: true},
	OpSequence: {Name: "sequence", Doc: "run body in order; its definitions stay visible after it", Body: true, Scope: true},
	OpBranch:   {Name: "branch", Doc: "run the case named by predicate (or default); phis merge one value per case", Branch: true},
	OpLoop:     {Name: "loop", Doc: "setup once, then body while continue_when, at most max_iterations; carried cells take next each iteration", Body: true, Loop: true},
}

// Info returns the op's table entry.
func (o Op) Info() OpInfo {
	if int(o) < len(opTable) {
		return opTable[o]
	}
	return OpInfo{Name: "?"}
}

func (o Op) String() string { return o.Info().Name }

// Ops returns the op table in op order.
func Ops() []OpInfo { return opTable[:] }

// ParseOp reads an op name.
func ParseOp(s string) (Op, bool) {
	for i, info := range opTable {
		if info.Name == s {
			return Op(i), true
		}
	}
	return 0, false
}
