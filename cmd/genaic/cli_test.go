package main

import (
	"bytes"
	"encoding/json"
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
