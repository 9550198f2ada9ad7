package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readmePath is README.md as seen from this package's folder.
const readmePath = "../../README.md"

// tourMarker stands on the line before the README's tour block, a fenced
// console block whose every command starts with "$ genaic".
const tourMarker = "<!-- tour:"

// The addresses and the folder the README shows; the test runs with free
// ports and a temporary folder and writes them back as these.
const (
	tourHTTP = "127.0.0.1:8000"
	tourGRPC = "127.0.0.1:8001"
	tourTmp  = "/tmp/"
)

// tourStep is one command of the tour.
type tourStep struct {
	args string // after "genaic", as the README shows it; split at spaces
	// keep shortens the output for the README; nil keeps all of it.
	keep func(lines []string) []string
	// vary masks what differs from run to run and machine to machine
	// (times, measured rates, the execution planned on the cores, Go's
	// processors, the last digits of a model's floats) where the README's
	// output is compared with the command's; nil masks nothing.
	vary func(string) string
}

// serveArgs is the step that runs in the background until the tour ends.
const serveArgs = "serve testdata/packages/image_padded --http " + tourHTTP + " --grpc " + tourGRPC

var tour = []tourStep{
	{args: "check testdata/packages/image_padded"},
	{args: "compile testdata/packages/image_padded -o /tmp/plan.json"},
	{args: "inspect /tmp/plan.json", keep: sections(
		"plan of", "operators:",
		"inputs", "patch_lengths",
		"budgets", "outputs")},
	{args: "run /tmp/plan.json --requests testdata/packages/image_padded/requests.json",
		keep: cutAfterCommas(6), vary: masking(`-?\d+\.\d+(e-?\d+)?`)},
	{args: "run /tmp/plan.json --requests testdata/packages/image_padded/requests.json --stats --out /tmp/responses.json"},
	{args: "inspect /tmp/plan.json --stats /tmp/responses.json", keep: sections("what the running engine", ""),
		vary: masking(`\d+(\.\d+)? ?(ms|%|ns/element)`)},
	{args: serveArgs,
		vary: masking(`time=\S+|elapsed=\S+|execution="[^"]*"|go_procs=\d+|largest_group=\d+`)},
	{args: "bench testdata/packages/image_padded --requests testdata/packages/image_padded/requests.json --url " + tourHTTP + " --grpc " + tourGRPC + " --concurrency 8 --rounds 1",
		vary: numbersIn(`^(http|grpc|  )`)},
}

// TestReadmeTour runs the commands of README.md's tour from the root of
// the checkout and compares what they print with the README's block,
// each step's varying figures masked and runs of spaces taken as one
// (columns widen with their figures). GENAIC_UPDATE=1 rewrites the block
// with what they printed.
func TestReadmeTour(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := filepath.Abs(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..")
	tmp := t.TempDir() + "/"
	// toRun turns the README's folder and addresses into the test's, shown
	// the test's back into the README's.
	toRun, shown := strings.NewReplacer(tourTmp, tmp), strings.NewReplacer(tmp, tourTmp)

	var got []string // one section per step: "$ genaic ARGS" and its output
	for _, s := range tour {
		var out string
		if s.args == serveArgs {
			var http, grpc string
			out, http, grpc = startTourServer(t, self, strings.NewReplacer(tourHTTP, "127.0.0.1:0", tourGRPC, "127.0.0.1:0").Replace(s.args))
			toRun = strings.NewReplacer(tourTmp, tmp, tourHTTP, http, tourGRPC, grpc)
			shown = strings.NewReplacer(tmp, tourTmp, http, tourHTTP, grpc, tourGRPC)
		} else {
			var b lockedBuffer
			if code := run(&env{stdout: &b, stderr: &b}, strings.Fields(toRun.Replace(s.args))); code != exitOK {
				t.Fatalf("genaic %s: exit %d\n%s", s.args, code, b.String())
			}
			out = b.String()
		}
		out = shown.Replace(out)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if out == "" {
			lines = nil
		}
		if s.keep != nil {
			lines = s.keep(lines)
		}
		cmd := "$ genaic " + s.args
		if s.args == serveArgs {
			cmd += " &"
		}
		got = append(got, strings.Join(append([]string{cmd}, lines...), "\n")+"\n")
	}

	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	start, end, err := tourBlock(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("GENAIC_UPDATE") == "1" {
		updated := string(doc[:start]) + strings.Join(got, "") + string(doc[end:])
		if err := os.WriteFile(readme, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := splitTour(string(doc[start:end]))
	if len(want) != len(tour) {
		t.Fatalf("README.md's tour shows %d commands, the tour runs %d (GENAIC_UPDATE=1 go test ./cmd/genaic -run TestReadmeTour rewrites it):\n%s",
			len(want), len(tour), strings.Join(got, ""))
	}
	for i, s := range tour {
		if g, w := maskTour(got[i], s.vary), maskTour(want[i], s.vary); g != w {
			t.Errorf("README.md's tour differs from what `genaic %s` prints (GENAIC_UPDATE=1 go test ./cmd/genaic -run TestReadmeTour rewrites it)\n%s\n--- printed ---\n%s--- README.md ---\n%s",
				s.args, firstDifference(g, w), got[i], want[i])
		}
	}
}

// tourBlock returns the offsets of the tour's lines in the README: from
// the line after the fence that follows the marker to the closing fence.
func tourBlock(doc string) (start, end int, err error) {
	at := strings.Index(doc, "\n"+tourMarker)
	if at < 0 {
		return 0, 0, fmt.Errorf("README.md has no line starting %q before the tour", tourMarker)
	}
	rest := doc[at+1:]
	eol := strings.Index(rest, "\n")
	if eol < 0 || !strings.HasPrefix(rest[eol+1:], "```console\n") {
		return 0, 0, fmt.Errorf("README.md: the line after the tour's marker is not \"```console\"")
	}
	start = at + 1 + eol + 1 + len("```console\n")
	n := strings.Index("\n"+doc[start:], "\n```\n")
	if n < 0 {
		return 0, 0, fmt.Errorf("README.md: the tour's block is not closed")
	}
	return start, start + n, nil
}

// splitTour splits a tour block into its steps, each starting at a line
// "$ genaic".
func splitTour(block string) []string {
	var steps []string
	for line := range strings.Lines(block) {
		if strings.HasPrefix(line, "$ genaic ") || len(steps) == 0 {
			steps = append(steps, "")
		}
		steps[len(steps)-1] += line
	}
	return steps
}

var spaces = regexp.MustCompile(` +`)

// maskTour masks what vary masks and takes every run of spaces as one.
func maskTour(s string, vary func(string) string) string {
	if vary != nil {
		s = vary(s)
	}
	return spaces.ReplaceAllString(s, " ")
}

// masking replaces every match of expr with "#".
func masking(expr string) func(string) string {
	re := regexp.MustCompile(expr)
	return func(s string) string { return re.ReplaceAllString(s, "#") }
}

var number = regexp.MustCompile(`\d+(\.\d+)?`)

// numbersIn replaces every number with "#" in the lines that match expr.
func numbersIn(expr string) func(string) string {
	re := regexp.MustCompile(expr)
	return func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if re.MatchString(l) {
				lines[i] = number.ReplaceAllString(l, "#")
			}
		}
		return strings.Join(lines, "\n")
	}
}

// firstDifference names the first line where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(lines []string) string {
		if i < len(lines) {
			return lines[i]
		}
		return "(the end)"
	}
	return fmt.Sprintf("first difference, line %d (masked):\n  printed: %s\n  README:  %s", i+1, line(g), line(w))
}

