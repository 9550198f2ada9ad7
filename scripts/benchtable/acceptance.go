package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// An acceptance check of an issue: a figure's median per build against a
// bound, or against another figure's median (of), or, as a ratio, against
// the median of the same figure of another benchmark (vs), on the machine
// the runs came from. Where the runs hold no value for a check, it says so.
type check struct {
	issue   int
	what    string // the issue's words
	bench   string // a benchmark name, or a prefix ending in "*" (every match must pass)
	unit    string
	atLeast bool    // the median must be >= bound (else <=)
	bound   float64 // unless of is set; with vs, the bound of the ratio
	of      string  // a unit of the same benchmark whose median is the bound
	// vs names the benchmark a matching one is compared with: the check
	// is of the ratio of their medians (ok false: the benchmark is not
	// one the check is of).
	vs func(bench string) (ref string, ok bool)
}

var checks = []check{
	{issue: 11, what: "no-op backend: runtime CPU per request <= 2 us", bench: "RuntimeOverhead/solo=false", unit: "cpu-ns/request", bound: 2000},
	{issue: 11, what: "short text: grouped >= 0.95 x ideal", bench: "Workloads/text_packed/short", unit: "grouped/ideal", atLeast: true, bound: 0.95},
	{issue: 11, what: "short text: grouped >= 1.4 x one-at-a-time", bench: "Workloads/text_packed/short", unit: "grouped/solo", atLeast: true, bound: 1.4},
	{issue: 11, what: "short text: 2 runners >= 1 runner", bench: "Workloads/text_packed/short", unit: "grouped2/grouped", atLeast: true, bound: 1},
	{issue: 11, what: "long padded text: grouped >= 0.98 x one-at-a-time", bench: "Workloads/text_padded/long", unit: "grouped/solo", atLeast: true, bound: 0.98},
	{issue: 11, what: "long padded text: padding below FIFO grouping's", bench: "Workloads/text_padded/long", unit: "grouped-padding", of: "fifo-padding"},
	{issue: 11, what: "image encoder, 64 requests: grouped >= 0.8 x ideal", bench: "Workloads/image_padded/64", unit: "grouped/ideal", atLeast: true, bound: 0.8},
	{issue: 11, what: "short text timed apart: grouped >= 0.95 x ideal", bench: "WorkloadsApart/text_packed/short", unit: "grouped/ideal", atLeast: true, bound: 0.95},
	{issue: 11, what: "64 images timed apart: grouped >= 0.8 x ideal", bench: "WorkloadsApart/image_padded/64", unit: "grouped/ideal", atLeast: true, bound: 0.8},
	{issue: 11, what: "one ONNX Runtime call within 10 % of a direct one", bench: "RunVsDirect/image16", unit: "session/direct", bound: 1.10},
	{issue: 11, what: "README example: grouped >= one-at-a-time (16 clients)", bench: "GenaicBench/grouped/clients=16*", unit: "vs-one-at-a-time", atLeast: true, bound: 1},
	{issue: 44, what: "served callers (16): >= 0.9 x the best hand strategy", bench: "Best/*", unit: "served16/best", atLeast: true, bound: 0.9},
	{issue: 44, what: "served callers (64): >= 0.9 x the best hand strategy", bench: "Best/*", unit: "served64/best", atLeast: true, bound: 0.9},
	{issue: 44, what: "served callers (16): >= 0.98 x one-at-a-time", bench: "Best/*", unit: "served16/solo", atLeast: true, bound: 0.98},
	{issue: 44, what: "served callers (64): >= 0.98 x one-at-a-time", bench: "Best/*", unit: "served64/solo", atLeast: true, bound: 0.98},
	{issue: 44, what: "no-op backend served: runtime CPU per request <= 4 us", bench: "RuntimeOverhead/served/*", unit: "cpu-ns/request", bound: 4000},
	{issue: 44, what: "genaic bench closed loop, short text (64 clients): grouped >= 0.9 x direct calls", bench: "GenaicBench/grouped/pkg=text_packed/clients=64", unit: "vs-direct", atLeast: true, bound: 0.9},
	{issue: 44, what: "real models, genaic bench defaults: grouped >= 0.98 x one-at-a-time", bench: "GenaicBench/grouped/pkg=*", unit: "vs-one-at-a-time", atLeast: true, bound: 0.98},
	{issue: 44, what: "genaic serve, HTTP binary and gRPC stream: >= 0.8 x the same bench in process", bench: "GenaicBench/*", unit: "requests/s", atLeast: true, bound: 0.8, vs: inProcess},
	{issue: 44, what: "genaic serve, HTTP binary and gRPC stream: grouped >= 1.8 x one request per invocation", bench: "GenaicBench/*", unit: "requests/s", atLeast: true, bound: 1.8, vs: perInvocation},
}

