package passes

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// EmitPass checks emission (§4 r8): every ragged emitted value publishes its companions, serving admits only those, and emit axes are in range.
var EmitPass = &Pass{
	Name:     "emit",
	Doc:      "check emission (see docs/authoring.md#publishing-companions): every ragged emitted value publishes its companions, serving admits only those, and emit axes are in range",
	Kind:     Check,
	Requires: []*Pass{ScopesPass, BindingsPass},
	Rules: []diag.Rule{
		diag.EmitUnpublishedCompanion, diag.EmitCompanionOfUnemitted,
		diag.EmitMalformedCompanion, diag.EmitServingShared, diag.EmitTrimPadded,
		diag.EmitRowAxis, diag.EmitAxis, diag.EmitAxisRequired,
	},
	Run: func(c *Context) (any, error) {
		e := newEmitChecker(c)
		for _, s := range e.bind.Emits {
			e.checkAxis(s)
			e.checkRowAxis(s)
			e.checkTrim(s)
		}
		for _, o := range e.outputs {
			e.checkPublished(o)
		}
		for _, o := range e.outputs {
			e.checkCompanion(o)
		}
		return nil, nil
	},
}

// emitChecker holds what the emission rules decide over the whole
// workflow: which outputs some step writes, and what each declared output's
// layout and padding demand of the outputs they name as companions. The
// decision is whole-workflow rather than path-sensitive: whether two emits
// reach a caller together depends on branch predicates, which a check does
// not evaluate, so "written by some step" is what can be decided soundly.
type emitChecker struct {
	c       *Context
	m       *ir.Module
	sc      *Scopes
	bind    *Bindings              // the emits, and which outputs they write
	outputs []*ir.Output           // declared outputs, first of each name, in order
	claims  map[string][]emitClaim // companion name → the references naming it
}

// emitClaim is one reference from a declared output's layout or padding to
// a companion, with what that reference demands: int64 at rank Rank (-1
// when the padded dimension resolves to no axis, so nothing can be
// demanded).
type emitClaim struct {
	payload *ir.Output
	role    string // "level 0 offsets", "level 1 owner", "valid_lengths"
	dim     string // the padded dimension of a valid_lengths
	rank    int
	ref     ir.Ref
}

func newEmitChecker(c *Context) *emitChecker {
	e := &emitChecker{c: c, m: c.Module, sc: c.Result(ScopesPass).(*Scopes),
		bind: c.Result(BindingsPass).(*Bindings), claims: map[string][]emitClaim{}}
	seen := map[string]bool{}
	for _, o := range e.m.Outputs {
		if o == nil || seen[o.Name] {
			continue
		}
		seen[o.Name] = true
		e.outputs = append(e.outputs, o)
		for _, cl := range emitClaimsOf(o) {
			if cl.ref.Name != "" && cl.ref.Name != o.Name {
				e.claims[cl.ref.Name] = append(e.claims[cl.ref.Name], cl)
			}
		}
	}
	return e
}

// emitClaimsOf lists the companions an output's contract names: each
// packed level's offsets and owner, and each padding entry's lengths.
func emitClaimsOf(o *ir.Output) []emitClaim {
	c := o.Contract
	if c == nil {
		return nil
	}
	var cls []emitClaim
	if c.Packed() {
		for i, l := range c.Layout.Levels {
			cls = append(cls,
				emitClaim{payload: o, role: fmt.Sprintf("level %d offsets", i), rank: 1, ref: l.Offsets},
				emitClaim{payload: o, role: fmt.Sprintf("level %d owner", i), rank: 1, ref: l.Owner})
		}
	}
	for _, p := range c.Padding {
		cls = append(cls, emitClaim{payload: o, role: "valid_lengths", dim: p.Dim.Name, rank: c.Axis(p.Dim.Name), ref: p.Lengths})
	}
	return cls
}

// describe says what the claim names its companion as, for messages.
func (cl emitClaim) describe() string {
	if cl.dim != "" {
		return fmt.Sprintf("the valid_lengths of padded dimension `%s`", cl.dim)
	}
	return "the " + cl.role
}

