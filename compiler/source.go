package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
)

// Limits that keep a hostile document from costing more than a metadata file
// ever needs. Real inference_metadata.yaml files are a few kilobytes.
const (
	// MaxDocumentBytes bounds the size of one document: room for a
	// generated workflow of several thousand components.
	MaxDocumentBytes = 16 << 20
	// MaxDepth bounds how deeply mappings and sequences nest.
	MaxDepth = 64
	// MaxExpandedNodes bounds the nodes the decoder visits through
	// aliases, so an alias bomb is refused instead of expanded. Nodes
	// written out are bounded by MaxDocumentBytes instead.
	MaxExpandedNodes = 1 << 16
)

// parseYAML reads the bytes as one YAML (or JSON) document and returns its
// top-level node. A nil node with no diagnostics is an empty document.
func parseYAML(b []byte) (root *yaml.Node, ds diag.List) {
	if len(b) > MaxDocumentBytes {
		ds.Add(diag.Errorf(diag.Syntax, diag.Pos{Line: 1, Column: 1}, "",
			"the document is %d bytes; genaic reads metadata documents of at most %d bytes", len(b), MaxDocumentBytes))
		return nil, ds
	}
	defer func() {
		if r := recover(); r != nil {
			root = nil
			ds = diag.List{diag.Errorf(diag.Syntax, diag.Pos{Line: 1, Column: 1}, "", "the YAML parser could not read the document: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, diag.List{yamlError(b, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ds.Add(diag.Errorf(diag.Syntax, diag.Pos{Line: extra.Line, Column: extra.Column}, "",
			"the file holds a second YAML document; an inference_metadata.yaml file is exactly one document"))
		return nil, ds
	} else if !errors.Is(err, io.EOF) {
		return nil, diag.List{yamlError(b, err)}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root = doc.Content[0]
	ds.Add(checkStructure(root)...)
	return root, ds
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 error into a positioned syntax diagnostic.
// The parser's error names the line where the construct it was reading
// began, not the offending token, so the token is found by reading ever
// longer prefixes of the document from that line on: the first prefix that
// fails with the same error ends at the offending line.
func yamlError(src []byte, err error) diag.Diagnostic {
	msg := err.Error()
	pos := diag.Pos{Line: 1, Column: 1}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		pos.Line, msg = n, m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	d := diag.Errorf(diag.Syntax, pos, "", "the document is not valid YAML: %s", msg)
	lines := strings.SplitAfter(string(src), "\n")
	at := offendingLine(lines, pos.Line, err.Error())
	if at == 0 {
		return d
	}
	line := strings.TrimRight(lines[at-1], "\r\n")
	d.Line = at
	col, hint := offendingToken(line, msg)
	d.Column = col
	if why, fix := diag.SplitHelp(hint); fix != "" {
		d.Message += "; " + why
		d.Help = fix
	} else {
		d.Help = why
	}
	return d
}

// offendingLine is the line from line from on where the document's
// prefixes start to fail as the whole document does: the prefix up to it
// fails with the same error and the one before it does not. Parsing stops
// at the first error, so from the offending line on every prefix fails
// alike, and a binary search finds it in a few parses. It gives up (0) when
// those parses would read more than maxSyntaxProbeBytes in all.
func offendingLine(lines []string, from int, want string) int {
	const maxSyntaxProbeBytes = 32 << 20
	if from < 1 || from > len(lines) {
		return 0
	}
	ends := make([]int, len(lines)+1) // ends[k]: bytes in the first k lines
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	src := strings.Join(lines, "")
	read := 0
	fails := func(k int) (bool, bool) {
		if read += ends[k]; read > maxSyntaxProbeBytes {
			return false, false
		}
		var n yaml.Node
		err := yaml.Unmarshal([]byte(src[:ends[k]]), &n)
		return err != nil && err.Error() == want, true
	}
	lo, hi := from-1, len(lines) // prefix lo does not fail (or is before from); prefix hi does
	if ok, within := fails(hi); !ok || !within {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, within := fails(mid)
		if !within {
			return 0
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// offendingToken places the caret on the offending line for the parser's
// message, and says what it finds there and how to fix it: why, when
// said, goes before a newline in help and the fix after it.
func offendingToken(line, msg string) (col int, help string) {
	rs := []rune(line)
	first := len(rs) - len([]rune(strings.TrimLeft(line, " \t")))
	if first >= len(rs) {
		first = 0
	}
	switch {
	case strings.Contains(msg, "cannot start any token"):
		for i, r := range rs {
			if r == '\t' && i <= first {
				return i + 1, "YAML indents with spaces, not tabs\nreplace the tab with spaces"
			}
			if r == '@' || r == '`' {
				return i + 1, fmt.Sprintf("a plain scalar cannot start with `%c`\nquote the value", r)
			}
		}
	case strings.Contains(msg, "mapping values are not allowed"):
		for i := len(rs) - 1; i > first; i-- {
			if rs[i] == ':' && (i+1 == len(rs) || rs[i+1] == ' ') {
				return i + 1, "a value cannot hold `key: value` here\nindent the key under its parent by the same spaces as its siblings, or quote the value if the colon is part of it"
			}
		}
	case strings.Contains(msg, "expected ',' or") || strings.Contains(msg, "expected node content"):
		if i := strings.LastIndexAny(line, "[{"); i >= 0 {
			return len([]rune(line[:i])) + 1, "close this flow collection on the line it is written, or indent its continuation lines"
		}
	case strings.Contains(msg, "end of stream"):
		if i := strings.IndexAny(line, "\"'"); i >= 0 {
			return len([]rune(line[:i])) + 1, "this quoted string is never closed\nadd the closing quote"
		}
	case strings.Contains(msg, "did not find expected key"), strings.Contains(msg, "expected '-' indicator"),
		strings.Contains(msg, "block mapping"), strings.Contains(msg, "block collection"):
		return first + 1, "this line's indentation matches no enclosing mapping or list\nline it up with the keys (or `-` items) it belongs with"
	}
	return first + 1, ""
}

// checkStructure finds what the YAML parser accepts but genaic does not:
// repeated mapping keys, keys that are not scalars, and nesting deeper than
// MaxDepth. It does not follow aliases, so it visits every node once.
func checkStructure(root *yaml.Node) diag.List {
	var ds diag.List
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > MaxDepth {
			ds.Add(diag.Errorf(diag.Syntax, posOf(n), path, "the document nests deeper than %d levels; metadata never needs that", MaxDepth))
			return
		}
		switch n.Kind {
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, indexPath(path, i), depth+1)
			}
		case yaml.MappingNode:
			seen := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Kind != yaml.ScalarNode {
					ds.Add(diag.Errorf(diag.Syntax, posOf(k), path, "a mapping key must be a plain string, read a %s", kindWord(k)))
					continue
				}
				if first, dup := seen[k.Value]; dup {
					ds.Add(diag.Errorf(diag.Syntax, posOf(k), keyPath(path, k.Value),
						"the key %q is repeated in this mapping; YAML mappings hold each key once", k.Value).
						With(posOf(first), keyPath(path, k.Value), "first %q is here", k.Value))
					continue
				}
				seen[k.Value] = k
				walk(v, keyPath(path, k.Value), depth+1)
			}
		}
	}
	walk(root, "", 0)
	if len(ds) > 0 {
		ds.Sort()
	}
	return ds
}

func posOf(n *yaml.Node) diag.Pos {
	if n == nil {
		return diag.Pos{}
	}
	return diag.Pos{Line: n.Line, Column: n.Column}
}

// keyPath extends a YAML path by a mapping key. Keys that are not simple
// identifiers (value names may contain dots) are written in brackets.
func keyPath(path, key string) string {
	if simpleKey(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func simpleKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// kindWord names what a node is, in the words a YAML author uses.
func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.AliasNode:
		return "alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("string %q", clip(n.Value))
		case "!!int":
			return "integer " + clip(n.Value)
		case "!!float":
			return "number " + clip(n.Value)
		case "!!bool":
			return "boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("scalar %s", clip(n.Value))
	}
	return "nothing"
}

// clip shortens a scalar quoted in a message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
