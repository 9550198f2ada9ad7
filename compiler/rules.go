package compiler

import "github.com/genaic/genaic/compiler/diag"

// Rules are the rule ids the front end reports while it reads a document:
// YAML syntax, the version gate, retired shapes and strict decoding. The
// passes declare the rest (passes.Pass.Rules); a test keeps every check
// rule of the catalogue declared by one or the other.
var Rules = []diag.Rule{
	diag.Syntax, diag.VersionMalformed, diag.VersionMajor, diag.VersionTooNew,
	diag.RetiredFlatTokenPacked, diag.RetiredBatchingHint,
	diag.SchemaUnknownField, diag.SchemaMissingField, diag.SchemaType,
	diag.VersionFeatureNeedsV11,
}
