package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestMistakenLayoutsRefusedFirst holds check to what the runtime would
// refuse: in every example package, each port of a grouped component
// given another layout than its own (one row a request, shared, its
// padding dropped), every packed port of a component given one row a
// request at once, as an author who has not met token_packed writes it,
// and each packed workflow output given one row a request. Each such
// document is refused by check, or, where check accepts it, runs the
// package's requests with no request refused for its rows or extents and
// answers each grouped as alone. Before it, check accepted the OCR
// recognizer declared one row a request, and the runtime failed every
// request of two lines of a width (run/input).
func TestMistakenLayoutsRefusedFirst(t *testing.T) {
	pkgs, err := filepath.Glob("../../testdata/packages/*")
	if err != nil || len(pkgs) < 12 {
		t.Fatalf("found %d packages (%v)", len(pkgs), err)
	}
	refused, ran := 0, 0
	rules := map[string]int{}
	for _, pkg := range pkgs {
		src, err := os.ReadFile(filepath.Join(pkg, metadataName))
		if err != nil {
			t.Fatal(err)
		}
		// The document as the mistakes rewrite it, without a mistake,
		// checks clean: a refusal below is for the mistake.
		var doc yaml.Node
		if err := yaml.Unmarshal(src, &doc); err != nil {
			t.Fatal(err)
		}
		same, err := yaml.Marshal(&doc)
		if err != nil {
			t.Fatal(err)
		}
		checkClean(t, mistakenPackage(t, pkg, same))
		for _, m := range layoutMistakes(t, src) {
			dir := mistakenPackage(t, pkg, m.doc)
			if rep, code := checkJSONOf(t, dir); code != exitOK || len(rep.Files) != 1 || !rep.Files[0].Valid {
				refused++
				var errs []string
				for _, f := range rep.Files {
					for _, d := range f.Diagnostics {
						if d.Severity == "error" {
							errs = append(errs, "error["+d.Rule+"]")
						}
						if family, _, _ := strings.Cut(d.Rule, "/"); !slices.Contains([]string{"capacity", "contract", "packed", "padding", "emit", "preprocess"}, family) {
							t.Errorf("%s, %s: refused for %s, not for its layout: %s", filepath.Base(pkg), m.name, d.Rule, d.Message)
						}
						rules[d.Rule]++
					}
				}
				// run compiles as check does, the adapters loaded: it
				// refuses the package with check's errors, before any
				// request.
				_, errOut, code := runCLI(t, "run", dir, "--requests", filepath.Join(pkg, "requests.json"))
				if code != exitDiags || slices.ContainsFunc(errs, func(e string) bool { return !strings.Contains(errOut, e) }) {
					t.Errorf("%s, %s: check refuses it with %v, but run exits %d:\n%s", filepath.Base(pkg), m.name, errs, code, errOut)
				}
				continue
			}
			ran++
			_, errOut, code := runCLI(t, "run", dir, "--requests", filepath.Join(pkg, "requests.json"), "--verify")
			if code != exitOK || strings.Contains(errOut, "run/input") || strings.Contains(errOut, "run/extent") {
				t.Errorf("%s, %s: check accepts it, but run --verify exits %d:\n%s", filepath.Base(pkg), m.name, code, errOut)
			}
		}
	}
	if refused < 100 {
		t.Errorf("check refused %d mistaken layouts (and %d ran); want the sweep to reach every package's ports", refused, ran)
	}
	t.Logf("%d mistaken layouts refused by check (%v), %d accepted and run", refused, rules, ran)
}

// layoutMistake is a package's document with one mistake made.
type layoutMistake struct {
	name string
	doc  []byte
}