// sections keeps the lines from each line starting (after its indent)
// with a first prefix up to the next one starting with the pair's stop
// prefix ("" : to the end), blank lines at a section's end dropped; "..."
// stands for what is left out.
func sections(pairs ...string) func([]string) []string {
	return func(lines []string) []string {
		var kept []string
		at := 0
		for p := 0; p+1 < len(pairs); p += 2 {
			from := indexPrefix(lines, at, pairs[p])
			if from < 0 {
				return append(kept, fmt.Sprintf("(no line starts with %q)", pairs[p]))
			}
			to := len(lines)
			if pairs[p+1] != "" {
				if to = indexPrefix(lines, from+1, pairs[p+1]); to < 0 {
					to = len(lines)
				}
			}
			for to > from && strings.TrimSpace(lines[to-1]) == "" {
				to--
			}
			if from > at {
				kept = append(kept, "...")
			}
			kept = append(kept, lines[from:to]...)
			at = to
		}
		if at < len(lines) {
			kept = append(kept, "...")
		}
		return kept
	}
}

// indexPrefix is the index of the first line at or after from that starts
// with prefix once its indent is trimmed, or -1.
func indexPrefix(lines []string, from int, prefix string) int {
	for i := from; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimLeft(lines[i], " "), prefix) {
			return i
		}
	}
	return -1
}

// cutAfterCommas ends each line after its nth comma, with "…": where the
// cut falls does not depend on how long the figures before it print.
func cutAfterCommas(n int) func([]string) []string {
	return func(lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = l
			at := 0
			for k := 0; k < n; k++ {
				c := strings.Index(l[at:], ",")
				if c < 0 {
					at = -1
					break
				}
				at += c + 1
			}
			if at > 0 && at < len(l) {
				out[i] = l[:at] + "…"
			}
		}
		return out
	}
}

// lockedBuffer is a bytes.Buffer that commands may write from several
// goroutines, standing for a terminal that shows stdout and stderr
// together.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listening is serve's text log line naming an address it listens on.
var listening = regexp.MustCompile(`msg=listening protocol=(http|grpc) addr=(\S+)`)

// startTourServer starts `genaic ARGS` (the test binary standing for
// genaic) in the current folder, and returns its log up to the line that
// says it is ready, with the addresses it listens on. The server is
// stopped with SIGTERM when the test ends.
func startTourServer(t *testing.T, self, args string) (log, http, grpc string) {
	t.Helper()
	cmd := exec.Command(self, strings.Fields(args)...)
	// The plan the server measures is kept in a folder of the test's,
	// not the user's cache: the README's command names none.
	cmd.Env = append(os.Environ(), mainEnv+"=1", "XDG_CACHE_HOME="+t.TempDir())
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		waitExit(t, cmd, time.Minute)
	})
	type result struct {
		log, http, grpc string
		ready           bool
	}
	// One result comes: at the line that says the server is ready, or,
	// where the server exits first, at the end of its log.
	first := make(chan result, 1)
	go func() {
		var r result
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			if r.ready {
				continue // drained so that the server never blocks on its log
			}
			r.log += line + "\n"
			if m := listening.FindStringSubmatch(line); m != nil {
				if m[1] == "http" {
					r.http = m[2]
				} else {
					r.grpc = m[2]
				}
			}
			if strings.Contains(line, " msg=ready ") {
				r.ready = true
				first <- r
			}
		}
		if !r.ready {
			first <- r
		}
	}()
	select {
	case r := <-first:
		if !r.ready {
			t.Fatalf("genaic %s exited before it was ready:\n%s", args, r.log)
		}
		if r.http == "" || r.grpc == "" {
			t.Fatalf("genaic %s logged no http and grpc addresses:\n%s", args, r.log)
		}
		return r.log, r.http, r.grpc
	case <-time.After(2 * time.Minute):
		t.Fatalf("genaic %s was not ready within 2 minutes", args)
	}
	return "", "", ""
}
