package compiler

import (
	"reflect"
	"strings"

	"github.com/genaic/genaic/compiler/diag"
	"gopkg.in/yaml.v3"
)

// scalar returns n when it is a scalar, reporting a type error otherwise.
func (d *decoder) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.errorf(diag.SchemaType, n, path, "`%s` must be %s, read the %s", lastKey(path), want, kindWord(n))
		return nil, false
	}
	return n, true
}

// lastKey is the final segment of a YAML path, for messages.
func lastKey(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return strings.Trim(path[i:], `.[]"`)
	}
	return path
}

func (s *String) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n, ok := d.scalar(n, path, "a string")
	if !ok {
		return
	}
	if n.ShortTag() != "!!str" {
		d.errorf(diag.SchemaType, n, path, "`%s` must be a string, read the %s\nquote it if it is meant as text", lastKey(path), kindWord(n))
		return
	}
	s.Value = n.Value
}

func (i *Int) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n, ok := d.scalar(n, path, "an integer")
	if !ok {
		return
	}
	if n.ShortTag() != "!!int" || n.Decode(&i.Value) != nil {
		d.errorf(diag.SchemaType, n, path, "`%s` must be an integer, read the %s", lastKey(path), kindWord(n))
	}
}

func (b *Bool) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n, ok := d.scalar(n, path, "true or false")
	if !ok {
		return
	}
	if n.ShortTag() != "!!bool" || n.Decode(&b.Value) != nil {
		d.errorf(diag.SchemaType, n, path, "`%s` must be true or false, read the %s", lastKey(path), kindWord(n))
	}
}

func (s *Scalar) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n, ok := d.scalar(n, path, "a scalar")
	if !ok {
		return
	}
	s.Value, s.Tag = n.Value, n.ShortTag()
}

func (r *Raw) decodeYAML(_ *decoder, n *yaml.Node, _ string) { r.YAML = resolve(n) }

// decodeYAML reads a dimension: a non-negative integer is a fixed extent and
// a non-empty string is a shape symbol (a quoted "4" is a symbol).
func (x *Dim) decodeYAML(d *decoder, n *yaml.Node, path string) {
	const want = "a non-negative integer (a fixed extent) or a non-empty string (a shape symbol)"
	n, ok := d.scalar(n, path, want)
	if !ok {
		return
	}
	switch n.ShortTag() {
	case "!!str":
		if strings.TrimSpace(n.Value) == "" {
			d.errorf(diag.SchemaType, n, path, "a dimension is %s, read an empty symbol", want)
			return
		}
		x.Symbol = n.Value
	case "!!int":
		if n.Decode(&x.Size) != nil || x.Size < 0 {
			d.errorf(diag.SchemaType, n, path, "a dimension is %s, read %s", want, n.Value)
			x.Size = 0
		}
	default:
		d.errorf(diag.SchemaType, n, path, "a dimension is %s, read the %s", want, kindWord(n))
	}
}

func (l *List[T]) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(diag.SchemaType, n, path, "`%s` must be a sequence, read the %s", lastKey(path), kindWord(n))
		return
	}
	l.Items = make([]T, len(n.Content))
	for i, c := range n.Content {
		d.value(c, nil, indexPath(path, i), reflect.ValueOf(&l.Items[i]).Elem())
	}
}

func (m *Map[T]) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(diag.SchemaType, n, path, "`%s` must be a mapping of names, read the %s", lastKey(path), kindWord(n))
		return
	}
	m.Entries = make([]Entry[T], 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kpath := keyPath(path, k.Value)
		var e Entry[T]
		d.value(k, nil, kpath, reflect.ValueOf(&e.Key).Elem())
		if e.Key.Value == "" && k.ShortTag() == "!!str" {
			d.errorf(diag.SchemaType, k, kpath, "a name in `%s` must not be empty", lastKey(path))
		}
		d.value(v, k, kpath, reflect.ValueOf(&e.Value).Elem())
		m.Entries = append(m.Entries, e)
	}
}

// decodeYAML reads one transform: op, inputs, outputs, and every other key
// as a parameter, a scalar or a list of scalars. Which ops exist and which
// parameters each takes is the preprocess pass's question, asked of the op
// table.
func (t *Transform) decodeYAML(d *decoder, n *yaml.Node, path string) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(diag.SchemaType, n, path, "a transform must be a mapping with `op`, read the %s", kindWord(n))
		return
	}
	k, op := lookup(n, "op")
	if op == nil {
		d.errorf(diag.SchemaMissingField, n, path, "the transform at `%s` has no `op`\nadd one, such as op: decode", path)
		return
	}
	d.value(op, k, keyPath(path, "op"), reflect.ValueOf(&t.Op).Elem())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kpath := keyPath(path, k.Value)
		switch k.Value {
		case "op":
		case "inputs":
			d.value(v, k, kpath, reflect.ValueOf(&t.Inputs).Elem())
		case "outputs":
			d.value(v, k, kpath, reflect.ValueOf(&t.Outputs).Elem())
		default:
			t.Params = append(t.Params, d.param(k, v, kpath))
		}
	}
}

// param reads a transform parameter: a scalar or a list of scalars.
func (d *decoder) param(k, v *yaml.Node, path string) Param {
	p := Param{Node: Node{Pos: posOf(resolve(v)), KeyPos: posOf(k), Path: path}, Key: k.Value}
	switch resolve(v).Kind {
	case yaml.SequenceNode:
		p.List = &List[Scalar]{}
		d.value(v, k, path, reflect.ValueOf(p.List).Elem())
	case yaml.MappingNode:
		d.errorf(diag.SchemaType, v, path, "parameter `%s` must be a scalar or a list of scalars, read a mapping", k.Value)
	default:
		d.value(v, k, path, reflect.ValueOf(&p.Value).Elem())
	}
	return p
}
