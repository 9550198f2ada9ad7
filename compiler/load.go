// Package compiler is genaic's front end: it reads inference_metadata.yaml
// (or JSON) documents into a typed model with positions, in fixed stages
// that each stop the pipeline when they refuse the document.
package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/internal/safefile"
)

// MetadataFile is the name of the metadata document inside a package folder.
const MetadataFile = "inference_metadata.yaml"

// Stage names the front-end stage that refused a document.
type Stage string

// The front-end stages, in the order they run.
const (
	StageSyntax   Stage = "syntax"
	StageVersion  Stage = "version"
	StageRetired  Stage = "retired"
	StageDecode   Stage = "decode"
	StageFeatures Stage = "features"
	StageDone     Stage = ""
)

// Result is what the front end made of one document.
type Result struct {
	File    string // the path the document was read from, as given
	Source  []byte // the document's bytes
	Root    *yaml.Node
	Version DeclaredVersion
	Doc     *Document // nil when a stage before decoding refused
	Diags   diag.List
	Stopped Stage // the stage that refused the document, or StageDone
}

// Valid reports whether the document has no error diagnostics.
func (r *Result) Valid() bool { return !r.Diags.HasErrors() }

// Load runs the front end on a document already in memory. Stages run in the
// order RULES.md fixes, and a stage that refuses stops the ones after it.
func Load(file string, src []byte) *Result {
	r := &Result{File: file, Source: src}
	stages := []struct {
		stage Stage
		run   func(*Result) diag.List
	}{
		{StageSyntax, parseStage},
		{StageVersion, versionStage},
		{StageRetired, func(r *Result) diag.List { return recognizeRetired(r.Root) }},
		{StageDecode, decodeStage},
		{StageFeatures, func(r *Result) diag.List { return featuresBeyond(r.Doc, r.Version) }},
	}
	for _, s := range stages {
		ds := s.run(r)
		for i := range ds {
			ds[i].File = file
		}
		r.Diags.Add(ds...)
		if ds.HasErrors() {
			r.Stopped = s.stage
			break
		}
	}
	r.Diags.Sort()
	r.Diags.FillSpans(src)
	return r
}

func parseStage(r *Result) diag.List {
	root, ds := parseYAML(r.Source)
	r.Root = root
	if len(ds) == 0 && root == nil {
		return diag.List{diag.Errorf(diag.SchemaType, diag.Pos{Line: 1, Column: 1}, "",
			"the document is empty; an inference_metadata document is a mapping with keys such as schema_version and pipeline")}
	}
	return ds
}

func versionStage(r *Result) diag.List {
	v, ds := gateVersion(r.Root)
	r.Version = v
	return ds
}

func decodeStage(r *Result) diag.List {
	d := newDecoder()
	doc := &Document{}
	d.value(r.Root, nil, "", reflect.ValueOf(doc).Elem())
	r.Doc = doc
	return d.ds
}

// featuresBeyond reports batching features used by a document that declares
// a version older than the one that introduced them.
func featuresBeyond(doc *Document, v DeclaredVersion) diag.List {
	if !v.Less(BatchingVersion) {
		return nil
	}
	declared := "declares " + fmt.Sprintf("%q", v.Spelling)
	if !v.Present {
		declared = "declares no schema_version, which means v1.0"
	}
	var ds diag.List
	report := func(n Node, feature string) {
		ds.Add(diag.Errorf(diag.VersionFeatureNeedsV11, n.Caret(), n.Path,
			"%s is a %s feature, but the document %s\ndeclare schema_version: \"%s\"",
			feature, BatchingVersion, declared, BatchingVersion))
	}
	for _, use := range batchingUses(doc) {
		report(use.node, use.feature)
	}
	return ds
}

type featureUse struct {
	node    Node
	feature string
}

// batchingUses lists where the document uses a field introduced in v1.1.
func batchingUses(doc *Document) []featureUse {
	var uses []featureUse
	if doc.Preprocessing != nil && doc.Preprocessing.Video != nil {
		uses = append(uses, featureUse{doc.Preprocessing.Video.Node, "`preprocessing.video`"})
	}
	if doc.Pipeline != nil && doc.Pipeline.Workflow != nil {
		for _, c := range doc.Pipeline.Workflow.Components.Entries {
			if bc := c.Value.BatchCapacity; bc != nil {
				uses = append(uses, featureUse{bc.Node, "`batch_capacity`"})
			}
		}
	}
	for _, s := range doc.ContractSites() {
		if s.Contract.Padding.KeyPos.Known() {
			uses = append(uses, featureUse{s.Contract.Padding.Node, "`padding`"})
		}
		if bl := s.Contract.BatchLayout; bl != nil {
			uses = append(uses, levelUses(bl.Levels)...)
		}
	}
	return uses
}

// levelUses reports the parts of an ownership chain that v1.0 cannot say. A
// single level without `extent` is the one-level rewrite of the retired flat
// pair, which the retired-shape refusal tells authors to write at any v1
// version, so it stays readable at v1.0; a second level (nesting) and a
// level's `extent` are v1.1 additions.
func levelUses(levels List[Level]) []featureUse {
	var uses []featureUse
	if len(levels.Items) > 1 {
		uses = append(uses, featureUse{levels.Items[1].Node, "`levels` with a second ownership level"})
	}
	for _, l := range levels.Items {
		if l.Extent != nil {
			uses = append(uses, featureUse{l.Extent.Node, "`extent` on an ownership level"})
		}
	}
	return uses
}

// ErrNoMetadata is returned when a package folder holds no metadata file.
var ErrNoMetadata = errors.New("no " + MetadataFile)

// ResolvePath turns a command-line PATH (a document, or a package folder
// holding inference_metadata.yaml) into the document's path.
func ResolvePath(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return path, nil
	}
	doc := filepath.Join(path, MetadataFile)
	if _, err := os.Stat(doc); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s is a folder without %s: %w", path, MetadataFile, ErrNoMetadata)
	} else if err != nil {
		return "", err
	}
	return doc, nil
}

// LoadPath reads a document or package folder and runs the front end. The
// error is for I/O problems only; problems in the document are diagnostics.
func LoadPath(path string) (*Result, error) {
	doc, err := ResolvePath(path)
	if err != nil {
		return nil, err
	}
	src, err := readLimited(doc)
	if err != nil {
		return nil, err
	}
	return Load(doc, src), nil
}

// readLimited reads a file but refuses one far larger than any document,
// without reading all of it.
func readLimited(path string) ([]byte, error) {
	return safefile.ReadFile(path, 4*MaxDocumentBytes)
}
