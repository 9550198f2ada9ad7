package passes

import (
	"errors"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/compiler/diag"
	"github.com/genaic/genaic/ir"
)

// AdapterKeys is the result of the preprocess pass: for each adapter
// component that keys its invocations by what its items make, what it
// keys them by (an aspect-keeping resize's width), as the adapter names
// it when it loads.
type AdapterKeys map[string][]string

// loadAdapters loads each adapter component with the backend
// Options.Adapters makes, the built-in adapters the runtime loads it with
// (nothing where it is nil): an adapter compiles its program and the
// layout of each of its ports when it loads, and what it would refuse
// there (a port stacked on another axis than 0, a padding of the
// channels, a grouped adapter whose encoded input is not packed, ...),
// check refuses first. The preprocess pass calls it only while no check
// has reported an error: a document refused already is refused for those
// reasons, which the adapter would only repeat in its words. What each
// adapter keys its invocations by (backend.KeyDescriber) goes into keys,
// for the plan.
func loadAdapters(c *Context, keys AdapterKeys) {
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
			if d, ok := s.(backend.KeyDescriber); ok {
				keys[comp.Name] = d.KeyedBy()
			}
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