// layoutMistakes makes, from a package's document, the mistakes
// TestMistakenLayoutsRefusedFirst tries on its grouped components.
func layoutMistakes(t *testing.T, src []byte) []layoutMistake {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		t.Fatal(err)
	}
	comps := mappingAt(&root, "pipeline", "workflow", "components")
	if comps == nil {
		return nil
	}
	var out []layoutMistake
	edit := func(name string, change func(doc *yaml.Node) bool) {
		var doc yaml.Node
		if err := yaml.Unmarshal(src, &doc); err != nil {
			t.Fatal(err)
		}
		if !change(&doc) {
			return
		}
		b, err := yaml.Marshal(&doc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, layoutMistake{name, b})
	}
	aligned := func(p *yaml.Node) { setKey(p, "batch_layout", "{ kind: request_aligned, axis: 0 }") }
	if outs := mappingAt(&root, "pipeline", "workflow", "outputs"); outs != nil {
		for i := 0; i+1 < len(outs.Content); i += 2 {
			name := outs.Content[i].Value
			contract := func(doc *yaml.Node) *yaml.Node {
				return mappingAt(doc, "pipeline", "workflow", "outputs", name, "contract")
			}
			if layoutKind(contract(&root)) == "token_packed" {
				edit("workflow output "+name+" request_aligned", func(doc *yaml.Node) bool { aligned(contract(doc)); return true })
			}
		}
	}
	for i := 0; i+1 < len(comps.Content); i += 2 {
		comp := comps.Content[i].Value
		if mappingAt(comps.Content[i+1], "batch_capacity") == nil {
			continue
		}
		ports := func(doc *yaml.Node, side string) *yaml.Node {
			return mappingAt(doc, "pipeline", "workflow", "components", comp, "ports", side)
		}
		for _, side := range []string{"inputs", "outputs"} {
			ps := ports(&root, side)
			if ps == nil {
				continue
			}
			for j := 0; j+1 < len(ps.Content); j += 2 {
				port := ps.Content[j].Value
				p := ps.Content[j+1]
				kind := layoutKind(p)
				at := func(doc *yaml.Node) *yaml.Node { return mappingAt(ports(doc, side), port) }
				where := comp + " " + side + " " + port
				if kind != "request_aligned" {
					edit(where+" request_aligned", func(doc *yaml.Node) bool { aligned(at(doc)); return true })
				}
				if kind != "shared" {
					edit(where+" shared", func(doc *yaml.Node) bool { return deleteKey(at(doc), "batch_layout") })
				}
				if mappingAt(p, "padding") != nil || keyNode(p, "padding") != nil {
					edit(where+" unpadded", func(doc *yaml.Node) bool { return deleteKey(at(doc), "padding") })
				}
			}
		}
		edit(comp+" every packed port request_aligned", func(doc *yaml.Node) bool {
			changed := false
			for _, side := range []string{"inputs", "outputs"} {
				ps := ports(doc, side)
				for j := 0; ps != nil && j+1 < len(ps.Content); j += 2 {
					if layoutKind(ps.Content[j+1]) == "token_packed" {
						aligned(ps.Content[j+1])
						changed = true
					}
				}
			}
			return changed
		})
	}
	return out
}

// mistakenPackage writes doc as the document of a copy of the package at
// pkg, its other files linked.
func mistakenPackage(t *testing.T, pkg string, doc []byte) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == metadataName {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(pkg, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, metadataName), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mappingAt follows keys down from n (a document or a mapping), or nil.
func mappingAt(n *yaml.Node, keys ...string) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, k := range keys {
		n = keyNode(n, k)
	}
	return n
}

// keyNode is the value of key k of mapping n, or nil.
func keyNode(n *yaml.Node, k string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return nil
}

// layoutKind is a port's batch_layout kind, shared when it declares none.
func layoutKind(p *yaml.Node) string {
	if k := keyNode(keyNode(p, "batch_layout"), "kind"); k != nil {
		return k.Value
	}
	return "shared"
}

// setKey sets key k of mapping n to the YAML value text.
func setKey(n *yaml.Node, k, text string) {
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		panic(err)
	}
	deleteKey(n, k)
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v.Content[0])
}

// deleteKey removes key k from mapping n, reporting whether it was there.
func deleteKey(n *yaml.Node, k string) bool {
	for i := 0; n != nil && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return true
		}
	}
	return false
}
