package main

import (
	"fmt"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/passes"
)

func init() {
	register(command{
		name:    "passes",
		usage:   "passes",
		summary: "list the compiler passes in pipeline order, with their docs and the rules they report",
		run:     runPasses,
	})
}

func runPasses(e *env, args []string) int {
	if len(args) > 0 {
		e.errorf("passes takes no arguments")
		return exitUsage
	}
	for i, p := range passes.Pipeline {
		kind := ""
		if p.Kind == passes.Plan {
			kind = "[plan] "
		}
		var reqs []string
		for _, r := range p.Requires {
			reqs = append(reqs, r.Name)
		}
		req := ""
		if len(reqs) > 0 {
			req = " (requires " + strings.Join(reqs, ", ") + ")"
		}
		fmt.Fprintf(e.stdout, "%2d. %-11s %s%s%s\n", i+1, p.Name, kind, p.Doc, req)
		if len(p.Rules) > 0 {
			fmt.Fprintf(e.stdout, "    %-11s reports %s\n", "", ruleList(p.Rules))
		}
	}
	return exitOK
}

func ruleList(rs []diag.Rule) string {
	ss := make([]string, len(rs))
	for i, r := range rs {
		ss[i] = string(r)
	}
	return strings.Join(ss, ", ")
}
