package compiler

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
)

// maxDecodeDiagnostics bounds what one document can report during decoding;
// past it the decoder stops and says so.
const maxDecodeDiagnostics = 200

// decoder turns a YAML node tree into the typed model, strictly: every
// mapping is closed, every scalar has the kind its field declares, and every
// problem is reported with its position while decoding continues, so one run
// shows every schema problem.
type decoder struct {
	ds      diag.List
	budget  int // nodes that may still be visited through aliases
	inAlias int // > 0 while decoding a node reached through an alias
	full    bool
}

func newDecoder() *decoder { return &decoder{budget: MaxExpandedNodes} }

func (d *decoder) add(dg diag.Diagnostic) {
	if d.full {
		return
	}
	if len(d.ds) == maxDecodeDiagnostics {
		d.full = true
		dg.Message = fmt.Sprintf("%s (decoding stopped after %d problems)", dg.Message, maxDecodeDiagnostics)
	}
	d.ds.Add(dg)
}

func (d *decoder) errorf(rule diag.Rule, n *yaml.Node, path, format string, args ...any) {
	d.add(diag.Errorf(rule, posOf(n), path, format, args...))
}

// nodeDecoder is implemented by model types that read a node themselves.
type nodeDecoder interface {
	decodeYAML(d *decoder, n *yaml.Node, path string)
}

// positioned is implemented by every model type through its embedded Node.
type positioned interface{ At() *Node }

// value decodes n into v, which must be settable. key is the node of the key
// that introduced n, or nil.
func (d *decoder) value(n, key *yaml.Node, path string, v reflect.Value) {
	if d.full {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.errorf(diag.Syntax, n, path, "alias *%s names no anchor", n.Value)
			return
		}
		n = n.Alias
		d.inAlias++
		defer func() { d.inAlias-- }()
	}
	if d.inAlias > 0 {
		if d.budget--; d.budget < 0 {
			d.errorf(diag.Syntax, n, path, "the document expands to more than %d nodes through aliases; refusing to expand it further", MaxExpandedNodes)
			d.full = true
			return
		}
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	p := v.Addr().Interface()
	if at, ok := p.(positioned); ok {
		*at.At() = Node{Pos: posOf(n), Path: path}
		if key != nil {
			at.At().KeyPos = posOf(key)
		}
	}
	if nd, ok := p.(nodeDecoder); ok {
		nd.decodeYAML(d, n, path)
		return
	}
	d.structure(n, path, v)
}

// field is what decode.go knows about one struct field of the model.
type field struct {
	index    int
	key      string
	required bool
	kinds    []string // empty: every kind
	reqKinds []string
	enum     []string
	min      *int64 // the least value of an integer (min tag)
}

func (f field) accepts(kind string) bool {
	return len(f.kinds) == 0 || slices.Contains(f.kinds, kind)
}

func (f field) requiredFor(kind string) bool {
	return f.required || slices.Contains(f.reqKinds, kind)
}

var fieldCache sync.Map // reflect.Type -> []field

func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("yaml")
		if !ok {
			continue
		}
		key, opts, _ := strings.Cut(tag, ",")
		f := field{
			index:    i,
			key:      key,
			required: opts == "required",
			kinds:    splitTag(sf.Tag.Get("kinds"), ","),
			reqKinds: splitTag(sf.Tag.Get("reqkinds"), ","),
			enum:     splitTag(sf.Tag.Get("enum"), "|"),
		}
		if m, ok := sf.Tag.Lookup("min"); ok {
			least, err := strconv.ParseInt(m, 10, 64)
			if err != nil {
				panic(fmt.Sprintf("compiler: field %s of %v has min tag %q, not an integer", sf.Name, t, m))
			}
			f.min = &least
		}
		fs = append(fs, f)
	}
	fieldCache.Store(t, fs)
	return fs
}

func splitTag(s, sep string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, sep)
}

