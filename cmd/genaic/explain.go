package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/docs"
	"github.com/genaic/genaic/passes"
)

func init() {
	register(command{
		name:    "explain",
		usage:   "explain [-full] [RULE]",
		summary: "say what a rule id means and how to fix it, then show where an example triggers it (no RULE: list the ids)",
		run:     runExplain,
	})
}

func runExplain(e *env, args []string) int {
	c := commands["explain"]
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	full := fs.Bool("full", false, "print the rule's whole example document, not only the lines that trigger it")
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
			if err := explainRule(e, r, *full); err != nil {
				e.errorf("explain: %v", err)
				return exitUsage
			}
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

// explainRule prints a rule's meaning and fix first, then its example:
// for a document rule, the diagnostic `genaic check` reports on the
// catalogue's example document, with the lines that trigger it (the whole
// document with full, or when it is short); for a runtime rule, the
// request it describes.
func explainRule(e *env, r docs.Rule, full bool) error {
	w := e.stdout
	fmt.Fprintf(w, "%s (%s", r.ID, r.Family)
	if r.Section != "" {
		fmt.Fprintf(w, ", %s", r.Section)
	}
	fmt.Fprintf(w, ")\nFires when: %s\nFix: %s\n\n", r.Meaning, r.Fix)
	if r.ExampleLang == "text" {
		fmt.Fprintf(w, "Example: %s\n", strings.TrimSpace(r.Example))
		return nil
	}
	doc := strings.TrimLeft(r.Example, "\n")
	if full || strings.Count(doc, "\n") <= shortExample {
		fmt.Fprintf(w, "Example: `genaic check` reports %s for this document:\n\n", r.ID)
		writeIndented(w, doc)
		if full {
			return nil
		}
		fmt.Fprintf(w, "\nas:\n\n")
	} else {
		fmt.Fprintf(w, "Example: `genaic check` reports on the catalogue's example (`genaic explain -full %s` prints it whole):\n\n", r.ID)
	}
	d, err := exampleDiagnostic(r, doc)
	if err != nil {
		return err
	}
	var b strings.Builder
	(diag.Renderer{Source: func(string) []byte { return []byte(doc) }}).Render(&b, diag.List{d})
	writeIndented(w, b.String())
	return nil
}

// shortExample is the most lines of an example document explain prints
// whole, before its diagnostic, without -full.
const shortExample = 3

// exampleDiagnostic checks a rule's example document, with the graphs its
// comments describe, and returns the first diagnostic of that rule.
func exampleDiagnostic(r docs.Rule, doc string) (diag.Diagnostic, error) {
	graphs, err := r.Graphs()
	if err != nil {
		return diag.Diagnostic{}, err
	}
	d, err := passes.CheckSource(exampleFile, []byte(doc), passes.Options{Models: graphs})
	if err != nil {
		return diag.Diagnostic{}, err
	}
	for _, x := range d.Diags() {
		if string(x.Rule) == r.ID {
			return x, nil
		}
	}
	return diag.Diagnostic{}, fmt.Errorf("the catalogue's example of %s does not trigger it", r.ID)
}

// exampleFile is the name diagnostics give an example document.
const exampleFile = "example.yaml"

func writeIndented(w io.Writer, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", strings.TrimRight(line, " "))
	}
}
