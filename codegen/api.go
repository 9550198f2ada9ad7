package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// doc adds a wrapped doc comment to a file.
func doc(f *jen.File, format string, args ...any) {
	for _, l := range wrap(0, fmt.Sprintf(format, args...)) {
		f.Comment(l)
	}
}

// api writes Executor, Option and New: the Executor embeds genrt's, which
// holds everything that does not depend on the workflow, so that no
// executor repeats it.
func (g *gen) api(f *jen.File) {
	doc(f, "Executor runs the workflow for many concurrent requests; the items of concurrent requests meet in the groupers of grouped components. Besides Run, its methods are genrt.Executor's: RunJSON, RunBatch, RunRequest, Stats, Close. It is safe for concurrent use.")
	f.Type().Id("Executor").Struct(jen.Op("*").Qual(genrtPath, "Executor"))
	doc(f, "Option configures New: genrt's options (genrt.WithSolo, WithMaxDelay, WithQueue, WithWorkers, WithBackend, WithBackendConfig, WithDecline, ...).")
	f.Type().Id("Option").Op("=").Qual(genrtPath, "Option")
	doc(f, "New opens the executor on the package folder packageDir: the folder holding %s and the artifacts the executor was generated from, which must not have changed since. ONNX Runtime is found as `genaic run` finds it: $ONNXRUNTIME_LIB, else the cache of \"make setup\".", g.f.Source)
	f.Func().Id("New").Params(jen.Id("packageDir").String(), jen.Id("opts").Op("...").Id("Option")).
		Params(jen.Op("*").Id("Executor"), jen.Error()).Block(
		jen.Id("ex").Op(":=").Op("&").Id("Executor").Values(),
		jen.List(jen.Id("x"), jen.Err()).Op(":=").Qual(genrtPath, "NewExecutor").Call(jen.Id("planJSON"), jen.Id("packageDir"), jen.Id("opts"), jen.Id("ex").Dot("runRequest")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Id("ex").Dot("Executor").Op("=").Id("x"),
		jen.Return(jen.Id("ex"), jen.Nil()),
	)
}

// requests writes Request, Response, Run and what turns a request given
// by input name into a typed one. Code that two workflows alike in their
// inputs and outputs would repeat is spread apart by what differs.
func (g *gen) requests(f *jen.File) {
	g.requestType(f)
	ex := func() *jen.Statement { return jen.Id("ex") }
	recv := jen.Id("ex").Op("*").Id("Executor")
	var checks []jen.Code
	var fields []jen.Code
	for _, in := range g.m.Inputs {
		fields = append(fields, jen.Line().Id(g.inFields[in.Name]).Op(":").Id("r").Dot("Inputs").Index(jen.Lit(in.Name)))
		c := jen.Dict{jen.Id("Name"): jen.Lit(in.Name)}
		switch {
		case in.Source == "literal" || in.Source == "artifact":
			c[jen.Id("Unloaded")] = jen.Lit(in.Source)
		case g.optional[in.Name]:
			c[jen.Id("Optional")] = jen.True()
		}
		checks = append(checks, jen.Values(c))
	}
	doc(f, "inputs are the workflow's inputs, in the order the VM checks them: a request may supply no other.")
	f.Var().Id("inputs").Op("=").Qual(genrtPath, "Inputs").ValuesFunc(func(gr *jen.Group) {
		for _, c := range checks {
			gr.Line().Add(c)
		}
		if len(checks) > 0 {
			gr.Line()
		}
	})
	g.check(f)
	g.responseType(f)
	doc(f, "Run executes the workflow for one request. Many goroutines may call it at once. A failed request returns an error; a *backend.RunError carries the rule and message `genaic run` reports.")
	f.Func().Params(recv).Id("Run").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("req").Op("*").Id("Request")).
		Params(jen.Op("*").Id("Response"), jen.Error()).Block(
		g.runItemsCall(),
		jen.Return(jen.Qual(genrtPath, "Run").Call(jen.Id("ctx"), ex().Dot("Engine").Call(), jen.Id("req"), ex().Dot("check"), ex().Dot("run"))),
	)
	fail := func() jen.Code {
		return jen.Return(jen.Qual(vmPath, "Response").Values(jen.Id("ID").Op(":").Id("r").Dot("ID"), jen.Id("Err").Op(":").Err()))
	}
	doc(f, "runRequest runs one plain request given by input name, which its caller counts as running.")
	f.Func().Params(recv.Clone()).Id("runRequest").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("r").Qual(vmPath, "Request")).
		Qual(vmPath, "Response").Block(
		jen.Id("req").Op(":=").Op("&").Id("Request").Values(append(fields, jen.Line())...),
		jen.If(jen.Err().Op(":=").Add(ex()).Dot("check").Call(jen.Id("req")), jen.Err().Op("!=").Nil()).Block(fail()),
		jen.If(jen.Err().Op(":=").Id("inputs").Dot("Unexpected").Call(jen.Id("r").Dot("Inputs")), jen.Err().Op("!=").Nil()).Block(fail()),
		jen.List(jen.Id("resp"), jen.Err()).Op(":=").Add(ex()).Dot("run").Call(jen.Id("ctx"), jen.Id("req")),
		jen.If(jen.Err().Op("!=").Nil()).Block(fail()),
		jen.Return(jen.Id("resp").Dot("held").Dot("Respond").Call(jen.Id("r").Dot("ID"), jen.Id("resp").Dot("outputs").Call())),
	)
	g.runItems(f)
}