// demand says what the claim requires of its companion, for messages.
func (cl emitClaim) demand() string {
	if cl.rank < 0 {
		return "int64"
	}
	return fmt.Sprintf("int64 at rank %d", cl.rank)
}

// emitRank is the rank of what an emit writes: the value's own contract,
// or the output's when the value declares none. -1 when neither says.
func (e *emitChecker) emitRank(s *ir.Step) int {
	if v := e.m.Value(s.Value.ID); v != nil && v.Contract != nil && v.Contract.Rank >= 0 {
		return v.Contract.Rank
	}
	if o := e.m.Output(s.Output.Name); o != nil && o.Contract != nil {
		return o.Contract.Rank
	}
	return -1
}

// checkAxis reports emit/axis (an explicit axis outside the value's rank,
// at every version) and emit/axis-required (from v1.1, an append or
// valid_length emit of a rank ≥ 4 value must name its axis). A version may
// gate what a document must say, never what it may say wrongly: the range
// check is unconditional, the demand to be explicit starts at the version
// whose rank-4 media tensors made the default final axis ambiguous.
func (e *emitChecker) checkAxis(s *ir.Step) {
	r := e.emitRank(s)
	if r < 0 {
		return
	}
	if s.Axis != nil {
		if a := *s.Axis; a < 0 || a >= int64(r) {
			e.c.Report(diag.EmitAxis, emitLoc(s.AxisLoc, s.Loc),
				"emit of `%s` into output `%s` names axis %d, outside the rank %d of the value it emits; an emit axis is in [0, %d) at every schema version\nname one of the value's axes",
				s.Value.Name, s.Output.Name, a, r, r)
		}
		return
	}
	if r < 4 || !emitV11(e.m) {
		return
	}
	what := "appends"
	if s.Mode != "append" {
		if s.ValidLength == nil || e.trimRefused(s) {
			return
		}
		what = "trims with a valid_length"
	}
	e.c.Report(diag.EmitAxisRequired, s.Loc,
		"emit of `%s` into output `%s` %s but names no axis; the value is rank %d and the document declares %s, where the default final axis of a rank-4 or higher value is a spatial extent, so the axis it grows along must be stated\nwrite `axis: %d` for the final axis, or the axis it grows along",
		s.Value.Name, s.Output.Name, what, r, emitVersion(e.m), r-1)
}

// trimRefused reports whether emit/row-axis or emit/trim-padded already
// refuses the emit's valid_length: the fix they ask for is to drop it, and
// an axis to trim along would then be advice about a key that must go.
func (e *emitChecker) trimRefused(s *ir.Step) bool {
	o := e.m.Output(s.Output.Name)
	return o != nil && o.Contract != nil && (o.Contract.RequestAxis() < 0 || len(o.Contract.Padding) > 0)
}

func emitV11(m *ir.Module) bool { return m.Major > 1 || m.Major == 1 && m.Minor >= 1 }

func emitVersion(m *ir.Module) string { return fmt.Sprintf("v%d.%d", m.Major, m.Minor) }

// checkRowAxis reports emit/row-axis: a valid_length or when is per
// request row, so the output must declare a request axis to find the rows.
func (e *emitChecker) checkRowAxis(s *ir.Step) {
	o := e.m.Output(s.Output.Name)
	if o == nil || o.Contract == nil || o.Contract.RequestAxis() >= 0 {
		return
	}
	for _, u := range []struct {
		use  *ir.Use
		what string
	}{{s.ValidLength, "a per-row valid_length"}, {s.When, "a per-row guard when"}} {
		if u.use == nil {
			continue
		}
		e.c.ReportRelated(diag.EmitRowAxis, emitLoc(u.use.Loc, s.Loc), emitOutputRelated(o, "the output is declared here"),
			"emit of `%s` into output `%s` carries %s `%s`, but `%s` is %s and declares no request axis; ragged emission trims or guards each request's row, so it needs an output whose batch_layout is request_aligned or request_expanded\nemit into such an output, or drop the %s",
			s.Value.Name, o.Name, u.what, u.use.Name, o.Name, o.Contract.Layout.Kind, emitKey(u.what))
	}
}

