package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/genaic/genaic/compiler/diag"
)

// Version is a schema version in normal form.
type Version struct {
	Major, Minor int
}

// Supported is the highest schema version this build reads.
var Supported = Version{1, 1}

// BatchingVersion is the version that introduced the batching surface.
var BatchingVersion = Version{1, 1}

// String writes the normal form, as a document would: v<major>.<minor>.
func (v Version) String() string { return fmt.Sprintf("v%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// ParseVersion reads a schema_version spelling: surrounding spaces and one
// leading "v" are dropped, the rest is MAJOR[.MINOR] in decimal digits, and a
// missing minor is 0.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	major, minor, hasMinor := strings.Cut(t, ".")
	if !hasMinor {
		minor = "0"
	}
	ma, errMa := decimal(major)
	mi, errMi := decimal(minor)
	if errMa != nil || errMi != nil {
		return Version{}, fmt.Errorf("%q is not a version", s)
	}
	return Version{ma, mi}, nil
}

// decimal reads a non-empty run of ASCII digits. Numbers too large for an
// int saturate: they are still versions, just ones nobody reads.
func decimal(s string) (int, error) {
	if s == "" {
		return 0, strconv.ErrSyntax
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return int(^uint(0) >> 1), nil
	}
	return n, nil
}

// DeclaredVersion is what the gate learned from schema_version.
type DeclaredVersion struct {
	Version
	// Spelling is the value exactly as written; empty when absent.
	Spelling string
	// Present reports whether the document declared a version at all.
	Present bool
}

// gateVersion runs the version gate on the untyped node tree, before any
// other key is read, so that a document from a newer schema is refused for
// its version rather than for a field this build has never heard of.
func gateVersion(root *yaml.Node) (DeclaredVersion, diag.List) {
	_, v := lookup(root, "schema_version")
	if v == nil || v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return DeclaredVersion{Version: Version{1, 0}}, nil
	}
	path := "schema_version"
	pos := posOf(v)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		hint := ""
		if v.Kind == yaml.ScalarNode {
			hint = fmt.Sprintf(`; quote it: schema_version: "v%s"`, strings.TrimPrefix(v.Value, "v"))
		}
		return DeclaredVersion{}, diag.List{diag.Errorf(diag.VersionMalformed, pos, path,
			"schema_version must be a string, read the %s\nwrite it as \"v<major>.<minor>\", for example \"%s\"%s",
			kindWord(v), Supported, hint)}
	}
	ver, err := ParseVersion(v.Value)
	if err != nil {
		return DeclaredVersion{}, diag.List{diag.Errorf(diag.VersionMalformed, pos, path,
			"schema_version %q is not a version: the accepted form is \"v<major>.<minor>\" ([v]MAJOR[.MINOR] in decimal digits), for example \"%s\"",
			v.Value, Supported)}
	}
	dv := DeclaredVersion{Version: ver, Spelling: v.Value, Present: true}
	switch {
	case ver.Major != Supported.Major:
		return dv, diag.List{diag.Errorf(diag.VersionMajor, pos, path,
			"schema_version %q declares major version %d; the highest version this build of genaic reads is %s",
			v.Value, ver.Major, Supported)}
	case Supported.Less(ver):
		return dv, diag.List{diag.Errorf(diag.VersionTooNew, pos, path,
			"schema_version %q (normal form %s) is newer than %s, the highest version this build reads; a newer genaic is required to read this document",
			v.Value, ver, Supported)}
	}
	return dv, nil
}

// lookup returns the key and value nodes of key in a mapping node.
func lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}
