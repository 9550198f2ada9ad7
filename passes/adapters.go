package passes

import (
	"errors"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// loadAdapters loads each adapter component with the backend
// Options.Adapters makes, the built-in adapters the runtime loads it with
// (nothing where it is nil): an adapter compiles its program and the
// layout of each of its ports when it loads, and what it would refuse
// there (a port stacked on another axis than 0, a padding of the
// channels, a grouped adapter whose encoded input is not packed, ...),
// check refuses first. The preprocess pass calls it only while no check
// has reported an error: a document refused already is refused for those
// reasons, which the adapter would only repeat in its words.
func loadAdapters(c *Context) {
	if c.opts.Adapters == nil {
		return
	}
	b := c.opts.Adapters(c.Module)
	for _, comp := range c.Module.Components {
		if comp.Impl != ir.ImplAdapter {
			continue
		}
		s, err := b.Load(comp, "")
		if err == nil {
			s.Close()
			continue
		}
		msg := err.Error()
		if re := (*backend.RunError)(nil); errors.As(err, &re) {
			msg = re.Message
		}
		c.Report(diag.PreprocessOp, comp.Loc, "the %s adapter cannot run component `%s` as declared: %s", comp.ABI, comp.Name, msg)
	}
}
