package passes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/genaic/genaic/compiler/diag"
)

// TestNoRuleLiterals keeps rule ids typed: the passes and the front end
// name a rule by its diag constant, never by a string that a typo would
// turn into another id.
func TestNoRuleLiterals(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	more, _ := filepath.Glob(filepath.Join("..", "compiler", "*.go"))
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "/") && diag.KnownRule(diag.Rule(s)) {
					t.Errorf("%s: rule %q written as a string; use its diag constant", f, s)
				}
			}
			return true
		})
	}
}
