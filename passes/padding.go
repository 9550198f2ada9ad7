package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// PaddingPass checks padding (§3.2): resolvable int64 shared lengths companions shaped as the padded value's outer axes.
//
// An entry that is refused for what it pads (a duplicate, the value itself)
// is not checked further, and a lengths companion's shape is compared only
// when the padded dimension resolved to an axis: a second complaint about a
// rank nothing could compute would send the reader to the wrong line. The
// packed dimension of a token_packed value and the padding of a level
// companion belong to the packed pass (packed/double-spelling,
// packed/companion).
var PaddingPass = &Pass{
	Name:     "padding",
	Doc:      "check padding (see docs/authoring.md#padding): resolvable int64 shared lengths companions shaped as the padded value's outer axes",
	Kind:     Check,
	Requires: []*Pass{ScopesPass, BindingsPass},
	Rules: []diag.Rule{
		diag.PaddingUnresolved, diag.PaddingDimension, diag.PaddingDuplicate, diag.PaddingSelf,
		diag.PaddingCompanion,
	},
	Run: func(c *Context) (any, error) {
		sc := c.Result(ScopesPass).(*Scopes)
		p := &paddingChecker{c: c, sc: sc, companions: packedCompanionContracts(sc),
			seen: map[string]bool{}, bind: c.Result(BindingsPass).(*Bindings)}
		for _, s := range sc.Sites {
			p.site(s)
		}
		return nil, nil
	},
}

type paddingChecker struct {
	c  *Context
	sc *Scopes
	// companions are the contracts of level companions: their padding is
	// the packed pass's to refuse.
	companions map[*ir.Contract]bool
	// seen de-duplicates findings about one lengths declaration named
	// from several sites.
	seen map[string]bool
	// bind says which values steps read: like a level companion, the
	// lengths of a workflow input nothing reads are never looked up (see
	// packedChecker.resolve).
	bind *Bindings
}

func (p *paddingChecker) site(s *ir.Site) {
	k := s.Contract
	if k == nil || len(k.Padding) == 0 || p.companions[k] {
		return
	}
	packed, _, isPacked := packedDim(k)
	first := map[string]*ir.Padding{}
	for i := range k.Padding {
		pad := &k.Padding[i]
		name := pad.Dim.Name
		if name == "" || (isPacked && packed.IsSym() && packed.Sym == name) {
			continue
		}
		if prev, dup := first[name]; dup {
			p.c.ReportRelated(diag.PaddingDuplicate, packedLoc(pad.Dim.Loc, pad.Loc),
				[]Related{{Loc: packedLoc(prev.Dim.Loc, prev.Loc), Message: fmt.Sprintf("`%s` is first padded here", name)}},
				"%s declares padding on dimension `%s` more than once; one dimension has one padded extent and one lengths companion\ndrop this entry",
				s, name)
			continue
		}
		first[name] = pad
		axis := p.dimension(s, pad)
		p.lengths(s, pad, axis)
	}
}