func emitKey(what string) string {
	if strings.HasSuffix(what, "when") {
		return "`when`"
	}
	return "`valid_length`"
}

// checkTrim reports emit/trim-padded: an emit-level valid_length and a
// declared padding are two accounts of one raggedness, and only the
// padding's valid_lengths reaches the caller, so it is the authoritative one.
func (e *emitChecker) checkTrim(s *ir.Step) {
	o := e.m.Output(s.Output.Name)
	if s.ValidLength == nil || o == nil || o.Contract == nil || len(o.Contract.Padding) == 0 {
		return
	}
	var dims []string
	var rel []Related
	for _, p := range o.Contract.Padding {
		dims = append(dims, fmt.Sprintf("`%s` on dimension `%s`", p.Lengths.Name, p.Dim.Name))
		rel = append(rel, Related{Loc: emitLoc(p.Loc, o.Contract.Loc), Message: fmt.Sprintf("`%s` pads dimension `%s` here", o.Name, p.Dim.Name)})
	}
	e.c.ReportRelated(diag.EmitTrimPadded, emitLoc(s.ValidLength.Loc, s.Loc), rel,
		"emit of `%s` into output `%s` carries valid_length `%s`, but `%s` declares padding whose valid_lengths %s already says how much of it is real; a padded output has one account of its raggedness and it is the declared padding, the only one the caller receives\ndrop the emit's valid_length",
		s.Value.Name, o.Name, s.ValidLength.Name, o.Name, strings.Join(dims, ", "))
}

// checkPublished reports emit/unpublished-companion (§4 r8): a written
// packed or padded output publishes each companion that decodes it as a
// workflow output that some step writes. A name that resolves to nothing is
// left to packed/unresolved and padding/unresolved.
func (e *emitChecker) checkPublished(o *ir.Output) {
	ws := e.bind.Writers(o.Name)
	if len(ws) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, cl := range emitClaimsOf(o) {
		name := cl.ref.Name
		if name == "" || name == o.Name || seen[name] {
			continue
		}
		seen[name] = true
		if _, ok := e.sc.LookupWorkflow(name); !ok {
			continue
		}
		e.reportUnpublished(o, ws[0], cl)
	}
}

func (e *emitChecker) reportUnpublished(o *ir.Output, w *ir.Step, cl emitClaim) {
	name := cl.ref.Name
	what := fmt.Sprintf("is token_packed and its %s `%s`", cl.role, name)
	why := "a caller can split a packed result only with the companions that describe it"
	if cl.dim != "" {
		what = fmt.Sprintf("declares padding on dimension `%s` whose valid_lengths `%s`", cl.dim, name)
		why = "a caller learns how much of a padded result is real only from its lengths"
	}
	rel := []Related{{Loc: emitLoc(w.Output.Loc, w.Loc), Message: fmt.Sprintf("`%s` is emitted here", o.Name)}}
	c := e.m.Output(name)
	if c == nil {
		e.c.ReportRelated(diag.EmitUnpublishedCompanion, emitLoc(cl.ref.Loc, o.Loc), rel,
			"emitted output `%s` %s is not itself a declared workflow output; %s\ndeclare `%s` under outputs as %s, shared, and emit it",
			o.Name, what, why, name, cl.demand())
		return
	}
	if len(e.bind.Writers(name)) > 0 {
		return
	}
	rel = append(rel, Related{Loc: c.Loc, Message: fmt.Sprintf("`%s` is declared here", name)})
	e.c.ReportRelated(diag.EmitUnpublishedCompanion, emitLoc(cl.ref.Loc, o.Loc), rel,
		"emitted output `%s` %s is declared as a workflow output but never emitted; declaring an output delivers nothing, and %s\nadd an emit step that writes `%s`",
		o.Name, what, why, name)
}

