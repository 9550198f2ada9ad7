package passes

import (
	"github.com/genaic/genaic/compiler"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// Document is one document taken through the front end, lowering and the
// pipeline.
type Document struct {
	*compiler.Result
	Module  *ir.Module    // nil when the front end refused the document
	Results map[*Pass]any // the results of the passes that ran
}

// CheckSource runs the whole check pipeline on a document in memory. The
// front end's diagnostics and the passes' are merged into Result.Diags. The
// error is for genaic's own failures (a pass that panicked, an IR invariant
// broken), never for problems in the document.
func CheckSource(file string, src []byte, opts Options) (*Document, error) {
	return check(compiler.Load(file, src), opts)
}

// CheckPath reads a document or package folder and runs the pipeline. I/O
// problems are errors.
func CheckPath(path string, opts Options) (*Document, error) {
	r, err := compiler.LoadPath(path)
	if err != nil {
		return nil, err
	}
	return check(r, opts)
}

func check(r *compiler.Result, opts Options) (*Document, error) {
	d := &Document{Result: r}
	if !r.Valid() {
		return d, nil
	}
	d.Module = compiler.Lower(r.Doc, r.Version)
	opts.File = r.File
	ds, results, err := Run(d.Module, opts)
	d.Results = results
	r.Diags = append(r.Diags, ds...)
	r.Diags.Sort()
	return d, err
}

// Diags returns the document's diagnostics.
func (d *Document) Diags() diag.List { return d.Result.Diags }