// dimension checks that the padded dimension is a shape symbol of the
// value and not its request axis, and returns its axis (-1 when it is
// refused).
func (p *paddingChecker) dimension(s *ir.Site, pad *ir.Padding) int {
	k, name := s.Contract, pad.Dim.Name
	loc := packedLoc(pad.Dim.Loc, pad.Loc)
	axis := k.Axis(name)
	switch {
	case !k.HasShape:
		p.c.Report(diag.PaddingDimension, loc,
			"%s declares padding on dimension `%s`, but it declares no shape, so `%s` is not a shape symbol of it\ndeclare its shape with `%s` in it",
			s, name, name, name)
		return -1
	case axis < 0:
		var syms []string
		for _, d := range k.Shape {
			if d.IsSym() {
				syms = append(syms, d.Sym)
			}
		}
		p.c.ReportName(diag.PaddingDimension, loc, name, diag.DidYouMean(name, syms),
			"%s declares padding on dimension `%s`, which is not a shape symbol of the value it pads (its shape is %s)\npad one of its symbols, or add `%s` to its shape",
			s, name, paddingShapeText(k.Shape), name)
		return -1
	case axis == k.RequestAxis():
		p.c.Report(diag.PaddingDimension, loc,
			"%s declares padding on dimension `%s`, which is the axis %d its request rows stack along; a row is a whole request and is never padded\npad a dimension inside one row",
			s, name, axis)
		return -1
	case axis < k.RequestAxis():
		// Lengths have one entry per position of the axes outer to the
		// padded one: outside the request axis that is one length for the
		// whole group, where each request needs its own.
		p.c.Report(diag.PaddingDimension, loc,
			"%s declares padding on dimension `%s`, axis %d, outside the axis %d its request rows stack along: its lengths would be one for the whole group (they have an entry per position of the axes outer to `%s`), where each request needs its own\ngroup only items that agree on `%s` (uniform_dimensions), or export the model with its request axis first (a recurrent network's batch_first)",
			s, name, axis, k.RequestAxis(), name, name)
		return -1
	}
	return axis
}

// lengths checks the valid_lengths companion of one entry.
func (p *paddingChecker) lengths(s *ir.Site, pad *ir.Padding, axis int) {
	ref := pad.Lengths
	if ref.Name == "" {
		return
	}
	loc := packedLoc(ref.Loc, pad.Loc)
	if ref.Name == s.Name {
		p.c.Report(diag.PaddingSelf, loc,
			"%s names itself as the valid_lengths of its own dimension `%s`; a value cannot say how much of itself is real\nname the int64 vector that holds the lengths of `%s`",
			s, pad.Dim.Name, pad.Dim.Name)
		return
	}
	t, ok := p.sc.Lookup(s, ref.Name)
	if !ok && (s.Kind != ir.SiteInput || p.bind.Read(s.Name)) {
		if readUndefined(p.c.Module, ref.Name) {
			return // ssa/undefined
		}
		p.c.ReportName(diag.PaddingUnresolved, loc, ref.Name, diag.DidYouMean(ref.Name, p.sc.Names(s)),
			"%s names `%s` as the valid_lengths of dimension `%s`, which is not a declared value or port in that scope (%s)\ndeclare it there or name one that is",
			s, ref.Name, pad.Dim.Name, packedScopeText(s))
		return
	}
	if !ok || t.Contract == nil {
		return
	}
	p.lengthsType(s, pad, t)
	if axis >= 0 {
		p.lengthsShape(s, pad, t, axis)
	}
}

// lengthsType checks what a lengths companion is on its own: int64 and
// shared.
func (p *paddingChecker) lengthsType(s *ir.Site, pad *ir.Padding, t Target) {
	lk := t.Contract
	key := fmt.Sprintf("%p", lk)
	if p.seen[key] {
		return
	}
	report := func(at ir.Loc, format string, args ...any) {
		p.seen[key] = true
		p.c.ReportRelated(diag.PaddingCompanion, packedLoc(pad.Lengths.Loc, pad.Loc),
			[]Related{{Loc: packedLoc(at, lk.Loc), Message: fmt.Sprintf("`%s` is declared here", t.Name)}},
			"valid_lengths `%s` of dimension `%s` of %s "+format, append([]any{t.Name, pad.Dim.Name, s}, args...)...)
	}
	if _, known := ir.LookupDType(lk.DType); known && !ir.SameDType(lk.DType, "int64") {
		fix := "declare `dtype: int64`"
		if site := t.Site; site != nil && site.Component != nil && site.Component.Impl == ir.ImplONNX {
			// The port is the graph's: its dtype is the model's.
			switch site.Kind {
			case ir.SitePortOut:
				fix += ", once the model outputs it so (an export that casts it: torch's .to(torch.int64))"
			case ir.SitePortIn:
				fix += fmt.Sprintf(", once the model takes it so: `genaic widen %s -o OUT.onnx --input %s` rewrites it to", site.Component.Artifact, t.Name)
			}
		}
		report(lk.DTypeLoc, "is %s but must be int64; it counts the real entries of `%s`\n%s", lk.DType, pad.Dim.Name, fix)
	}
	if lk.Layout.Kind != ir.Shared {
		report(lk.Layout.Loc, "declares %s but must declare shared; it has one entry per position of the axes outer to `%s` across the whole group, not one row per request\nwrite `batch_layout: { kind: shared }`",
			lk.Layout.Kind, pad.Dim.Name)
	}
}