// structure decodes a closed mapping into a struct of the model.
func (d *decoder) structure(n *yaml.Node, path string, v reflect.Value) {
	what := describe(v.Type())
	fs := fieldsOf(v.Type())
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		n = &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(diag.SchemaType, n, path, "%s must be a mapping with the keys %s, read the %s", what, keyList(fs, ""), kindWord(n))
		return
	}
	kind, ok := d.kind(n, path, v, fs)
	if !ok && kind == "" {
		// The kind is absent or far from every word: a key that no kind
		// accepts is still reported.
		var all []string
		for _, f := range fs {
			all = append(all, f.key)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(all, k.Value) {
				dg := diag.Errorf(diag.SchemaUnknownField, posOf(k), keyPath(path, k.Value),
					"unknown key `%s` in %s at `%s`, which no kind of it accepts; accepted keys: %s", k.Value, what, orRoot(path), strings.Join(slices.Compact(slices.Clone(all)), ", "))
				dg.Help = diag.DidYouMean(k.Value, all)
				d.add(dg)
			}
		}
		return
	}
	// A misspelt kind (ok false, kind its likely meaning) does not hide
	// the other keys' problems: they are checked against the kind it
	// likely means, but no key is demanded of a kind not written.
	tagged := slices.ContainsFunc(fs, func(f field) bool { return f.key == "kind" && len(f.kinds) == 0 })
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Value == "kind" && tagged {
			seen["kind"] = true
			continue
		}
		f, ok := lookupField(fs, k.Value, kind)
		if !ok {
			d.unknownKey(k, path, what, fs, kind)
			continue
		}
		seen[k.Value] = true
		fpath := keyPath(path, k.Value)
		d.value(val, k, fpath, v.Field(f.index))
		d.checkEnum(val, fpath, f)
		d.checkMin(val, fpath, f, v.Field(f.index))
	}
	for _, f := range fs {
		if ok && f.accepts(kind) && f.requiredFor(kind) && !seen[f.key] {
			d.missing(n, path, what, f.key, kind)
		}
	}
}

// kind reads the tag of a tagged union first, since it decides which keys
// the rest of the mapping may hold. It returns "" for untagged structs, and
// for a kind outside the vocabulary false with the kind it likely means
// ("" when none is near).
func (d *decoder) kind(n *yaml.Node, path string, v reflect.Value, fs []field) (string, bool) {
	i := slices.IndexFunc(fs, func(f field) bool { return f.key == "kind" })
	if i < 0 || len(fs[i].kinds) > 0 {
		return "", true
	}
	f := fs[i]
	k, val := lookup(n, "kind")
	what := describe(v.Type())
	if val == nil {
		if len(f.enum) == 0 {
			d.missing(n, path, what, "kind", "")
			return "", false
		}
		d.errorf(diag.SchemaMissingField, n, path, "%s at `%s` has no `kind`\nadd one of: %s", what, path, strings.Join(f.enum, ", "))
		return "", false
	}
	fv := v.Field(f.index)
	d.value(val, k, keyPath(path, "kind"), fv)
	if !d.checkEnum(val, keyPath(path, "kind"), f) {
		if r := resolve(val); r.Kind == yaml.ScalarNode {
			return diag.Nearest(r.Value, f.enum), false
		}
		return "", false
	}
	return resolve(val).Value, true
}

func lookupField(fs []field, key, kind string) (field, bool) {
	for _, f := range fs {
		if f.key == key && f.accepts(kind) {
			return f, true
		}
	}
	return field{}, false
}

// checkMin reports an integer below its field's least value (an axis
// index below 0, a row factor below 1). A value of the wrong YAML kind was
// already reported as a type error.
func (d *decoder) checkMin(n *yaml.Node, path string, f field, v reflect.Value) {
	if f.min == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	i, ok := v.Interface().(*Int)
	if !ok || i.Value >= *f.min {
		return
	}
	d.errorf(diag.SchemaType, resolve(n), path, "`%s` must be an integer of at least %d, read %d", f.key, *f.min, i.Value)
}

