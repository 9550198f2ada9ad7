package ir

// Block is an ordered list of steps; values defined in it are visible to the
// steps after their definition, and (for the top-level block and sequences)
// to what follows the block in the enclosing scope.
type Block struct {
	Steps []*Step
}

// Step is one structured step. Op says which fields are meaningful; the op
// table (ops.go) states it as data and Verify checks it.
type Step struct {
	Op  Op
	Loc Loc

	// invoke
	Component Ref
	Args      []Arg    // port ← value
	Results   []Result // port → new value

	// emit
	Value       Use
	Output      Ref
	Mode        string // replace, append or event
	When        *Use
	ValidLength *Use
	Axis        *int64
	AxisLoc     Loc

	// sequence (Body), branch (Predicate, Cases, Default, Phis),
	// loop (Setup, Body, ContinueWhen, MaxIterations, Iteration, Carried)
	Body          *Block
	Predicate     Use
	Cases         []Case
	Default       *Block
	Phis          []Phi
	Setup         *Block
	ContinueWhen  Use
	MaxIterations int64
	Iteration     *ValueID // nil when the loop names no iteration value
	Carried       []Carry
}

// Arg binds a value to an input port of an invoke.
type Arg struct {
	Port  string
	Value Use
	Loc   Loc
}

// Result defines a value from an output port of an invoke.
type Result struct {
	Port  string
	Value ValueID
	Loc   Loc
}

// Case is one arm of a branch, selected by Key.
type Case struct {
	Key  string
	Body *Block
	Loc  Loc
}

// Phi is a branch output: one value per case (and the default), merged into
// a value visible after the branch.
type Phi struct {
	Value   ValueID
	Inputs  []PhiInput
	Default *Use
	Loc     Loc
}

// PhiInput is the value a phi takes when the branch takes case Key.
type PhiInput struct {
	Key   string
	Value Use
}

// Carry is a state cell a loop carries between iterations: the cell starts
// at Initial (or its initializer) and takes Next after each iteration. After
// the loop, the cell's name reads its last value.
type Carry struct {
	Cell    Ref
	Initial *Use
	Next    Use
	Loc     Loc
}

// Walk calls f on every step of b in document order, entering nested
// blocks after the step that holds them. Returning false skips the nested
// blocks of that step.
func (b *Block) Walk(f func(*Step) bool) {
	if b == nil {
		return
	}
	for _, s := range b.Steps {
		if !f(s) {
			continue
		}
		for _, nb := range s.Blocks() {
			nb.Walk(f)
		}
	}
}

// Blocks returns the nested blocks of s in document order.
func (s *Step) Blocks() []*Block {
	var bs []*Block
	if s.Setup != nil {
		bs = append(bs, s.Setup)
	}
	if s.Body != nil {
		bs = append(bs, s.Body)
	}
	for _, c := range s.Cases {
		bs = append(bs, c.Body)
	}
	if s.Default != nil {
		bs = append(bs, s.Default)
	}
	return bs
}

// Uses returns pointers to every value use of s itself (not of nested
// steps), so passes can read or resolve them uniformly.
func (s *Step) Uses() []*Use {
	var us []*Use
	for i := range s.Args {
		us = append(us, &s.Args[i].Value)
	}
	switch s.Op {
	case OpEmit:
		us = append(us, &s.Value)
		if s.When != nil {
			us = append(us, s.When)
		}
		if s.ValidLength != nil {
			us = append(us, s.ValidLength)
		}
	case OpBranch:
		us = append(us, &s.Predicate)
		for i := range s.Phis {
			for j := range s.Phis[i].Inputs {
				us = append(us, &s.Phis[i].Inputs[j].Value)
			}
			if s.Phis[i].Default != nil {
				us = append(us, s.Phis[i].Default)
			}
		}
	case OpLoop:
		us = append(us, &s.ContinueWhen)
		for i := range s.Carried {
			if s.Carried[i].Initial != nil {
				us = append(us, s.Carried[i].Initial)
			}
			us = append(us, &s.Carried[i].Next)
		}
	}
	return us
}

// Defs returns the values s defines itself, in order.
func (s *Step) Defs() []ValueID {
	var ds []ValueID
	for _, r := range s.Results {
		ds = append(ds, r.Value)
	}
	for _, p := range s.Phis {
		ds = append(ds, p.Value)
	}
	if s.Iteration != nil {
		ds = append(ds, *s.Iteration)
	}
	return ds
}
