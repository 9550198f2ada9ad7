package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/docs"
)

func init() {
	register(command{
		name:    "explain",
		usage:   "explain [RULE]",
		summary: "say what a rule id means, show a document that triggers it and how to fix it (no RULE: list the ids)",
		run:     runExplain,
	})
}

func runExplain(e *env, args []string) int {
	c := commands["explain"]
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	ids, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	rules, err := docs.Rules()
	if err != nil {
		e.errorf("explain: the built-in rule catalogue is unreadable: %v", err)
		return exitUsage
	}
	if len(ids) == 0 {
		family := ""
		for _, r := range rules {
			if r.Family != family {
				family = r.Family
				fmt.Fprintf(e.stdout, "%s\n", family)
			}
			fmt.Fprintf(e.stdout, "  %s\n", r.ID)
		}
		return exitOK
	}
	if len(ids) > 1 {
		fs.Usage()
		return exitUsage
	}
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(ids[0]), "error["), "]")
	for _, r := range rules {
		if r.ID == id {
			explainRule(e, r)
			return exitOK
		}
	}
	var known []string
	for _, r := range rules {
		known = append(known, r.ID)
	}
	msg := fmt.Sprintf("explain: %q is not a rule id; `genaic explain` lists them", id)
	if near := diag.Nearest(id, known); near != "" {
		msg += fmt.Sprintf("; did you mean `%s`?", near)
	}
	e.errorf("%s", msg)
	return exitUsage
}

func explainRule(e *env, r docs.Rule) {
	w := e.stdout
	fmt.Fprintf(w, "%s (%s", r.ID, r.Family)
	if r.Section != "" {
		fmt.Fprintf(w, ", %s", r.Section)
	}
	fmt.Fprintf(w, ")\n\nFires when: %s\n\n", r.Meaning)
	if r.ExampleLang == "text" {
		fmt.Fprintf(w, "Example: %s\n", strings.TrimSpace(r.Example))
	} else {
		fmt.Fprintf(w, "Example: `genaic check` reports %s for this document:\n\n", r.ID)
		for _, line := range strings.Split(strings.TrimRight(r.Example, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	fmt.Fprintf(w, "\nFix: %s\n", r.Fix)
}
