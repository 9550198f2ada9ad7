// Command benchtable summarizes repeated benchmark runs: for every
// benchmark and figure, the median and range of its values per build.
//
//	go run ./scripts/benchtable FILE...
//
// It reads what scripts/acceptance.sh run prints: Go benchmark lines
// ("BenchmarkX-2  100  1.23 unit  ..."), each optionally after a build's
// name and a tab, and genaic bench --json documents made one line, after
// the same (a line without one belongs to the build "-"). A figure that
// is zero in every run (the "ns/op 0" of a benchmark whose time means
// nothing) is left out. With two builds or more, the last columns are the
// ratio of each later build's median to the first's. Last, each of issues
// 11's and 44's acceptance checks per build: met or short, with the
// medians. A bench document's "package" (acceptance.sh adds it for the
// real models) puts pkg=NAME into its benchmarks' names.
//
//	go run ./scripts/benchtable -markdown FILE...
//
// prints the same medians as a Markdown table, without the acceptance
// checks (scripts/perf-tables puts it into docs/perf.md), and
//
//	go run ./scripts/benchtable -verdicts FILE...
//
// prints the acceptance checks the runs have values for, as a Markdown
// table.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	t := newTable()
	args := os.Args[1:]
	mode := ""
	if len(args) > 0 && (args[0] == "-markdown" || args[0] == "-verdicts") {
		mode, args = args[0], args[1:]
	}
	if len(args) == 0 {
		if err := t.read(os.Stdin); err != nil {
			fail(err)
		}
	}
	for _, name := range args {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		err = t.read(f)
		f.Close()
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
	}
	switch mode {
	case "-markdown":
		if err := t.writeMarkdown(os.Stdout); err != nil {
			fail(err)
		}
		return
	case "-verdicts":
		if err := t.writeVerdicts(os.Stdout); err != nil {
			fail(err)
		}
		return
	}
	if err := t.write(os.Stdout); err != nil {
		fail(err)
	}
	if err := t.writeAcceptance(os.Stdout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}

// figure is one benchmark's one unit.
type figure struct{ bench, unit string }

// table holds every value seen, by figure and build, in the order first
// seen.
type table struct {
	figures []figure
	builds  []string
	values  map[figure]map[string][]float64
}

func newTable() *table { return &table{values: map[figure]map[string][]float64{}} }

func (t *table) add(build, bench, unit string, v float64) {
	f := figure{bench, unit}
	byBuild := t.values[f]
	if byBuild == nil {
		byBuild = map[string][]float64{}
		t.values[f] = byBuild
		t.figures = append(t.figures, f)
	}
	if !slices.Contains(t.builds, build) {
		t.builds = append(t.builds, build)
	}
	byBuild[build] = append(byBuild[build], v)
}

// read takes every benchmark line and bench document of r; other lines are
// skipped.
func (t *table) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		build, line := "-", sc.Text()
		if b, rest, ok := strings.Cut(line, "\t"); ok && !strings.HasPrefix(line, "Benchmark") {
			build, line = b, rest
		}
		var err error
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			t.benchLine(build, line)
		case strings.HasPrefix(line, "{"):
			err = t.benchDocument(build, line)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return sc.Err()
}

// benchLine reads "BenchmarkName-P  N  value unit  value unit ...".
func (t *table) benchLine(build, line string) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i] // the GOMAXPROCS suffix
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return
		}
		t.add(build, name, f[i+1], v)
	}
}

