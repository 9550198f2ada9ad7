package main

import (
	"encoding/base64"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/onnx/onnxpb"
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
	var sw mistakeSweep
	for _, pkg := range pkgs {
		sw.sweep(t, pkg)
	}
	if sw.refused < 100 {
		t.Errorf("check refused %d mistaken layouts (and %d ran); want the sweep to reach every package's ports", sw.refused, sw.ran)
	}
	t.Logf("%d mistaken layouts refused by check (%v), %d accepted and run", sw.refused, sw.rules, sw.ran)
}

// TestMistakenLayoutsOfInitPackages sweeps the packages init writes of
// media encoders (images; Whisper's clips packed whole; video clips one a
// request, frames or channels first) as TestMistakenLayoutsRefusedFirst
// sweeps the examples.
func TestMistakenLayoutsOfInitPackages(t *testing.T) {
	tone, silence := fixtures.WAV16(16000, fixtures.Tone(8000, 16000, 1000, 0.5)), fixtures.WAV16(16000, make([]int16, 4000))
	frame := func(i int) []byte { return solidPNG(t, 12+i, 10, color.NRGBA{R: uint8(30 * i), G: 90, B: 200, A: 255}) }
	items := func(bs ...[]byte) string {
		out := make([]string, len(bs))
		for i, b := range bs {
			out[i] = fmt.Sprintf(`{"dtype":"uint8","shape":[%d],"data":%q}`, len(b), base64.StdEncoding.EncodeToString(b))
		}
		return `{"items":[` + strings.Join(out, ",") + `]}`
	}
	var sw mistakeSweep
	for _, c := range []struct {
		flag, input string
		g           *onnxpb.GraphProto
		requests    []string
	}{
		{"--images", "images", meanPixels([]any{"batch", 3, 8, 8}, 2, 3), []string{items(frame(0), frame(1)), items(frame(2))}},
		{"--audio", "audio", bandMeans([]any{"batch", 80, 3000}, 2), []string{items(tone, silence), items(silence)}},
		{"--video", "frames", frameMeans([]any{"batch", 2, 3, 8, 8}, 3, 4), []string{items(frame(0), frame(1)), items(frame(2), frame(3), frame(4))}},
		// Clips channels before frames, as 3D convolutions read them.
		{"--video", "frames", meanGraph("clips", "pixel_values", []any{"batch", 3, 2, 8, 8}, []any{"batch", 3, 2}, []int64{3, 4}), []string{items(frame(0), frame(1)), items(frame(2), frame(3), frame(4))}},
	} {
		dir := t.TempDir()
		writeGraph(t, filepath.Join(dir, "model.onnx"), c.g, 17)
		if out, errOut, code := runCLI(t, "init", c.flag, filepath.Join(dir, "model.onnx")); code != exitOK {
			t.Fatalf("init %s: exit %d\n%s%s", c.flag, code, out, errOut)
		}
		reqs := make([]string, len(c.requests))
		for i, r := range c.requests {
			reqs[i] = fmt.Sprintf(`{"id":"r%d","inputs":{%q:%s}}`, i, c.input, r)
		}
		if err := os.WriteFile(filepath.Join(dir, "requests.json"), []byte(`{"requests":[`+strings.Join(reqs, ",")+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		sw.sweep(t, dir)
	}
	if sw.refused < 15 {
		t.Errorf("check refused %d mistaken layouts (and %d ran)", sw.refused, sw.ran)
	}
	t.Logf("%d mistaken layouts refused by check (%v), %d accepted and run", sw.refused, sw.rules, sw.ran)
}

// mistakeSweep counts what check made of the mistakes of the packages
// swept: refused, and by which rules, or accepted and run.
type mistakeSweep struct {
	refused, ran int
	rules        map[string]int
}

// sweep makes each mistake of layoutMistakes in the package at pkg (its
// document, models and requests.json) and holds check and run to it: a
// refusal is for a layout rule, and run refuses the package with check's
// errors; a document check accepts runs the requests, none refused for
// its rows or extents, each answered grouped as alone.
func (sw *mistakeSweep) sweep(t *testing.T, pkg string) {
	t.Helper()
	if sw.rules == nil {
		sw.rules = map[string]int{}
	}
	src, err := os.ReadFile(filepath.Join(pkg, metadataName))
	if err != nil {
		t.Fatal(err)
	}
	// The document as the mistakes rewrite it, without a mistake, checks
	// clean: a refusal below is for the mistake.
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
			sw.refused++
			var errs []string
			for _, f := range rep.Files {
				for _, d := range f.Diagnostics {
					if d.Severity == "error" {
						errs = append(errs, "error["+d.Rule+"]")
					}
					if family, _, _ := strings.Cut(d.Rule, "/"); !slices.Contains([]string{"capacity", "contract", "packed", "padding", "emit", "preprocess"}, family) {
						t.Errorf("%s, %s: refused for %s, not for its layout: %s", filepath.Base(pkg), m.name, d.Rule, d.Message)
					}
					sw.rules[d.Rule]++
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
		sw.ran++
		_, errOut, code := runCLI(t, "run", dir, "--requests", filepath.Join(pkg, "requests.json"), "--verify")
		if code != exitOK || strings.Contains(errOut, "run/input") || strings.Contains(errOut, "run/extent") {
			t.Errorf("%s, %s: check accepts it, but run --verify exits %d:\n%s", filepath.Base(pkg), m.name, code, errOut)
		}
	}
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
