package codegen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/genaic/genaic/ir"
)

// describe says in words what a contract asks of a tensor: its dtype and
// shape, its batch layout with the companions that go with it, and its
// padding. It is the comment of a request or response field.
func describe(c *ir.Contract) string {
	if c == nil {
		return "no declared contract"
	}
	var parts []string
	head := c.DType
	if head == "" {
		head = "any dtype"
	}
	switch {
	case c.HasShape:
		head += " " + shape(c.Shape)
	case c.Rank >= 0:
		head += fmt.Sprintf(" of rank %d", c.Rank)
	}
	parts = append(parts, head)
	parts = append(parts, layout(c.Layout))
	for _, p := range c.Padding {
		parts = append(parts, fmt.Sprintf("right-padded on %s with valid lengths %s", p.Dim.Name, p.Lengths.Name))
	}
	if c.Optional {
		parts = append(parts, "optional")
	}
	return strings.Join(parts, ", ")
}

func shape(dims []ir.Dim) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		if d.IsSym() {
			s[i] = d.Sym
		} else {
			s[i] = fmt.Sprint(d.Size)
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func layout(l ir.Layout) string {
	switch l.Kind {
	case ir.RequestAligned:
		return fmt.Sprintf("request_aligned on axis %d (one row per request)", l.Axis)
	case ir.RequestExpanded:
		return fmt.Sprintf("request_expanded on axis %d (%d rows per request)", l.Axis, l.Factor)
	case ir.TokenPacked:
		levels := make([]string, len(l.Levels))
		for i, lv := range l.Levels {
			levels[i] = fmt.Sprintf("level %d offsets %s and owner %s", i, lv.Offsets.Name, lv.Owner.Name)
			if lv.Extent != ir.ExtentNone {
				levels[i] += " (" + lv.Extent.String() + ")"
			}
		}
		return fmt.Sprintf("token_packed on axis %d with %s", l.Axis, strings.Join(levels, ", "))
	}
	return "shared"
}

// wrap breaks text into comment lines that end before column 78, with
// indent columns before each line's "// ".
func wrap(indent int, text string) []string {
	const width = 77
	var out []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && indent+3+len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// comments renders text as wrapped line comments, one jen.Comment per
// line: jennifer writes a comment holding a newline as a block comment.
func comments(indent int, text string) []jen.Code {
	var out []jen.Code
	for _, l := range wrap(indent, text) {
		out = append(out, jen.Comment(l))
	}
	return out
}