// benchDocument reads what genaic bench --json prints.
func (t *table) benchDocument(build, line string) error {
	var doc struct {
		// Package, where acceptance.sh adds it, names the package a
		// document measured beside the README example's.
		Package string `json:"package"`
		Modes   []struct {
			Name        string  `json:"name"`
			Concurrency int     `json:"concurrency"`
			Procs       int     `json:"procs"`
			Requests    float64 `json:"requests_per_second"`
			Ratio       float64 `json:"vs_one_at_a_time"`
			VsDirect    float64 `json:"vs_direct"`
			ServerCPU   float64 `json:"server_cpu_us"`
			Latency     struct {
				P50 float64 `json:"p50"`
				P99 float64 `json:"p99"`
			} `json:"latency_ms"`
			Groups map[string]struct {
				MeanSize float64 `json:"mean_size"`
			} `json:"groups"`
		} `json:"modes"`
	}
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		return fmt.Errorf("a genaic bench document: %w", err)
	}
	// A document of several processor counts (--procs) names each: one
	// of a single count keeps the names of builds that had no --procs.
	procs := map[int]bool{}
	for _, m := range doc.Modes {
		procs[m.Procs] = true
	}
	for _, m := range doc.Modes {
		bench := fmt.Sprintf("GenaicBench/%s/clients=%d", m.Name, m.Concurrency)
		if doc.Package != "" {
			bench = fmt.Sprintf("GenaicBench/%s/pkg=%s/clients=%d", m.Name, doc.Package, m.Concurrency)
		}
		if len(procs) > 1 {
			bench += fmt.Sprintf("/procs=%d", m.Procs)
		}
		t.add(build, bench, "requests/s", m.Requests)
		t.add(build, bench, "vs-one-at-a-time", m.Ratio)
		if m.VsDirect > 0 { // in process, in the closed loop
			t.add(build, bench, "vs-direct", m.VsDirect)
		}
		if m.ServerCPU > 0 { // against a genaic server
			t.add(build, bench, "server-cpu-us/req", m.ServerCPU)
		}
		t.add(build, bench, "p50-ms", m.Latency.P50)
		t.add(build, bench, "p99-ms", m.Latency.P99)
		comps := make([]string, 0, len(m.Groups))
		for c := range m.Groups {
			comps = append(comps, c)
		}
		slices.Sort(comps)
		for _, c := range comps {
			t.add(build, bench, "group-size/"+c, m.Groups[c].MeanSize)
		}
	}
	return nil
}

// median returns the median of vs (sorted in place).
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range t.rows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// writeMarkdown prints the rows of write as a Markdown table.
func (t *table) writeMarkdown(w io.Writer) error {
	rows := t.rows()
	for i, row := range rows {
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | ")); err != nil {
			return err
		}
		if i == 0 {
			if _, err := fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(row))); err != nil {
				return err
			}
		}
	}
	return nil
}

// rows are the table's header and, for every figure not zero in every
// run, its median [min–max] and count per build, then each later build's
// median over the first's.
func (t *table) rows() [][]string {
	head := []string{"benchmark", "figure"}
	for _, b := range t.builds {
		head = append(head, b+": median [min–max] n")
	}
	for _, b := range t.builds[min(1, len(t.builds)):] {
		head = append(head, b+"/"+t.builds[0])
	}
	rows := [][]string{head}
	for _, f := range t.figures {
		byBuild := t.values[f]
		if allZero(byBuild) {
			continue
		}
		row := []string{f.bench, f.unit}
		meds := make([]float64, len(t.builds))
		for i, b := range t.builds {
			vs := byBuild[b]
			if len(vs) == 0 {
				row = append(row, "-")
				continue
			}
			meds[i] = median(vs)
			row = append(row, fmt.Sprintf("%s [%s–%s] %d", num(meds[i]), num(vs[0]), num(vs[len(vs)-1]), len(vs)))
		}
		for i, b := range t.builds[min(1, len(t.builds)):] {
			if meds[0] != 0 && len(byBuild[b]) > 0 {
				row = append(row, fmt.Sprintf("%.3f", meds[i+1]/meds[0]))
			} else {
				row = append(row, "-")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func allZero(byBuild map[string][]float64) bool {
	for _, vs := range byBuild {
		for _, v := range vs {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// num prints a figure with three significant digits, or whole when larger.
func num(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
