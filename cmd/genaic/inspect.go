package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/plan/view"
	"github.com/genaic/genaic/vm"
)

func init() {
	register(command{
		name:    "inspect",
		usage:   "inspect PATH|plan.json [--format text|json|dot|html] [--stats RESPONSES.json|URL]",
		summary: "show the plan: components, group plans, budgets, splits, and why",
		run:     runInspect,
	})
}

// inspectWriters are the views inspect writes, by --format.
var inspectWriters = map[string]func(w io.Writer, f *plan.File) error{
	"text": view.WriteText,
	"json": view.WriteJSON,
	"dot":  view.WriteDOT,
	"html": view.WriteHTML,
}

func runInspect(e *env, args []string) int {
	c := commands["inspect"]
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	format := fs.String("format", "text", "the view to write: text, json, dot or html")
	statsPath := fs.String("stats", "", "a responses document written by genaic run --stats (or its stats object), or a running server's stats (http://HOST:8000/v2/models/MODEL/genaic/stats): add what the running engine measured and decided per component (text view), or draw each budget's peak (html view)")
	paths, ok := parseFlags(e, fs, c, args)
	if !ok {
		return exitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return exitUsage
	}
	if !noStdin(e, "inspect", "PATH", paths[0], "give the document's path, its package folder or a plan") ||
		!noStdin(e, "inspect", "--stats", *statsPath, "give the responses file `genaic run --stats --out FILE` wrote") {
		return exitUsage
	}
	write, ok := inspectWriters[*format]
	if !ok {
		e.errorf("--format %s is not a view genaic inspect writes; use text, json, dot or html", *format)
		return exitUsage
	}
	if *statsPath != "" && *format != "text" && *format != "html" {
		e.errorf("--stats is shown by the text and html views; drop --format %s", *format)
		return exitUsage
	}
	var stats *vm.Stats
	if *statsPath != "" {
		s, err := readStats(*statsPath)
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		stats = s
	}
	f, pkgDir, code := inspectPlan(e, paths[0])
	if f == nil {
		return code
	}
	if *format == "html" {
		pg := view.Page{Name: packageName(pkgDir)}
		if stats != nil {
			pg.Stats = htmlStats(stats)
		}
		write = func(w io.Writer, f *plan.File) error { return view.WriteHTMLPage(w, f, pg) }
	}
	if err := write(e.stdout, f); err != nil {
		return ioError(e, err)
	}
	if stats != nil && *format == "text" {
		writeRunStats(e.stdout, f, stats)
	}
	return exitOK
}

// maxStatsBytes bounds a --stats file: a responses document may carry
// every output inline besides its stats.
const maxStatsBytes = 1 << 30