// check writes the check of a request's inputs (genrt.Inputs.Check): its
// fields in the workflow's order.
func (g *gen) check(f *jen.File) {
	values := []jen.Code{jen.Id("ex").Dot("Engine").Call()}
	for _, in := range g.m.Inputs {
		values = append(values, jen.Id("req").Dot(g.inFields[in.Name]))
	}
	doc(f, "check checks a request's inputs as the VM does before it runs the workflow: each present unless it is optional, and each against its contract.")
	f.Func().Params(jen.Id("ex").Op("*").Id("Executor")).Id("check").Params(jen.Id("req").Op("*").Id("Request")).Error().Block(
		jen.Return(jen.Id("inputs").Dot("Check").Call(values...)))
}

// requestType writes Request.
func (g *gen) requestType(f *jen.File) {
	doc(f, "Request is one request: a value for each workflow input. A nil field is an input the request leaves out.")
	var fields []jen.Code
	for i, in := range g.m.Inputs {
		if i > 0 {
			fields = append(fields, jen.Line())
		}
		text := fmt.Sprintf("%s is workflow input `%s`: %s. It comes from the %s.", g.inFields[in.Name], in.Name, describe(in.Contract), source(in.Source))
		switch {
		case in.Source == "literal" || in.Source == "artifact":
			text += " This runtime does not load it yet: a request must supply it."
		case g.optional[in.Name]:
			text += " It is optional: nil leaves it out."
		}
		fields = append(fields, comments(8, text)...)
		fields = append(fields, jen.Id(g.inFields[in.Name]).Op("*").Qual(backendPath, "Tensor"))
	}
	fields = append(fields, g.itemsInputFields()...)
	f.Type().Id("Request").Struct(fields...)
}

// responseType writes Response and what turns it into the VM's outputs.
func (g *gen) responseType(f *jen.File) {
	doc(f, "Response is what a request's run emitted: a value for each workflow output the workflow emitted, nil for the others.")
	var fields, names, vals []jen.Code
	for i, o := range g.m.Outputs {
		if i > 0 {
			fields = append(fields, jen.Line())
		}
		field := g.outFields[o.Name]
		fields = append(fields, comments(8, fmt.Sprintf("%s is workflow output `%s`: %s.", field, o.Name, describe(o.Contract)))...)
		fields = append(fields, jen.Id(field).Op("*").Qual(backendPath, "Tensor"))
		names = append(names, jen.Lit(o.Name))
		vals = append(vals, jen.Id("r").Dot(field))
	}
	fields = append(fields, g.itemsOutputFields()...)
	fields = append(fields, jen.Line())
	fields = append(fields, comments(8, "held holds the group outputs the response's tensors view.")...)
	fields = append(fields, jen.Id("held").Qual(vmPath, "Holding"))
	f.Type().Id("Response").Struct(fields...)
	doc(f, "Release says that the response's tensors, and anything made from them without a copy, are read no more: the engine may then write later requests' outputs into the memory they view. Releasing again does nothing; a response never released stays valid.")
	f.Func().Params(jen.Id("r").Op("*").Id("Response")).Id("Release").Params().Block(jen.Id("r").Dot("held").Dot("Release").Call())
	doc(f, "outputNames are the workflow's outputs, as the VM's responses name them.")
	f.Var().Id("outputNames").Op("=").Qual(vmPath, "NewOutputNames").Call(names...)
	doc(f, "outputs returns the emitted outputs by name, as the VM's responses hold them.")
	f.Func().Params(jen.Id("r").Op("*").Id("Response")).Id("outputs").Params().Qual(vmPath, "Outputs").Block(
		jen.Return(jen.Id("outputNames").Dot("Outputs").Call(jen.Index().Op("*").Qual(backendPath, "Tensor").Values(vals...))))
}

// source says where an input's value comes from.
func source(kind string) string {
	switch kind {
	case "request":
		return "request"
	case "application":
		return "application (through the request)"
	case "":
		return "request"
	}
	return kind
}