// checkCompanion judges an output other outputs name as a companion, and an
// emitted shared output in a serving workflow. The serving carve-out admits
// a shared rank>0 emit only as a companion: int64, at the rank the naming
// reference demands, and named by an output some step writes. Each way of
// falling short gets its own rule, so that a companion is never told to
// declare a request axis, the one layout it must not have.
func (e *emitChecker) checkCompanion(o *ir.Output) {
	cls := e.claims[o.Name]
	var live []emitClaim
	for _, cl := range cls {
		if len(e.bind.Writers(cl.payload.Name)) > 0 {
			live = append(live, cl)
		}
	}
	if len(live) > 0 {
		e.checkMalformed(o, live)
	}
	ws := e.bind.Writers(o.Name)
	if len(ws) == 0 || o.Contract == nil || o.Contract.Layout.Kind != ir.Shared {
		return
	}
	switch {
	case len(cls) > 0 && len(live) == 0 && !e.misspeltPayload(cls):
		e.reportOrphan(o, ws[0], cls)
	case len(cls) == 0 && e.m.Serving != nil:
		e.checkServing(o, ws[0])
	}
}

// checkMalformed reports emit/malformed-companion when o matches none of
// the references that written outputs make to it. When the name resolves
// to o itself in the workflow scope, packed/companion and padding/companion
// already judge this very contract at the reference, so this rule stays
// quiet rather than report the defect twice.
func (e *emitChecker) checkMalformed(o *ir.Output, live []emitClaim) {
	c := o.Contract
	if c == nil {
		return
	}
	if t, ok := e.sc.LookupWorkflow(o.Name); ok && t.Contract == c {
		return
	}
	dt, known := ir.LookupDType(c.DType)
	dtypeOK := !known || dt.Name == "int64"
	for _, cl := range live {
		if dtypeOK && (cl.rank < 0 || c.Rank < 0 || c.Rank == cl.rank) {
			return
		}
	}
	var named []string
	var rel []Related
	for _, cl := range live {
		named = append(named, fmt.Sprintf("emitted output `%s` names it as %s, which demands %s", cl.payload.Name, cl.describe(), cl.demand()))
		rel = append(rel, Related{Loc: emitLoc(cl.ref.Loc, cl.payload.Loc), Message: fmt.Sprintf("`%s` names `%s` as %s here", cl.payload.Name, o.Name, cl.describe())})
	}
	loc := emitLoc(c.DTypeLoc, c.Loc, o.Loc)
	if dtypeOK {
		loc = emitRankLoc(c, o.Loc)
	}
	e.c.ReportRelated(diag.EmitMalformedCompanion, loc, rel,
		"output `%s` is %s, but %s; a companion is shaped by the reference that names it\ndeclare `%s` as %s",
		o.Name, emitShapeOf(c), strings.Join(named, "; "), o.Name, emitAdvice(live[0]))
}

func emitShapeOf(c *ir.Contract) string {
	if c.Rank < 0 {
		return fmt.Sprintf("%s of unknown rank", c.DType)
	}
	return fmt.Sprintf("%s at rank %d", c.DType, c.Rank)
}

// emitAdvice says what to declare for a claim: a length vector's shape is
// the payload's axes outer to the padded one.
func emitAdvice(cl emitClaim) string {
	if cl.rank < 0 {
		return "int64"
	}
	if cl.dim == "" || cl.payload.Contract == nil || cl.rank > len(cl.payload.Contract.Shape) {
		return fmt.Sprintf("int64 at rank %d", cl.rank)
	}
	var outer []string
	for _, d := range cl.payload.Contract.Shape[:cl.rank] {
		if d.IsSym() {
			outer = append(outer, d.Sym)
		} else {
			outer = append(outer, fmt.Sprint(d.Size))
		}
	}
	return fmt.Sprintf("int64 at rank %d, shape [%s] (the axes of `%s` outer to `%s`)", cl.rank, strings.Join(outer, ", "), cl.payload.Name, cl.dim)
}

