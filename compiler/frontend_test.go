package compiler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/genaic/genaic/compiler/diag"
)

// wrap puts a contract body into a minimal v1.1 workflow input.
func wrap(contract string) string {
	return `schema_version: v1.1
pipeline:
  workflow:
    inputs:
      x:
        contract: ` + contract + `
        role: { kind: opaque }
        source: { kind: request }
`
}

// posOfText returns the 1-based line and column of the first occurrence of
// marker in doc.
func posOfText(t *testing.T, doc, marker string) (int, int) {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("marker %q not in document", marker)
	}
	line := strings.Count(doc[:i], "\n") + 1
	col := len([]rune(doc[strings.LastIndex(doc[:i], "\n")+1 : i]))
	return line, col + 1
}

// TestPositions checks that the caret lands on the offending key or value,
// in block style, flow style and with quoted scalars, and that the message
// names what was read and what is expected.
func TestPositions(t *testing.T) {
	tests := []struct {
		name, doc, marker, path, message, help string
		rule                                   diag.Rule
	}{
		{
			name:   "unknown key, block style, nearest suggested",
			doc:    wrap("\n          dtype: float32\n          shpe: [a]"),
			marker: "shpe", rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.shpe",
			message: "unknown key `shpe` in the tensor contract at `pipeline.workflow.inputs.x.contract`; accepted keys: dtype, shape, rank, optional, batch_layout, padding",
			help:    "did you mean `shape`?",
		},
		{
			name:   "unknown key, flow style",
			doc:    wrap(`{ dtype: float32, shape: [a], padding: [{ dimension: a, valid_lenghts: n }] }`),
			marker: "valid_lenghts", rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.padding[0].valid_lenghts",
			message: "accepted keys: dimension, valid_lengths", help: "did you mean `valid_lengths`?",
		},
		{
			name:   "unknown key, quoted",
			doc:    wrap(`{ "dtype": "float32", "rnak": 2 }`),
			marker: `"rnak"`, rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.rnak",
			message: "unknown key `rnak`", help: "did you mean `rank`?",
		},
		{
			name:   "key of another kind",
			doc:    wrap(`{ dtype: float32, batch_layout: { kind: request_aligned, axis: 0, factor: 2 } }`),
			marker: "factor", rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.batch_layout.factor",
			message: "`factor` belongs to kind request_expanded, and this one is request_aligned",
		},
		{
			name:   "enum word, quoted",
			doc:    wrap(`{ dtype: float32, batch_layout: { kind: "token_packd", axis: 0, levels: [] } }`),
			marker: `"token_packd"`, rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.batch_layout.kind",
			message: `read "token_packd"`, help: "did you mean `token_packed`?",
		},
		{
			// The kind is refused, and the mapping's other keys are still
			// checked against the kind it likely means.
			name:   "a misspelt kind does not hide a misspelt key",
			doc:    wrap(`{ dtype: float32, batch_layout: { kind: token_packd, axis: 0, levles: [] } }`),
			marker: "levles", rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.batch_layout.levles",
			message: "accepted keys: kind, axis, levels", help: "did you mean `levels`?",
		},
		{
			name:   "a missing kind does not hide a key no kind accepts",
			doc:    wrap(`{ dtype: float32, batch_layout: { axis: 0, levles: [] } }`),
			marker: "levles", rule: "schema/unknown-field", path: "pipeline.workflow.inputs.x.contract.batch_layout.levles",
			message: "which no kind of it accepts", help: "did you mean `levels`?",
		},
		{
			name:   "negative dimension",
			doc:    wrap(`{ dtype: float32, shape: [a, -3] }`),
			marker: "-3", rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.shape[1]",
			message: "a dimension is a non-negative integer (a fixed extent) or a non-empty string (a shape symbol), read -3",
		},
		{
			name:   "negative axis",
			doc:    wrap(`{ dtype: float32, shape: [b, 4], batch_layout: { kind: request_aligned, axis: -1 } }`),
			marker: "-1", rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.batch_layout.axis",
			message: "`axis` must be an integer of at least 0, read -1",
		},
		{
			name:   "no rows per request",
			doc:    wrap(`{ dtype: float32, shape: [b, 4], batch_layout: { kind: request_expanded, axis: 0, factor: 0 } }`),
			marker: "0 }", rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.batch_layout.factor",
			message: "`factor` must be an integer of at least 1, read 0",
		},
		{
			name:   "non-integer dimension",
			doc:    wrap(`{ dtype: float32, shape: [2.5] }`),
			marker: "2.5", rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.shape[0]",
			message: "read the number 2.5",
		},
		{
			name:   "empty symbol",
			doc:    wrap(`{ dtype: float32, shape: [""] }`),
			marker: `""`, rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.shape[0]",
			message: "read an empty symbol",
		},
		{
			name:   "missing field points at the mapping",
			doc:    wrap(`{ shape: [a] }`),
			marker: "{ shape", rule: "schema/missing-field", path: "pipeline.workflow.inputs.x.contract",
			message: "the tensor contract at `pipeline.workflow.inputs.x.contract` has no `dtype`, which it requires",
		},
		{
			name:   "missing field of a kind",
			doc:    wrap(`{ dtype: float32, batch_layout: { kind: request_expanded, axis: 0 } }`),
			marker: "{ kind", rule: "schema/missing-field", path: "pipeline.workflow.inputs.x.contract.batch_layout",
			message: "of kind request_expanded at `pipeline.workflow.inputs.x.contract.batch_layout` has no `factor`",
		},
		{
			name:   "wrong YAML kind",
			doc:    wrap(`{ dtype: [float32] }`),
			marker: "[float32]", rule: "schema/type", path: "pipeline.workflow.inputs.x.contract.dtype",
			message: "`dtype` must be a string, read the sequence",
		},
		{
			name:   "unquoted number where text is meant",
			doc:    "pipeline:\n  workflow:\n    manifest: { adapter_abis: { onnx-genai.image-preprocess: 1 } }\n",
			marker: "1 }", rule: "schema/type", path: `pipeline.workflow.manifest.adapter_abis["onnx-genai.image-preprocess"]`,
			message: "must be a string, read the integer 1", help: "quote it",
		},
		{
			name:   "duplicate key",
			doc:    "schema_version: v1.1\nmodel: {}\nmodel: []\n",
			marker: "model: []", rule: "syntax", path: "model",
			message: `the key "model" is repeated in this mapping`,
		},
		{
			name:   "duplicate key in flow map",
			doc:    wrap(`{ dtype: float32, "dtype": int64 }`),
			marker: `"dtype"`, rule: "syntax", path: "pipeline.workflow.inputs.x.contract.dtype",
			message: `the key "dtype" is repeated`,
		},
		{
			name:   "unknown top-level section",
			doc:    "schema_version: v1.1\nmodle: {}\n",
			marker: "modle", rule: "schema/unknown-field", path: "modle",
			message: "unknown key `modle` in the document at `the top level`", help: "did you mean `model`?",
		},
		{
			name:   "feature above the declared version",
			doc:    strings.Replace(wrap(`{ dtype: float32, shape: [b, t], batch_layout: { kind: request_aligned, axis: 0 }, padding: [{ dimension: t, valid_lengths: n }] }`), "v1.1", "v1", 1),
			marker: "padding", rule: "version/feature-needs-v1.1", path: "pipeline.workflow.inputs.x.contract.padding",
			message: "`padding` is a v1.1 feature, but the document declares \"v1\"", help: "declare schema_version: \"v1.1\"",
		},
		{
			name:   "not YAML: an unclosed flow sequence points at its bracket",
			doc:    "schema_version: v1.1\npipeline: [\n",
			marker: "[", rule: "syntax", path: "",
			message: "the document is not valid YAML", help: "close this flow collection",
		},
		{
			// The parser names line 4, where the mapping began; the
			// offending token is the key indented one space short.
			name:   "not YAML: a key indented short points at the key",
			doc:    "schema_version: v1.1\npipeline:\n  workflow:\n    inputs:\n      x: {}\n     outputs: {}\n",
			marker: "outputs", rule: "syntax", path: "",
			message: "did not find expected key; this line's indentation matches no enclosing mapping", help: "line it up with the keys",
		},
		{
			name:   "not YAML: a key indented deep points at its colon",
			doc:    "schema_version: v1.1\npipeline:\n  workflow:\n    inputs:\n      x: 1\n       y: 2\n",
			marker: ": 2", rule: "syntax", path: "",
			message: "mapping values are not allowed", help: "indent the key",
		},
		{
			name:   "not YAML: a tab indents",
			doc:    "schema_version: v1.1\npipeline:\n\tworkflow: {}\n",
			marker: "\tworkflow", rule: "syntax", path: "",
			message: "cannot start any token; YAML indents with spaces, not tabs", help: "replace the tab with spaces",
		},
		{
			name:   "not YAML: an unclosed quote",
			doc:    "schema_version: v1.1\nmodel: \"abc\n",
			marker: "\"abc", rule: "syntax", path: "",
			message: "not valid YAML", help: "closing quote",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Load("t.yaml", []byte(tt.doc))
			line, col := posOfText(t, tt.doc, tt.marker)
			for _, d := range r.Diags {
				if d.Rule != tt.rule {
					continue
				}
				if d.Line != line || d.Column != col {
					t.Errorf("caret at %d:%d, want %d:%d (%q)", d.Line, d.Column, line, col, d.Message)
				}
				if d.Path != tt.path {
					t.Errorf("path %q, want %q", d.Path, tt.path)
				}
				if !strings.Contains(d.Message, tt.message) {
					t.Errorf("message %q lacks %q", d.Message, tt.message)
				}
				if !strings.Contains(d.Help, tt.help) || tt.help == "" && d.Help != "" {
					t.Errorf("help %q, want %q", d.Help, tt.help)
				}
				return
			}
			t.Fatalf("no %s diagnostic; got %v", tt.rule, r.Diags)
		})
	}
}