// readStats reads the stats of a responses document, or a bare stats
// object.
func readStats(path string) (*vm.Stats, error) {
	var b []byte
	var err error
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		b, err = fetchStats(path)
	} else {
		b, err = safefile.ReadFile(path, maxStatsBytes)
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Stats      *vm.Stats                    `json:"stats"`
		Components map[string]vm.ComponentStats `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is not a responses document or stats: %v", path, err)
	}
	if doc.Stats != nil {
		return doc.Stats, nil
	}
	if doc.Components != nil {
		return &vm.Stats{Components: doc.Components}, nil
	}
	if strings.Contains(path, "://") {
		return nil, fmt.Errorf("%s holds no stats; genaic serve answers them at /v2/models/MODEL/genaic/stats", path)
	}
	return nil, fmt.Errorf("%s holds no stats; write them with `genaic run ... --stats --out FILE`", path)
}

// maxServerStatsBytes bounds a server's stats answer: the stats of one
// model's engine, without outputs, are far smaller.
const maxServerStatsBytes = 8 << 20

// fetchStats reads a running server's stats: genaic serve answers
// GET /v2/models/MODEL/genaic/stats with its engine's.
func fetchStats(url string) ([]byte, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxServerStatsBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %v", url, err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s answers %s: %s", url, resp.Status, strings.TrimSpace(string(b[:min(len(b), 512)])))
	case len(b) > maxServerStatsBytes:
		return nil, fmt.Errorf("%s answers more than %d bytes of stats; is it a genaic server's /v2/models/MODEL/genaic/stats?", url, maxServerStatsBytes)
	}
	return b, nil
}

// htmlStats is what the HTML view draws of a run's stats: invocations
// and each budget's peak, per component.
func htmlStats(s *vm.Stats) *view.RunStats {
	out := &view.RunStats{Components: map[string]view.ComponentRun{}}
	for name, cs := range s.Components {
		r := view.ComponentRun{Invocations: cs.Invocations, Requests: cs.Requests, MaxGroupRequests: cs.MaxGroupRequests}
		for _, p := range cs.BudgetPeaks {
			r.Peaks = append(r.Peaks, view.BudgetPeak{Dimensions: p.Dimensions, Peak: p.Peak})
		}
		out.Components[name] = r
	}
	return out
}

// writeRunStats says, per component of the plan, what a running engine
// measured and what its scheduler decided.
func writeRunStats(w io.Writer, f *plan.File, s *vm.Stats) {
	fmt.Fprintf(w, "\nwhat the running engine measured and decided\n")
	if s.Execution != nil {
		fmt.Fprintf(w, "  execution: %s\n", s.Execution)
	}
	for _, g := range f.Components {
		cs, ok := s.Components[g.Component]
		if !ok || g == nil {
			continue
		}
		fmt.Fprintf(w, "  component %s: %d invocations for %d requests, largest group %d\n", g.Component, cs.Invocations, cs.Requests, cs.MaxGroupRequests)
		fmt.Fprintf(w, "    group sizes: %s\n", sizesText(cs.GroupSizes))
		if cs.PaddingOverhead > 0 {
			fmt.Fprintf(w, "    padding: %.2f padded elements per real one overall; per group median %.2f, p90 %.2f, max %.2f\n",
				cs.PaddingOverhead, cs.GroupPadding.P50, cs.GroupPadding.P90, cs.GroupPadding.Max)
		}
		sc := cs.Scheduler
		if sc.Fitted {
			fmt.Fprintf(w, "    run time fit: %.1f µs a call + %.3f ns an element\n", sc.FixedNS/1000, sc.PerElementNS)
		}
		switch {
		case sc.Cap > 0:
			fmt.Fprintf(w, "    groups capped at %d items: larger groups cost more per element (%s)\n", sc.Cap, perSizeText(sc.PerElementBySize))
		case len(sc.PerElementBySize) > 0:
			fmt.Fprintf(w, "    no cap: larger groups keep paying (%s)\n", perSizeText(sc.PerElementBySize))
		}
		if sc.KeptForPadding > 0 {
			fmt.Fprintf(w, "    %d times an item was kept out of a group because its padding would cost more than its own call\n", sc.KeptForPadding)
		}
		if cs.OwnGroups > 0 {
			fmt.Fprintf(w, "    groups run by the lockstep batches that brought them, not by a runner: %d (one worker slot, or groups shorter than waking another thread costs)\n", cs.OwnGroups)
		}
		if cs.Isolated > 0 {
			fmt.Fprintf(w, "    %d requests run alone: an input held NaN or an infinity, which the model could spread to the others of its group\n", cs.Isolated)
		}
		if cs.Displaced > 0 {
			fmt.Fprintf(w, "    %d requests failed run/queue-full at the full queue, a more urgent request taking their place\n", cs.Displaced)
		}
		if cs.OutputsReused > 0 {
			fmt.Fprintf(w, "    %d groups' output buffers held later groups' outputs once their responses were released\n", cs.OutputsReused)
		}
		if cs.BackendTime > 0 && cs.RunTime > 0 {
			fmt.Fprintf(w, "    invocations took %.3f ms from assembly to split, %.3f ms of it inside the backend (%.0f %%)\n",
				cs.RunTime.Seconds()*1000, cs.BackendTime.Seconds()*1000, 100*cs.BackendTime.Seconds()/cs.RunTime.Seconds())
		}
		if cs.CallByName != "" {
			fmt.Fprintf(w, "    groups handed to the session by input name, not by port position (a map per group): %s\n", cs.CallByName)
		}
		for reason, n := range cs.Declines {
			fmt.Fprintf(w, "    grouping declined %d times: %s\n", n, reason)
		}
	}
}

func sizesText(m map[int]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d×%d", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func perSizeText(m map[int]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("≤%d: %.2f ns/element", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// inspectPlan returns the plan at path: a plan file as it was written, or
// a document or package folder compiled in memory; and the package's
// folder. When it returns no plan, it has reported why and returns the
// exit code.
func inspectPlan(e *env, path string) (*plan.File, string, int) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", ioError(e, err)
	}
	if !st.IsDir() {
		b, err := safefile.ReadFile(path, plan.MaxPlanBytes)
		if err != nil {
			return nil, "", ioError(e, err)
		}
		if plan.LooksLikePlan(b) {
			f, code := loadPlanFile(e, path, b)
			if f == nil {
				return nil, "", code
			}
			return f, f.PackageDir(path), code
		}
	}
	f, doc, code := compileInMemory(e, path)
	if f == nil {
		return nil, "", code
	}
	// Show what a plan file would hold: the same bytes decoded, so a
	// document and its compiled plan inspect alike.
	b, err := f.Marshal()
	if err == nil {
		f, err = plan.Decode(doc, b)
	}
	if err != nil {
		e.errorf("%v", err)
		return nil, "", exitUsage
	}
	return f, filepath.Dir(doc), exitOK
}

// packageName is the name of the package in dir: its folder's, as genaic
// serve names the model it serves.
func packageName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// loadPlanFile decodes a plan file. A plan whose package
// changed is still shown, with a warning: inspecting it is how a person
// finds out what it had decided.
func loadPlanFile(e *env, path string, b []byte) (*plan.File, int) {
	f, err := plan.Decode(path, b)
	if err != nil {
		e.errorf("%v", err)
		return nil, exitUsage
	}
	if err := f.CheckPackage(f.PackageDir(path)); err != nil {
		fmt.Fprintf(e.stderr, "genaic: warning: %v\n", err)
	}
	return f, exitOK
}
