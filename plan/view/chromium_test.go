package view_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/genaic/genaic/internal/testenv"
	"github.com/genaic/genaic/ir"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/plan/view"
)

// The HTML view is read back the way a person's browser reads it: headless
// Chromium (Debian's package, installed by scripts/setup.sh) loads the page
// of every example package in a window 1400 px wide and dumps the DOM it
// built, and the test counts the SVG graph's nodes there against the
// module's own inputs, invoke steps, values and outputs. A script the test
// adds to its copy of the page (the page itself has none) writes into the
// DOM what the browser rendered: the title, the smallest font size of the
// graph's text after the graph's scaling, and how wide the page grew.

const fixChromium = `headless Chromium is missing: run "make setup" (scripts/setup.sh installs Debian's chromium package), or point GENAIC_CHROMIUM at a Chromium binary`

// chromium returns the Chromium binary, failing the test when there is
// none: the HTML check is part of the suite, never skipped.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GENAIC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal(fixChromium)
	return ""
}

// windowWidth is the browser window's width, in CSS pixels.
const windowWidth = 1400

// dumpDOM loads page in headless Chromium and returns the DOM it built.
//
// The browser is kept off the network (a closed machine refuses its
// background connections, many at a time), and run once more when it dies
// of a signal: a crash of the browser itself (seen under a loaded
// machine) says nothing of the page, whose DOM is checked either way.
func dumpDOM(t *testing.T, bin, page string) string {
	t.Helper()
	var err error
	var stderr string
	for range 2 {
		var out string
		out, stderr, err = runChromium(t, bin, page)
		if err == nil {
			return out
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			break
		}
		if ws, ok := exit.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			break
		}
	}
	t.Fatalf("chromium --dump-dom %s: %v\n%s", page, err, stderr)
	return ""
}

