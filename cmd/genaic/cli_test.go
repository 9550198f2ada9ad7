package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs a genaic command in-process and returns what it printed.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(&env{stdout: &out, stderr: &errb}, args)
	return out.String(), errb.String(), code
}

type checkJSON struct {
	Files []struct {
		Path        string `json:"path"`
		Valid       bool   `json:"valid"`
		Diagnostics []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Line     int    `json:"line"`
			Column   int    `json:"column"`
			EndLine  int    `json:"end_line"`
			EndCol   int    `json:"end_column"`
			Path     string `json:"path"`
			Message  string `json:"message"`
			Help     string `json:"help"`
		} `json:"diagnostics"`
	} `json:"files"`
}

// checkJSONOf runs `genaic check --json` on paths and decodes the report.
func checkJSONOf(t *testing.T, paths ...string) (checkJSON, int) {
	t.Helper()
	out, stderr, code := runCLI(t, append([]string{"check", "--json", "--check"}, paths...)...)
	var rep checkJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json printed no JSON (exit %d): %v\nstdout: %s\nstderr: %s", code, err, out, stderr)
	}
	return rep, code
}

// TestUsageNamesEveryFlag: a command's usage line (genaic help, and the
// first line of its -h) names every flag it takes, except those for genaic
// developers, whose value placeholders are single words; and docs/cli.md
// has a section for every command.
func TestUsageNamesEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	placeholder := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.|]*$`)
	for name, c := range commands {
		if !strings.Contains(string(doc), "\n### genaic "+name+"\n") {
			t.Errorf("docs/cli.md has no section ### genaic %s", name)
		}
		_, help, code := runCLI(t, name, "-h")
		if code != exitOK && code != exitUsage {
			t.Fatalf("%s -h: exit %d", name, code)
		}
		lines := strings.Split(help, "\n")
		for i, l := range lines {
			m := flagLine.FindStringSubmatch(l)
			// The flag package takes a help's first `quoted` words for the
			// flag's value placeholder: one word, a name, or the help
			// misreads ("-allow-abs .." read as a flag taking a value).
			if head, _, _ := strings.Cut(l, "\t"); m != nil && (len(strings.Fields(head)) > 2 || len(strings.Fields(head)) == 2 && !placeholder.MatchString(strings.Fields(head)[1])) {
				t.Errorf("%s -h: %q: backquotes in the flag's help made a placeholder that is no value name", name, l)
			}
			if m == nil || i+1 < len(lines) && strings.Contains(lines[i+1], "(for genaic developers)") {
				continue
			}
			if !regexp.MustCompile(`(^|[ \[(])--?` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(c.usage) {
				t.Errorf("the usage of %s (%q) does not name its flag -%s", name, c.usage, m[1])
			}
		}
	}
}
