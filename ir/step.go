package ir

// Block is an ordered list of steps; values defined in it are visible to the
// steps after their definition, and (for the top-level block and sequences)
// to what follows the block in the enclosing scope.
type Block struct {
	Steps []*Step `json:"steps,omitempty"`
}

// Step is one structured step. Op says which fields are meaningful; the op
// table (ops.go) states it as data and Verify checks it.
type Step struct {
	Op  Op  `json:"op"`
	Loc Loc `json:"loc,omitempty"`

	// invoke
	Component Ref      `json:"component,omitzero"`
	Args      []Arg    `json:"args,omitempty"`    // port ← value
	Results   []Result `json:"results,omitempty"` // port → new value

	// emit
	Value       Use    `json:"value,omitzero"`
	Output      Ref    `json:"output,omitzero"`
	Mode        string `json:"mode,omitempty"` // replace, append or event
	When        *Use   `json:"when,omitempty"`
	ValidLength *Use   `json:"valid_length,omitempty"`
	Axis        *int64 `json:"axis,omitempty"`
	AxisLoc     Loc    `json:"axis_loc,omitempty"`

	// sequence (Body), branch (Predicate, Cases, Default, Phis),
	// loop (Setup, Body, ContinueWhen, MaxIterations, Iteration, Carried)
	Body          *Block   `json:"body,omitempty"`
	Predicate     Use      `json:"predicate,omitzero"`
	Cases         []Case   `json:"cases,omitempty"`
	Default       *Block   `json:"default,omitempty"`
	Phis          []Phi    `json:"phis,omitempty"`
	Setup         *Block   `json:"setup,omitempty"`
	ContinueWhen  Use      `json:"continue_when,omitzero"`
	MaxIterations int64    `json:"max_iterations,omitempty"`
	Iteration     *ValueID `json:"iteration,omitempty"` // nil when the loop names no iteration value
	Carried       []Carry  `json:"carried,omitempty"`
}

// Arg binds a value to an input port of an invoke.
type Arg struct {
	Port  string `json:"port,omitempty"`
	Value Use    `json:"value,omitzero"`
	Loc   Loc    `json:"loc,omitempty"`
}

// Result defines a value from an output port of an invoke.
type Result struct {
	Port  string  `json:"port,omitempty"`
	Value ValueID `json:"value,omitempty"`
	Loc   Loc     `json:"loc,omitempty"`
}

// Case is one arm of a branch, selected by Key.
type Case struct {
	Key  string `json:"key,omitempty"`
	Body *Block `json:"body,omitempty"`
	Loc  Loc    `json:"loc,omitempty"`
}

// Phi is a branch output: one value per case (and the default), merged into
// a value visible after the branch.
type Phi struct {
	Value   ValueID    `json:"value,omitempty"`
	Inputs  []PhiInput `json:"inputs,omitempty"`
	Default *Use       `json:"default,omitempty"`
	Loc     Loc        `json:"loc,omitempty"`
}

// PhiInput is the value a phi takes when the branch takes case Key.
type PhiInput struct {
	Key   string `json:"key,omitempty"`
	Value Use    `json:"value,omitzero"`
}

// Carry is a state cell a loop carries between iterations: the cell starts
// at Initial (or its initializer) and takes Next after each iteration. After
// the loop, the cell's name reads its last value.
type Carry struct {
	Cell    Ref  `json:"cell,omitzero"`
	Initial *Use `json:"initial,omitempty"`
	Next    Use  `json:"next,omitzero"`
	Loc     Loc  `json:"loc,omitempty"`
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
