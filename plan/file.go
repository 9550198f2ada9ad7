package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/genaic/genaic/internal/safefile"
	"github.com/genaic/genaic/ir"
)

// Version is the plan format this build writes and reads. It changes
// whenever a field changes meaning, so a runtime never executes a plan it
// would misread. Version 2 carries the IR as JSON (version 1 carried its
// text form).
const Version = 2

// Format names the file type, so a JSON file that is not a genaic plan is
// told so instead of being half-read.
const Format = "genaic-plan"

// File is a compiled plan: the GroupPlans, the IR they were decided on, and
// the artifacts they run, each with its content hash.
type File struct {
	Format        string `json:"format"`
	PlanVersion   int    `json:"plan_version"`
	SchemaVersion string `json:"schema_version"` // as written in the document ("" when absent)
	// Package is the package folder, relative to the plan file's folder;
	// artifacts and the source are relative to it.
	Package      string       `json:"package"`
	Source       string       `json:"source"`
	SourceSHA256 string       `json:"source_sha256"`
	Artifacts    []Artifact   `json:"artifacts"`
	Components   []*GroupPlan `json:"components"`
	// IR is the module the GroupPlans were decided on, with its location
	// table: encoding/json reads it, so a runtime needs no text parser.
	IR *ir.Module `json:"ir"`
	// Signature is the SHA-256 of the file with this field empty: a plan
	// edited by hand, or truncated, is refused.
	Signature string `json:"signature"`
}

// Artifact is a file a component runs.
type Artifact struct {
	Component string `json:"component"`
	Path      string `json:"path"`             // relative to the package folder
	SHA256    string `json:"sha256,omitempty"` // empty when the file was missing at compile time
	// Ops are the operator types an ONNX component's graph (and its
	// subgraphs) uses, sorted: "Type" in the default domain,
	// "domain:Type" in another. Empty for other components, and for a
	// model that could not be read at compile time.
	Ops []string `json:"ops,omitempty"`
}

// Component returns the plan of a component, or nil.
func (f *File) Component(name string) *GroupPlan {
	for _, g := range f.Components {
		if g.Component == name {
			return g
		}
	}
	return nil
}

// Ops returns the operator types of component's graph as compiled, or nil.
func (f *File) Ops(component string) []string {
	for _, a := range f.Artifacts {
		if a.Component == component {
			return a.Ops
		}
	}
	return nil
}

// Marshal writes the plan as indented JSON with its signature.
func (f *File) Marshal() ([]byte, error) {
	f.Format, f.PlanVersion = Format, Version
	f.Signature = ""
	body, err := encode(f)
	if err != nil {
		return nil, err
	}
	f.Signature = digest(body)
	return encode(f)
}

func encode(f *File) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// HashFile returns the SHA-256 of a file's content.
// The file is streamed through the hash: an artifact may be larger than
// memory.
func HashFile(path string) (string, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LooksLikePlan tells a plan file from a metadata document by content: a
// JSON object with a "format" or "plan_version" key. A document never has
// either (both would be schema/unknown-field), so a damaged or foreign plan
// is refused as a plan rather than misread as a document. The keys are
// looked for in the object's tokens up to the first that does not read,
// so a truncated plan (whose first keys are these) is still a plan.
func LooksLikePlan(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	depth, key := 1, true // key: the next token at depth 1 is a key
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
				continue
			}
			if depth--; depth == 0 {
				return false
			}
		case string:
			if depth == 1 && key && (t == "format" || t == "plan_version") {
				return true
			}
		}
		if depth == 1 {
			key = !key
		}
	}
}

// Decode reads a plan and checks that it is a genaic plan of this version
// whose signature holds. It does not look at the package.
func Decode(name string, b []byte) (*File, error) {
	var probe struct {
		Format      string `json:"format"`
		PlanVersion *int   `json:"plan_version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		if LooksLikePlan(b) {
			return nil, fmt.Errorf("%s: the plan is damaged or truncated (%v); recompile it with `genaic compile PKG -o %s`", name, err, filepath.Base(name))
		}
		return nil, fmt.Errorf("%s is not a genaic plan: %v", name, err)
	}
	if probe.Format != Format || probe.PlanVersion == nil {
		return nil, fmt.Errorf("%s is not a genaic plan (no \"format\": %q); compile one with `genaic compile PKG -o plan.json`", name, Format)
	}
	if *probe.PlanVersion != Version {
		return nil, fmt.Errorf("%s is a plan of format version %d, and this genaic reads version %d; recompile it with this genaic (`genaic compile PKG -o %s`)",
			name, *probe.PlanVersion, Version, filepath.Base(name))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: malformed plan: %v", name, err)
	}
	if f.IR == nil {
		return nil, fmt.Errorf("%s: malformed plan: it holds no IR", name)
	}
	sig := f.Signature
	f.Signature = ""
	body, err := encode(&f)
	if err != nil {
		return nil, err
	}
	if digest(body) != sig {
		return nil, fmt.Errorf("%s: the plan's signature does not match its content: it was edited or damaged after `genaic compile` wrote it; recompile it", name)
	}
	f.Signature = sig
	if err := ir.Verify(f.IR); err != nil {
		return nil, fmt.Errorf("%s: the plan's IR is not well formed: %v", name, err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: the plan is not consistent with its IR (edited by hand, or written by a faulty compiler): %v; recompile it with `genaic compile`", name, err)
	}
	return &f, nil
}

// ErrStale is wrapped by the errors Load returns when the package changed
// after the plan was compiled.
var ErrStale = errors.New("stale plan")

// MaxPlanBytes bounds a plan file: a plan holds a workflow's IR and its
// decisions, far below this.
const MaxPlanBytes = 256 << 20

// Load reads a plan file and checks it against its package: the metadata
// document and every artifact must still have the content the plan was
// compiled from, so a runtime never runs a plan on files it was not decided
// for.
func Load(path string) (*File, error) {
	b, err := safefile.ReadFile(path, MaxPlanBytes)
	if err != nil {
		return nil, err
	}
	f, err := Decode(path, b)
	if err != nil {
		return nil, err
	}
	return f, f.CheckPackage(f.PackageDir(path))
}

// PackageDir returns the package folder of a plan read from planPath.
func (f *File) PackageDir(planPath string) string {
	return filepath.Join(filepath.Dir(planPath), filepath.FromSlash(f.Package))
}

// CheckPackage verifies the source document and the artifacts in dir.
func (f *File) CheckPackage(dir string) error {
	var problems []string
	check := func(what, rel, want string) {
		got, err := HashFile(filepath.Join(dir, filepath.FromSlash(rel)))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s %s: %v", what, rel, err))
		case want == "":
			problems = append(problems, fmt.Sprintf("%s %s was missing when the plan was compiled", what, rel))
		case got != want:
			problems = append(problems, fmt.Sprintf("%s %s changed since the plan was compiled (sha256 %s…, the plan has %s…)", what, rel, got[:12], want[:12]))
		}
	}
	check("the metadata document", f.Source, f.SourceSHA256)
	for _, a := range f.Artifacts {
		check("artifact of component `"+a.Component+"`", a.Path, a.SHA256)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w for package %s: %s; recompile it with `genaic compile`", ErrStale, dir, strings.Join(problems, "; "))
	}
	return nil
}
