package codegen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/genaic/genaic/ir"
)

// Typed items (vm/items.go): a token_packed workflow input of one or two
// levels gets a second field, NameItems []*backend.Tensor, that takes one
// tensor per item; the executor packs them and derives the companions, so
// that a Go caller never computes offsets, owners or valid lengths. A
// token_packed output on the levels of such an input gets NameItems on
// Response, filled for a request that gave items.

// itemsInput reports whether a workflow input may be given as items.
func itemsInput(in *ir.Input) bool {
	c := in.Contract
	return c != nil && c.Layout.Kind == ir.TokenPacked && len(c.Layout.Levels) >= 1 && len(c.Layout.Levels) <= 2 && c.Rank >= 1
}

// byteItems reports whether an items input is encoded media (uint8 bytes
// packed bytes → items → request), whose items are typed [][]byte.
func byteItems(in *ir.Input) bool {
	c := in.Contract
	return c.DType == "uint8" && c.Rank == 1 && len(c.Layout.Levels) == 2
}

// claimItems names the items fields, after every plain field is named.
func (g *gen) claimItems(in, out *namer) {
	g.inItems, g.outItems, g.outProduced = map[string]string{}, map[string]string{}, map[string]bool{}
	var offsets [][]string
	for _, i := range g.m.Inputs {
		if !itemsInput(i) {
			continue
		}
		g.inItems[i.Name] = in.claim(identifier(i.Name+"_items", true))
		var names []string
		for _, l := range i.Contract.Layout.Levels {
			names = append(names, l.Offsets.Name)
		}
		offsets = append(offsets, names)
	}
	emitted := map[string]bool{}
	for _, o := range g.m.Outputs {
		emitted[o.Name] = true
	}
	for _, o := range g.m.Outputs {
		c := o.Contract
		if c == nil || c.Layout.Kind != ir.TokenPacked || len(c.Layout.Levels) == 0 {
			continue
		}
		var names []string
		own := true
		for _, l := range c.Layout.Levels {
			names = append(names, l.Offsets.Name)
			own = own && emitted[l.Offsets.Name] && l.Offsets.Name != o.Name
		}
		// The output's levels are the outermost ones of an items input, or
		// levels the workflow produces and emits (vm/items.go).
		switch {
		case slices.ContainsFunc(offsets, func(in []string) bool {
			return len(names) <= len(in) && slices.Equal(in[len(in)-len(names):], names)
		}):
		case own && slices.ContainsFunc(offsets, func(in []string) bool { return len(names) <= len(in) }):
			g.outProduced[o.Name] = true
		default:
			continue
		}
		g.outItems[o.Name] = out.claim(identifier(o.Name+"_items", true))
	}
}

// itemsInputFields are the Request fields of items inputs.
func (g *gen) itemsInputFields() []jen.Code {
	var fields []jen.Code
	for _, in := range g.m.Inputs {
		field, ok := g.inItems[in.Name]
		if !ok {
			continue
		}
		c := in.Contract
		var companions []string
		for _, l := range c.Layout.Levels {
			companions = append(companions, l.Offsets.Name, l.Owner.Name)
		}
		for _, p := range c.Padding {
			companions = append(companions, p.Lengths.Name)
		}
		each := fmt.Sprintf("one row, of the input's axes after the packed one (rank %d)", c.Rank-1)
		if len(c.Layout.Levels) == 2 {
			each = fmt.Sprintf("one unit of the outer level, its rows on axis 0 (rank %d)", c.Rank)
		}
		typ := jen.Index().Op("*").Qual(backendPath, "Tensor")
		if byteItems(in) {
			each = "the bytes of one encoded item (an image, a clip)"
			typ = jen.Index().Index().Byte()
		}
		pads := ""
		if len(c.Padding) > 0 {
			pads = ", right-pads the padded dimensions to the longest item,"
		}
		text := fmt.Sprintf("%s gives workflow input `%s` as items, one tensor per item: each %s. The executor packs them on axis 0%s and derives %s; leave %s and those companions nil.",
			field, in.Name, each, pads, strings.Join(companions, ", "), g.inFields[in.Name])
		fields = append(fields, jen.Line())
		fields = append(fields, comments(8, text)...)
		fields = append(fields, jen.Id(field).Add(typ))
	}
	return fields
}

// itemsOutputFields are the Response fields of per-item outputs.
func (g *gen) itemsOutputFields() []jen.Code {
	var fields []jen.Code
	for _, o := range g.m.Outputs {
		field, ok := g.outItems[o.Name]
		if !ok {
			continue
		}
		text := fmt.Sprintf("%s is workflow output `%s` per item, in the order of the request's items, when the request gave its input as items; %s and the companions of its levels are then nil.", field, o.Name, g.outFields[o.Name])
		if g.outProduced[o.Name] {
			text += " The workflow produces its levels: where they count other units than the items, the output stays packed instead."
		}
		fields = append(fields, jen.Line())
		fields = append(fields, comments(8, text)...)
		fields = append(fields, jen.Id(field).Index().Op("*").Qual(backendPath, "Tensor"))
	}
	return fields
}