// TestStagesStop checks that a stage that refuses stops the later ones.
func TestStagesStop(t *testing.T) {
	doc := "schema_version: \"1.2\"\nmodle: {}\n"
	r := Load("t.yaml", []byte(doc))
	if len(r.Diags) != 1 || r.Diags[0].Rule != "version/too-new" {
		t.Fatalf("want only version/too-new (the unknown key is never reached), got %v", r.Diags)
	}
	r = Load("t.yaml", []byte("schema_version: v1\nrequired_capabilities: [continuous_batching]\nmodle: {}\n"))
	if len(r.Diags) != 1 || r.Diags[0].Rule != "retired/batching-hint" {
		t.Fatalf("want only retired/batching-hint, got %v", r.Diags)
	}
}

// TestJSONAccepted reads JSON text, tab-indented as encoders write it.
func TestJSONAccepted(t *testing.T) {
	doc := "{\n\t\"schema_version\": \"v1.1\",\n\t\"pipeline\": {\n\t\t\"workflow\": {\n\t\t\t\"components\": {\"c\": {\"implementation\": {\"kind\": \"binding\"}, \"bogus\": 1}}\n\t\t}\n\t}\n}\n"
	r := Load("t.json", []byte(doc))
	if len(r.Diags) != 1 || r.Diags[0].Rule != "schema/unknown-field" {
		t.Fatalf("want one schema/unknown-field, got %v", r.Diags)
	}
	if line, col := posOfText(t, doc, `"bogus"`); r.Diags[0].Line != line || r.Diags[0].Column != col {
		t.Errorf("caret at %d:%d, want %d:%d", r.Diags[0].Line, r.Diags[0].Column, line, col)
	}
}