func emitRankLoc(c *ir.Contract, fallback ir.Loc) ir.Loc {
	if c.RankLoc != 0 {
		return c.RankLoc
	}
	if len(c.Shape) > 0 && c.Shape[0].Loc != 0 {
		return c.Shape[0].Loc
	}
	return emitLoc(c.Loc, fallback)
}

// misspeltPayload reports whether an emit writes an undeclared output
// whose likely intended name is a payload of cls: ssa/unknown-output
// reported that emit with the payload as its suggestion, and saying the
// payload is never emitted would restate that one typo.
func (e *emitChecker) misspeltPayload(cls []emitClaim) bool {
	var declared []string
	for _, o := range e.m.Outputs {
		declared = append(declared, o.Name)
	}
	for _, cl := range cls {
		found := false
		e.m.Body.Walk(func(s *ir.Step) bool {
			if s.Op == ir.OpEmit && s.Output.Name != "" && e.m.Output(s.Output.Name) == nil &&
				diag.Nearest(s.Output.Name, declared) == cl.payload.Name {
				found = true
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// reportOrphan reports emit/companion-of-unemitted: a companion describes
// the payload that names it, and a claim by a payload nothing writes
// delivers nothing to describe.
func (e *emitChecker) reportOrphan(o *ir.Output, w *ir.Step, cls []emitClaim) {
	var named, payloads []string
	var rel []Related
	seen := map[string]bool{}
	for _, cl := range cls {
		named = append(named, fmt.Sprintf("%s of `%s`", cl.describe(), cl.payload.Name))
		rel = append(rel, Related{Loc: emitLoc(cl.ref.Loc, cl.payload.Loc), Message: fmt.Sprintf("`%s` names `%s` here", cl.payload.Name, o.Name)})
		if !seen[cl.payload.Name] {
			seen[cl.payload.Name] = true
			payloads = append(payloads, "`"+cl.payload.Name+"`")
		}
	}
	who := "only output " + payloads[0] + " names"
	if len(payloads) > 1 {
		who = "only outputs " + strings.Join(payloads, ", ") + " name"
	}
	e.c.ReportRelated(diag.EmitCompanionOfUnemitted, emitLoc(w.Output.Loc, w.Loc), rel,
		"emit of `%s` writes shared output `%s`, which %s as a companion (%s), and no step emits %s; a companion is published for the payload it describes\nemit %s as well, or drop this emit",
		w.Value.Name, o.Name, who, strings.Join(named, "; "), strings.Join(payloads, " or "), strings.Join(payloads, " and "))
}

// checkServing reports emit/serving-shared: in a serving workflow every
// result goes back to a request, and a shared rank>0 output that no emitted
// output names as a companion has no row to go back to.
func (e *emitChecker) checkServing(o *ir.Output, w *ir.Step) {
	r := o.Contract.Rank
	if r < 0 {
		r = e.emitRank(w)
	}
	if r <= 0 {
		return
	}
	e.c.ReportRelated(diag.EmitServingShared, emitLoc(w.Output.Loc, w.Loc), emitOutputRelated(o, "the output is declared shared here"),
		"emit of `%s` into output `%s`, which is shared at rank %d, in a workflow with `serving`: a served result goes back to its request, and a shared value has no row to go back to unless it is a companion of another emitted output (the offsets or owner of a token_packed level, or the valid_lengths of a padding entry); no output names `%s` as one\ndeclare a request axis on `%s` (batch_layout request_aligned), or name it in the levels or padding of the emitted output it describes",
		w.Value.Name, o.Name, r, o.Name, o.Name)
}

func emitOutputRelated(o *ir.Output, msg string) []Related {
	l := o.Loc
	if o.Contract != nil && o.Contract.Layout.Loc != 0 {
		l = o.Contract.Layout.Loc
	}
	if l == 0 {
		return nil
	}
	return []Related{{Loc: l, Message: msg}}
}

// emitLoc returns the first known location.
func emitLoc(ls ...ir.Loc) ir.Loc {
	for _, l := range ls {
		if l != 0 {
			return l
		}
	}
	return 0
}
