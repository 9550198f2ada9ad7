package passes

import (
	"errors"
	"fmt"
	"slices"

	"github.com/genaic/genaic/compiler/diag"
)

// Pipeline is every pass in the order it runs. A pass may read the result
// of a pass that runs earlier and that it lists in Requires; PassOrder
// states the other constraints on the order, and CheckPipeline keeps both.
var Pipeline = []*Pass{
	// Facts first: name resolution, symbol classes and bindings, which the
	// checks and the planner read rather than derive again.
	ScopesPass,
	SymbolsPass,
	BindingsPass,
	// Workflow structure: names, components, ports and contract shapes,
	// which the batching rules below assume are sound.
	SSAPass,
	ContractsPass,
	// The batching contracts, innermost facts first: packed layouts and
	// padding are what a capacity's symbols are classified by.
	PackedPass,
	PaddingPass,
	CapacityPass,
	// Emission: whether every ragged value leaves the workflow with the
	// companions that decode it.
	EmitPass,
	// The package against its models: each ONNX component's ports against
	// its graph.
	ModelsPass,
	// Preprocessing programs compiled for their adapters, last: the
	// adapters then load as the runtime loads them, only once every check
	// above has accepted the module.
	PreprocessPass,
	// Plan passes run only when every check above accepted the module.
	PlanPass,
}

// Order is a constraint on the pipeline that Requires does not state:
// Before runs earlier than After, for Reason.
type Order struct {
	Before, After *Pass
	Reason        string
}

// PassOrder lists the ordering constraints between passes, in the manner of
// the Go compiler's passOrder. Each records a pass that stays quiet about a
// defect another pass reports: the pass whose finding explains the silence
// runs first, so the pipeline, --dump and `genaic passes` read in the order
// a defect is explained.
var PassOrder = []Order{
	{SSAPass, ContractsPass, "contracts compares only bindings to ports and outputs that exist, leaving the others to ssa/unknown-port and ssa/unknown-output"},
	{SSAPass, PaddingPass, "padding/unresolved stays quiet about valid_lengths that a step also reads undefined, leaving the missing declaration to ssa/undefined"},
	{PackedPass, PaddingPass, "padding leaves the padding of a level companion and of a packed dimension to packed/companion and packed/double-spelling"},
	{PackedPass, CapacityPass, "capacity reads no unit count from a level whose owner and offsets share an extent, leaving that level to packed/companion"},
	{PaddingPass, CapacityPass, "capacity does not call a dimension free when a padding entry meant for it names no axis, leaving that entry to padding/dimension"},
	{SSAPass, EmitPass, "emit/companion-of-unemitted stays quiet when an emit misspells the payload's output, leaving it to ssa/unknown-output"},
	{PackedPass, EmitPass, "emit/malformed-companion stays quiet where packed/companion judges the companion's own contract"},
	{PaddingPass, EmitPass, "emit/malformed-companion stays quiet where padding/companion judges the lengths' own contract"},
	{ContractsPass, ModelsPass, "model/dtype stays quiet about a dtype genaic does not know, leaving it to contract/dtype"},
	{PaddingPass, ModelsPass, "model/dtype stays quiet about a lengths port declared other than int64, leaving it to padding/companion"},
	{PaddingPass, ModelsPass, "model/lengths-unseen stays quiet about valid_lengths that name nothing, leaving them to padding/unresolved"},
}

func init() {
	if err := CheckPipeline(Pipeline, PassOrder); err != nil {
		panic(err)
	}
}

// CheckPipeline verifies that pipeline is well formed: every pass is
// declared once, runs after the passes it requires and every constraint of
// order holds, no check pass runs after a plan pass, and every rule is a
// catalogue id declared by one pass. The error names each broken
// constraint with its reason.
func CheckPipeline(pipeline []*Pass, order []Order) error {
	var errs []error
	at := map[*Pass]int{}
	for i, p := range pipeline {
		if p.Name == "" || p.Doc == "" || p.Run == nil {
			errs = append(errs, fmt.Errorf("pass %d (%q) is missing a name, doc or Run", i, p.Name))
		}
		if j := slices.IndexFunc(pipeline[:i], func(q *Pass) bool { return q.Name == p.Name }); j >= 0 {
			errs = append(errs, fmt.Errorf("passes %d and %d are both called %s", j, i, p.Name))
		}
		at[p] = i
	}
	for _, p := range pipeline {
		for _, r := range p.Requires {
			errs = append(errs, runsBefore(at, r, p, fmt.Sprintf("%s reads the result of %s", p.Name, r.Name)))
		}
	}
	for _, o := range order {
		errs = append(errs, runsBefore(at, o.Before, o.After, o.Reason))
	}
	errs = append(errs, checkKinds(pipeline), checkRules(pipeline))
	return errors.Join(errs...)
}

// runsBefore reports a constraint that pass a run before pass b which the
// pipeline breaks.
func runsBefore(at map[*Pass]int, a, b *Pass, reason string) error {
	i, inA := at[a]
	j, inB := at[b]
	switch {
	case !inA || !inB:
		return fmt.Errorf("%s must run before %s, but the pipeline lacks one of them: %s", a.Name, b.Name, reason)
	case i >= j:
		return fmt.Errorf("%s must run before %s (it runs at %d, not before %d): %s", a.Name, b.Name, i, j, reason)
	}
	return nil
}

// checkKinds keeps every check pass ahead of the plan passes: plan passes
// do not run on a module with errors, and Run stops at the first of them.
func checkKinds(pipeline []*Pass) error {
	plan := slices.IndexFunc(pipeline, func(p *Pass) bool { return p.Kind == Plan })
	if plan < 0 {
		return nil
	}
	for _, p := range pipeline[plan:] {
		if p.Kind == Check {
			return fmt.Errorf("check pass %s runs after plan pass %s: a module with errors stops at the first plan pass, so the check would be skipped", p.Name, pipeline[plan].Name)
		}
	}
	return nil
}

// checkRules keeps each declared rule in the catalogue and with one pass:
// diagnostics are sorted, so with one owner per rule what a user reads does
// not depend on the order of the check passes.
func checkRules(pipeline []*Pass) error {
	var errs []error
	owner := map[diag.Rule]*Pass{}
	for _, p := range pipeline {
		for _, r := range p.Rules {
			if !diag.KnownRule(r) {
				errs = append(errs, fmt.Errorf("pass %s declares rule %q, which is not in the catalogue (RULES.md)", p.Name, r))
			}
			if q, dup := owner[r]; dup && q != p {
				errs = append(errs, fmt.Errorf("passes %s and %s both declare rule %s; a rule is one pass's", q.Name, p.Name, r))
			}
			owner[r] = p
		}
	}
	return errors.Join(errs...)
}