// TestHostileDocuments checks that documents built to cost time or memory
// are refused quickly with a clear diagnostic.
func TestHostileDocuments(t *testing.T) {
	// Each level is a sequence step holding ten copies of the level below,
	// so the workflow expands to 10^9 steps: structurally valid, and
	// exponential if the decoder followed aliases without a budget.
	bomb := "model:\n  s0: &s0 {kind: sequence, steps: []}\n"
	for i := 1; i < 10; i++ {
		bomb += fmt.Sprintf("  s%d: &s%d {kind: sequence, steps: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*s%d, ", i-1), 10), ", "))
	}
	stepBomb := bomb + "pipeline:\n  workflow:\n    steps: [*s9]\n"
	tests := []struct {
		name, doc string
		rule      diag.Rule
		message   string
	}{
		{"deep nesting", "model: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n", "syntax", ""},
		{"deep block nesting", "model:\n" + deepBlock(200), "syntax", "nests deeper than 64 levels"},
		{"alias bomb in the workflow", stepBomb, "syntax", "through aliases"},
		{"huge document", "model: \"" + strings.Repeat("x", MaxDocumentBytes) + "\"\n", "syntax", fmt.Sprintf("at most %d bytes", MaxDocumentBytes)},
		{"two documents", "model: {}\n---\nmodel: {}\n", "syntax", "second YAML document"},
		{"scalar document", "hello\n", "schema/type", "must be a mapping"},
		{"empty document", "", "schema/type", "the document is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := Load("h.yaml", []byte(tt.doc))
			elapsed := time.Since(start)
			if r.Valid() {
				t.Fatalf("accepted a hostile document (in %v)", elapsed)
			}
			found := false
			for _, d := range r.Diags {
				if (tt.rule == "" || d.Rule == tt.rule) && strings.Contains(d.Message, tt.message) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s diagnostic containing %q: %v", tt.rule, tt.message, r.Diags)
			}
			if len(r.Diags) > maxDecodeDiagnostics+1 {
				t.Errorf("%d diagnostics; the decoder should stop at %d", len(r.Diags), maxDecodeDiagnostics)
			}
		})
	}
}

func deepBlock(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", 2*(i+1)))
	}
	fmt.Fprintf(&b, "%sv\n", strings.Repeat(" ", 2*(depth+1)))
	return b.String()
}

// TestSyntaxErrorDeepInALargeDocument: the offending line is found after
// thousands of lines, and the probe that finds it stays within its byte
// budget (a document past the budget keeps the parser's line instead).
func TestSyntaxErrorDeepInALargeDocument(t *testing.T) {
	var b strings.Builder
	b.WriteString("schema_version: v1.1\nmodel:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "  key%d: value\n", i)
	}
	b.WriteString("  last:\n    a: 1\n   b: 2\n")
	r := Load("big.yaml", []byte(b.String()))
	if len(r.Diags) != 1 || r.Diags[0].Rule != diag.Syntax || r.Diags[0].Line != 20005 || r.Diags[0].Column != 4 {
		t.Fatalf("got %v", r.Diags)
	}
}