// lengthsShape checks that a lengths companion's rank is the padded axis
// index and its shape the padded value's outer axes, in order.
func (p *paddingChecker) lengthsShape(s *ir.Site, pad *ir.Padding, t Target, axis int) {
	k, lk := s.Contract, t.Contract
	outer := k.Shape[:axis]
	loc := packedLoc(pad.Lengths.Loc, pad.Loc)
	if lk.HasShape && slices.ContainsFunc(lk.Shape, func(d ir.Dim) bool { return d.IsSym() && d.Sym == pad.Dim.Name }) {
		// Shaped over the padded dimension itself: a mask, which marks
		// each position, where lengths count each row's.
		p.c.ReportRelated(diag.PaddingCompanion, loc,
			[]Related{{Loc: packedLoc(lk.RankLoc, lk.Loc), Message: fmt.Sprintf("`%s` is declared here", t.Name)}},
			"valid_lengths `%s` of %s is shaped over `%s` itself, as a mask is: lengths have one entry per position of the axes outer to `%s` (its shape must be %s), each the count of real positions, never a mask\ngenaic pads by lengths: a model that takes a mask is rewritten to take lengths by `genaic mask-lengths MODEL.onnx -o OUT.onnx`; else drop the padding and list `%s` in uniform_dimensions",
			t.Name, s, pad.Dim.Name, pad.Dim.Name, paddingShapeText(outer), pad.Dim.Name)
		return
	}
	if lk.Rank >= 0 && lk.Rank != axis {
		omit := ""
		if s.Kind == ir.SitePortOut && lk.Rank < axis {
			// Attention weights [batch, heads, sequence, sequence] beside
			// the ids' [batch] lengths: nothing holds lengths per head.
			omit = fmt.Sprintf("; where no value holds lengths of that shape (attention weights beside their ids' lengths), leave port `%s` out: a graph output no port declares is not fetched", s.Name)
		}
		p.c.ReportRelated(diag.PaddingCompanion, loc,
			[]Related{{Loc: packedLoc(lk.RankLoc, lk.Loc), Message: fmt.Sprintf("`%s` is declared here", t.Name)}},
			"valid_lengths `%s` of %s has rank %d but dimension `%s` is axis %d, so it must have rank %d: one entry per position of the axes outer to `%s`\ndeclare its shape as %s%s",
			t.Name, s, lk.Rank, pad.Dim.Name, axis, axis, pad.Dim.Name, paddingShapeText(outer), omit)
		return
	}
	if !lk.HasShape || len(lk.Shape) != axis {
		return
	}
	for i, d := range lk.Shape {
		if !packedDimsDiffer(d, outer[i]) {
			continue
		}
		p.c.ReportRelated(diag.PaddingCompanion, loc,
			[]Related{{Loc: d.Loc, Message: fmt.Sprintf("`%s` declares %s here", t.Name, packedDimText(d))},
				{Loc: outer[i].Loc, Message: fmt.Sprintf("%s declares %s here", s, packedDimText(outer[i]))}},
			"valid_lengths `%s` declares %s on axis %d but the value it bounds, %s, declares %s there; its shape is the padded value's axes outer to `%s`, in order\ndeclare it as %s",
			t.Name, packedDimText(d), i, s, packedDimText(outer[i]), pad.Dim.Name, paddingShapeText(outer))
		return
	}
}

// paddingShapeText writes a shape as a document would.
func paddingShapeText(shape []ir.Dim) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = packedDimPlain(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
