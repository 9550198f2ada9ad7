package compiler

import (
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
)

// TestVersionGrammar pins the version gate on every spelling the rule
// catalogue names, as a document would write them.
func TestVersionGrammar(t *testing.T) {
	tests := []struct {
		line    string    // the schema_version line, or "" for absent
		rule    diag.Rule // expected rule id, or "" for accepted
		normal  string    // the normal form when accepted
		message string    // a fragment the message must contain
	}{
		{line: "", normal: "v1.0"},
		{line: "schema_version: ~", normal: "v1.0"},
		{line: `schema_version: v1`, normal: "v1.0"},
		{line: `schema_version: "1"`, normal: "v1.0"},
		{line: `schema_version: "1.0"`, normal: "v1.0"},
		{line: `schema_version: v1.0`, normal: "v1.0"},
		{line: `schema_version: "1.1"`, normal: "v1.1"},
		{line: `schema_version: v1.1`, normal: "v1.1"},
		{line: `schema_version: " v1.1 "`, normal: "v1.1"},
		{line: `schema_version: "v01.01"`, normal: "v1.1"},
		{line: `schema_version: "2.0"`, rule: "version/major", message: `"2.0" declares major version 2; the highest version this build of genaic reads is v1.1`},
		{line: `schema_version: v3`, rule: "version/major", message: "v1.1"},
		{line: `schema_version: v0.9`, rule: "version/major", message: "major version 0"},
		{line: `schema_version: "1.2"`, rule: "version/too-new", message: `"1.2" (normal form v1.2) is newer than v1.1`},
		{line: `schema_version: v1.7`, rule: "version/too-new", message: "a newer genaic is required"},
		{line: `schema_version: latest`, rule: "version/malformed", message: `"latest" is not a version: the accepted form is "v<major>.<minor>"`},
		{line: `schema_version: v1.2.3`, rule: "version/malformed", message: `"v1.2.3"`},
		{line: `schema_version: ""`, rule: "version/malformed", message: `"" is not a version`},
		{line: `schema_version: v`, rule: "version/malformed", message: `"v" is not a version`},
		{line: `schema_version: "vv1"`, rule: "version/malformed"},
		{line: `schema_version: "1."`, rule: "version/malformed"},
		{line: `schema_version: "-1"`, rule: "version/malformed"},
		{line: `schema_version: 1.1`, rule: "version/malformed", message: `must be a string, read the number 1.1 help: write it as "v<major>.<minor>"`},
		{line: `schema_version: 1`, rule: "version/malformed", message: "read the integer 1"},
		{line: `schema_version: [v1]`, rule: "version/malformed", message: "read the sequence"},
		{line: `schema_version: true`, rule: "version/malformed", message: "boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := Load("v.yaml", []byte(tt.line+"\nmodel: {vocab_size: 3}\n"))
			if tt.rule == "" {
				if !r.Valid() {
					t.Fatalf("want accepted, got %v", r.Diags)
				}
				if got := r.Version.String(); got != tt.normal {
					t.Fatalf("normal form %s, want %s", got, tt.normal)
				}
				return
			}
			if len(r.Diags) != 1 || r.Diags[0].Rule != tt.rule {
				t.Fatalf("want one %s, got %v", tt.rule, r.Diags)
			}
			d := r.Diags[0]
			if text := d.Message + " help: " + d.Help; !strings.Contains(text, tt.message) {
				t.Errorf("message and help %q lack %q", text, tt.message)
			}
			if d.Line != 1 || d.Column != len("schema_version: ")+1 {
				t.Errorf("caret at %d:%d, want 1:%d", d.Line, d.Column, len("schema_version: ")+1)
			}
		})
	}
}

// TestVersionSpellingKept checks that the spelling survives verbatim: it is
// part of the document's identity.
func TestVersionSpellingKept(t *testing.T) {
	for _, s := range []string{"v1", "1", "1.0", "v1.0", " v1.1 "} {
		r := Load("v.yaml", []byte("schema_version: \""+s+"\"\n"))
		if !r.Valid() || r.Version.Spelling != s || !r.Version.Present {
			t.Errorf("%q: spelling %q present=%v diags=%v", s, r.Version.Spelling, r.Version.Present, r.Diags)
		}
	}
}

// TestGateBeforeRetiredShape pins the order: a v2.0 document carrying the
// flat pair hears only about its version, never about a v1 migration.
func TestGateBeforeRetiredShape(t *testing.T) {
	doc := `schema_version: "2.0"
pipeline:
  workflow:
    inputs:
      x:
        contract:
          dtype: float32
          shape: [items, d]
          batch_layout: { kind: token_packed, axis: 0, offsets: o, owner: w }
        role: { kind: opaque }
        source: { kind: request }
`
	r := Load("v2.yaml", []byte(doc))
	if len(r.Diags) != 1 || r.Diags[0].Rule != "version/major" {
		t.Fatalf("want only version/major, got %v", r.Diags)
	}
	if strings.Contains(r.Diags[0].Message, "levels") {
		t.Errorf("the version refusal mentions the v1 migration: %q", r.Diags[0].Message)
	}
	if r.Stopped != StageVersion {
		t.Errorf("stopped at %q, want %q", r.Stopped, StageVersion)
	}
	// The same document at v1.1 is refused for the retired shape instead,
	// which shows the order (not the shape recognizer's absence) decides.
	r = Load("v11.yaml", []byte(strings.Replace(doc, `"2.0"`, "v1.1", 1)))
	if len(r.Diags) != 1 || r.Diags[0].Rule != "retired/flat-token-packed" {
		t.Fatalf("want retired/flat-token-packed at v1.1, got %v", r.Diags)
	}
	if !strings.Contains(r.Diags[0].Help, "levels: [{ offsets: o, owner: w }]") ||
		!strings.Contains(r.Diags[0].Message, "pipeline.workflow.inputs.x.contract.batch_layout") {
		t.Errorf("the retired message lacks the rewrite or the path: %q", r.Diags[0].Message)
	}
}