func runChromium(t *testing.T, bin, page string) (stdout, stderr string, err error) {
	// A bound on a hung browser, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=%d,1000", windowWidth), "--dump-dom", "file://"+page)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// domNode is an element of the dumped graph.
type domNode struct {
	name  string
	attrs map[string]string
	kids  []*domNode
}

// parseGraph reads the <svg class="graph"> element of a dumped DOM. The
// DOM is HTML; its SVG subtree is serialized as foreign elements, every
// one closed, so an XML reader with HTML entities reads it.
func parseGraph(t *testing.T, dom string) *domNode {
	t.Helper()
	start := strings.Index(dom, `<svg class="graph"`)
	end := strings.Index(dom, "</svg>")
	if start < 0 || end < start {
		t.Fatalf("the dumped DOM holds no <svg class=\"graph\">:\n%.2000s", dom)
	}
	dec := xml.NewDecoder(strings.NewReader(dom[start : end+len("</svg>")]))
	dec.Strict, dec.Entity, dec.AutoClose = false, xml.HTMLEntity, xml.HTMLAutoClose
	root := &domNode{name: "root"}
	stack := []*domNode{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the graph in the dumped DOM does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &domNode{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	return root
}

func (n *domNode) walk(f func(*domNode)) {
	f(n)
	for _, k := range n.kids {
		k.walk(f)
	}
}

// wantNodes is what the graph must draw, counted from the module: kind →
// the sorted names of its nodes.
func wantNodes(f *plan.File) map[string][]string {
	want := map[string][]string{}
	m := f.IR
	for _, in := range m.Inputs {
		want["input"] = append(want["input"], in.Name)
	}
	for _, c := range m.Cells {
		want["cell"] = append(want["cell"], c.Name)
	}
	for _, o := range m.Outputs {
		want["output"] = append(want["output"], o.Name)
	}
	invoked := map[string]bool{}
	m.Body.Walk(func(s *ir.Step) bool {
		if s.Op == ir.OpInvoke {
			want["component"] = append(want["component"], s.Component.Name)
			invoked[s.Component.Name] = true
			for _, r := range s.Results {
				want["value"] = append(want["value"], m.Value(r.Value).Name)
			}
		}
		for _, p := range s.Phis {
			want["value"] = append(want["value"], m.Value(p.Value).Name)
		}
		if s.Iteration != nil {
			want["value"] = append(want["value"], m.Value(*s.Iteration).Name)
		}
		return true
	})
	for _, g := range f.Components {
		if !invoked[g.Component] {
			want["component"] = append(want["component"], g.Component)
		}
	}
	for _, names := range want {
		slices.Sort(names)
	}
	return want
}

// TestHTMLInChromium renders the HTML view of every example package, loads
// it in headless Chromium and checks the graph in the DOM Chromium built:
// one node per workflow input, state cell, invoke step, value and output,
// each component node carrying one port group per port of its plan, and
// every edge joining drawn nodes.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	pkgs, err := filepath.Glob(filepath.Join(testenv.Root(t), "testdata", "packages", "*", docName))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 12 {
		t.Fatalf("found %d example packages, want the 12 of testdata/packages", len(pkgs))
	}
	dir := t.TempDir()
	for _, doc := range pkgs {
		name := filepath.Base(filepath.Dir(doc))
		t.Run(name, func(t *testing.T) {
			c := compile(t, filepath.Dir(doc))
			if c == nil {
				return
			}
			f := *c.file
			f.IR = c.mod
			var b bytes.Buffer
			if err := view.WriteHTMLPage(&b, &f, view.Page{Name: name}); err != nil {
				t.Fatal(err)
			}
			text, ok := strings.CutSuffix(strings.TrimSpace(b.String()), "</html>")
			if !ok {
				t.Fatal("the HTML view does not end with </html>")
			}
			page := filepath.Join(dir, name+".html")
			if err := os.WriteFile(page, []byte(text+measureScript+"</html>\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := dumpDOM(t, bin, page)
			checkGraphDOM(t, &f, parseGraph(t, dom))
			checkRendered(t, name, dom)
		})
	}
}

// measureScript writes what Chromium rendered into the DOM, as JSON in a
// <pre id="measure">: the text of the page's <title> and <h1>; the
// smallest font size in the graph, in screen pixels (each text's computed
// size times the scale its SVG is drawn at), and the text that has it; the
// width the page's content spans and the window's.
const measureScript = `<script>
(function () {
  var svg = document.querySelector('svg.graph'), least = Infinity, leastText = '';
  svg.querySelectorAll('text, tspan').forEach(function (t) {
    var px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    if (px < least) { least = px; leastText = t.textContent; }
  });
  var out = {title: document.title, h1: document.querySelector('h1').textContent, leastFont: least, leastText: leastText,
    pageWidth: document.documentElement.scrollWidth, windowWidth: window.innerWidth};
  var pre = document.createElement('pre');
  pre.id = 'measure';
  pre.hidden = true;
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
`

// minFontPx is the smallest font size, in screen pixels, the graph may
// show: every label stays readable however many components the graph has.
const minFontPx = 11

// checkRendered checks what measureScript found: the page is titled by
// the package's name, the graph's smallest text is drawn at minFontPx or
// more (the graph is never shrunk to the window: a wider one scrolls in
// its figure), and the page itself is no wider than the window.
func checkRendered(t *testing.T, name, dom string) {
	t.Helper()
	_, rest, ok := strings.Cut(dom, `<pre id="measure" hidden="">`)
	raw, _, ok2 := strings.Cut(rest, "</pre>")
	if !ok || !ok2 {
		t.Fatalf("the measuring script wrote nothing into the DOM:\n%.2000s", dom)
	}
	var got struct {
		Title, H1              string
		LeastFont              float64
		LeastText              string
		PageWidth, WindowWidth float64
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(raw)), &got); err != nil {
		t.Fatalf("the measuring script wrote %q: %v", raw, err)
	}
	if got.Title != name || got.H1 != name {
		t.Errorf("the page is titled %q with the heading %q, want the package's name %q", got.Title, got.H1, name)
	}
	// A hair under: the browser's scale carries rounding.
	if got.LeastFont < minFontPx-0.05 {
		t.Errorf("in a window %d px wide the graph draws %q at %.1f px, want at least %d px", windowWidth, got.LeastText, got.LeastFont, minFontPx)
	}
	if got.WindowWidth != windowWidth || got.PageWidth > got.WindowWidth {
		t.Errorf("in a window %g px wide (want %d) the page spans %g px: something other than the graph's figure overflows", got.WindowWidth, windowWidth, got.PageWidth)
	}
}

func checkGraphDOM(t *testing.T, f *plan.File, root *domNode) {
	t.Helper()
	got := map[string][]string{}
	names := map[string]bool{}
	ports := map[string][]string{} // component → ports drawn, over its nodes
	links := map[string]string{}   // component → the section its node links to
	var edges [][2]string
	root.walk(func(n *domNode) {
		if n.name == "g" && n.attrs["data-node-kind"] != "" {
			kind, name := n.attrs["data-node-kind"], n.attrs["data-name"]
			got[kind] = append(got[kind], name)
			names[name] = true
			if kind == "component" {
				var ps []string
				n.walk(func(k *domNode) {
					if k.name == "g" && k.attrs["data-port"] != "" {
						ps = append(ps, k.attrs["data-port"])
					}
					if k.name == "a" {
						links[name] = k.attrs["href"]
					}
				})
				slices.Sort(ps)
				ports[name] = ps
			}
		}
		if n.name == "g" && strings.Contains(n.attrs["class"], "edge") {
			edges = append(edges, [2]string{n.attrs["data-from"], n.attrs["data-to"]})
		}
	})
	for _, names := range got {
		slices.Sort(names)
	}
	want := wantNodes(f)
	for _, kind := range []string{"input", "cell", "component", "value", "output"} {
		if !slices.Equal(got[kind], want[kind]) {
			t.Errorf("the graph's %s nodes are %q, want %q", kind, got[kind], want[kind])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !slices.Contains([]string{"input", "cell", "component", "value", "output"}, k) {
			t.Errorf("the graph draws nodes of an unknown kind %q", k)
		}
	}
	for _, g := range f.Components {
		var ps []string
		for _, p := range g.Inputs {
			ps = append(ps, p.Name)
		}
		for _, p := range g.Outputs {
			ps = append(ps, p.Name)
		}
		slices.Sort(ps)
		if !slices.Equal(ports[g.Component], ps) {
			t.Errorf("component %s is drawn with ports %q, want its plan's %q", g.Component, ports[g.Component], ps)
		}
		// The caption says each component links to its section.
		if want := "#" + view.SectionID(g.Component); links[g.Component] != want {
			t.Errorf("component %s links to %q, want its section %q", g.Component, links[g.Component], want)
		}
	}
	if len(want["component"]) > 0 && len(edges) == 0 {
		t.Error("the graph draws no edge")
	}
	for _, e := range edges {
		if !names[e[0]] || !names[e[1]] {
			t.Errorf("the edge %s → %s joins a node the graph does not draw", e[0], e[1])
		}
	}
}