// checkEnum reports a scalar outside its field's vocabulary. A value of the
// wrong YAML kind was already reported as a type error.
func (d *decoder) checkEnum(n *yaml.Node, path string, f field) bool {
	if len(f.enum) == 0 {
		return true
	}
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return false
	}
	if slices.Contains(f.enum, n.Value) {
		return true
	}
	dg := diag.Errorf(diag.SchemaType, posOf(n), path, "`%s` must be one of %s, read %q", f.key, strings.Join(f.enum, ", "), n.Value)
	if near := diag.Nearest(n.Value, f.enum); near != "" {
		dg = dg.WithHelp("did you mean `%s`?", near)
	}
	d.add(dg)
	return false
}

// resolve follows an alias to its anchor.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func (d *decoder) unknownKey(k *yaml.Node, path, what string, fs []field, kind string) {
	accepted := keyList(fs, kind)
	msg := fmt.Sprintf("unknown key `%s` in %s at `%s`", k.Value, what, orRoot(path))
	help := ""
	if other := kindsAccepting(fs, k.Value); len(other) > 0 && kind != "" {
		msg += fmt.Sprintf("; `%s` belongs to kind %s, and this one is %s", k.Value, strings.Join(other, " or "), kind)
	} else {
		help = diag.DidYouMean(k.Value, keysOf(fs, kind))
	}
	msg += "; accepted keys: " + accepted
	dg := diag.Errorf(diag.SchemaUnknownField, posOf(k), keyPath(path, k.Value), "%s", msg)
	dg.Help = help
	d.add(dg)
}

func (d *decoder) missing(n *yaml.Node, path, what, key, kind string) {
	of := ""
	if kind != "" {
		of = fmt.Sprintf(" of kind %s", kind)
	}
	d.errorf(diag.SchemaMissingField, n, path, "%s%s at `%s` has no `%s`, which it requires", what, of, orRoot(path), key)
}

func orRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func keysOf(fs []field, kind string) []string {
	var out []string
	for _, f := range fs {
		if f.accepts(kind) && !slices.Contains(out, f.key) {
			out = append(out, f.key)
		}
	}
	return out
}

func keyList(fs []field, kind string) string {
	return strings.Join(keysOf(fs, kind), ", ")
}

func kindsAccepting(fs []field, key string) []string {
	var out []string
	for _, f := range fs {
		if f.key == key {
			out = append(out, f.kinds...)
		}
	}
	return out
}

// describe names a model type in the words of the metadata documentation.
func describe(t reflect.Type) string {
	if w, ok := typeWords[t.Name()]; ok {
		return w
	}
	return "the " + strings.ToLower(t.Name())
}

var typeWords = map[string]string{
	"Document":       "the document",
	"Pipeline":       "the pipeline section",
	"Workflow":       "the workflow",
	"Manifest":       "the manifest",
	"Input":          "the workflow input",
	"Output":         "the workflow output",
	"Role":           "the input role",
	"Source":         "the input source",
	"Component":      "the component",
	"Implementation": "the implementation",
	"Ports":          "the ports section",
	"RowScope":       "the row scope",
	"BatchCapacity":  "the batch capacity",
	"Budget":         "the budget",
	"Contract":       "the tensor contract",
	"BatchLayout":    "the batch layout",
	"Level":          "the ownership level",
	"Padding":        "the padding entry",
	"StateCell":      "the state cell",
	"Recurrence":     "the recurrence",
	"EffectDomain":   "the effect domain",
	"Serving":        "the serving section",
	"StateService":   "the state service",
	"StateGroup":     "the state group",
	"Step":           "the step",
	"BranchOutput":   "the branch output",
	"Carried":        "the carried cell",
	"Preprocessing":  "the preprocessing section",
	"Program":        "the preprocessing program",
	"ProgramOutput":  "the program output",
}
