package diag

import "slices"

// Rules is the public catalogue of rule ids (RULES.md), in its order. An id
// never changes meaning; a test keeps this list equal to the catalogue.
var Rules = []string{
	// Reading the document.
	"syntax", "version/malformed", "version/major", "version/too-new",
	"retired/flat-token-packed", "retired/batching-hint",
	"schema/unknown-field", "schema/missing-field", "schema/type",
	"version/feature-needs-v1.1",
	// Workflow structure.
	"ssa/undefined", "ssa/redefined", "ssa/unknown-component", "ssa/unknown-port",
	"ssa/unbound-port", "ssa/unknown-output",
	"contract/dtype", "contract/shape", "contract/incompatible",
	"preprocess/adapter", "preprocess/binding", "preprocess/op", "preprocess/unbound",
	// Packed layouts.
	"packed/unresolved", "packed/axis", "packed/levels", "packed/companion",
	"packed/companion-role", "packed/extent", "packed/pair", "packed/double-spelling",
	"packed/owner-suppliable",
	// Padding.
	"padding/unresolved", "padding/dimension", "padding/duplicate", "padding/self",
	"padding/companion",
	// Batch capacity.
	"capacity/unknown-symbol", "capacity/uniform-duplicate", "capacity/uniform-count",
	"capacity/padded-and-pinned", "capacity/budget-root", "capacity/budget-duplicate",
	"capacity/level-unbudgeted", "capacity/free-literal", "capacity/unreconciled",
	"capacity/budget-too-small", "capacity/row-scope",
	// Emission.
	"emit/unpublished-companion", "emit/companion-of-unemitted", "emit/malformed-companion",
	"emit/serving-shared", "emit/trim-padded", "emit/row-axis", "emit/axis",
	"emit/axis-required",
	// Models.
	"model/missing", "model/port", "model/dtype", "model/shape", "model/lengths-unseen",
	// Runtime.
	"run/offsets", "run/owner", "run/extent", "run/lengths", "run/budget",
	"run/uniform", "run/input", "run/backend", "run/unsupported",
	"run/queue-full", "run/closed", "run/cancelled", "run/deadline",
}

// KnownRule reports whether id is in the catalogue.
func KnownRule(id string) bool { return slices.Contains(Rules, id) }