// oneTag marks the package of a server that declines grouping, one request
// per invocation (scripts/acceptance.sh sockets).
const oneTag = "+one"

// served reports whether bench is one of genaic bench's runs against a
// grouped server (its modes http and grpc_stream), and which mode.
func served(bench string) (mode string, ok bool) {
	for _, m := range []string{"/http/", "/grpc_stream/"} {
		if strings.HasPrefix(bench, "GenaicBench"+m) && !strings.Contains(bench, oneTag+"/") {
			return m, true
		}
	}
	return "", false
}

// inProcess compares a grouped server's run with the grouped mode of the
// same bench in process.
func inProcess(bench string) (string, bool) {
	mode, ok := served(bench)
	return strings.Replace(bench, mode, "/grouped/", 1), ok
}

// perInvocation compares a grouped server's run with the same run against
// the server that declines grouping.
func perInvocation(bench string) (string, bool) {
	_, ok := served(bench)
	return strings.Replace(bench, "/clients=", oneTag+"/clients=", 1), ok
}

// writeAcceptance prints each check's verdict per build: the median, the
// bound, and "met" or "short" (strictly past the bound is short; an equal
// median is met).
func (t *table) writeAcceptance(w io.Writer) error {
	issue := 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		if c.issue != issue {
			issue = c.issue
			fmt.Fprintf(tw, "\nacceptance (issue %d), medians on this machine:\n", issue)
		}
		for _, b := range t.builds {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.what, b, t.verdict(c, b))
		}
	}
	return tw.Flush()
}

// writeVerdicts prints, as a Markdown table, the verdict of every check
// the runs hold values for (scripts/perf-tables runs a few of the
// benchmarks; a check with no runs is left out), with the build's name
// where the runs come from several.
func (t *table) writeVerdicts(w io.Writer) error {
	if _, err := fmt.Fprint(w, "| issue | check | verdict | medians |\n| --- | --- | --- | --- |\n"); err != nil {
		return err
	}
	for _, c := range checks {
		for _, b := range t.builds {
			verdict, medians, ran := strings.Cut(t.verdict(c, b), "\t")
			if !ran {
				continue
			}
			if len(t.builds) > 1 {
				verdict = b + ": " + verdict
			}
			if _, err := fmt.Fprintf(w, "| %d | %s | %s | %s |\n", c.issue, c.what, verdict, medians); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *table) verdict(c check, build string) string {
	var parts []string
	met := true
	for _, f := range t.figures {
		if f.unit != c.unit || !matches(c.bench, f.bench) {
			continue
		}
		vs := t.values[f][build]
		if len(vs) == 0 {
			continue
		}
		m := median(slices.Clone(vs))
		bound := c.bound
		if c.vs != nil {
			ref, ok := c.vs(f.bench)
			of := t.values[figure{ref, c.unit}][build]
			if !ok || len(of) == 0 {
				continue
			}
			m /= median(slices.Clone(of))
		}
		if c.of != "" {
			of := t.values[figure{f.bench, c.of}][build]
			if len(of) == 0 {
				continue
			}
			bound = median(slices.Clone(of))
		}
		ok := m <= bound
		if c.atLeast {
			ok = m >= bound
		}
		met = met && ok
		op := "<="
		if c.atLeast {
			op = ">="
		}
		name := ""
		if strings.HasSuffix(c.bench, "*") {
			name = strings.TrimPrefix(f.bench, strings.TrimSuffix(c.bench, "*")) + " "
		}
		parts = append(parts, fmt.Sprintf("%s%s (want %s %s)", name, num(m), op, num(bound)))
	}
	if len(parts) == 0 {
		return "no runs"
	}
	if met {
		return "met\t" + strings.Join(parts, "; ")
	}
	return "SHORT\t" + strings.Join(parts, "; ")
}

// matches is a check's benchmark name against one of the runs': equal, or
// a prefix where the check's ends in "*".
func matches(pattern, bench string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(bench, p)
	}
	return pattern == bench
}
