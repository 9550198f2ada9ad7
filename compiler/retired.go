package compiler

import (
	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
)

// recognizeRetired refuses spellings that were retired inside the v1 line.
// It runs after the version gate: refusing a shape presumes the document
// belongs to the line that retired it. Nothing here converts a document.
func recognizeRetired(root *yaml.Node) diag.List {
	var ds diag.List
	ds.Add(flatTokenPacked(root, "")...)
	ds.Add(batchingHints(root)...)
	ds.Sort()
	return ds
}

// flatTokenPacked finds token_packed layouts that carry offsets or owner
// directly instead of an ownership chain of levels.
func flatTokenPacked(n *yaml.Node, path string) diag.List {
	var ds diag.List
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ds.Add(flatTokenPacked(c, indexPath(path, i))...)
		}
	case yaml.MappingNode:
		if _, kind := lookup(n, "kind"); kind != nil && kind.Kind == yaml.ScalarNode && kind.Value == "token_packed" {
			if d, ok := flatPair(n, path); ok {
				ds.Add(d)
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			ds.Add(flatTokenPacked(n.Content[i+1], keyPath(path, n.Content[i].Value))...)
		}
	}
	return ds
}

func flatPair(layout *yaml.Node, path string) (diag.Diagnostic, bool) {
	ko, o := lookup(layout, "offsets")
	kw, w := lookup(layout, "owner")
	if ko == nil && kw == nil {
		return diag.Diagnostic{}, false
	}
	at, keys := ko, "`offsets` and `owner`"
	switch {
	case ko == nil:
		at, keys = kw, "`owner`"
	case kw == nil:
		keys = "`offsets`"
	}
	oName, wName := scalarOr(o, "<offsets>"), scalarOr(w, "<owner>")
	return diag.Errorf(diag.RetiredFlatTokenPacked, posOf(at), path,
		"the `token_packed` batch layout at `%s` declares %s directly, which is the retired flat spelling of ownership, which is not read (no document is converted for you); "+
			"a packed axis now declares `levels`, an ownership chain innermost first, because an item can itself be a group\n"+
			"replace `offsets: %s, owner: %s` with `levels: [{ offsets: %s, owner: %s }]`, and add an outer entry if the items are themselves grouped "+
			"(an emitted level also states `extent`)",
		path, keys, oName, wName, oName, wName), true
}

func scalarOr(n *yaml.Node, alt string) string {
	if n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value
	}
	return alt
}

// hintWhy and hintFix end the message of a retired batching hint and give
// its help line.
const (
	hintWhy = "`batch_capacity` on the component and `padding` on its contracts now state these facts"
	hintFix = "remove this hint and declare them there"
)

// batchingHints finds the retired ways of saying that a model batches.
func batchingHints(root *yaml.Node) diag.List {
	var ds diag.List
	_, profiles := lookup(root, "profiles")
	if profiles != nil && profiles.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(profiles.Content); i += 2 {
			name := profiles.Content[i].Value
			if k, _ := lookup(profiles.Content[i+1], "batch_invariance"); k != nil {
				path := keyPath(keyPath("profiles", name), "batch_invariance")
				ds.Add(diag.Errorf(diag.RetiredBatchingHint, posOf(k), path,
					"`%s` is a retired batching hint; %s\n%s", path, hintWhy, hintFix))
			}
		}
	}
	_, model := lookup(root, "model")
	_, rc := lookup(model, "runtime_configurable")
	if k, _ := lookup(rc, "continuous_batching"); k != nil {
		ds.Add(diag.Errorf(diag.RetiredBatchingHint, posOf(k), "model.runtime_configurable.continuous_batching",
			"`model.runtime_configurable.continuous_batching` is a retired batching hint; %s\n%s", hintWhy, hintFix))
	}
	_, req := lookup(root, "required_capabilities")
	ds.Add(retiredCapability(req, "required_capabilities")...)
	_, pipeline := lookup(root, "pipeline")
	_, workflow := lookup(pipeline, "workflow")
	_, manifest := lookup(workflow, "manifest")
	_, caps := lookup(manifest, "capabilities")
	ds.Add(retiredCapability(caps, "pipeline.workflow.manifest.capabilities")...)
	return ds
}

func retiredCapability(list *yaml.Node, path string) diag.List {
	var ds diag.List
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	for i, c := range list.Content {
		if c.Kind == yaml.ScalarNode && c.Value == "continuous_batching" {
			ds.Add(diag.Errorf(diag.RetiredBatchingHint, posOf(c), indexPath(path, i),
				"the capability `continuous_batching` in `%s` is a retired batching hint; %s\n%s", path, hintWhy, hintFix))
		}
	}
	return ds
}
